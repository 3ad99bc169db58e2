//! A Merkle path as constraints. The index is allocated as its 8 bits (8 booleanity
//! constraints), so it cannot reach 256: the statement uses their combination wherever it needs
//! the index (the nullifier). Each level costs one constraint for the conditional swap,
//! `d = b·(sibling − node)`, `left = node + d`, `right = sibling − d`, and one 2-input Poseidon
//! (240): 8 + 8 × 241 = 1,936 for a path with its index.

use ark_r1cs_std::{boolean::Boolean, fields::fp::FpVar};
use ark_relations::gr1cs::{ConstraintSystemRef, SynthesisError};

use super::DEPTH;
use crate::{bits::alloc_bits, poseidon::constraints as poseidon, Fr};

/// The leaf index as its [`DEPTH`] bits, least significant first. Only the index's low 8 bits
/// are taken: an index of 256 or more is then not the value these bits combine to, which the
/// statement's other constraints (the nullifier) refuse.
pub fn alloc_index(
    cs: ConstraintSystemRef<Fr>,
    index: impl Fn() -> Result<Fr, SynthesisError>,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    alloc_bits(cs, index, DEPTH)
}

/// The root reached from `leaf` along `siblings` (level 0 first), bit j of `index_bits` = 1
/// meaning the level-j node is the right child. Equal to [`super::root`].
pub fn root(
    leaf: &FpVar<Fr>,
    index_bits: &[Boolean<Fr>],
    siblings: &[FpVar<Fr>],
) -> Result<FpVar<Fr>, SynthesisError> {
    assert!(index_bits.len() == DEPTH && siblings.len() == DEPTH);
    let mut node = leaf.clone();
    for (is_right, sibling) in index_bits.iter().zip(siblings) {
        let swap = FpVar::from(is_right.clone()) * (sibling - &node);
        let left = &node + &swap;
        let right = sibling - &swap;
        node = poseidon::hash(&[left, right])?;
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use ark_r1cs_std::{alloc::AllocVar, GR1CSVar};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    use crate::merkle::{MerklePath, Tree};

    /// The root the gadget computes for `path`, and the constraints it took.
    fn gadget_root(leaf: Fr, path: &MerklePath) -> (Fr, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let leaf = FpVar::new_witness(cs.clone(), || Ok(leaf)).unwrap();
        let siblings: Vec<FpVar<Fr>> = path
            .siblings
            .iter()
            .map(|s| FpVar::new_witness(cs.clone(), || Ok(*s)).unwrap())
            .collect();
        let before = cs.num_constraints();
        let bits = alloc_index(cs.clone(), || Ok(path.index)).unwrap();
        let root = root(&leaf, &bits, &siblings).unwrap();
        assert!(cs.is_satisfied().unwrap());
        (root.value().unwrap(), cs.num_constraints() - before)
    }

    #[test]
    fn gadget_agrees_with_native_and_costs_1936() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(82);
        let mut tree = Tree::new();
        let leaves: Vec<(usize, Fr)> = [0usize, 1, 2, 3, 100, 170, 254, 255]
            .into_iter()
            .map(|index| (index, Fr::rand(&mut rng)))
            .collect();
        for &(index, leaf) in &leaves {
            tree.insert(index, leaf);
        }
        for (index, leaf) in leaves {
            let path = tree.path(index);
            assert_eq!(
                gadget_root(leaf, &path),
                (tree.root(), 1936),
                "leaf {index}"
            );
        }
        // Random siblings, not from a tree: the gadget still agrees with the native rule.
        let path = MerklePath {
            index: Fr::from(0b1010_0110u64),
            siblings: std::array::from_fn(|_| Fr::rand(&mut rng)),
        };
        let leaf = Fr::rand(&mut rng);
        assert_eq!(gadget_root(leaf, &path).0, path.root(leaf).unwrap());
    }

    /// The index's bits combine to its low 8 bits only: 256 + i cannot stand for itself.
    #[test]
    fn index_bits_stay_below_256() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = alloc_index(cs.clone(), || Ok(Fr::from(256u64 + 5))).unwrap();
        let index = Boolean::le_bits_to_fp(&bits).unwrap();
        assert_eq!(index.value().unwrap(), Fr::from(5u64));
        assert!(cs.is_satisfied().unwrap());
    }
}
