//! snarkjs's JSON formats for Groth16 over BN254 (snarkjs calls the curve "bn128"):
//! `verification_key.json`, `proof.json` and `public.json`.
//!
//! snarkjs writes points in projective coordinates after normalizing them to affine, so every
//! point carries a trailing `"1"` (G1) or `["1", "0"]` (G2); the point at infinity is
//! `["0", "1", "0"]` / `[["0","0"], ["1","0"], ["0","0"]]`. Fq2 elements are `[c0, c1]`
//! (real part first), the opposite of the EVM order used by the reference response.
//! Files are written like snarkjs does, `JSON.stringify(value, null, 1)`: one-space indentation
//! and no trailing newline.

use ark_bn254::{Bn254, Fq, Fq12, Fq2, Fq6, Fr, G1Affine, G2Affine};
use ark_ec::{pairing::Pairing, AffineRepr};
use ark_ff::{One, Zero};
use ark_groth16::{Proof, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::decimal::{parse_field, to_decimal};
use crate::points::{fq2_from_decimal, fq2_to_decimal, g1_from_fq, g1_xy, g2_from_fq2, g2_xy};
use crate::response::ProofResponse;
use crate::Error;

/// The `protocol` value of Groth16 files.
pub const PROTOCOL: &str = "groth16";
/// The `curve` value snarkjs uses for BN254.
pub const CURVE: &str = "bn128";

/// snarkjs `verification_key.json` for Groth16, fields in snarkjs's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnarkjsVerificationKey {
    /// `"groth16"`.
    pub protocol: String,
    /// `"bn128"`.
    pub curve: String,
    /// Number of public inputs (`IC.len() - 1`).
    #[serde(rename = "nPublic")]
    pub n_public: usize,
    /// alpha in G1, `[x, y, "1"]`.
    pub vk_alpha_1: [String; 3],
    /// beta in G2, `[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]`.
    pub vk_beta_2: [[String; 2]; 3],
    /// gamma in G2.
    pub vk_gamma_2: [[String; 2]; 3],
    /// delta in G2.
    pub vk_delta_2: [[String; 2]; 3],
    /// e(alpha, beta) in Fq12 = `Fq6[w]`, Fq6 = `Fq2[v]`: `[[c0.c0, c0.c1, c0.c2], [c1.c0, c1.c1, c1.c2]]`,
    /// each an Fq2 `[c0, c1]`. snarkjs's verifier does not read it; it is there for tools that do.
    pub vk_alphabeta_12: [[[String; 2]; 3]; 2],
    /// The input commitments, `IC[0]` for the constant 1 and `IC[i]` for public input i.
    #[serde(rename = "IC")]
    pub ic: Vec<[String; 3]>,
}

/// snarkjs `proof.json` for Groth16, fields in snarkjs's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnarkjsProof {
    /// A, `[x, y, "1"]`.
    pub pi_a: [String; 3],
    /// B, `[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]`.
    pub pi_b: [[String; 2]; 3],
    /// C, `[x, y, "1"]`.
    pub pi_c: [String; 3],
    /// `"groth16"`.
    pub protocol: String,
    /// `"bn128"`.
    pub curve: String,
}

/// The two files snarkjs's `groth16 verify` reads besides the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnarkjsProofFiles {
    /// Contents of `proof.json`.
    pub proof_json: String,
    /// Contents of `public.json`.
    pub public_json: String,
}

/// Serializes like JavaScript's `JSON.stringify(value, null, 1)`.
pub fn to_snarkjs_string<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    value
        .serialize(&mut ser)
        .expect("serializing strings and numbers cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn g1_projective(p: &G1Affine) -> [String; 3] {
    if p.is_zero() {
        return ["0".into(), "1".into(), "0".into()];
    }
    let (x, y) = g1_xy(p);
    [to_decimal(&x), to_decimal(&y), "1".into()]
}

fn g2_projective(p: &G2Affine) -> [[String; 2]; 3] {
    if p.is_zero() {
        return [
            fq2_to_decimal(&Fq2::zero()),
            fq2_to_decimal(&Fq2::one()),
            fq2_to_decimal(&Fq2::zero()),
        ];
    }
    let (x, y) = g2_xy(p);
    [
        fq2_to_decimal(&x),
        fq2_to_decimal(&y),
        fq2_to_decimal(&Fq2::one()),
    ]
}

fn fq6_to_decimal(x: &Fq6) -> [[String; 2]; 3] {
    [
        fq2_to_decimal(&x.c0),
        fq2_to_decimal(&x.c1),
        fq2_to_decimal(&x.c2),
    ]
}

fn fq12_to_decimal(x: &Fq12) -> [[[String; 2]; 3]; 2] {
    [fq6_to_decimal(&x.c0), fq6_to_decimal(&x.c1)]
}

/// The pairing e(alpha, beta) as written in `vk_alphabeta_12`.
pub fn alphabeta(vk: &VerifyingKey<Bn254>) -> Fq12 {
    Bn254::pairing(vk.alpha_g1, vk.beta_g2).0
}

/// Renders a verifying key as snarkjs's `verification_key.json` structure.
pub fn vk_to_snarkjs(vk: &VerifyingKey<Bn254>) -> SnarkjsVerificationKey {
    SnarkjsVerificationKey {
        protocol: PROTOCOL.into(),
        curve: CURVE.into(),
        n_public: crate::num_public_inputs(vk),
        vk_alpha_1: g1_projective(&vk.alpha_g1),
        vk_beta_2: g2_projective(&vk.beta_g2),
        vk_gamma_2: g2_projective(&vk.gamma_g2),
        vk_delta_2: g2_projective(&vk.delta_g2),
        vk_alphabeta_12: fq12_to_decimal(&alphabeta(vk)),
        ic: vk.gamma_abc_g1.iter().map(g1_projective).collect(),
    }
}

/// `verification_key.json` text, as snarkjs writes it.
pub fn vk_to_snarkjs_json(vk: &VerifyingKey<Bn254>) -> String {
    to_snarkjs_string(&vk_to_snarkjs(vk))
}

fn g1_from_projective(c: &[String; 3], field: &str) -> Result<G1Affine, Error> {
    let x = parse_field::<Fq>(&c[0], &format!("{field}[0]"))?;
    let y = parse_field::<Fq>(&c[1], &format!("{field}[1]"))?;
    let z = parse_field::<Fq>(&c[2], &format!("{field}[2]"))?;
    if z.is_zero() {
        if x.is_zero() && y.is_one() {
            return Ok(G1Affine::identity());
        }
        return Err(Error::InvalidNumber {
            field: field.into(),
            reason: "point at infinity must be written [\"0\", \"1\", \"0\"]".into(),
        });
    }
    if !z.is_one() {
        return Err(Error::InvalidNumber {
            field: format!("{field}[2]"),
            reason: "expected \"1\" (affine point) or \"0\" (point at infinity)".into(),
        });
    }
    if x.is_zero() && y.is_zero() {
        // (0, 0, 1) is not a point; do not let the EVM's infinity encoding slip in here.
        return Err(Error::NotOnCurve {
            field: field.into(),
        });
    }
    g1_from_fq(x, y, field)
}

fn fq2_at(c: &[String; 2], path: &str) -> Result<Fq2, Error> {
    fq2_from_decimal(&c[0], &c[1], &format!("{path}[0]"), &format!("{path}[1]"))
}

fn g2_from_projective(c: &[[String; 2]; 3], field: &str) -> Result<G2Affine, Error> {
    let x = fq2_at(&c[0], &format!("{field}[0]"))?;
    let y = fq2_at(&c[1], &format!("{field}[1]"))?;
    let z = fq2_at(&c[2], &format!("{field}[2]"))?;
    if z.is_zero() {
        if x.is_zero() && y.is_one() {
            return Ok(G2Affine::identity());
        }
        return Err(Error::InvalidNumber {
            field: field.into(),
            reason:
                "point at infinity must be written [[\"0\",\"0\"], [\"1\",\"0\"], [\"0\",\"0\"]]"
                    .into(),
        });
    }
    if !z.is_one() {
        return Err(Error::InvalidNumber {
            field: format!("{field}[2]"),
            reason: "expected [\"1\", \"0\"] (affine point) or [\"0\", \"0\"] (point at infinity)"
                .into(),
        });
    }
    if x.is_zero() && y.is_zero() {
        return Err(Error::NotOnCurve {
            field: field.into(),
        });
    }
    g2_from_fq2(x, y, field)
}

fn check_header(protocol: &str, curve: &str) -> Result<(), Error> {
    if protocol != PROTOCOL {
        return Err(Error::InvalidFormat(format!(
            "protocol is {protocol:?}, expected {PROTOCOL:?}"
        )));
    }
    if curve != CURVE {
        return Err(Error::InvalidFormat(format!(
            "curve is {curve:?}, expected {CURVE:?}"
        )));
    }
    Ok(())
}

/// Reads a snarkjs verification key back, strictly: groth16/bn128, `nPublic` consistent with
/// `IC`, canonical values, points on the curve and in the subgroup, and `vk_alphabeta_12` equal
/// to e(alpha, beta).
pub fn vk_from_snarkjs(key: &SnarkjsVerificationKey) -> Result<VerifyingKey<Bn254>, Error> {
    check_header(&key.protocol, &key.curve)?;
    if key.ic.is_empty() {
        return Err(Error::InvalidKey("IC is empty".into()));
    }
    if key.n_public + 1 != key.ic.len() {
        return Err(Error::InvalidKey(format!(
            "nPublic is {} but IC has {} points (expected nPublic + 1)",
            key.n_public,
            key.ic.len()
        )));
    }
    let vk = VerifyingKey {
        alpha_g1: g1_from_projective(&key.vk_alpha_1, "vk_alpha_1")?,
        beta_g2: g2_from_projective(&key.vk_beta_2, "vk_beta_2")?,
        gamma_g2: g2_from_projective(&key.vk_gamma_2, "vk_gamma_2")?,
        delta_g2: g2_from_projective(&key.vk_delta_2, "vk_delta_2")?,
        gamma_abc_g1: key
            .ic
            .iter()
            .enumerate()
            .map(|(i, p)| g1_from_projective(p, &format!("IC[{i}]")))
            .collect::<Result<_, _>>()?,
    };
    if fq12_to_decimal(&alphabeta(&vk)) != key.vk_alphabeta_12 {
        return Err(Error::InvalidKey(
            "vk_alphabeta_12 is not e(vk_alpha_1, vk_beta_2)".into(),
        ));
    }
    Ok(vk)
}

/// [`vk_from_snarkjs`] from `verification_key.json` text.
pub fn vk_from_snarkjs_json(json: &str) -> Result<VerifyingKey<Bn254>, Error> {
    vk_from_snarkjs(&serde_json::from_str(json)?)
}

/// Renders a proof as snarkjs's `proof.json` structure.
pub fn proof_to_snarkjs(proof: &Proof<Bn254>) -> SnarkjsProof {
    SnarkjsProof {
        pi_a: g1_projective(&proof.a),
        pi_b: g2_projective(&proof.b),
        pi_c: g1_projective(&proof.c),
        protocol: PROTOCOL.into(),
        curve: CURVE.into(),
    }
}

/// Renders public inputs as snarkjs's `public.json` structure (decimal strings).
pub fn public_to_snarkjs(inputs: &[Fr]) -> Vec<String> {
    inputs.iter().map(to_decimal).collect()
}

/// Renders a proof and its public inputs as the texts of `proof.json` and `public.json`.
pub fn proof_files(proof: &Proof<Bn254>, inputs: &[Fr]) -> SnarkjsProofFiles {
    SnarkjsProofFiles {
        proof_json: to_snarkjs_string(&proof_to_snarkjs(proof)),
        public_json: to_snarkjs_string(&public_to_snarkjs(inputs)),
    }
}

/// Turns a reference-format response body into snarkjs's `proof.json` and `public.json`
/// (`enygma export-proof FILE --format snarkjs`). The response is parsed strictly first
/// (see [`crate::parse_proof_response`]), so a malformed one is an error, never a bad file.
pub fn response_to_snarkjs(response_json: &str) -> Result<SnarkjsProofFiles, Error> {
    let (proof, inputs) = crate::parse_proof_response(response_json)?;
    Ok(proof_files(&proof, &inputs))
}

/// Reads a snarkjs proof and public inputs back, strictly.
pub fn proof_from_snarkjs(
    proof: &SnarkjsProof,
    public: &[String],
) -> Result<(Proof<Bn254>, Vec<Fr>), Error> {
    check_header(&proof.protocol, &proof.curve)?;
    let p = Proof {
        a: g1_from_projective(&proof.pi_a, "pi_a")?,
        b: g2_from_projective(&proof.pi_b, "pi_b")?,
        c: g1_from_projective(&proof.pi_c, "pi_c")?,
    };
    let inputs = public
        .iter()
        .enumerate()
        .map(|(i, s)| parse_field::<Fr>(s, &format!("public[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((p, inputs))
}

/// Turns snarkjs's `proof.json` and `public.json` texts into a reference-format response.
pub fn snarkjs_to_response(proof_json: &str, public_json: &str) -> Result<ProofResponse, Error> {
    let proof: SnarkjsProof = serde_json::from_str(proof_json)?;
    let public: Vec<String> = serde_json::from_str(public_json)?;
    let (p, inputs) = proof_from_snarkjs(&proof, &public)?;
    Ok(ProofResponse::from_proof(&p, &inputs))
}
