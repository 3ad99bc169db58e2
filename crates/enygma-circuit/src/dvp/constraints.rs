//! The DvP note commitments and the nullifier as constraints: chains of 2-input Poseidons
//! (240 each). C20 costs 720, C1155 960, C721 480 and a nullifier 240.

use ark_r1cs_std::fields::fp::FpVar;
use ark_relations::gr1cs::SynthesisError;

use crate::{poseidon::constraints as poseidon, Fr};

/// Equal to [`super::erc20_commitment`] on the same values.
pub fn erc20_commitment(
    owner_key: &FpVar<Fr>,
    salt: &FpVar<Fr>,
    amount: &FpVar<Fr>,
    token: &FpVar<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let keyed = poseidon::hash(&[owner_key.clone(), salt.clone()])?;
    let valued = poseidon::hash(&[keyed, amount.clone()])?;
    poseidon::hash(&[valued, token.clone()])
}

/// Equal to [`super::erc1155_commitment`] on the same values.
pub fn erc1155_commitment(
    owner_key: &FpVar<Fr>,
    salt: &FpVar<Fr>,
    token: &FpVar<Fr>,
    id: &FpVar<Fr>,
    amount: &FpVar<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let keyed = poseidon::hash(&[owner_key.clone(), salt.clone()])?;
    let of_token = poseidon::hash(&[keyed, token.clone()])?;
    let of_id = poseidon::hash(&[of_token, id.clone()])?;
    poseidon::hash(&[of_id, amount.clone()])
}

/// Equal to [`super::erc721_commitment`] on the same values.
pub fn erc721_commitment(
    owner_key: &FpVar<Fr>,
    salt: &FpVar<Fr>,
    uid: &FpVar<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let keyed = poseidon::hash(&[owner_key.clone(), salt.clone()])?;
    poseidon::hash(&[keyed, uid.clone()])
}

/// Equal to [`super::nullifier`] on the same values.
pub fn nullifier(
    secret_key: &FpVar<Fr>,
    leaf_index: &FpVar<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    poseidon::hash(&[secret_key.clone(), leaf_index.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field, UniformRand};
    use ark_r1cs_std::{alloc::AllocVar, GR1CSVar};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    /// Runs `gadget` on witnesses of `values`; returns its output and the constraints it took.
    fn run(
        values: &[Fr],
        gadget: impl Fn(&[FpVar<Fr>]) -> Result<FpVar<Fr>, SynthesisError>,
    ) -> (Fr, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars: Vec<FpVar<Fr>> = values
            .iter()
            .map(|v| FpVar::new_witness(cs.clone(), || Ok(*v)).unwrap())
            .collect();
        let out = gadget(&vars).unwrap();
        assert!(cs.is_satisfied().unwrap());
        (out.value().unwrap(), cs.num_constraints())
    }

    #[test]
    fn gadgets_agree_with_native_and_cost_240_per_hash() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let random: [Fr; 5] = std::array::from_fn(|_| Fr::rand(&mut rng));
        for v in [
            random,
            [Fr::ZERO; 5],
            [-Fr::ONE, Fr::ONE, Fr::ZERO, Fr::from(42u64), Fr::from(7u64)],
        ] {
            assert_eq!(
                run(&v[..4], |x| erc20_commitment(&x[0], &x[1], &x[2], &x[3])),
                (
                    super::super::erc20_commitment(&v[0], &v[1], &v[2], &v[3]),
                    720
                )
            );
            assert_eq!(
                run(&v, |x| erc1155_commitment(
                    &x[0], &x[1], &x[2], &x[3], &x[4]
                )),
                (
                    super::super::erc1155_commitment(&v[0], &v[1], &v[2], &v[3], &v[4]),
                    960
                )
            );
            assert_eq!(
                run(&v[..3], |x| erc721_commitment(&x[0], &x[1], &x[2])),
                (super::super::erc721_commitment(&v[0], &v[1], &v[2]), 480)
            );
            assert_eq!(
                run(&v[..2], |x| nullifier(&x[0], &x[1])),
                (super::super::nullifier(&v[0], &v[1]), 240)
            );
        }
    }
}
