//! snarkjs' Groth16 `.zkey`, read into our proving key and bound to our R1CS.
//!
//! Layout (little-endian; snarkjs `src/zkey_new.js`, `src/zkey_utils.js`): `zkey`, version 1,
//! the number of sections, then each section as its id (u32), its length (u64) and its bytes:
//! 1. the protocol (1 = Groth16);
//! 2. the Groth16 header: the base field's size and prime q, the scalar field's size and prime
//!    r, wires, public inputs (without the one), the domain size, α₁, β₁, β₂, γ₂, δ₁, δ₂;
//! 3. IC (the verifying key's `γ_abc`), one G1 point per public wire, the one included;
//! 4. the R1CS coefficients of A and B snarkjs' setup used: a count, then (matrix, constraint,
//!    wire, `value·R²` in standard form), the public inputs' constraints `xᵢ · 0 = 0` last;
//! 5. A, 6. B in G1, 7. B in G2 (one point per wire); 8. C (the private wires'); 9. H (one per
//!    point of the domain, the Lagrange basis of the odd points of the domain twice as large);
//! 10. the contributions: the circuit hash, a count, each contribution.
//!
//! Points are affine, each coordinate in Montgomery form (R = 2²⁵⁶), G2 coordinates as
//! (c0, c1); the identity is all zeros. Every point is checked to be on its curve and in the
//! prime-order subgroup, every field element to be canonical, every section to have exactly
//! the length its counts give.

use ark_bn254::{Bn254, Fq, Fq2, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, BigInteger, Field, PrimeField, Zero};
use ark_groth16::{ProvingKey, VerifyingKey};
use blake2::{Blake2b512, Digest};
use enygma_circuit::Fr;
use rayon::prelude::*;

use crate::{
    groth16::R1cs,
    keys::{KeyOrigin, KeyRecord},
    qap::Reduction,
};

const G1_BYTES: usize = 64;
const G2_BYTES: usize = 128;
const FIELD_BYTES: usize = 32;
/// (matrix, constraint, wire) and the value.
const COEFFICIENT_BYTES: usize = 12 + FIELD_BYTES;

/// Why a zkey is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ZkeyError {
    #[error("not a zkey file (no `zkey` magic, or version {0} instead of 1)")]
    NotAZkey(u32),
    #[error("the file is truncated: {0}")]
    Truncated(String),
    #[error("the zkey is not for Groth16 (protocol {0}; only 1 is)")]
    NotGroth16(u32),
    #[error("the zkey is not for BN254: {0}")]
    WrongCurve(&'static str),
    #[error("section {section} is {found} bytes long, its counts say {expected}")]
    SectionLength {
        section: u32,
        found: usize,
        expected: usize,
    },
    #[error("section {0} is missing or repeated")]
    Section(u32),
    #[error("{what} {index}: a coordinate is not below the field's prime")]
    NotCanonical { what: &'static str, index: usize },
    #[error("{what} {index} is not a point of its curve")]
    NotOnCurve { what: &'static str, index: usize },
    #[error("{what} {index} is not in the prime-order subgroup")]
    NotInSubgroup { what: &'static str, index: usize },
    #[error("the zkey was made for another constraint system: {0}")]
    OtherCircuit(String),
    #[error("the zkey has no phase-2 contribution: its δ is the generator and anyone can forge proofs for it")]
    NoContribution,
    #[error("the last contribution's δ is not the key's δ₁: the contributions do not belong to these points")]
    ContributionMismatch,
    #[error("contribution {0}: {1}")]
    Contribution(usize, String),
}

/// A zkey's key, coefficients and contributions, every point checked.
pub struct Zkey {
    pub proving_key: ProvingKey<Bn254>,
    pub wires: usize,
    pub public_inputs: usize,
    pub domain_size: usize,
    /// Section 4: (matrix 0 = A / 1 = B, constraint, wire, value).
    pub coefficients: Vec<(u32, u32, u32, Fr)>,
    /// The hashes snarkjs prints for each contribution, in order (Blake2b-512).
    pub contribution_hashes: Vec<[u8; 64]>,
}

/// Reads the zkey `bytes`, then checks that it is for `r1cs` exactly: its sizes, its public
/// inputs and its coefficient section against the ones snarkjs' setup derives from the `.r1cs`
/// we export ([`crate::ceremony::r1cs_file`]). Returns our proving key and its record
/// (snarkjs' reduction, a ceremony of that many contributions).
///
/// A zkey without contributions is refused, except one whose δ₁ is `development_delta_g1`
/// (the instance's development δ₁, [`crate::keys::development_delta_g1`]): a development key
/// written by [`write`], recorded as a development key, never as a ceremony's.
pub fn import(
    bytes: &[u8],
    r1cs: &R1cs,
    development_delta_g1: &G1Affine,
) -> Result<(ProvingKey<Bn254>, KeyRecord), ZkeyError> {
    let zkey = read(bytes)?;
    check_circuit(&zkey, r1cs)?;
    let origin = match zkey.contribution_hashes.last() {
        None if zkey.proving_key.delta_g1 == *development_delta_g1 => KeyOrigin::DevelopmentSeed,
        None => return Err(ZkeyError::NoContribution),
        Some(last) => KeyOrigin::Ceremony {
            contributions: zkey.contribution_hashes.len() as u32,
            final_hash: Some(hex::encode(last)),
            zkey_sha256: hex::encode(sha2::Sha256::digest(bytes)),
        },
    };
    let record = KeyRecord {
        origin,
        reduction: Reduction::Circom,
    };
    Ok((zkey.proving_key, record))
}

/// The coefficient section snarkjs writes for `r1cs`: each constraint's A terms, then its B
/// terms, then `1·xᵢ` in A for the one and each public input, after the constraints.
pub fn expected_coefficients(r1cs: &R1cs) -> Vec<(u32, u32, u32, Fr)> {
    let m = r1cs.num_constraints;
    let mut out = Vec::new();
    for row in 0..m {
        for (k, matrix) in r1cs.matrices[..2].iter().enumerate() {
            out.extend(
                matrix[row]
                    .iter()
                    .map(|&(value, wire)| (k as u32, row as u32, wire as u32, value)),
            );
        }
    }
    out.extend(
        (0..r1cs.num_instance_variables).map(|s| (0, (m + s) as u32, s as u32, Fr::from(1u64))),
    );
    out
}

/// The zkey of `pk` for `r1cs`, laid out as snarkjs' `zkey new` lays it out (sections 1 to 10,
/// in order), with no phase-2 contribution: what snarkjs' and rapidsnark's provers and `zkey
/// export verificationkey` read. `pk` must be a key of snarkjs' reduction
/// ([`crate::qap::CircomGroth16`]: an H query of one point per point of the domain);
/// [`import`] reads it back point for point.
///
/// Only development keys are written this way ([`crate::keys::generate_with_reduction`]):
/// a zkey with no contribution is as forgeable as the seed it came from, and [`import`]
/// records it as such.
pub fn write(pk: &ProvingKey<Bn254>, r1cs: &R1cs) -> Vec<u8> {
    // The circuit hash is left zero: no contribution's transcript refers to it.
    let mut contributions = vec![0u8; 64];
    contributions.extend(0u32.to_le_bytes());
    write_with_contributions(pk, r1cs, contributions)
}

/// [`write`] with section 10 as given.
fn write_with_contributions(
    pk: &ProvingKey<Bn254>,
    r1cs: &R1cs,
    contributions: Vec<u8>,
) -> Vec<u8> {
    let wires = r1cs.num_instance_variables + r1cs.num_witness_variables;
    let domain = (r1cs.num_constraints + r1cs.num_instance_variables).next_power_of_two();
    let mut sections: Vec<(u32, Vec<u8>)> = vec![(1, 1u32.to_le_bytes().to_vec())];
    let mut h = Vec::new();
    for (size, prime) in [
        (FIELD_BYTES as u32, Fq::MODULUS.to_bytes_le()),
        (FIELD_BYTES as u32, Fr::MODULUS.to_bytes_le()),
    ] {
        h.extend(size.to_le_bytes());
        h.extend(prime);
    }
    for n in [wires, r1cs.num_instance_variables - 1, domain] {
        h.extend((n as u32).to_le_bytes());
    }
    put_g1(&mut h, &pk.vk.alpha_g1);
    put_g1(&mut h, &pk.beta_g1);
    put_g2(&mut h, &pk.vk.beta_g2);
    put_g2(&mut h, &pk.vk.gamma_g2);
    put_g1(&mut h, &pk.delta_g1);
    put_g2(&mut h, &pk.vk.delta_g2);
    sections.push((2, h));
    let g1s = |points: &[G1Affine]| {
        let mut out = Vec::with_capacity(points.len() * G1_BYTES);
        points.iter().for_each(|p| put_g1(&mut out, p));
        out
    };
    sections.push((3, g1s(&pk.vk.gamma_abc_g1)));
    let coefficients = expected_coefficients(r1cs);
    let mut c = Vec::with_capacity(4 + coefficients.len() * COEFFICIENT_BYTES);
    c.extend((coefficients.len() as u32).to_le_bytes());
    // value·R² in standard form: the prover reads it as a Montgomery element (value·R) and
    // multiplies it by a witness value read from the .wtns in standard form.
    let r2 = Fr::from(2u64).pow([512]);
    for (matrix, row, wire, value) in coefficients {
        for n in [matrix, row, wire] {
            c.extend(n.to_le_bytes());
        }
        c.extend((value * r2).into_bigint().to_bytes_le());
    }
    sections.push((4, c));
    sections.push((5, g1s(&pk.a_query)));
    sections.push((6, g1s(&pk.b_g1_query)));
    let mut b2 = Vec::with_capacity(pk.b_g2_query.len() * G2_BYTES);
    pk.b_g2_query.iter().for_each(|p| put_g2(&mut b2, p));
    sections.push((7, b2));
    sections.push((8, g1s(&pk.l_query)));
    sections.push((9, g1s(&pk.h_query)));
    sections.push((10, contributions));
    let mut out = b"zkey".to_vec();
    out.extend(1u32.to_le_bytes());
    out.extend((sections.len() as u32).to_le_bytes());
    for (id, body) in sections {
        out.extend(id.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
    }
    out
}

/// A coordinate as snarkjs stores it: Montgomery form, little-endian.
fn montgomery(x: &Fq) -> [u8; FIELD_BYTES] {
    x.0.to_bytes_le().try_into().expect("32 bytes")
}

/// The identity as all zeros, as snarkjs writes it.
fn put_g1(out: &mut Vec<u8>, p: &G1Affine) {
    let (x, y) = p.xy().unwrap_or_default();
    out.extend(montgomery(&x));
    out.extend(montgomery(&y));
}

fn put_g2(out: &mut Vec<u8>, p: &G2Affine) {
    let (x, y) = p.xy().unwrap_or_default();
    for c in [x.c0, x.c1, y.c0, y.c1] {
        out.extend(montgomery(&c));
    }
}

fn check_circuit(zkey: &Zkey, r1cs: &R1cs) -> Result<(), ZkeyError> {
    let other = |reason: String| Err(ZkeyError::OtherCircuit(reason));
    let wires = r1cs.num_instance_variables + r1cs.num_witness_variables;
    let public = r1cs.num_instance_variables - 1;
    let domain = (r1cs.num_constraints + r1cs.num_instance_variables).next_power_of_two();
    if zkey.wires != wires {
        return other(format!("{} wires, the circuit has {wires}", zkey.wires));
    }
    if zkey.public_inputs != public {
        return other(format!(
            "{} public inputs, the circuit has {public}",
            zkey.public_inputs
        ));
    }
    if zkey.domain_size != domain {
        return other(format!(
            "a domain of {}, the circuit needs {domain}",
            zkey.domain_size
        ));
    }
    let expected = expected_coefficients(r1cs);
    if zkey.coefficients.len() != expected.len() {
        return other(format!(
            "{} coefficients of A and B, the circuit has {}",
            zkey.coefficients.len(),
            expected.len()
        ));
    }
    if let Some(i) = (0..expected.len()).find(|&i| zkey.coefficients[i] != expected[i]) {
        let (matrix, row, wire, _) = expected[i];
        return other(format!(
            "coefficient {i} (the circuit's {} of constraint {row}, wire {wire}) differs",
            ["A", "B"][matrix as usize]
        ));
    }
    Ok(())
}

/// Reads a zkey and checks its own consistency (lengths, points, field elements); not yet
/// which circuit it is for ([`import`] does).
pub fn read(bytes: &[u8]) -> Result<Zkey, ZkeyError> {
    let mut file = Cursor::new(bytes, "the file header");
    let magic = file.take(4)?;
    let version = file.u32()?;
    if magic != b"zkey" || version != 1 {
        return Err(ZkeyError::NotAZkey(if magic == b"zkey" {
            version
        } else {
            0
        }));
    }
    let count = file.u32()?;
    let mut sections: [Option<&[u8]>; 11] = [None; 11];
    for _ in 0..count {
        let id = file.u32()?;
        let len = file.u64()?;
        file.what = "a section's bytes";
        let body = file.take(usize::try_from(len).map_err(|_| file.truncated())?)?;
        file.what = "the section table";
        match sections.get_mut(id as usize) {
            Some(slot @ None) if id >= 1 => *slot = Some(body),
            Some(Some(_)) => return Err(ZkeyError::Section(id)),
            // snarkjs ignores sections it does not know; so do we.
            _ => {}
        }
    }
    let section = |id: u32| sections[id as usize].ok_or(ZkeyError::Section(id));

    let mut protocol = Cursor::new(section(1)?, "section 1");
    let protocol = protocol.u32()?;
    if protocol != 1 {
        return Err(ZkeyError::NotGroth16(protocol));
    }

    let mut h = Cursor::new(section(2)?, "the Groth16 header (section 2)");
    if h.u32()? as usize != FIELD_BYTES || h.take(FIELD_BYTES)? != Fq::MODULUS.to_bytes_le() {
        return Err(ZkeyError::WrongCurve("its base field is not BN254's"));
    }
    if h.u32()? as usize != FIELD_BYTES || h.take(FIELD_BYTES)? != Fr::MODULUS.to_bytes_le() {
        return Err(ZkeyError::WrongCurve("its scalar field is not BN254's"));
    }
    let wires = h.u32()? as usize;
    let public_inputs = h.u32()? as usize;
    let domain_size = h.u32()? as usize;
    let alpha_g1 = g1(h.take(G1_BYTES)?, "α₁", 0)?;
    let beta_g1 = g1(h.take(G1_BYTES)?, "β₁", 0)?;
    let beta_g2 = g2(h.take(G2_BYTES)?, "β₂", 0)?;
    let gamma_g2 = g2(h.take(G2_BYTES)?, "γ₂", 0)?;
    let delta_g1 = g1(h.take(G1_BYTES)?, "δ₁", 0)?;
    let delta_g2 = g2(h.take(G2_BYTES)?, "δ₂", 0)?;
    if public_inputs >= wires {
        return Err(ZkeyError::OtherCircuit(format!(
            "{public_inputs} public inputs among {wires} wires"
        )));
    }

    let gamma_abc_g1 = g1_section(section(3)?, 3, public_inputs + 1, "IC point")?;
    let coefficients = coefficient_section(section(4)?)?;
    let a_query = g1_section(section(5)?, 5, wires, "A point")?;
    let b_g1_query = g1_section(section(6)?, 6, wires, "B₁ point")?;
    let b_g2_query = g2_section(section(7)?, 7, wires)?;
    let l_query = g1_section(section(8)?, 8, wires - public_inputs - 1, "C point")?;
    let h_query = g1_section(section(9)?, 9, domain_size, "H point")?;
    let (contribution_hashes, last_delta) = contributions(section(10)?)?;
    if last_delta.is_some_and(|d| d != delta_g1) {
        return Err(ZkeyError::ContributionMismatch);
    }

    Ok(Zkey {
        proving_key: ProvingKey {
            vk: VerifyingKey {
                alpha_g1,
                beta_g2,
                gamma_g2,
                delta_g2,
                gamma_abc_g1,
            },
            beta_g1,
            delta_g1,
            a_query,
            b_g1_query,
            b_g2_query,
            h_query,
            l_query,
        },
        wires,
        public_inputs,
        domain_size,
        coefficients,
        contribution_hashes,
    })
}

/// A reader over one section that names it when the bytes run out.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, at: 0, what }
    }

    fn truncated(&self) -> ZkeyError {
        ZkeyError::Truncated(format!("{} ends at byte {}", self.what, self.bytes.len()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ZkeyError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| self.truncated())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, ZkeyError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, ZkeyError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

fn exact_length(section: u32, bytes: &[u8], expected: usize) -> Result<(), ZkeyError> {
    if bytes.len() != expected {
        return Err(ZkeyError::SectionLength {
            section,
            found: bytes.len(),
            expected,
        });
    }
    Ok(())
}

fn bigint(bytes: &[u8]) -> BigInt<4> {
    BigInt::new(core::array::from_fn(|i| {
        u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }))
}

/// A base-field coordinate in Montgomery form, refused unless below q.
fn fq(bytes: &[u8], what: &'static str, index: usize) -> Result<Fq, ZkeyError> {
    let raw = bigint(bytes);
    if raw >= Fq::MODULUS {
        return Err(ZkeyError::NotCanonical { what, index });
    }
    Ok(Fq::new_unchecked(raw))
}

fn g1(bytes: &[u8], what: &'static str, index: usize) -> Result<G1Affine, ZkeyError> {
    let (x, y) = (
        fq(&bytes[..32], what, index)?,
        fq(&bytes[32..], what, index)?,
    );
    if x.is_zero() && y.is_zero() {
        return Ok(G1Affine::zero());
    }
    let p = G1Affine::new_unchecked(x, y);
    check_point(
        p.is_on_curve(),
        || p.is_in_correct_subgroup_assuming_on_curve(),
        what,
        index,
    )?;
    Ok(p)
}

fn g2(bytes: &[u8], what: &'static str, index: usize) -> Result<G2Affine, ZkeyError> {
    let c = |i: usize| fq(&bytes[32 * i..32 * i + 32], what, index);
    let (x, y) = (Fq2::new(c(0)?, c(1)?), Fq2::new(c(2)?, c(3)?));
    if x.is_zero() && y.is_zero() {
        return Ok(G2Affine::zero());
    }
    let p = G2Affine::new_unchecked(x, y);
    check_point(
        p.is_on_curve(),
        || p.is_in_correct_subgroup_assuming_on_curve(),
        what,
        index,
    )?;
    Ok(p)
}

fn check_point(
    on_curve: bool,
    in_subgroup: impl FnOnce() -> bool,
    what: &'static str,
    index: usize,
) -> Result<(), ZkeyError> {
    if !on_curve {
        return Err(ZkeyError::NotOnCurve { what, index });
    }
    if !in_subgroup() {
        return Err(ZkeyError::NotInSubgroup { what, index });
    }
    Ok(())
}

fn g1_section(
    bytes: &[u8],
    id: u32,
    count: usize,
    what: &'static str,
) -> Result<Vec<G1Affine>, ZkeyError> {
    exact_length(id, bytes, count * G1_BYTES)?;
    bytes
        .par_chunks_exact(G1_BYTES)
        .enumerate()
        .map(|(i, p)| g1(p, what, i))
        .collect()
}

fn g2_section(bytes: &[u8], id: u32, count: usize) -> Result<Vec<G2Affine>, ZkeyError> {
    exact_length(id, bytes, count * G2_BYTES)?;
    bytes
        .par_chunks_exact(G2_BYTES)
        .enumerate()
        .map(|(i, p)| g2(p, "B₂ point", i))
        .collect()
}

/// Section 4; each value is stored as `value·R²` in standard form (snarkjs multiplies by R²
/// so that its prover's Montgomery products come out right), so it is divided by R² here.
fn coefficient_section(bytes: &[u8]) -> Result<Vec<(u32, u32, u32, Fr)>, ZkeyError> {
    let mut c = Cursor::new(bytes, "the coefficients (section 4)");
    let count = c.u32()? as usize;
    exact_length(4, bytes, 4 + count * COEFFICIENT_BYTES)?;
    (0..count)
        .map(|index| {
            let (matrix, row, wire) = (c.u32()?, c.u32()?, c.u32()?);
            let raw = bigint(c.take(FIELD_BYTES)?);
            if raw >= Fr::MODULUS || matrix > 1 {
                return Err(ZkeyError::NotCanonical {
                    what: "coefficient",
                    index,
                });
            }
            // new_unchecked reads Montgomery form: twice divides by R.
            let value = Fr::new_unchecked(Fr::new_unchecked(raw).into_bigint());
            Ok((matrix, row, wire, value))
        })
        .collect()
}

/// Section 10: each contribution's hash as snarkjs computes it (Blake2b-512 of δ after the
/// contribution, the proof of knowledge's three points, all uncompressed, and the transcript
/// hash) and the last contribution's δ.
#[allow(clippy::type_complexity)]
fn contributions(bytes: &[u8]) -> Result<(Vec<[u8; 64]>, Option<G1Affine>), ZkeyError> {
    let mut c = Cursor::new(bytes, "the contributions (section 10)");
    c.take(64)?; // the circuit hash
    let count = c.u32()? as usize;
    let mut hashes = Vec::new();
    let mut last = None;
    for i in 0..count {
        let mut hasher = Blake2b512::new();
        let delta_after = g1(c.take(G1_BYTES)?, "contribution δ", i)?;
        hasher.update(uncompressed(c.bytes, c.at - G1_BYTES, G1_BYTES));
        for size in [G1_BYTES, G1_BYTES, G2_BYTES] {
            let point = c.take(size)?;
            let ok = if size == G1_BYTES {
                g1(point, "contribution proof point", i).map(drop)
            } else {
                g2(point, "contribution proof point", i).map(drop)
            };
            ok?;
            hasher.update(uncompressed(c.bytes, c.at - size, size));
        }
        hasher.update(c.take(64)?); // transcript
        let _kind = c.u32()?;
        let params = c.u32()? as usize;
        c.take(params)?;
        hashes.push(hasher.finalize().into());
        last = Some(delta_after);
    }
    if c.at != bytes.len() {
        return Err(ZkeyError::Contribution(
            count,
            "bytes after the last contribution".into(),
        ));
    }
    Ok((hashes, last))
}

/// snarkjs' uncompressed form of the point at `bytes[at..at + size]`: each coordinate out of
/// Montgomery form, big-endian, a G2 coordinate as (c1, c0) (its bytes reversed as a whole).
fn uncompressed(bytes: &[u8], at: usize, size: usize) -> Vec<u8> {
    let coordinate = size / 2;
    let mut out = Vec::with_capacity(size);
    for half in bytes[at..at + size].chunks_exact(coordinate) {
        let mut le: Vec<u8> = half
            .chunks_exact(FIELD_BYTES)
            .flat_map(|limb| Fq::new_unchecked(bigint(limb)).into_bigint().to_bytes_le())
            .collect();
        le.reverse();
        out.extend(le);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{groth16::r1cs, qap::CircomGroth16, statements};
    use ark_snark::SNARK;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Section 10 with one contribution whose δ is `delta`.
    fn one_contribution(delta: &G1Affine) -> Vec<u8> {
        let mut contributions = vec![0u8; 64];
        contributions.extend(1u32.to_le_bytes());
        put_g1(&mut contributions, delta);
        put_g1(&mut contributions, &G1Affine::generator());
        put_g1(&mut contributions, &G1Affine::generator());
        put_g2(&mut contributions, &G2Affine::generator());
        contributions.extend([7u8; 64]);
        contributions.extend([0u8; 8]);
        contributions
    }

    /// A development key of snarkjs' reduction written by [`write`] (no contribution): read
    /// back point for point and recorded as a development key when its δ₁ is the development
    /// one; refused as forgeable otherwise.
    #[test]
    fn a_development_zkey_is_recorded_as_development_never_as_a_ceremony() {
        let ownership = statements::by_stem("ownership-721").unwrap();
        let shape = r1cs(ownership.circuit_for_setup()).unwrap();
        let pk = crate::keys::generate_with_reduction(ownership, Reduction::Circom).unwrap();
        let bytes = write(&pk, &shape);

        let development = crate::keys::development_delta_g1(ownership);
        assert_eq!(development, pk.delta_g1);
        let (imported, record) = import(&bytes, &shape, &development).unwrap();
        assert!(imported == pk, "the key reads back point for point");
        assert_eq!(
            record,
            KeyRecord {
                origin: KeyOrigin::DevelopmentSeed,
                reduction: Reduction::Circom
            }
        );
        let err = import(&bytes, &shape, &G1Affine::generator())
            .err()
            .unwrap();
        assert_eq!(err, ZkeyError::NoContribution);
    }

    /// A key made by a setup with snarkjs' H query for the ERC-721 ownership instance, written
    /// as a zkey: imported whole, point for point, marked for snarkjs' reduction and as a
    /// one-contribution ceremony; refused truncated, with a point's bit flipped, with a
    /// coefficient changed, and against another instance's R1CS.
    #[test]
    fn a_zkey_imports_and_damaged_or_foreign_ones_are_refused() {
        let ownership = statements::by_stem("ownership-721").unwrap();
        let shape = r1cs(ownership.circuit_for_setup()).unwrap();
        let (pk, _) = CircomGroth16::circuit_specific_setup(
            ownership.circuit_for_setup(),
            &mut ChaCha20Rng::seed_from_u64(21),
        )
        .unwrap();
        let bytes = write_with_contributions(&pk, &shape, one_contribution(&pk.delta_g1));
        // Not this key's δ: only a zkey without contributions is compared with it.
        let not_development = G1Affine::generator();

        let (imported, record) = import(&bytes, &shape, &not_development).unwrap();
        assert!(imported == pk, "the key reads back point for point");
        assert_eq!(record.reduction, Reduction::Circom);
        let KeyOrigin::Ceremony {
            contributions,
            final_hash,
            ..
        } = &record.origin
        else {
            panic!("not a ceremony origin: {:?}", record.origin)
        };
        assert_eq!(*contributions, 1);
        assert_eq!(final_hash.as_ref().map(String::len), Some(128));

        // Truncated anywhere: in a section or in the table of sections.
        for len in [3, 20, bytes.len() / 2, bytes.len() - 1] {
            let err = import(&bytes[..len], &shape, &not_development)
                .err()
                .unwrap();
            assert!(
                matches!(err, ZkeyError::Truncated(_) | ZkeyError::NotAZkey(_)),
                "{len}: {err}"
            );
        }
        // A bit of α₁'s y flipped: off the curve (or not canonical).
        let alpha_y = 12 + 12 + 4 + 32 + 4 + 32 + 12 + 32;
        let mut flipped = bytes.clone();
        flipped[alpha_y + 3] ^= 0x10;
        let err = import(&flipped, &shape, &not_development).err().unwrap();
        assert!(
            matches!(
                err,
                ZkeyError::NotOnCurve { what: "α₁", .. } | ZkeyError::NotCanonical { .. }
            ),
            "{err}"
        );
        // The last point of the file's H section flipped: the same, and named.
        let h_section = bytes.len() - (8 + 64 + 4 + 64 * 3 + 128 + 64 + 8) - 64;
        let mut flipped = bytes.clone();
        flipped[h_section + 40] ^= 0x01;
        let err = import(&flipped, &shape, &not_development).err().unwrap();
        assert!(
            matches!(
                err,
                ZkeyError::NotOnCurve {
                    what: "H point",
                    ..
                }
            ),
            "{err}"
        );

        // Another constraint system: the k=2 transfer's.
        let transfer = statements::by_stem("transfer-k2").unwrap();
        let other = r1cs(transfer.circuit_for_setup()).unwrap();
        let err = import(&bytes, &other, &not_development).err().unwrap();
        assert!(matches!(err, ZkeyError::OtherCircuit(_)), "{err}");
        // Same sizes, one coefficient changed: found.
        let mut changed = shape.matrices.clone();
        changed[1][5][0].0 += Fr::from(1u64);
        let same_sizes = R1cs {
            matrices: changed,
            num_instance_variables: shape.num_instance_variables,
            num_witness_variables: shape.num_witness_variables,
            num_constraints: shape.num_constraints,
        };
        let err = import(&bytes, &same_sizes, &not_development).err().unwrap();
        assert!(err.to_string().contains("B of constraint 5"), "{err}");
    }
}
