//! `pk = Poseidon(sk, sk) mod L` as constraints: one 2-input Poseidon (240) and the sound
//! reduction of [`crate::modl::constraints::reduce`] (509), 749 in all.

use ark_r1cs_std::{fields::fp::FpVar, GR1CSVar};
use ark_relations::gr1cs::SynthesisError;

use crate::{
    modl::{self, constraints as modl_gadget},
    poseidon::constraints as poseidon,
    Fr,
};

/// Equal to [`super::public_key`] on the same secret key.
pub fn public_key(secret_key: &FpVar<Fr>) -> Result<FpVar<Fr>, SynthesisError> {
    public_key_with_hint(secret_key, |hash| Ok(modl::div_rem(&hash)))
}

/// [`public_key`] with the prover's hint for the reduction, `(quotient, remainder)` as a
/// function of the hash's value, given explicitly so that tests can show that no other key
/// satisfies the constraints.
pub(crate) fn public_key_with_hint(
    secret_key: &FpVar<Fr>,
    hint: impl Fn(Fr) -> Result<(u8, Fr), SynthesisError>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let hash = poseidon::hash(&[secret_key.clone(), secret_key.clone()])?;
    Ok(modl_gadget::reduce_with_hint(&hash, || hint(hash.value()?))?.remainder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field, UniformRand};
    use ark_r1cs_std::{alloc::AllocVar, eq::EqGadget};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    use crate::{modl::l_fr, poseidon as native_poseidon};

    #[test]
    fn gadget_agrees_with_native_and_costs_749() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
        let keys = [Fr::ZERO, Fr::ONE, -Fr::ONE, l_fr(), Fr::rand(&mut rng)];
        for sk in keys.into_iter().chain((0..5).map(|_| Fr::rand(&mut rng))) {
            let cs = ConstraintSystem::<Fr>::new_ref();
            let skv = FpVar::new_witness(cs.clone(), || Ok(sk)).unwrap();
            let pk = public_key(&skv).unwrap();
            assert_eq!(pk.value().unwrap(), super::super::public_key(&sk));
            assert!(cs.is_satisfied().unwrap());
            assert_eq!(cs.num_constraints(), 749);
        }
    }

    /// Satisfied when the key derived from `sk` with the hint `(q, rem)` is `claimed`.
    fn derives(sk: Fr, q: u8, rem: Fr, claimed: Fr) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let skv = FpVar::new_witness(cs.clone(), || Ok(sk)).unwrap();
        let claimed = FpVar::new_input(cs.clone(), || Ok(claimed)).unwrap();
        public_key_with_hint(&skv, |_| Ok((q, rem)))
            .unwrap()
            .enforce_equal(&claimed)
            .unwrap();
        cs.is_satisfied().unwrap()
    }

    /// The reference bounds the remainder below L but leaves the quotient free, so any value
    /// below L passes as the key of any sk: with `q = (H − pk')/L` in the field,
    /// `q·L + pk' = H` holds. Here the quotient has three bits: no quotient at all (all eight
    /// are tried) makes another key, below L or not, pass for sk.
    #[test]
    fn no_quotient_makes_another_key_pass() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
        let sk = Fr::rand(&mut rng);
        let h = native_poseidon::hash(&[sk, sk]);
        let (q, pk) = modl::div_rem(&h);
        assert!(derives(sk, q, pk, pk), "the honest hint passes");
        let victim = super::super::public_key(&Fr::rand(&mut rng));
        // Keys below L that only the reference's free quotient reaches: the field quotient
        // that makes q·L + claimed = H is far above 7.
        for claimed in [victim, pk + Fr::ONE, l_fr() - Fr::ONE] {
            let field_q = (h - claimed) * l_fr().inverse().unwrap();
            assert!(
                field_q > Fr::from(7u64),
                "the forgery needs an unbounded quotient"
            );
            for q in 0..8u8 {
                assert!(!derives(sk, q, claimed, claimed), "q = {q}");
            }
        }
        // Unreduced remainders (the same residue, at least L): refused too. (H itself is the
        // honest key when H < L.)
        for claimed in [pk + l_fr(), h].into_iter().filter(|c| *c != pk) {
            for q in 0..8u8 {
                assert!(!derives(sk, q, claimed, claimed), "q = {q}");
            }
        }
    }
}
