//! The DvP commitment hash as constraints: three 2-input Poseidons (3 × 240 = 720 constraints).

use ark_r1cs_std::fields::fp::FpVar;
use ark_relations::gr1cs::SynthesisError;

use crate::{poseidon::constraints as poseidon, Fr};

/// Equal to [`super::commitment_hash`] on the same values.
pub fn commitment_hash(
    owner_key: &FpVar<Fr>,
    salt: &FpVar<Fr>,
    value: &FpVar<Fr>,
    address: &FpVar<Fr>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let keyed = poseidon::hash(&[owner_key.clone(), salt.clone()])?;
    let valued = poseidon::hash(&[keyed, value.clone()])?;
    poseidon::hash(&[valued, address.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field, UniformRand};
    use ark_r1cs_std::{alloc::AllocVar, GR1CSVar};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    #[test]
    fn gadget_agrees_with_native_and_costs_720() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let random = [
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
        ];
        for values in [
            random,
            [Fr::ZERO; 4],
            [-Fr::ONE, Fr::ONE, Fr::ZERO, Fr::from(42u64)],
        ] {
            let cs = ConstraintSystem::<Fr>::new_ref();
            let vars: Vec<FpVar<Fr>> = values
                .iter()
                .map(|v| FpVar::new_witness(cs.clone(), || Ok(*v)).unwrap())
                .collect();
            let before = cs.num_constraints();
            let h = commitment_hash(&vars[0], &vars[1], &vars[2], &vars[3]).unwrap();
            assert_eq!(cs.num_constraints() - before, 720);
            assert_eq!(
                h.value().unwrap(),
                super::super::commitment_hash(&values[0], &values[1], &values[2], &values[3])
            );
            assert!(cs.is_satisfied().unwrap());
        }
    }

    #[test]
    fn the_order_of_the_chain_matters() {
        let (a, b, c, d) = (
            Fr::from(1u64),
            Fr::from(2u64),
            Fr::from(3u64),
            Fr::from(4u64),
        );
        assert_ne!(
            super::super::commitment_hash(&a, &b, &c, &d),
            super::super::commitment_hash(&b, &a, &c, &d)
        );
        assert_ne!(
            super::super::commitment_hash(&a, &b, &c, &d),
            super::super::commitment_hash(&a, &b, &d, &c)
        );
    }
}
