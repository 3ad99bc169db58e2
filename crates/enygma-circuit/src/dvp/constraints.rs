//! The DvP note commitments and the nullifier as constraints: chains of 2-input Poseidons
//! (240 each). C20 costs 720, C1155 960, C721 480 and a nullifier 240. Also the rule that a
//! statement's non-zero commitment hashes are distinct (one constraint a pair).

use ark_ff::{Field, Zero};
use ark_r1cs_std::{
    alloc::AllocVar,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
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
