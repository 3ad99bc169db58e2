//! The reference's three DvP (delivery-versus-payment) statements: the ERC-20 and ERC-1155
//! join-splits ([`join_split`], one family with one circuit struct) and the ERC-721 ownership
//! transfer ([`ownership`]). Their relations and circuits are enygma-circuit's `dvp`; this
//! module gives them names, routes and the reference's request format.
//!
//! The DvP requests are Go structs decoded by Go's `encoding/json` (dvp.md), not the payment
//! requests' snake-case fields, so they are read differently ([`GoObject`]):
//!
//! - A JSON key matches a field in any ASCII letter case (`merkleroots`, `MERKLEROOTS`), as Go's
//!   decoder matches it. Two keys that differ only in case are refused (Go keeps whichever comes
//!   last, so the result would depend on key order). Go also folds a few non-ASCII letters (the
//!   Kelvin sign as `k`); no honest client writes those, and they are not matched here.
//! - `null` is an absent field, as Go leaves a field untouched on `null`.
//! - Token addresses are hex with an optional lowercase `0x`, 1 to 40 digits (160 bits).
//! - Tree numbers and `merkleDepth` are JSON integers (tree numbers non-negative; `merkleDepth`
//!   is type-checked and ignored, as the reference ignores it).
//! - Every number the reference takes as a decimal string must be canonical and below r
//!   ([`crate::request::parse_field_element`]); every array has its exact length: 8 siblings
//!   per Merkle proof, the same n for each input array of a join-split (n ≤ 10), 2 outputs.
//!
//! Each error names the field by its JSON path in the reference's spelling
//! (`merkleProofs[2].elements[7]`), never its value. A failed rule answers 422 naming the rule
//! (`dvp::Rule::name`) and the request field it concerns.

pub mod join_split;
pub mod ownership;

use ark_ff::{BigInteger, PrimeField};
use enygma_circuit::{
    dvp::CheckFailure,
    merkle::{MerklePath, DEPTH},
    Fr, Secret,
};
use serde_json::{json, Map, Value};

use crate::request::{
    error, parse_array, parse_field_element, parse_secret, parse_secret_array, schema, to_decimal,
    RequestError,
};

/// Hex digits of an Ethereum address (160 bits).
const ADDRESS_HEX_DIGITS: usize = 40;

/// The largest tree number or depth Go's `int` holds.
const GO_INT_MAX: u64 = i64::MAX as u64;

/// A JSON object read as Go's `encoding/json` reads it into a struct (see the module
/// documentation): fields are looked up in any ASCII letter case and `null` reads as absent.
pub(crate) struct GoObject<'a> {
    map: &'a Map<String, Value>,
    /// The object's JSON path (`keyPairsIn[3]`), empty for the body.
    path: String,
}

impl<'a> GoObject<'a> {
    pub(crate) fn body(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            path: String::new(),
        }
    }

    /// The object at `path`.
    pub(crate) fn at(path: &str, value: &'a Value) -> Result<Self, RequestError> {
        let map = value
            .as_object()
            .ok_or_else(|| error(path, "expected a JSON object"))?;
        Ok(Self {
            map,
            path: path.to_string(),
        })
    }

    /// The JSON path of `field` in this object.
    fn name(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }

    fn lookup(&self, field: &str) -> Result<Option<&'a Value>, RequestError> {
        let mut found = self
            .map
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(field));
        let first = found.next();
        if found.next().is_some() {
            return Err(error(
                self.name(field),
                "given more than once, in different letter cases",
            ));
        }
        Ok(first.map(|(_, v)| v).filter(|v| !v.is_null()))
    }

    fn required(&self, field: &str) -> Result<&'a Value, RequestError> {
        self.lookup(field)?
            .ok_or_else(|| error(self.name(field), "missing"))
    }

    pub(crate) fn decimal(&self, field: &str) -> Result<Fr, RequestError> {
        parse_field_element(&self.name(field), self.required(field)?)
    }

    /// A private decimal (a key, salt or amount), parsed straight into a [`Secret`].
    pub(crate) fn secret(&self, field: &str) -> Result<Secret<Fr>, RequestError> {
        parse_secret(&self.name(field), self.required(field)?)
    }

    /// An array field of exactly `len` elements. Without `required` (Go's validator tag), an
    /// absent field reads as the empty array, which only `len` 0 accepts.
    pub(crate) fn array<T>(
        &self,
        field: &str,
        len: usize,
        required: bool,
        item: impl Fn(&str, &'a Value) -> Result<T, RequestError>,
    ) -> Result<Vec<T>, RequestError> {
        match self.lookup(field)? {
            Some(value) => parse_array(&self.name(field), len, value, item),
            None if !required && len == 0 => Ok(Vec::new()),
            None => Err(error(self.name(field), "missing")),
        }
    }

    /// An array field of at most `max` elements, its length taken from the request.
    pub(crate) fn array_up_to<T>(
        &self,
        field: &str,
        max: usize,
        required: bool,
        item: impl Fn(&str, &'a Value) -> Result<T, RequestError>,
    ) -> Result<Vec<T>, RequestError> {
        let len = match self.lookup(field)? {
            Some(Value::Array(items)) if items.len() > max => {
                return Err(error(
                    self.name(field),
                    format!("at most {max} elements, got {}", items.len()),
                ))
            }
            Some(Value::Array(items)) => items.len(),
            _ => 0,
        };
        self.array(field, len, required, item)
    }

    /// A required field, parsed by `parse` under its JSON path.
    pub(crate) fn parsed<T>(
        &self,
        field: &str,
        parse: impl FnOnce(&str, &'a Value) -> Result<T, RequestError>,
    ) -> Result<T, RequestError> {
        parse(&self.name(field), self.required(field)?)
    }

    pub(crate) fn object(&self, field: &str) -> Result<GoObject<'a>, RequestError> {
        GoObject::at(&self.name(field), self.required(field)?)
    }

    /// A hex token address (the integer it spells), private in the join-split statements.
    pub(crate) fn hex_address(&self, field: &str) -> Result<Secret<Fr>, RequestError> {
        parse_hex_address(&self.name(field), self.required(field)?)
    }

    /// An optional JSON integer field (Go `int`), non-negative.
    pub(crate) fn integer(&self, field: &str) -> Result<Option<Fr>, RequestError> {
        self.lookup(field)?
            .map(|v| parse_integer(&self.name(field), v))
            .transpose()
    }

    /// A field Go decodes into a string and the reference then ignores: only its type is
    /// checked, as Go's decoder checks it.
    pub(crate) fn ignored_string(&self, field: &str) -> Result<(), RequestError> {
        match self.lookup(field)? {
            None | Some(Value::String(_)) => Ok(()),
            Some(_) => Err(error(self.name(field), "expected a string")),
        }
    }

    /// A string field whose value is ignored but must not be empty (Go's `required`).
    pub(crate) fn non_empty_string(&self, field: &str) -> Result<(), RequestError> {
        match self.required(field)? {
            Value::String(s) if !s.is_empty() => Ok(()),
            Value::String(_) => Err(error(self.name(field), "missing")),
            _ => Err(error(self.name(field), "expected a string")),
        }
    }
}

/// A token address: hex digits (1 to 40, either case) with an optional lowercase `0x`. The
/// reference silently reads invalid hex as its valid prefix, and `0X…` as 0; both are refused.
/// The digits are accumulated in the field (40 hex digits are 160 bits, far below r), so no
/// heap integer holds the private address.
pub(crate) fn parse_hex_address(field: &str, value: &Value) -> Result<Secret<Fr>, RequestError> {
    let s = value
        .as_str()
        .ok_or_else(|| error(field, "expected a hex string"))?;
    let digits = s.strip_prefix("0x").unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(error(field, "not a hex address"));
    }
    if digits.len() > ADDRESS_HEX_DIGITS {
        return Err(error(
            field,
            format!("more than {ADDRESS_HEX_DIGITS} hex digits (160 bits)"),
        ));
    }
    let mut address = Secret::new(Fr::from(0u64));
    let sixteen = Fr::from(16u64);
    for digit in digits.chars().filter_map(|c| c.to_digit(16)) {
        *address = *address * sixteen + Fr::from(digit);
    }
    Ok(address)
}

/// `0x` and 40 lower-case hex digits: how generated requests write an address.
pub(crate) fn to_hex_address(address: &Fr) -> String {
    let bytes = address.into_bigint().to_bytes_be();
    // An address is below 2^160: its 32 big-endian bytes start with 12 zeros.
    format!(
        "0x{}",
        hex::encode(&bytes[bytes.len() - ADDRESS_HEX_DIGITS / 2..])
    )
}

/// A JSON integer as Go's `int` takes it, refused when negative (the reference echoes `-1` but
/// proves r − 1), fractional or written as a string.
pub(crate) fn parse_integer(field: &str, value: &Value) -> Result<Fr, RequestError> {
    match value.as_u64() {
        Some(n) if n <= GO_INT_MAX => Ok(Fr::from(n)),
        _ => Err(error(field, "expected a non-negative JSON integer")),
    }
}

/// A small field element (a tree number the service parsed from a JSON integer) as that
/// integer again.
pub(crate) fn to_integer(x: &Fr) -> Value {
    let n = x.into_bigint();
    assert!(n.num_bits() <= 63, "a tree number parsed from a Go int");
    Value::from(n.as_ref()[0])
}

/// A Merkle proof `{indices, elements}`: the decimal leaf index and exactly 8 siblings, level 0
/// first. (The reference pads missing siblings with 0 and drops extra ones.) An index of 256 or
/// more parses: it breaks the rule "leaf index below 256" (422).
pub(crate) fn parse_merkle_proof(
    field: &str,
    value: &Value,
) -> Result<Secret<MerklePath>, RequestError> {
    let proof = GoObject::at(field, value)?;
    // Filled in place: the path says which note is spent, so no unwiped copy is left behind.
    let mut path = Secret::new(MerklePath::zero());
    path.index = *proof.secret("indices")?;
    let siblings = parse_secret_array(&proof.name("elements"), DEPTH, proof.required("elements")?)?;
    path.siblings.copy_from_slice(&siblings);
    Ok(path)
}

pub(crate) fn merkle_proof_json(path: &MerklePath) -> Value {
    json!({
        "indices": to_decimal(&path.index),
        "elements": path.siblings.iter().map(to_decimal).collect::<Vec<_>>(),
    })
}

/// A failed DvP rule as the 422 names it: the rule's name and the request field it concerns, in
/// the request's spelling (`check (note in the tree) failed: merkleRoots[3]`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("check ({}) failed: {}", .0.rule.name(), camel_case(&.0.field))]
pub struct DvpCheckFailure(pub CheckFailure);

/// `merkle_proofs[2].indices` → `merkleProofs[2].indices`: the circuit crate names fields in
/// snake case, the reference's JSON in camel case.
fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// JSON Schema fragments of the DvP requests.
pub(crate) mod schemas {
    use super::*;

    /// The description every DvP request schema carries: what JSON Schema cannot say.
    pub const KEYS_NOTE: &str = "Keys are matched in any ASCII letter case (Go's decoder); \
        two keys differing only in case are refused. null reads as an absent field.";

    pub fn hex_address() -> Value {
        json!({
            "type": "string",
            "pattern": format!("^(0x)?[0-9a-fA-F]{{1,{ADDRESS_HEX_DIGITS}}}$"),
            "description": "a token contract address: hex, optional lowercase 0x",
        })
    }

    pub fn integer() -> Value {
        json!({ "type": "integer", "minimum": 0, "maximum": GO_INT_MAX })
    }

    /// `{publicKey, privateKey}` with one of the two read (a decimal) and the other ignored
    /// (any string).
    pub fn key_pair(read: &str) -> Value {
        let ignored = if read == "publicKey" {
            "privateKey"
        } else {
            "publicKey"
        };
        schema::object(
            vec![
                (read, schema::decimal()),
                (ignored, json!({ "type": "string" })),
            ],
            &[read],
        )
    }

    pub fn merkle_proof() -> Value {
        schema::object(
            vec![
                ("indices", schema::decimal()),
                ("elements", schema::array(schema::decimal(), DEPTH)),
            ],
            &["indices", "elements"],
        )
    }

    /// Adds [`KEYS_NOTE`] and `extra` to an object schema's description.
    pub fn described(mut object: Value, extra: &str) -> Value {
        object["description"] = Value::from(format!("{KEYS_NOTE} {extra}").trim().to_string());
        object
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the registry: generated requests of every DvP instance parse, pass the checks,
    /// and their public inputs are the circuit's, in `public_signal`'s order.
    #[test]
    fn generated_requests_prepare_with_the_circuits_public_inputs() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(14);
        let dvp: Vec<_> = crate::statements::instances()
            .filter(|i| i.k().is_none())
            .collect();
        assert_eq!(dvp.len(), 3);
        for instance in dvp {
            let spec = crate::statements::RequestSpec {
                index: 3,
                ..Default::default()
            };
            let body = instance.generate(&spec, &mut rng).unwrap();
            assert_eq!(instance.statement().size_of_request(&body), None);
            crate::statements::assert_request_proves_its_public_inputs(instance, &body);
            let with_sender = crate::statements::RequestSpec {
                sender: Some(0),
                ..Default::default()
            };
            assert!(instance.generate(&with_sender, &mut rng).is_err());
        }
    }

    fn object(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn keys_match_in_any_case_once() {
        let map = object(r#"{"MerkleRoot": "5", "uid": null, "a": "1", "A": "2"}"#);
        let o = GoObject::body(&map);
        assert_eq!(o.decimal("merkleRoot"), Ok(Fr::from(5u64)));
        assert_eq!(o.decimal("MERKLEROOT"), Ok(Fr::from(5u64)));
        assert_eq!(o.decimal("uid").unwrap_err().to_string(), "uid: missing");
        assert_eq!(
            o.decimal("a").unwrap_err().to_string(),
            "a: given more than once, in different letter cases"
        );
    }

    #[test]
    fn addresses_are_hex_with_an_optional_0x() {
        let parse = |s: &str| parse_hex_address("erc20Address", &Value::from(s)).map(|a| *a);
        let expected = Fr::from(0xabcdu64);
        assert_eq!(parse("0xABcd"), Ok(expected));
        assert_eq!(parse("abcd"), Ok(expected));
        assert_eq!(parse(&format!("0x{}", "f".repeat(40))).map(|_| ()), Ok(()));
        for bad in ["0X12", "0x", "", "12g4", "-12", " 12", "0x0x12"] {
            assert_eq!(
                parse(bad).unwrap_err().to_string(),
                "erc20Address: not a hex address",
                "{bad:?}"
            );
        }
        assert_eq!(
            parse(&"1".repeat(41)).unwrap_err().to_string(),
            "erc20Address: more than 40 hex digits (160 bits)"
        );
        assert_eq!(
            parse_hex_address("a", &Value::from(12)).unwrap_err().reason,
            "expected a hex string"
        );
        let address = Fr::from(num_bigint::BigUint::from(0x22e5u64) << 144u32);
        assert_eq!(to_hex_address(&address).len(), 42);
        assert_eq!(parse(&to_hex_address(&address)), Ok(address));
    }

    #[test]
    fn integers_are_non_negative_json_integers() {
        let parse = |v: Value| parse_integer("treeNumber", &v).map_err(|e| e.to_string());
        assert_eq!(parse(json!(3)), Ok(Fr::from(3u64)));
        let refused = Err("treeNumber: expected a non-negative JSON integer".to_string());
        for bad in [
            json!(-1),
            json!(1.5),
            json!("3"),
            json!(1e30),
            json!(u64::MAX),
        ] {
            assert_eq!(parse(bad.clone()), refused, "{bad}");
        }
        assert_eq!(to_integer(&Fr::from(7u64)), json!(7));
    }

    #[test]
    fn merkle_proofs_have_exactly_eight_siblings() {
        let proof = |n: usize| json!({"Indices": "3", "elements": vec!["1"; n]});
        let path = parse_merkle_proof("merkleProof", &proof(8)).unwrap();
        assert_eq!(path.index, Fr::from(3u64));
        assert_eq!(merkle_proof_json(&path)["elements"][7], "1");
        for n in [7, 9, 0] {
            assert_eq!(
                parse_merkle_proof("merkleProofs[1]", &proof(n))
                    .unwrap_err()
                    .to_string(),
                format!("merkleProofs[1].elements: expected 8 elements, got {n}")
            );
        }
        let leading_zero = json!({"indices": "03", "elements": vec!["1"; 8]});
        assert_eq!(
            parse_merkle_proof("merkleProof", &leading_zero)
                .unwrap_err()
                .to_string(),
            "merkleProof.indices: leading zeros are not allowed"
        );
    }

    #[test]
    fn failures_name_the_request_field() {
        use enygma_circuit::dvp::Rule;
        let failure = |rule, field: &str| CheckFailure {
            rule,
            field: field.into(),
        };
        assert_eq!(
            DvpCheckFailure(failure(Rule::NoteInTree, "merkle_roots[3]")).to_string(),
            "check (note in the tree) failed: merkleRoots[3]"
        );
        assert_eq!(
            DvpCheckFailure(failure(Rule::LeafIndex, "merkle_proofs[0].indices")).to_string(),
            "check (leaf index below 256) failed: merkleProofs[0].indices"
        );
        assert_eq!(camel_case("key_pairs_in[0]"), "keyPairsIn[0]");
        assert_eq!(camel_case("nullifier"), "nullifier");
    }
}
