//! The ERC-721 ownership statement as constraints: key 749, index and nullifier 8 + 241, note
//! 480, path 1,928, tree check 1, output note 481, revert note 481 (the key is reused): 4,369.

use ark_r1cs_std::{alloc::AllocVar, boolean::Boolean, eq::EqGadget, fields::fp::FpVar};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

use super::OwnershipInputs;
use crate::{
    dvp::{constraints as notes, Rule},
    keys::constraints as keys,
    merkle::{constraints as merkle, DEPTH},
    Fr,
};

/// The circuit of one ownership transfer. `inputs` is `None` for key generation.
#[derive(Clone)]
pub struct OwnershipCircuit {
    inputs: Option<OwnershipInputs>,
    /// Tests only: a dishonest `(quotient, remainder)` hint for the key's reduction mod L.
    forged_key: Option<(u8, Fr)>,
}

impl OwnershipCircuit {
    /// The circuit without values, for key generation.
    pub fn for_setup() -> Self {
        Self {
            inputs: None,
            forged_key: None,
        }
    }

    /// The circuit for proving `inputs`. It does not run [`OwnershipInputs::check`]: inputs
    /// that fail it leave the constraints unsatisfied.
    pub fn for_proving(inputs: OwnershipInputs) -> Self {
        Self {
            inputs: Some(inputs),
            forged_key: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_forged_key(mut self, quotient: u8, remainder: Fr) -> Self {
        self.forged_key = Some((quotient, remainder));
        self
    }
}

impl ConstraintSynthesizer<Fr> for OwnershipCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let inputs = self.inputs.as_ref();
        let value = |f: &dyn Fn(&OwnershipInputs) -> Fr| -> Result<Fr, SynthesisError> {
            inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
        };
        let public = |f: &dyn Fn(&OwnershipInputs) -> Fr| FpVar::new_input(cs.clone(), || value(f));
        let private =
            |f: &dyn Fn(&OwnershipInputs) -> Fr| FpVar::new_witness(cs.clone(), || value(f));

        // Public inputs, in the reference's order. `payment_commitment` and the tree number
        // are bound by the proof's input rows but enter no constraint.
        let _payment_commitment = public(&|t| t.payment_commitment)?;
        let merkle_root = public(&|t| t.merkle_root)?;
        let nullifier = public(&|t| t.nullifier)?;
        let _tree_number = public(&|t| t.tree_number)?;
        let commitment_out = public(&|t| t.commitment_out)?;
        let revert_commitment = public(&|t| t.revert_commitment)?;

        let secret_key = private(&|t| *t.secret_key)?;
        let owner_key = {
            rule!(cs, Rule::NoteInTree);
            match self.forged_key {
                Some(hint) => keys::public_key_with_hint(&secret_key, |_| Ok(hint))?,
                None => keys::public_key(&secret_key)?,
            }
        };
        // 1. The nullifier of this key and index; the index has 8 bits.
        let index_bits = {
            rule!(cs, Rule::LeafIndex);
            merkle::alloc_index(cs.clone(), || value(&|t| t.path.index))?
        };
        {
            rule!(cs, Rule::Nullifier);
            let index = Boolean::le_bits_to_fp(&index_bits)?;
            notes::nullifier(&secret_key, &index)?.enforce_equal(&nullifier)?;
        }
        // 2. The note is in the tree, whatever its uid.
        let uid = private(&|t| *t.uid)?;
        {
            rule!(cs, Rule::NoteInTree);
            let salt_in = private(&|t| *t.salt_in)?;
            let note = notes::erc721_commitment(&owner_key, &salt_in, &uid)?;
            let siblings = (0..DEPTH)
                .map(|level| private(&|t| t.path.siblings[level]))
                .collect::<Result<Vec<_>, _>>()?;
            merkle::root(&note, &index_bits, &siblings)?.enforce_equal(&merkle_root)?;
        }
        // 3. The same uid goes to the recipient.
        {
            rule!(cs, Rule::OutputCommitment);
            let recipient_key = private(&|t| *t.recipient_key)?;
            let salt_out = private(&|t| *t.salt_out)?;
            notes::erc721_commitment(&recipient_key, &salt_out, &uid)?
                .enforce_equal(&commitment_out)?;
        }
        // 4. The revert note returns it to the spender.
        rule!(cs, Rule::RevertCommitment);
        let revert_salt = private(&|t| *t.revert_salt)?;
        notes::erc721_commitment(&owner_key, &revert_salt, &uid)?.enforce_equal(&revert_commitment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field};
    use ark_relations::gr1cs::{ConstraintSystem, SynthesisMode};
    use rand::SeedableRng;

    use crate::{
        dvp::{erc721_commitment, ownership::NUM_PUBLIC_INPUTS, Rule},
        keys::public_key,
        merkle::Tree,
        modl, poseidon,
    };

    fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(seed)
    }

    fn satisfied(circuit: OwnershipCircuit) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        match circuit.generate_constraints(cs.clone()) {
            Ok(()) => cs.is_satisfied().unwrap(),
            Err(_) => false,
        }
    }

    fn proves(t: &OwnershipInputs) -> bool {
        satisfied(OwnershipCircuit::for_proving(t.clone()))
    }

    /// Puts the note, as it now is, alone in a fresh tree and recomputes the public values.
    fn replant(t: &mut OwnershipInputs) {
        let index = t.path.leaf_index().unwrap();
        let mut tree = Tree::new();
        tree.insert(index, t.note());
        *t.path = tree.path(index);
        t.merkle_root = tree.root();
        t.derive_public_values();
    }

    /// A forgery of `rule`, refused natively and in the circuit, in `rule`'s namespace
    /// ([`crate::dvp::assert_forgery_refused`]).
    fn refused(good: &OwnershipInputs, rule: Rule, edit: impl Fn(&mut OwnershipInputs)) {
        crate::dvp::assert_forgery_refused(good, rule, rule, edit)
    }

    #[test]
    fn honest_inputs_satisfy_and_expose_the_public_inputs_in_order() {
        let mut rng = rng(51);
        let mut samples: Vec<OwnershipInputs> = (0..3)
            .map(|_| OwnershipInputs::generate(&mut rng))
            .collect();
        samples.push(super::super::tests::worked_example());
        // uid 0, held as a real note: proves like any other uid.
        let mut zero = samples[0].clone();
        *zero.uid = Fr::ZERO;
        replant(&mut zero);
        samples.push(zero);
        for t in samples {
            assert_eq!(t.check(), Ok(()));
            let cs = ConstraintSystem::<Fr>::new_ref();
            OwnershipCircuit::for_proving(t.clone())
                .generate_constraints(cs.clone())
                .unwrap();
            assert!(
                cs.is_satisfied().unwrap(),
                "{:?}",
                cs.which_is_unsatisfied()
            );
            let instance = cs.instance_assignment().unwrap();
            assert_eq!(instance.len(), 1 + NUM_PUBLIC_INPUTS);
            assert_eq!(&instance[1..], t.public_inputs().as_slice());
        }
    }

    #[test]
    fn constraint_count() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_mode(SynthesisMode::Setup);
        OwnershipCircuit::for_setup()
            .generate_constraints(cs.clone())
            .unwrap();
        assert_eq!(cs.num_constraints(), 4_369);
        assert_eq!(cs.num_instance_variables(), 1 + NUM_PUBLIC_INPUTS);
    }

    /// The reference's free hash outputs: any nullifier, root, output or revert commitment.
    #[test]
    fn forged_hash_outputs_are_refused() {
        let good = OwnershipInputs::generate(&mut rng(52));
        assert!(proves(&good));
        let one = Fr::ONE;
        refused(&good, Rule::Nullifier, |t| t.nullifier += one);
        refused(&good, Rule::NoteInTree, |t| t.merkle_root += one);
        refused(&good, Rule::NoteInTree, |t| t.path.siblings[0] += one);
        refused(&good, Rule::OutputCommitment, |t| t.commitment_out += one);
        refused(&good, Rule::RevertCommitment, |t| {
            t.revert_commitment += one
        });
        crate::dvp::assert_forgery_refused(&good, Rule::LeafIndex, Rule::Nullifier, |t| {
            t.path.index += Fr::from(256u64);
            t.derive_public_values();
        });
    }

    /// NFT theft: a uid that is not the tree's, uid 0 without a note (the reference skips the
    /// tree check for it), a uid changed between the spent and the new note, and another
    /// holder's note with a free key quotient.
    #[test]
    fn nft_theft_is_refused() {
        let good = OwnershipInputs::generate(&mut rng(53));
        // Another uid than the note holds, every public value consistent with it.
        refused(&good, Rule::NoteInTree, |t| {
            t.uid += Fr::ONE;
            t.derive_public_values();
        });
        refused(&good, Rule::NoteInTree, |t| {
            *t.uid = Fr::ZERO;
            t.derive_public_values();
        });
        // The note in, another uid out.
        refused(&good, Rule::OutputCommitment, |t| {
            t.commitment_out =
                erc721_commitment(&t.recipient_key, &t.salt_out, &(*t.uid + Fr::ONE));
        });
        refused(&good, Rule::RevertCommitment, |t| {
            t.revert_commitment = erc721_commitment(
                &public_key(&t.secret_key),
                &t.revert_salt,
                &(*t.uid + Fr::ONE),
            );
        });

        // The honest hint through the forging path passes.
        let (q, pk) = modl::div_rem(&poseidon::hash(&[*good.secret_key, *good.secret_key]));
        assert!(satisfied(
            OwnershipCircuit::for_proving(good.clone()).with_forged_key(q, pk)
        ));
        // The thief's key, the victim's note and root; no quotient makes the victim's key pass.
        let victim_key = public_key(&good.secret_key);
        let mut stolen = good.clone();
        *stolen.secret_key = Fr::from(987_654_321u64);
        stolen.derive_public_values();
        stolen.revert_commitment = erc721_commitment(&victim_key, &stolen.revert_salt, &stolen.uid);
        assert_eq!(stolen.check().map_err(|e| e.rule), Err(Rule::NoteInTree));
        for quotient in 0..8u8 {
            assert!(
                !satisfied(
                    OwnershipCircuit::for_proving(stolen.clone())
                        .with_forged_key(quotient, victim_key)
                ),
                "quotient {quotient}"
            );
        }
    }
}
