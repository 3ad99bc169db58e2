//! The DvP commitment hash as constraints: three 2-input Poseidons (3 × 240 = 720 constraints),
//! and the rule that a statement's non-zero commitment hashes are distinct (one constraint a pair).

use ark_ff::{Field, Zero};
use ark_r1cs_std::{
    alloc::AllocVar,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
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

/// Enforces what [`super::repeated_note`] checks: any two equal hashes are 0. For each pair
/// i < j, one constraint `hᵢ = (hᵢ − hⱼ)·wᵢⱼ` with a hint wᵢⱼ: if hᵢ = hⱼ the right side is 0
/// whatever wᵢⱼ, so hᵢ = hⱼ = 0; if they differ, wᵢⱼ = hᵢ / (hᵢ − hⱼ) is the one value that
/// satisfies it. (Two empty slots leave wᵢⱼ free, multiplying 0: nothing depends on it.)
/// n hashes cost n(n − 1)/2 constraints: 45 for a withdraw's 10 slots.
pub fn enforce_distinct_notes(hashes: &[FpVar<Fr>]) -> Result<(), SynthesisError> {
    enforce_distinct_notes_with_hints(hashes, |a, b| {
        (a - b).inverse().map_or(Fr::zero(), |inv| a * inv)
    })
}

/// [`enforce_distinct_notes`] with the hint wᵢⱼ computed by `ratio(hᵢ, hⱼ)` (tests forge it).
fn enforce_distinct_notes_with_hints(
    hashes: &[FpVar<Fr>],
    ratio: impl Fn(Fr, Fr) -> Fr,
) -> Result<(), SynthesisError> {
    for j in 0..hashes.len() {
        for i in 0..j {
            let (hi, hj) = (&hashes[i], &hashes[j]);
            let w = FpVar::new_witness(hashes.cs(), || Ok(ratio(hi.value()?, hj.value()?)))?;
            (hi - hj).mul_equals(&w, hi)?;
        }
    }
    Ok(())
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

    /// Allocates `hashes` and enforces distinctness, with every hint `forged` when given (a
    /// forger's choice) and the honest one otherwise; `true` if satisfied.
    fn distinct_satisfied_with(hashes: &[Fr], forged: Option<Fr>) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars: Vec<FpVar<Fr>> = hashes
            .iter()
            .map(|h| FpVar::new_input(cs.clone(), || Ok(*h)).unwrap())
            .collect();
        match forged {
            None => enforce_distinct_notes(&vars).unwrap(),
            Some(w) => enforce_distinct_notes_with_hints(&vars, |_, _| w).unwrap(),
        }
        cs.is_satisfied().unwrap()
    }

    fn distinct_satisfied(hashes: &[Fr]) -> bool {
        distinct_satisfied_with(hashes, None)
    }

    #[test]
    fn distinct_notes_gadget_agrees_with_native_and_costs_45_for_10() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
        let mut hashes: Vec<Fr> = (0..10).map(|_| Fr::rand(&mut rng)).collect();
        hashes[6] = Fr::ZERO;
        hashes[8] = Fr::ZERO;
        let cases = [
            hashes.clone(),
            vec![Fr::ZERO; 10],
            {
                let mut twice = hashes.clone();
                twice[9] = twice[2];
                twice
            },
            {
                let mut twice = hashes.clone();
                twice[1] = twice[0];
                twice
            },
        ];
        for case in &cases {
            assert_eq!(
                distinct_satisfied(case),
                super::super::repeated_note(case).is_none(),
                "{case:?}"
            );
        }
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars: Vec<FpVar<Fr>> = hashes
            .iter()
            .map(|h| FpVar::new_input(cs.clone(), || Ok(*h)).unwrap())
            .collect();
        enforce_distinct_notes(&vars).unwrap();
        assert_eq!(cs.num_constraints(), 45);
    }

    /// Equal non-zero hashes make `hᵢ = (hᵢ − hⱼ)·w` read `hᵢ = 0`: no hint satisfies it.
    #[test]
    fn a_repeated_note_is_refused_whatever_the_hint() {
        let h = Fr::from(77u64);
        for w in [Fr::ZERO, Fr::ONE, -Fr::ONE, h, h.inverse().unwrap()] {
            assert!(!distinct_satisfied_with(&[h, h], Some(w)));
        }
        assert!(!distinct_satisfied(&[h, Fr::ZERO, h]));
        // Empty slots repeat freely, whatever their hint.
        assert!(distinct_satisfied(&[h, Fr::ZERO, Fr::ZERO]));
        assert!(distinct_satisfied_with(&[Fr::ZERO, Fr::ZERO], Some(h)));
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
