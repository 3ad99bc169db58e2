//! What every statement's request parser shares: the 400 error that names a field (never a
//! value), the body as a JSON object, arrays of an exact length, canonical decimal field
//! elements, and the JSON Schema fragments that describe them ([`schema`]).

use std::fmt;

use ark_ff::PrimeField;
use enygma_circuit::Fr;
use num_bigint::BigUint;
use serde_json::{Map, Value};

/// A request that cannot be parsed: HTTP 400. `field` is a JSON path such as
/// `previous_commits[2][1]`, or `body` when the body is not a JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestError {
    pub field: String,
    pub reason: String,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for RequestError {}

pub fn error(field: impl Into<String>, reason: impl Into<String>) -> RequestError {
    RequestError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// A request body as a JSON object. serde_json's syntax errors give a position, never the
/// input's text.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, RequestError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| error("body", format!("malformed JSON ({e})")))?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(error("body", "expected a JSON object")),
    }
}

/// An array of exactly `len` elements, each parsed by `item` under its own name (`name[i]`).
pub fn parse_array<'a, T>(
    name: &str,
    len: usize,
    value: &'a Value,
    item: impl Fn(&str, &'a Value) -> Result<T, RequestError>,
) -> Result<Vec<T>, RequestError> {
    let items = value
        .as_array()
        .ok_or_else(|| error(name, "expected an array"))?;
    if items.len() != len {
        return Err(error(
            name,
            format!("expected {len} elements, got {}", items.len()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| item(&format!("{name}[{i}]"), v))
        .collect()
}

/// Parses one canonical decimal field element.
pub fn parse_field_element(field: &str, value: &Value) -> Result<Fr, RequestError> {
    let s = value
        .as_str()
        .ok_or_else(|| error(field, "expected a decimal string"))?;
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error(field, "not a decimal number"));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(error(field, "leading zeros are not allowed"));
    }
    let n: BigUint = s
        .parse()
        .map_err(|_| error(field, "not a decimal number"))?;
    if n >= BigUint::from_bytes_le(&ark_ff::BigInteger::to_bytes_le(&Fr::MODULUS)) {
        return Err(error(field, "not below the field modulus r"));
    }
    Ok(Fr::from(n))
}

/// Decimal string of a field element's canonical integer.
pub fn to_decimal(x: &Fr) -> String {
    x.into_bigint().to_string()
}

/// JSON Schema (draft 2020-12) fragments for what this module parses, so that every statement's
/// `request_schema` describes its fields with the same words as its parser enforces them.
pub mod schema {
    use serde_json::{json, Value};

    /// A canonical decimal: `0`, or digits without a leading zero; at most 77 digits (r has 77).
    /// "Below r" is not expressible as a pattern; the parser enforces it.
    pub const DECIMAL_PATTERN: &str = "^(0|[1-9][0-9]{0,76})$";

    /// A decimal-string field element.
    pub fn decimal() -> Value {
        json!({
            "type": "string",
            "pattern": DECIMAL_PATTERN,
            "description": "a canonical decimal integer below the BN254 scalar field modulus r",
        })
    }

    /// An array of exactly `len` items.
    pub fn array(items: Value, len: usize) -> Value {
        json!({ "type": "array", "items": items, "minItems": len, "maxItems": len })
    }

    /// An array of at most `max` items.
    pub fn array_up_to(items: Value, max: usize) -> Value {
        json!({ "type": "array", "items": items, "maxItems": max })
    }

    /// An object with these properties, `required` among them; other properties are allowed
    /// (the reference's JSON binding ignores them, and so do the parsers).
    pub fn object(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
        let properties: serde_json::Map<String, Value> = properties
            .into_iter()
            .map(|(name, schema)| (name.to_string(), schema))
            .collect();
        json!({ "type": "object", "properties": properties, "required": required })
    }
}
