//! The reference's 200 body: `{"pi_a": [ax, ay], "pi_b": [[bx1, bx0], [by1, by0]],
//! "pi_c": [cx, cy], "public_signal": [...]}`, decimal strings of affine coordinates, with each
//! G2 coordinate in (c1, c0) order as the EVM pairing precompile expects.

use ark_bn254::{Bn254, Fq, Fq2, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_ff::{PrimeField, Zero};
use ark_groth16::Proof;
use enygma_circuit::Fr;
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::{parse_field_element, to_decimal, RequestError};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofResponse {
    pub pi_a: [String; 2],
    pub pi_b: [[String; 2]; 2],
    pub pi_c: [String; 2],
    pub public_signal: Vec<String>,
}

fn fq_decimal(x: &Fq) -> String {
    x.into_bigint().to_string()
}

fn g1_strings(p: &G1Affine) -> [String; 2] {
    let (x, y) = p.xy().unwrap_or((Fq::zero(), Fq::zero()));
    [fq_decimal(&x), fq_decimal(&y)]
}

fn g2_strings(p: &G2Affine) -> [[String; 2]; 2] {
    let (x, y) = p.xy().unwrap_or((Fq2::zero(), Fq2::zero()));
    [[fq_decimal(&x.c1), fq_decimal(&x.c0)], [fq_decimal(&y.c1), fq_decimal(&y.c0)]]
}

impl ProofResponse {
    pub fn new(proof: &Proof<Bn254>, public_inputs: &[Fr]) -> Self {
        Self {
            pi_a: g1_strings(&proof.a),
            pi_b: g2_strings(&proof.b),
            pi_c: g1_strings(&proof.c),
            public_signal: public_inputs.iter().map(to_decimal).collect(),
        }
    }

    /// The proof and public inputs, with every coordinate canonical and every point on its
    /// curve and in its subgroup; an error names the offending field.
    pub fn to_proof(&self) -> Result<(Proof<Bn254>, Vec<Fr>), RequestError> {
        let a = g1(&self.pi_a, "pi_a")?;
        let b = g2(&self.pi_b, "pi_b")?;
        let c = g1(&self.pi_c, "pi_c")?;
        let inputs = self
            .public_signal
            .iter()
            .enumerate()
            .map(|(i, s)| parse_field_element(&format!("public_signal[{i}]"), &Value::from(s.as_str())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((Proof { a, b, c }, inputs))
    }
}

fn fq(s: &str, field: &str) -> Result<Fq, RequestError> {
    let bad = |reason: &str| RequestError { field: field.to_string(), reason: reason.to_string() };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0')) {
        return Err(bad("not a canonical decimal number"));
    }
    let n: BigUint = s.parse().map_err(|_| bad("not a decimal number"))?;
    if n >= BigUint::from_bytes_le(&ark_ff::BigInteger::to_bytes_le(&Fq::MODULUS)) {
        return Err(bad("not below the base field modulus"));
    }
    Ok(Fq::from(n))
}

fn g1(xy: &[String; 2], field: &str) -> Result<G1Affine, RequestError> {
    let (x, y) = (fq(&xy[0], &format!("{field}[0]"))?, fq(&xy[1], &format!("{field}[1]"))?);
    let p = if x.is_zero() && y.is_zero() { G1Affine::zero() } else { G1Affine::new_unchecked(x, y) };
    if !p.is_on_curve() {
        return Err(RequestError { field: field.into(), reason: "not a point on BN254's G1".into() });
    }
    Ok(p)
}

fn g2(xy: &[[String; 2]; 2], field: &str) -> Result<G2Affine, RequestError> {
    let coord = |i: usize| -> Result<Fq2, RequestError> {
        Ok(Fq2::new(fq(&xy[i][1], &format!("{field}[{i}][1]"))?, fq(&xy[i][0], &format!("{field}[{i}][0]"))?))
    };
    let (x, y) = (coord(0)?, coord(1)?);
    let p = if x.is_zero() && y.is_zero() { G2Affine::zero() } else { G2Affine::new_unchecked(x, y) };
    if !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(RequestError { field: field.into(), reason: "not a point in BN254's G2 subgroup".into() });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::CurveGroup;
    use ark_std::UniformRand;
    use rand::SeedableRng;

    #[test]
    fn round_trips_and_uses_c1_c0_order() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let proof = Proof::<Bn254> {
            a: ark_bn254::G1Projective::rand(&mut rng).into_affine(),
            b: ark_bn254::G2Projective::rand(&mut rng).into_affine(),
            c: ark_bn254::G1Projective::rand(&mut rng).into_affine(),
        };
        let inputs = vec![Fr::from(3u64), -Fr::from(1u64)];
        let r = ProofResponse::new(&proof, &inputs);
        assert_eq!(r.pi_b[0][0], fq_decimal(&proof.b.x.c1));
        assert_eq!(r.pi_b[1][1], fq_decimal(&proof.b.y.c0));
        assert_eq!(r.to_proof().unwrap(), (proof, inputs));

        let mut swapped = r.clone();
        swapped.pi_b[0].swap(0, 1);
        assert!(swapped.to_proof().is_err());
        let mut bad = r;
        bad.public_signal[1] = "01".into();
        assert_eq!(bad.to_proof().unwrap_err().to_string(), "public_signal[1]: leading zeros are not allowed");
    }
}
