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
    to_hex(&vk_to_bytes(vk))
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

/// Reads the hex form (surrounding whitespace, e.g. a final newline, is ignored).
pub fn vk_from_hex(hex: &str) -> Result<VerifyingKey<Bn254>, Error> {
    vk_from_bytes(&from_hex(hex.trim())?)
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

/// Lowercase hex, no prefix.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

/// Parses hex (either case, optional `0x` prefix, even length).
pub fn from_hex(s: &str) -> Result<Vec<u8>, Error> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() & 1 != 0 {
        return Err(Error::Serialization("hex string has odd length".into()));
    }
    let nibble = |c: u8| -> Result<u8, Error> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(Error::Serialization(format!(
                "invalid hex character {:?}",
                c as char
            ))),
        }
    };
    s.as_bytes()
        .chunks(2)
        .map(|pair| Ok(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}
