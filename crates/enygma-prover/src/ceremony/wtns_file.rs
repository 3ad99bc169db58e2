//! iden3's binary `.wtns` witness: a full assignment as snarkjs (`groth16 prove`, `wtns
//! check`) and rapidsnark read it.
//!
//! Layout (little-endian; snarkjs `src/wtns_utils.js`): `wtns`, version 2, the number of
//! sections (2), then each section as its type (u32), its length (u64) and its bytes:
//! 1. header: the field's size in bytes (32), the prime r, the number of wires (u32);
//! 2. the wires' values, 32 bytes each, in standard form (not Montgomery).
//!
//! The wires are in the order of the `.r1cs` file [`crate::ceremony::r1cs_file`] writes: the
//! constant one, the public inputs in the statement's order, then the private wires. That is
//! our full assignment's order, so a witness is written as it is.

use ark_ff::{BigInt, BigInteger, PrimeField};
use enygma_circuit::Fr;

use super::r1cs_file::FIELD_BYTES;

/// Why a `.wtns` file is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WtnsError {
    #[error("not a wtns file (no `wtns` magic, or version {0} instead of 2)")]
    NotAWtns(u32),
    #[error("the file is truncated: {0}")]
    Truncated(&'static str),
    #[error("the witness is not over BN254's scalar field")]
    WrongField,
    #[error("section {section} is {found} bytes long, its counts say {expected}")]
    SectionLength {
        section: u32,
        found: usize,
        expected: usize,
    },
    #[error("section {0} is missing or out of order")]
    Section(u32),
    #[error("wire {0}: the value is not below the field's prime")]
    NotCanonical(usize),
}

/// The `.wtns` bytes of a full assignment (the constant one first).
///
/// The bytes hold the witness: whoever gets the file learns every secret of the request it
/// was computed from, as from the request itself.
pub fn write(assignment: &[Fr]) -> Vec<u8> {
    let mut header = Vec::with_capacity(4 + FIELD_BYTES + 4);
    header.extend((FIELD_BYTES as u32).to_le_bytes());
    header.extend(Fr::MODULUS.to_bytes_le());
    header.extend((assignment.len() as u32).to_le_bytes());
    let values: Vec<u8> = assignment
        .iter()
        .flat_map(|x| x.into_bigint().to_bytes_le())
        .collect();

    let mut out = b"wtns".to_vec();
    out.extend(2u32.to_le_bytes());
    out.extend(2u32.to_le_bytes());
    for (kind, body) in [(1u32, header), (2, values)] {
        out.extend(kind.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
    }
    out
}

/// The full assignment a `.wtns` file holds, every value checked to be canonical.
pub fn read(bytes: &[u8]) -> Result<Vec<Fr>, WtnsError> {
    let u32_at = |at: usize, what| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or(WtnsError::Truncated(what))
    };
    let version = u32_at(4, "the file header")?;
    if &bytes[..4] != b"wtns" || version != 2 {
        return Err(WtnsError::NotAWtns(if &bytes[..4] == b"wtns" {
            version
        } else {
            0
        }));
    }
    if u32_at(8, "the file header")? != 2 {
        return Err(WtnsError::Section(2));
    }
    // Sections 1 then 2, as snarkjs writes them.
    let mut at = 12;
    let mut section = |id: u32| -> Result<&[u8], WtnsError> {
        if u32_at(at, "the section table")? != id {
            return Err(WtnsError::Section(id));
        }
        let len = bytes
            .get(at + 4..at + 12)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or(WtnsError::Truncated("the section table"))?;
        let start = at + 12;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= bytes.len())
            .ok_or(WtnsError::Truncated("a section's bytes"))?;
        at = end;
        Ok(&bytes[start..end])
    };
    let header = section(1)?;
    let expected_header = 4 + FIELD_BYTES + 4;
    if header.len() != expected_header {
        return Err(WtnsError::SectionLength {
            section: 1,
            found: header.len(),
            expected: expected_header,
        });
    }
    if header[..4] != (FIELD_BYTES as u32).to_le_bytes()
        || header[4..4 + FIELD_BYTES] != Fr::MODULUS.to_bytes_le()
    {
        return Err(WtnsError::WrongField);
    }
    let wires = u32::from_le_bytes(header[4 + FIELD_BYTES..].try_into().expect("4 bytes")) as usize;
    let values = section(2)?;
    if values.len() != wires * FIELD_BYTES {
        return Err(WtnsError::SectionLength {
            section: 2,
            found: values.len(),
            expected: wires * FIELD_BYTES,
        });
    }
    values
        .chunks_exact(FIELD_BYTES)
        .enumerate()
        .map(|(wire, value)| {
            let raw = BigInt::<4>::new(core::array::from_fn(|i| {
                u64::from_le_bytes(value[8 * i..8 * i + 8].try_into().expect("8 bytes"))
            }));
            Fr::from_bigint(raw).ok_or(WtnsError::NotCanonical(wire))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_std::UniformRand;
    use rand::SeedableRng;

    /// The bytes snarkjs expects at fixed offsets, the values back as written, and every
    /// damaged file refused.
    #[test]
    fn layout_round_trip_and_damage() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        let mut assignment = vec![Fr::from(1u64), -Fr::from(1u64)];
        assignment.extend((0..5).map(|_| Fr::rand(&mut rng)));
        let bytes = write(&assignment);

        assert_eq!(&bytes[..4], b"wtns");
        assert_eq!(bytes[4..12], [2, 0, 0, 0, 2, 0, 0, 0]);
        // Section 1: type, length 40, n8, r, wires.
        assert_eq!(bytes[12..16], [1, 0, 0, 0]);
        assert_eq!(bytes[16..24], 40u64.to_le_bytes());
        assert_eq!(bytes[24..28], 32u32.to_le_bytes());
        assert_eq!(&bytes[28..60], Fr::MODULUS.to_bytes_le().as_slice());
        assert_eq!(bytes[60..64], 7u32.to_le_bytes());
        // Section 2: the one in standard form, then r − 1.
        assert_eq!(bytes[64..68], [2, 0, 0, 0]);
        assert_eq!(bytes[68..76], (7u64 * 32).to_le_bytes());
        let mut one = [0u8; 32];
        one[0] = 1;
        assert_eq!(bytes[76..108], one);
        let mut r_minus_one = Fr::MODULUS;
        r_minus_one.sub_with_borrow(&BigInt::from(1u64));
        assert_eq!(&bytes[108..140], r_minus_one.to_bytes_le().as_slice());
        assert_eq!(bytes.len(), 76 + 7 * 32);

        assert_eq!(read(&bytes), Ok(assignment));

        assert_eq!(
            read(&bytes[..bytes.len() - 1]),
            Err(WtnsError::Truncated("a section's bytes"))
        );
        let mut magic = bytes.clone();
        magic[0] = b'x';
        assert_eq!(read(&magic), Err(WtnsError::NotAWtns(0)));
        let mut prime = bytes.clone();
        prime[28] ^= 1;
        assert_eq!(read(&prime), Err(WtnsError::WrongField));
        // The last wire set to r itself: not canonical.
        let mut last = bytes.clone();
        let at = bytes.len() - 32;
        last[at..].copy_from_slice(&Fr::MODULUS.to_bytes_le());
        assert_eq!(read(&last), Err(WtnsError::NotCanonical(6)));
        // A wire count that disagrees with the values.
        let mut count = bytes.clone();
        count[60] = 8;
        assert!(matches!(
            read(&count),
            Err(WtnsError::SectionLength { section: 2, .. })
        ));
    }
}
