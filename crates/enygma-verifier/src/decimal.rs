//! Canonical decimal strings of field elements, the one format every request, proof response and
//! snarkjs file of this workspace uses: ASCII digits only, no sign, no whitespace, no leading
//! zero (but `"0"` itself), and a value below the field's modulus (never reduced).
//!
//! Errors say what is wrong, never what the value was: a request's private inputs go through the
//! same parser. For the same reason the digits are accumulated into fixed 256-bit limbs on the
//! stack (no heap copy of a possibly secret number), zeroized before returning.

use ark_ff::{BigInt, PrimeField};
use zeroize::Zeroize;

use crate::Error;

/// Why a string is not a canonical decimal field element. The messages name no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    /// Empty, or a character that is not an ASCII digit.
    #[error("not a decimal number")]
    NotDigits,
    /// More than one digit, the first a zero.
    #[error("leading zeros are not allowed")]
    LeadingZero,
    /// A number at or above the modulus (`r` for scalars, `p` for coordinates).
    #[error("not below the field modulus {modulus}")]
    NotBelowModulus {
        /// The modulus' usual name: `r` or `p`.
        modulus: &'static str,
    },
}

/// Parses a canonical decimal string into an element of `F` (BN254's Fr or Fq).
pub fn parse_decimal<F: PrimeField<BigInt = BigInt<4>>>(s: &str) -> Result<F, DecimalError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DecimalError::NotDigits);
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(DecimalError::LeadingZero);
    }
    below_modulus(s).ok_or(DecimalError::NotBelowModulus {
        modulus: modulus_name::<F>(),
    })
}

/// The digits of `s` (ASCII digits only) as an element of `F` if the number is below the modulus.
fn below_modulus<F: PrimeField<BigInt = BigInt<4>>>(s: &str) -> Option<F> {
    let mut limbs = BigInt::<4>::zero();
    let mut fits = true;
    for digit in s.bytes().map(|b| u128::from(b - b'0')) {
        let mut carry = digit;
        for limb in limbs.0.iter_mut() {
            let v = u128::from(*limb) * 10 + carry;
            *limb = v as u64;
            carry = v >> 64;
        }
        if carry != 0 {
            fits = false;
            break;
        }
    }
    // `from_bigint` refuses a value at or above the modulus.
    let x = if fits { F::from_bigint(limbs) } else { None };
    limbs.zeroize();
    x
}

fn modulus_name<F: PrimeField>() -> &'static str {
    if F::MODULUS.as_ref() == <crate::Fr as PrimeField>::MODULUS.as_ref() {
        "r"
    } else if F::MODULUS.as_ref() == <crate::Fq as PrimeField>::MODULUS.as_ref() {
        "p"
    } else {
        "of the field"
    }
}

/// [`parse_decimal`], the error naming `field` (`pi_a[0]`, `public_signal[3]`).
pub(crate) fn parse_field<F: PrimeField<BigInt = BigInt<4>>>(
    s: &str,
    field: &str,
) -> Result<F, Error> {
    parse_decimal(s).map_err(|e| Error::InvalidNumber {
        field: field.to_string(),
        reason: e.to_string(),
    })
}

/// Renders a field element as its canonical decimal string.
pub fn to_decimal<F: PrimeField>(x: &F) -> String {
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
        assert_eq!(
            parse_decimal::<Fr>(R),
            Err(DecimalError::NotBelowModulus { modulus: "r" })
        );
        assert_eq!(
            parse_decimal::<Fq>(P),
            Err(DecimalError::NotBelowModulus { modulus: "p" })
        );
        // 2^256 - 1 (78 digits) and 2^256 overflow checks.
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert!(fr(max).is_err());
        let two_256 =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        let e = fr(two_256).unwrap_err().to_string();
        assert!(e.contains("not below the field modulus r"), "{e}");
        // The 80-digit value of the reference's bad-transfer-k6 sample.
        let e = fr(&"9".repeat(80)).unwrap_err().to_string();
        assert!(e.contains("not below the field modulus r"), "{e}");
    }

    #[test]
    fn error_names_the_field_and_no_value() {
        let e = parse_field::<Fr>("x1", "public_signal[3]").unwrap_err();
        assert_eq!(e.to_string(), "public_signal[3]: not a decimal number");
        let e = fr(&format!("{R}0")).unwrap_err().to_string();
        assert!(!e.contains(R), "{e}");
    }

    mod properties {
        use super::*;
        use num_bigint::BigUint;
        use proptest::prelude::*;

        /// What the parser must do, from arbitrary-precision integers: accept exactly the
        /// canonical decimals below the modulus, with their value.
        fn expected(s: &str, modulus: &BigUint) -> Option<BigUint> {
            let canonical = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s.len() == 1 || !s.starts_with('0'));
            let n: BigUint = s.parse().ok().filter(|_| canonical)?;
            (n < *modulus).then_some(n)
        }

        fn check<F: PrimeField<BigInt = BigInt<4>>>(s: &str) -> Result<(), TestCaseError> {
            let modulus = BigUint::from(F::MODULUS);
            let got = parse_decimal::<F>(s)
                .ok()
                .map(|x| BigUint::from(x.into_bigint()));
            prop_assert_eq!(got.clone(), expected(s, &modulus), "{:?}", s);
            if let Some(n) = got {
                prop_assert_eq!(to_decimal(&F::from(n)), s);
            }
            Ok(())
        }

        /// Decimals near a modulus: its digits with the last few replaced.
        fn near(modulus: &'static str) -> impl Strategy<Value = String> {
            ("[0-9]{1,3}", 0usize..3).prop_map(move |(tail, cut)| {
                let head = &modulus[..modulus.len() - tail.len() - cut];
                format!("{head}{tail}")
            })
        }

        proptest! {
            #[test]
            fn digit_strings_with_leading_zeros(s in "0{0,3}[0-9]{0,80}") {
                check::<Fr>(&s)?;
                check::<Fq>(&s)?;
            }

            #[test]
            fn values_around_the_moduli(r in near(R), p in near(P)) {
                check::<Fr>(&r)?;
                check::<Fq>(&r)?;
                check::<Fr>(&p)?;
                check::<Fq>(&p)?;
            }

            #[test]
            fn arbitrary_text(s in "[0-9+\\- _.xa-f\u{660}-\u{669}]{0,12}") {
                check::<Fr>(&s)?;
            }
        }
    }
}
