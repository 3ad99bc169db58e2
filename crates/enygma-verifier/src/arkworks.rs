//! arkworks's own format: `CanonicalSerialize` in compressed form, raw or as lowercase hex.
//! Reading validates (points on the curve and in the subgroup).

use ark_bn254::Bn254;
use ark_groth16::{Proof, VerifyingKey};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};

use crate::Error;

/// Compressed `CanonicalSerialize` bytes of a verifying key.
pub fn vk_to_bytes(vk: &VerifyingKey<Bn254>) -> Vec<u8> {
    let mut out = Vec::with_capacity(vk.compressed_size());
    vk.serialize_compressed(&mut out)
        .expect("serializing into a Vec cannot fail");
    out
}

/// Lowercase hex of [`vk_to_bytes`].
pub fn vk_to_hex(vk: &VerifyingKey<Bn254>) -> String {
    hex::encode(vk_to_bytes(vk))
}

/// Reads compressed bytes, validating every point; trailing bytes are an error.
pub fn vk_from_bytes(bytes: &[u8]) -> Result<VerifyingKey<Bn254>, Error> {
    let mut reader = bytes;
    let vk = VerifyingKey::<Bn254>::deserialize_compressed(&mut reader)
        .map_err(|e| Error::Serialization(e.to_string()))?;
    if !reader.is_empty() {
        return Err(Error::Serialization(format!(
            "{} trailing bytes after the verifying key",
            reader.len()
        )));
    }
    Ok(vk)
}

/// Reads the hex form: either case, an optional `0x` prefix, surrounding whitespace (e.g. a
/// final newline) ignored.
pub fn vk_from_hex(text: &str) -> Result<VerifyingKey<Bn254>, Error> {
    let text = text.trim();
    let bytes = hex::decode(text.strip_prefix("0x").unwrap_or(text))
        .map_err(|e| Error::Serialization(format!("hex: {e}")))?;
    vk_from_bytes(&bytes)
}

/// Compressed `CanonicalSerialize` bytes of a proof (128 bytes).
pub fn proof_to_bytes(proof: &Proof<Bn254>) -> Vec<u8> {
    let mut out = Vec::with_capacity(proof.compressed_size());
    proof
        .serialize_compressed(&mut out)
        .expect("serializing into a Vec cannot fail");
    out
}

/// Reads compressed proof bytes, validating every point; trailing bytes are an error.
pub fn proof_from_bytes(bytes: &[u8]) -> Result<Proof<Bn254>, Error> {
    let mut reader = bytes;
    let proof = Proof::<Bn254>::deserialize_compressed(&mut reader)
        .map_err(|e| Error::Serialization(e.to_string()))?;
    if !reader.is_empty() {
        return Err(Error::Serialization(format!(
            "{} trailing bytes after the proof",
            reader.len()
        )));
    }
    Ok(proof)
}
