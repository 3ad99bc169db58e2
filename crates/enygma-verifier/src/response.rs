//! The reference service's proof response:
//! `{"pi_a":[ax,ay], "pi_b":[[bx1,bx0],[by1,by0]], "pi_c":[cx,cy], "public_signal":[...]}`.
//!
//! All values are decimal strings of affine coordinates; each G2 coordinate is written
//! (c1, c0), imaginary part first, the order the EVM pairing precompile (EIP-197) reads.

use ark_bn254::{Bn254, Fr};
use ark_groth16::Proof;
use serde::{Deserialize, Serialize};

use crate::decimal::{parse_field, to_decimal};
use crate::points::{g1_from_decimal, g1_to_decimal, g2_from_decimal_evm, g2_to_decimal_evm};
use crate::Error;

/// A proof response as the reference service (and enygma-server) returns it.
///
/// Deserialization is strict about shape: exactly these four fields, each coordinate a JSON
/// string, arrays of exactly the right length. [`ProofResponse::to_proof`] then checks values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofResponse {
    /// A, `[x, y]`.
    pub pi_a: [String; 2],
    /// B, `[[x.c1, x.c0], [y.c1, y.c0]]`.
    pub pi_b: [[String; 2]; 2],
    /// C, `[x, y]`.
    pub pi_c: [String; 2],
    /// The public inputs, in circuit order.
    pub public_signal: Vec<String>,
}

impl ProofResponse {
    /// Parses the JSON shape only (no value checks; see [`ProofResponse::to_proof`]). A key
    /// repeated in an object is refused ([`crate::json`]).
    pub fn from_json(json: &str) -> Result<Self, Error> {
        crate::json::check_unique_keys(json.as_bytes()).map_err(|e| Error::Json(e.to_string()))?;
        Ok(serde_json::from_str(json)?)
    }

    /// Compact JSON, fields in the reference's order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("serializing strings cannot fail")
    }

    /// Renders a proof and its public inputs.
    pub fn from_proof(proof: &Proof<Bn254>, public_inputs: &[Fr]) -> Self {
        ProofResponse {
            pi_a: g1_to_decimal(&proof.a),
            pi_b: g2_to_decimal_evm(&proof.b),
            pi_c: g1_to_decimal(&proof.c),
            public_signal: public_inputs.iter().map(to_decimal).collect(),
        }
    }

    /// Checks every value and converts: coordinates must be canonical decimal strings below the
    /// base field modulus p and form points of the curve (B also in the r-torsion subgroup);
    /// public inputs must be canonical decimal strings below the scalar field order r.
    /// All-zero coordinates are read as the point at infinity, as the EVM does.
    pub fn to_proof(&self) -> Result<(Proof<Bn254>, Vec<Fr>), Error> {
        let a = g1_from_decimal(&self.pi_a, "pi_a")?;
        let b = g2_from_decimal_evm(&self.pi_b, "pi_b")?;
        let c = g1_from_decimal(&self.pi_c, "pi_c")?;
        let inputs = self
            .public_signal
            .iter()
            .enumerate()
            .map(|(i, s)| parse_field::<Fr>(s, &format!("public_signal[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((Proof { a, b, c }, inputs))
    }
}

/// Parses a reference-format response body strictly into an arkworks proof and its public
/// inputs (see [`ProofResponse`] and [`ProofResponse::to_proof`] for what is checked). The
/// number of public inputs is not checked here; [`crate::verify_proof`] checks it against the key.
pub fn parse_proof_response(json: &str) -> Result<(Proof<Bn254>, Vec<Fr>), Error> {
    ProofResponse::from_json(json)?.to_proof()
}
