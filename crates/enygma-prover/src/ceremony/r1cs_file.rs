//! iden3's binary `.r1cs` format, written from the R1CS the prover proves.
//!
//! Layout (little-endian): `r1cs`, version 1, the number of sections, then each section as its
//! type (u32), its length (u64) and its bytes:
//! 1. header: field size in bytes (32), the prime r, wires, public outputs, public inputs,
//!    private inputs, labels (u64), constraints;
//! 2. constraints: for each, A, B and C as a term count (u32) and terms (wire u32, coefficient
//!    in 32 bytes, standard form);
//! 3. wire to label: one u64 per wire.
//!
//! Wires are our variables as they are: 0 the constant one, then the public inputs in the
//! statement's order (declared as public inputs, no outputs), then the private wires. The
//! matrices are the oriented ones ([`crate::qap::orient`]), so a zkey made from this file
//! fits the prover's witness map.

use ark_ff::{BigInteger, PrimeField};
use enygma_circuit::Fr;

use crate::groth16::R1cs;

/// The field elements' size in bytes.
pub const FIELD_BYTES: usize = 32;

/// The `.r1cs` bytes of `r1cs`.
pub fn write(r1cs: &R1cs) -> Vec<u8> {
    let wires = r1cs.num_instance_variables + r1cs.num_witness_variables;
    let mut header = Vec::new();
    put_u32(&mut header, FIELD_BYTES as u32);
    header.extend(Fr::MODULUS.to_bytes_le());
    put_u32(&mut header, wires as u32);
    put_u32(&mut header, 0); // public outputs
    put_u32(&mut header, (r1cs.num_instance_variables - 1) as u32);
    put_u32(&mut header, 0); // private inputs: every private wire is an internal signal
    header.extend((wires as u64).to_le_bytes());
    put_u32(&mut header, r1cs.num_constraints as u32);

    let mut constraints = Vec::new();
    for row in 0..r1cs.num_constraints {
        for matrix in &r1cs.matrices {
            let terms = &matrix[row];
            put_u32(&mut constraints, terms.len() as u32);
            for &(coefficient, wire) in terms {
                put_u32(&mut constraints, wire as u32);
                constraints.extend(coefficient.into_bigint().to_bytes_le());
            }
        }
    }

    let labels: Vec<u8> = (0..wires as u64).flat_map(u64::to_le_bytes).collect();

    let mut out = b"r1cs".to_vec();
    put_u32(&mut out, 1);
    put_u32(&mut out, 3);
    for (kind, body) in [(1u32, header), (2, constraints), (3, labels)] {
        put_u32(&mut out, kind);
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
    }
    out
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend(value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::r1cs;

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    /// The ERC-721 ownership instance's file: its header's sizes are the circuit's, and the
    /// first constraint's terms read back as the oriented matrices' first row.
    #[test]
    fn header_and_first_constraint_read_back() {
        let instance = crate::statements::by_stem("ownership-721").unwrap();
        let shape = r1cs(instance.circuit_for_setup()).unwrap();
        let bytes = write(&shape);
        assert_eq!(&bytes[..4], b"r1cs");
        assert_eq!((u32_at(&bytes, 4), u32_at(&bytes, 8)), (1, 3));
        // Section 1 starts at 12: type, length, then the header.
        assert_eq!(u32_at(&bytes, 12), 1);
        let h = 24;
        assert_eq!(u32_at(&bytes, h), 32);
        assert_eq!(&bytes[h + 4..h + 36], Fr::MODULUS.to_bytes_le().as_slice());
        let wires = shape.num_instance_variables + shape.num_witness_variables;
        assert_eq!(u32_at(&bytes, h + 36) as usize, wires);
        assert_eq!(
            u32_at(&bytes, h + 44) as usize,
            instance.num_public_inputs()
        );
        assert_eq!(u32_at(&bytes, h + 60) as usize, shape.num_constraints);
        // Section 2 follows the 64-byte header.
        let c = h + 64;
        assert_eq!(u32_at(&bytes, c), 2);
        let mut at = c + 12;
        for matrix in &shape.matrices {
            let terms = &matrix[0];
            assert_eq!(u32_at(&bytes, at) as usize, terms.len());
            at += 4;
            for &(coefficient, wire) in terms {
                assert_eq!(u32_at(&bytes, at) as usize, wire);
                let value = Fr::from_le_bytes_mod_order(&bytes[at + 4..at + 36]);
                assert_eq!(value, coefficient);
                at += 36;
            }
        }
        // The labels close the file: one u64 per wire.
        assert_eq!(bytes.len() - 12 - wires * 8, {
            let len2 = u64::from_le_bytes(bytes[c + 4..c + 12].try_into().unwrap()) as usize;
            c + 12 + len2
        });
    }
}
