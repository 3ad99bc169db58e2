//! JSON Schema fragments (draft 2020-12, the dialect of OpenAPI 3.1) for the request and
//! response bodies, shared by every statement's [`Statement::request_schema`] and by the
//! server's OpenAPI document. The one owner of the canonical-decimal pattern.
//!
//! A field element is a JSON string, the canonical decimal of an integer below the modulus:
//! digits only, no sign, no leading zero (but `"0"` itself), below r (exactly what
//! [`super::parse_field_element`] accepts). "Below r" is written out as a regular expression
//! ([`decimal_below_pattern`]), so a schema validator or a test generator knows it too: about 4
//! KB of pattern, which is why the fragments refer to it (`{"$ref":
//! "#/components/schemas/FieldElement"}`) instead of repeating it. The OpenAPI document puts
//! [`definitions`] under `components/schemas`; [`standalone`] makes a self-contained schema.
//!
//! [`Statement::request_schema`]: crate::statements::Statement::request_schema

use ark_ff::PrimeField;
use serde_json::{json, Map, Value};

/// Where the fragments' `$ref`s point: OpenAPI's shared schemas.
pub const REF_PREFIX: &str = "#/components/schemas/";

/// The shared schema of a field element (a value below the scalar field order r).
pub const FIELD_ELEMENT: &str = "FieldElement";

/// The shared schema of a proof coordinate (a value below the base field modulus p).
pub const BASE_FIELD_ELEMENT: &str = "BaseFieldElement";

/// The dialect of every schema here (and OpenAPI 3.1's default).
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// A regular expression (ECMA-262 and Rust/Python compatible, anchored) that matches exactly the
/// canonical decimal strings of the integers `0 <= n < modulus`; `modulus` is a decimal string
/// without leading zeros, at least 1.
///
/// A shorter number than the modulus is below it; one of the same length is below it when, at
/// the first digit where they differ, its digit is smaller: one alternative per position.
pub fn decimal_below_pattern(modulus: &str) -> String {
    let digits: Vec<u8> = modulus.bytes().map(|b| b - b'0').collect();
    assert!(
        !digits.is_empty() && digits.iter().all(|&d| d <= 9) && digits[0] != 0,
        "the modulus must be a canonical positive decimal"
    );
    let n = digits.len();
    let mut alternatives = Vec::new();
    if n > 1 || digits[0] > 0 {
        alternatives.push("0".to_string());
    }
    if n > 2 {
        alternatives.push(format!("[1-9][0-9]{{0,{}}}", n - 2));
    } else if n == 2 {
        alternatives.push("[1-9]".to_string());
    }
    for (i, &d) in digits.iter().enumerate() {
        // The first digit of an n-digit number is not 0 (that would be a leading zero).
        let low = if i == 0 { 1 } else { 0 };
        if d <= low {
            continue;
        }
        let class = if d - 1 == low {
            low.to_string()
        } else {
            format!("[{low}-{}]", d - 1)
        };
        let rest = match n - i - 1 {
            0 => String::new(),
            1 => "[0-9]".to_string(),
            m => format!("[0-9]{{{m}}}"),
        };
        alternatives.push(format!("{}{class}{rest}", &modulus[..i]));
    }
    format!("^({})$", alternatives.join("|"))
}

fn modulus_decimal<F: PrimeField>() -> String {
    F::MODULUS.to_string()
}

fn decimal_string(modulus: &str, description: &str) -> Value {
    json!({
        "type": "string",
        "pattern": decimal_below_pattern(modulus),
        "minLength": 1,
        "maxLength": modulus.len(),
        "description": description,
    })
}

/// The shared schemas the fragments refer to, by name (for `components/schemas`).
pub fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert(
        FIELD_ELEMENT.into(),
        decimal_string(
            &modulus_decimal::<enygma_circuit::Fr>(),
            "A BN254 scalar field element: the canonical decimal string (digits only, no sign, \
             no leading zero) of an integer below r. Anything else is answered 400 naming the \
             field.",
        ),
    );
    defs.insert(
        BASE_FIELD_ELEMENT.into(),
        decimal_string(
            &modulus_decimal::<ark_bn254::Fq>(),
            "A BN254 base field element (a proof coordinate): the canonical decimal string of \
             an integer below p.",
        ),
    );
    defs
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("{REF_PREFIX}{name}") })
}

/// A field element (below r).
pub fn field_element() -> Value {
    reference(FIELD_ELEMENT)
}

/// A proof coordinate (below p).
pub fn base_field_element() -> Value {
    reference(BASE_FIELD_ELEMENT)
}

/// An array of exactly `len` items.
pub fn array(items: Value, len: usize) -> Value {
    json!({ "type": "array", "items": items, "minItems": len, "maxItems": len })
}

/// A decimal-string field element: the name the DvP statements' schemas use for
/// [`field_element`].
pub fn decimal() -> Value {
    field_element()
}

/// An array of at most `max` items.
pub fn array_up_to(items: Value, max: usize) -> Value {
    json!({ "type": "array", "items": items, "maxItems": max })
}

/// An object with these properties, `required` among them; other properties are allowed (the
/// reference's JSON binding ignores them, and so do the parsers).
pub fn object(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// A request object: every listed field required, in this order; other fields are allowed (the
/// parsers ignore them, as the reference's JSON binding does).
pub fn request_object<'a>(fields: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    let (mut properties, mut required) = (Map::new(), Vec::new());
    for (name, schema) in fields {
        required.push(Value::from(name));
        properties.insert(name.to_string(), schema);
    }
    json!({ "type": "object", "required": required, "properties": properties })
}

/// The reference's proof response (and the verify routes' request): `pi_a`, `pi_b` (each G2
/// coordinate imaginary part first), `pi_c`, and exactly `num_public_inputs` public inputs.
/// Nothing else: the verify routes refuse unknown fields.
pub fn proof_response(num_public_inputs: usize) -> Value {
    let g1 = || array(base_field_element(), 2);
    json!({
        "type": "object",
        "required": ["pi_a", "pi_b", "pi_c", "public_signal"],
        "additionalProperties": false,
        "properties": {
            "pi_a": g1(),
            "pi_b": array(array(base_field_element(), 2), 2),
            "pi_c": g1(),
            "public_signal": array(field_element(), num_public_inputs),
        },
    })
}

/// `schema` as a self-contained JSON Schema document: the dialect, and the shared definitions
/// where its `$ref`s point.
pub fn standalone(schema: &Value) -> Value {
    json!({
        "$schema": DIALECT,
        "allOf": [schema],
        "components": { "schemas": definitions() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_field_element;
    use num_bigint::BigUint;
    use rand::{Rng, SeedableRng};

    fn regex_for(modulus: &str) -> regex::Regex {
        regex::Regex::new(&decimal_below_pattern(modulus)).unwrap()
    }

    /// The pattern and the parser accept exactly the same strings: edge cases around r, and
    /// random strings of every length and shape.
    #[test]
    fn the_pattern_accepts_what_the_parser_accepts() {
        let r = modulus_decimal::<enygma_circuit::Fr>();
        let re = regex_for(&r);
        let r_big: BigUint = r.parse().unwrap();
        let parses = |s: &str| parse_field_element("x", &Value::from(s)).is_ok();
        let mut cases: Vec<String> = vec![
            "0".into(),
            "1".into(),
            "9".into(),
            "10".into(),
            "00".into(),
            "01".into(),
            "-1".into(),
            "+1".into(),
            " 1".into(),
            "1 ".into(),
            "1\n".into(),
            "".into(),
            "1e3".into(),
            "0x10".into(),
            r.clone(),
            (&r_big - 1u32).to_string(),
            (&r_big + 1u32).to_string(),
            (&r_big * 10u32).to_string(),
            "9".repeat(76),
            "9".repeat(77),
            format!("1{}", "0".repeat(76)),
            format!("0{}", &r[1..]),
        ];
        // Every prefix of r with one digit lowered or raised, padded to r's length.
        for i in 0..r.len() {
            for delta in [-1i32, 1] {
                let d = (r.as_bytes()[i] - b'0') as i32 + delta;
                if (0..=9).contains(&d) {
                    cases.push(format!("{}{d}{}", &r[..i], &r[i + 1..]));
                    cases.push(format!("{}{d}{}", &r[..i], "9".repeat(r.len() - i - 1)));
                }
            }
        }
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(17);
        for _ in 0..2000 {
            let len = rng.gen_range(1..=79);
            let s: String = (0..len)
                .map(|_| char::from(b"0123456789"[rng.gen_range(0..10)]))
                .collect();
            cases.push(s);
        }
        for s in &cases {
            assert_eq!(re.is_match(s), parses(s), "{s:?}");
        }
        assert!(re.is_match(&(&r_big - 1u32).to_string()));
        assert!(!re.is_match(&r));
    }

    #[test]
    fn patterns_of_small_moduli() {
        let re = regex_for("205");
        for n in 0..1000u32 {
            assert_eq!(re.is_match(&n.to_string()), n < 205, "{n}");
        }
        assert!(!re.is_match("007"));
        let re = regex_for("10");
        for n in 0..100u32 {
            assert_eq!(re.is_match(&n.to_string()), n < 10, "{n}");
        }
        let re = regex_for("7");
        for n in 0..20u32 {
            assert_eq!(re.is_match(&n.to_string()), n < 7, "{n}");
        }
    }

    #[test]
    fn the_proof_coordinate_pattern_is_below_p() {
        let p = modulus_decimal::<ark_bn254::Fq>();
        let re = regex_for(&p);
        let p_big: BigUint = p.parse().unwrap();
        assert!(re.is_match(&(&p_big - 1u32).to_string()));
        assert!(!re.is_match(&p));
        // Coordinates may be at or above r (p > r).
        assert!(re.is_match(&modulus_decimal::<enygma_circuit::Fr>()));
    }
}
