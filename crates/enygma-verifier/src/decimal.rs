//! Strict decimal strings for field elements: only ASCII digits, no sign, no leading zero
//! (except "0" itself), no whitespace, and the value must be below the field modulus.

use ark_ff::{BigInt, PrimeField};

use crate::Error;

/// The longest decimal string of a value below 2^256 has 78 digits.
const MAX_DIGITS: usize = 78;

/// Parses a decimal string into 256-bit little-endian limbs, or explains why it is not one.
fn parse_u256(s: &str) -> Result<[u64; 4], String> {
    if s.is_empty() {
        return Err("empty string, expected a decimal number".into());
    }
    if let Some(bad) = s.chars().find(|c| !c.is_ascii_digit()) {
        return Err(format!(
            "not a decimal number: unexpected character {bad:?} (only digits 0-9 are allowed)"
        ));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err("not canonical: leading zero".into());
    }
    if s.len() > MAX_DIGITS {
        return Err(format!("out of range: {} digits", s.len()));
    }
    let mut limbs = [0u64; 4];
    for b in s.bytes() {
        let mut carry = u128::from(b - b'0');
        for limb in limbs.iter_mut() {
            let v = u128::from(*limb) * 10 + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry != 0 {
            return Err("out of range: at least 2^256".into());
        }
    }
    Ok(limbs)
}

/// Shows at most the first 90 characters of a bad value in an error message.
fn excerpt(s: &str) -> String {
    if s.chars().count() > 90 {
        let head: String = s.chars().take(90).collect();
        format!("{head}...")
    } else {
        s.to_string()
    }
}

/// Parses a canonical decimal string into an element of `F` (Fr or Fq), rejecting values at or
/// above the modulus rather than reducing them.
pub(crate) fn parse_field<F: PrimeField<BigInt = BigInt<4>>>(
    s: &str,
    field: &str,
) -> Result<F, Error> {
    let limbs = parse_u256(s).map_err(|reason| Error::InvalidNumber {
        field: field.to_string(),
        reason: format!("{reason} (value {:?})", excerpt(s)),
    })?;
    F::from_bigint(BigInt::new(limbs)).ok_or_else(|| Error::InvalidNumber {
        field: field.to_string(),
        reason: format!(
            "not canonical: not below the field modulus (value {:?})",
            excerpt(s)
        ),
    })
}

/// Renders a field element as its canonical decimal string.
pub(crate) fn to_decimal<F: PrimeField>(x: &F) -> String {
    x.into_bigint().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bn254::{Fq, Fr};
    use ark_ff::{One, Zero};

    const R: &str = crate::SCALAR_FIELD_MODULUS;
    const P: &str = crate::BASE_FIELD_MODULUS;

    fn fr(s: &str) -> Result<Fr, Error> {
        parse_field::<Fr>(s, "x")
    }

    #[test]
    fn parses_canonical_values() {
        assert_eq!(fr("0").unwrap(), Fr::zero());
        assert_eq!(fr("1").unwrap(), Fr::one());
        assert_eq!(
            fr("12345678901234567890").unwrap(),
            Fr::from(12345678901234567890u64)
        );
        // r - 1 is the largest scalar.
        let r_minus_1 =
            "21888242871839275222246405745257275088548364400416034343698204186575808495616";
        assert_eq!(fr(r_minus_1).unwrap(), -Fr::one());
        assert_eq!(to_decimal(&(-Fr::one())), r_minus_1);
        // Base field: p - 1 parses, and a value between r and p is a valid Fq but not a valid Fr.
        let p_minus_1 =
            "21888242871839275222246405745257275088696311157297823662689037894645226208582";
        assert_eq!(parse_field::<Fq>(p_minus_1, "x").unwrap(), -Fq::one());
        assert!(parse_field::<Fq>(R, "x").is_ok());
        assert!(fr(R).is_err());
    }

    #[test]
    fn renders_decimal() {
        assert_eq!(to_decimal(&Fr::zero()), "0");
        assert_eq!(to_decimal(&Fr::from(42u64)), "42");
    }

    #[test]
    fn rejects_non_canonical_and_malformed() {
        for bad in [
            "", " 1", "1 ", "+1", "-1", "01", "00", "0x10", "1e3", "1.0", "1_000", "١", "12a",
        ] {
            let e = fr(bad).unwrap_err();
            assert!(
                matches!(e, Error::InvalidNumber { .. }),
                "{bad:?} gave {e:?}"
            );
        }
        // The modulus itself and anything above it are rejected, not reduced.
        assert!(fr(R).is_err());
        assert!(parse_field::<Fq>(P, "x").is_err());
        // 2^256 - 1 (78 digits) and 2^256 overflow checks.
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert!(fr(max).is_err());
        let two_256 =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        let e = fr(two_256).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        // The 80-digit value of the reference's bad-transfer-k6 sample.
        let e = fr(&"9".repeat(80)).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn error_names_the_field() {
        let e = parse_field::<Fr>("x1", "public_signal[3]").unwrap_err();
        assert!(e.to_string().starts_with("public_signal[3]: "), "{e}");
    }
}
