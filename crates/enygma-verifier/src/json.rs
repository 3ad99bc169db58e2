//! The one JSON rule every request and proof body follows beyond its shape: a key appears at
//! most once in each object.
//!
//! serde_json keeps the last of repeated keys silently (`{"x":"1","x":"2"}` reads as `x = 2`), so
//! a gateway that keeps the first and the prover that keeps the last would read two different
//! requests from the same bytes. [`check_unique_keys`] refuses such a body, naming the key.
//!
//! Written as a serde visitor rather than taken from a crate: `serde_with`'s
//! `maps_duplicate_key_is_error` covers typed maps only, not a whole `serde_json::Value` tree
//! nor derived structs' ignored fields, and the walk is short. It holds no value: strings are
//! visited borrowed (or from serde_json's scratch buffer) and never copied, so a secret in the
//! body leaves no copy here; only the keys of the object being walked are kept, to compare.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// A key that appears twice in one object of a JSON body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: duplicate key (each key may appear only once in an object)")]
pub struct DuplicateKey {
    /// Where the second occurrence is, e.g. `secret_key` or `previous_commits[1].x`; a key
    /// that is not a plain name is quoted and cut to [`MAX_KEY_CHARS`] characters.
    pub path: String,
}

/// Longest key quoted in a [`DuplicateKey`] path.
pub const MAX_KEY_CHARS: usize = 64;

/// Refuses a body with a repeated key in any of its objects, at any depth. A body that is not
/// valid JSON passes: the parse that follows reports where it goes wrong (unless a repeated key
/// comes before the syntax error).
pub fn check_unique_keys(json: &[u8]) -> Result<(), DuplicateKey> {
    let found = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let _ = Walk {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut deserializer);
    match found.into_inner() {
        Some(path) => Err(DuplicateKey { path }),
        None => Ok(()),
    }
}

/// Visits one value at `path`, recording the first repeated key in `found` (the error serde
/// carries back up says only that the walk stopped).
struct Walk<'a> {
    path: String,
    found: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let item = Walk {
                path: format!("{}[{i}]", self.path),
                found: self.found,
            };
            if seq.next_element_seed(item)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !keys.insert(key) {
                *self.found.borrow_mut() = Some(path);
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
}

/// `prefix.key`, the key as it is when it is a plain name (what every field of ours is), else
/// quoted and cut: a key is the client's text, and goes into a 400 and a log line.
fn join(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= MAX_KEY_CHARS
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if plain {
        key.to_owned()
    } else {
        let cut: String = key.chars().take(MAX_KEY_CHARS).collect();
        format!("{cut:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(json: &str) -> Option<String> {
        check_unique_keys(json.as_bytes()).err().map(|e| e.path)
    }

    #[test]
    fn repeated_keys_are_found_at_any_depth() {
        assert_eq!(dup(r#"{"a":"1","b":"2","a":"3"}"#).as_deref(), Some("a"));
        assert_eq!(
            dup(r#"{"a":[["1"],{"x":1,"y":{"z":null,"z":true}}]}"#).as_deref(),
            Some("a[1].y.z")
        );
        assert_eq!(dup(r#"[{"k":1},{"k":2,"k":3}]"#).as_deref(), Some("[1].k"));
        // The same key in different objects, or as a value, is no repetition.
        assert_eq!(dup(r#"{"a":{"a":"a"},"b":[{"a":1},{"a":2}]}"#), None);
        assert_eq!(
            dup(r#"{"a":1.5,"b":-3,"c":"\u0061","d":false,"e":[]}"#),
            None
        );
        // Escapes spell the same key: serde_json unescapes before comparing.
        assert_eq!(dup(r#"{"a":1,"\u0061":2}"#).as_deref(), Some("a"));
        // Not JSON: left to the parse that follows.
        assert_eq!(dup(r#"{"a":"#), None);
    }

    #[test]
    fn odd_keys_are_quoted_and_cut() {
        assert_eq!(dup(r#"{"a b":1,"a b":2}"#).as_deref(), Some(r#""a b""#));
        let long = "k".repeat(200);
        let path = dup(&format!(r#"{{"{long}":1,"{long}":2}}"#)).unwrap();
        assert_eq!(path, format!("{:?}", "k".repeat(MAX_KEY_CHARS)));
        assert!(DuplicateKey { path: "a".into() }
            .to_string()
            .starts_with("a: duplicate key"));
    }
}
