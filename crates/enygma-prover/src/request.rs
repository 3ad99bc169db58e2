//! What every statement's request parser shares: the 400 error that names a field (never a
//! value), the body as a JSON object whose strings are wiped after parsing ([`parse_object`]),
//! arrays of an exact length ([`parse_array`]), and canonical decimal field elements, public
//! ([`parse_field_element`]) or private ([`parse_secret`], [`parse_secret_array`]), and the
//! JSON Schema fragments that describe them ([`schema`]).
//!
//! The decimal format itself (and [`to_decimal`]) is owned by [`enygma_verifier::decimal`], which
//! also reads proof responses: one parser, one wording, for requests and proofs.
//!
//! Secret hygiene (see "Secrets in memory" in `docs/security.md`): a private value is parsed
//! straight from its JSON string into a [`Secret`] (zeroized on drop), with no heap
//! intermediate: the decimal digits are accumulated into fixed 256-bit limbs on the stack. Arrays
//! are allocated at their final length before the first element goes in, so no reallocation
//! leaves a copy of earlier elements in freed memory. The JSON tree's strings (where serde_json
//! put the digits) are overwritten when the [`JsonObject`] is dropped, on success and on every
//! error after the JSON itself parsed.

pub mod schema;

use std::ops::Deref;

use enygma_circuit::{Fr, Secret};
use enygma_verifier::decimal::parse_decimal;
use enygma_verifier::json::check_unique_keys;
use serde_json::{Map, Value};
use zeroize::Zeroize;

/// A request that cannot be parsed: HTTP 400. `field` is a JSON path such as
/// `previous_commits[2][1]`, or `body` when the body is not a JSON object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RequestError {
    pub field: String,
    pub reason: String,
}

pub fn error(field: impl Into<String>, reason: impl Into<String>) -> RequestError {
    RequestError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// A request body as a JSON object, whose string values (the decimal digits of every field,
/// secret or not) are overwritten with zeros when it is dropped. It derefs to the object.
///
/// Numbers, `true`/`false` and `null` are not wiped (serde_json keeps numbers inline in a
/// private type); no field of any request is a JSON number, so a secret sent as one is a
/// malformed request, refused with 400.
pub struct JsonObject(Map<String, Value>);

impl Deref for JsonObject {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl Drop for JsonObject {
    fn drop(&mut self) {
        for value in self.0.values_mut() {
            wipe_strings(value);
        }
    }
}

/// Overwrites every string in `value` with zeros (in place: same buffer, same capacity).
pub fn wipe_strings(value: &mut Value) {
    match value {
        Value::String(s) => s.zeroize(),
        Value::Array(items) => items.iter_mut().for_each(wipe_strings),
        Value::Object(object) => object.values_mut().for_each(wipe_strings),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A request body as a JSON object. serde_json's syntax errors give a position, never the
/// input's text. A key repeated in any object is refused, naming it
/// ([`enygma_verifier::json`]): serde_json would keep the last silently, where a gateway in front
/// may have read the first. A body that is valid JSON but not an object is wiped before the 400.
///
/// What serde_json does before this returns is out of reach: a string with escape sequences
/// (`\u0031`) is unescaped through its scratch buffer, and the values of a body that fails to
/// parse halfway are dropped unwiped. Neither happens for a well-formed request, whose decimal
/// strings have no escapes.
pub fn parse_object(body: &[u8]) -> Result<JsonObject, RequestError> {
    check_unique_keys(body).map_err(|e| {
        error(
            e.path,
            "duplicate key (each key may appear only once in an object)",
        )
    })?;
    let mut value: Value =
        serde_json::from_slice(body).map_err(|e| error("body", format!("malformed JSON ({e})")))?;
    match value {
        Value::Object(object) => Ok(JsonObject(object)),
        _ => {
            wipe_strings(&mut value);
            Err(error("body", "expected a JSON object"))
        }
    }
}

/// An array of exactly `len` elements, each parsed by `item` under its own name (`name[i]`).
/// The vector is allocated at its final length first (no reallocation copies).
pub fn parse_array<'a, T>(
    name: &str,
    len: usize,
    value: &'a Value,
    item: impl Fn(&str, &'a Value) -> Result<T, RequestError>,
) -> Result<Vec<T>, RequestError> {
    let items = exact_array(name, len, value)?;
    let mut out = Vec::with_capacity(len);
    for (i, v) in items.iter().enumerate() {
        out.push(item(&format!("{name}[{i}]"), v)?);
    }
    Ok(out)
}

fn exact_array<'a>(name: &str, len: usize, value: &'a Value) -> Result<&'a [Value], RequestError> {
    let items = value
        .as_array()
        .ok_or_else(|| error(name, "expected an array"))?;
    if items.len() != len {
        return Err(error(
            name,
            format!("expected {len} elements, got {}", items.len()),
        ));
    }
    Ok(items)
}

/// Parses one canonical decimal field element.
pub fn parse_field_element(field: &str, value: &Value) -> Result<Fr, RequestError> {
    let s = value
        .as_str()
        .ok_or_else(|| error(field, "expected a decimal string"))?;
    parse_decimal(s).map_err(|e| error(field, e.to_string()))
}

/// A private field element: [`parse_field_element`] into a [`Secret`].
pub fn parse_secret(field: &str, value: &Value) -> Result<Secret<Fr>, RequestError> {
    parse_field_element(field, value).map(Secret::new)
}

/// An array of exactly `len` private field elements, parsed into a [`Secret`] vector allocated at
/// its final length (on an error, what was parsed is zeroized with it).
pub fn parse_secret_array(
    name: &str,
    len: usize,
    value: &Value,
) -> Result<Secret<Vec<Fr>>, RequestError> {
    let items = exact_array(name, len, value)?;
    let mut out = Secret::new(Vec::with_capacity(len));
    for (i, v) in items.iter().enumerate() {
        out.push(parse_field_element(&format!("{name}[{i}]"), v)?);
    }
    Ok(out)
}

/// [`enygma_verifier::decimal::to_decimal`] for a scalar (monomorphic, so that a `&Secret<Fr>`
/// derefs into it).
pub fn to_decimal(x: &Fr) -> String {
    enygma_verifier::decimal::to_decimal(x)
}
