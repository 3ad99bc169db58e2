//! The join-split as constraints, with every rule of the module documentation enforced and
//! every hint tied down: Poseidon outputs are used directly, keys are reduced mod L soundly,
//! indices and amounts are allocated as their bits, and each inverse-style hint `w` appears
//! only in a constraint `a·w = b` that holds for no `w` when `a = 0` and `b ≠ 0`.
//!
//! Cost per input slot (ERC-20 / ERC-1155): key 749, nullifier 240 + 1, amount 168, note
//! 720 / 960, index and path 1,936, tree and dummy rules 2; 3,816 / 4,056. Per output: amount
//! 168, note, equality 1. The revert note (slot 0's key is reused), 45 pairs of distinct
//! nullifiers and the conservation equation complete the count pinned in the tests.

use ark_ff::{AdditiveGroup, Field};
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

use super::{InputSlot, JoinSplitInputs, Token, TokenKind, INPUT_SLOTS, OUTPUTS};
use crate::{
    amount::constraints as amount,
    dvp::{constraints as notes, dummy_nullifier, Rule},
    keys::constraints as keys,
    merkle::{constraints as merkle, DEPTH},
    Fr,
};

/// The circuit of one join-split. `inputs` is `None` for key generation.
#[derive(Clone)]
pub struct JoinSplitCircuit {
    kind: TokenKind,
    inputs: Option<JoinSplitInputs>,
    /// Tests only: a dishonest reduction hint for one slot's key.
    forged_key: Option<ForgedKey>,
}

/// A prover's hint `(quotient, remainder)` for `pk = Poseidon(sk, sk) mod L` in one slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ForgedKey {
    pub slot: usize,
    pub quotient: u8,
    pub remainder: Fr,
}

impl JoinSplitCircuit {
    /// The circuit without values, for key generation.
    pub fn for_setup(kind: TokenKind) -> Self {
        Self {
            kind,
            inputs: None,
            forged_key: None,
        }
    }

    /// The circuit for proving `inputs` (of their token's kind). It does not run
    /// [`JoinSplitInputs::check`]: inputs that fail it leave the constraints unsatisfied.
    pub fn for_proving(inputs: JoinSplitInputs) -> Self {
        Self {
            kind: inputs.kind(),
            inputs: Some(inputs),
            forged_key: None,
        }
    }

    pub fn kind(&self) -> TokenKind {
        self.kind
    }

    #[cfg(test)]
    pub(crate) fn with_forged_key(mut self, forged: ForgedKey) -> Self {
        self.forged_key = Some(forged);
        self
    }
}

/// The private token of the statement.
enum TokenVar {
    Erc20 { address: FpVar<Fr> },
    Erc1155 { address: FpVar<Fr>, id: FpVar<Fr> },
}

impl TokenVar {
    fn new_witness(
        cs: ConstraintSystemRef<Fr>,
        kind: TokenKind,
        token: Option<&Token>,
    ) -> Result<Self, SynthesisError> {
        let missing = SynthesisError::AssignmentMissing;
        let address = FpVar::new_witness(cs.clone(), || match token {
            Some(Token::Erc20 { address } | Token::Erc1155 { address, .. }) => Ok(*address),
            None => Err(missing),
        })?;
        Ok(match kind {
            TokenKind::Erc20 => TokenVar::Erc20 { address },
            TokenKind::Erc1155 => TokenVar::Erc1155 {
                address,
                id: FpVar::new_witness(cs, || match token {
                    Some(Token::Erc1155 { id, .. }) => Ok(*id),
                    _ => Err(missing),
                })?,
            },
        })
    }

    /// Equal to [`Token::note_commitment`].
    fn note_commitment(
        &self,
        owner_key: &FpVar<Fr>,
        salt: &FpVar<Fr>,
        amount: &FpVar<Fr>,
    ) -> Result<FpVar<Fr>, SynthesisError> {
        match self {
            TokenVar::Erc20 { address } => {
                notes::erc20_commitment(owner_key, salt, amount, address)
            }
            TokenVar::Erc1155 { address, id } => {
                notes::erc1155_commitment(owner_key, salt, address, id, amount)
            }
        }
    }
}

/// Enforces `b = 0` whenever `a = 0` with one constraint `a·w = b`, the prover's `w` being `b/a`
/// (any value when `a = 0`: then no `w` satisfies it unless `b = 0`).
pub(crate) fn enforce_zero_when_zero(
    cs: ConstraintSystemRef<Fr>,
    a: &FpVar<Fr>,
    b: &FpVar<Fr>,
) -> Result<(), SynthesisError> {
    let w = FpVar::new_witness(cs, || {
        let (a, b) = (a.value()?, b.value()?);
        Ok(a.inverse().map_or(Fr::ZERO, |inv| b * inv))
    })?;
    a.mul_equals(&w, b)
}

/// The statement's public inputs and private token, and where the private values come from.
struct JoinSplitVars<'a> {
    cs: ConstraintSystemRef<Fr>,
    inputs: Option<&'a JoinSplitInputs>,
    merkle_roots: Vec<FpVar<Fr>>,
    nullifiers: Vec<FpVar<Fr>>,
    commitments_out: Vec<FpVar<Fr>>,
    revert_commitment: FpVar<Fr>,
    token: TokenVar,
}

/// What the later rules need of one input slot.
struct SlotVars {
    owner_key: FpVar<Fr>,
    amount: FpVar<Fr>,
    /// `n − D`: zero exactly when the slot publishes the dummy nullifier.
    not_dummy: FpVar<Fr>,
}

impl<'a> JoinSplitVars<'a> {
    /// The public inputs in the reference's order, then the token. `nft_commitment` and the
    /// tree numbers are bound by the proof's input rows but enter no constraint: the reference
    /// defines none.
    fn alloc(
        cs: ConstraintSystemRef<Fr>,
        kind: TokenKind,
        inputs: Option<&'a JoinSplitInputs>,
    ) -> Result<Self, SynthesisError> {
        let value = |f: &dyn Fn(&JoinSplitInputs) -> Fr| {
            inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
        };
        let public = |f: &dyn Fn(&JoinSplitInputs) -> Fr| FpVar::new_input(cs.clone(), || value(f));
        let public_slots =
            |f: &dyn Fn(&InputSlot) -> Fr| -> Result<Vec<FpVar<Fr>>, SynthesisError> {
                (0..INPUT_SLOTS)
                    .map(|i| public(&|t| f(&t.inputs[i])))
                    .collect()
            };
        let _nft_commitment = public(&|t| t.nft_commitment)?;
        let merkle_roots = public_slots(&|s| s.merkle_root)?;
        let nullifiers = public_slots(&|s| s.nullifier)?;
        let _tree_numbers = public_slots(&|s| s.tree_number)?;
        let commitments_out = (0..OUTPUTS)
            .map(|o| public(&|t| t.outputs[o].commitment))
            .collect::<Result<Vec<_>, _>>()?;
        let revert_commitment = public(&|t| t.revert_commitment)?;
        let token = TokenVar::new_witness(cs.clone(), kind, inputs.map(|t| &*t.token))?;
        Ok(Self {
            cs,
            inputs,
            merkle_roots,
            nullifiers,
            commitments_out,
            revert_commitment,
            token,
        })
    }

    fn value(&self, f: &dyn Fn(&JoinSplitInputs) -> Fr) -> Result<Fr, SynthesisError> {
        self.inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
    }

    fn private(&self, f: &dyn Fn(&JoinSplitInputs) -> Fr) -> Result<FpVar<Fr>, SynthesisError> {
        FpVar::new_witness(self.cs.clone(), || self.value(f))
    }

    /// Rules 1–4 for input slot `i` (rule 4 for slot 0 is [`Self::enforce_revert_owner`]).
    fn input_slot(
        &self,
        i: usize,
        forged_key: Option<ForgedKey>,
    ) -> Result<SlotVars, SynthesisError> {
        let cs = &self.cs;
        let slot = |f: &dyn Fn(&InputSlot) -> Fr| self.private(&|t| f(&t.inputs[i]));
        let secret_key = slot(&|s| *s.secret_key)?;
        let owner_key = {
            rule!(cs, Rule::NoteInTree);
            match forged_key.filter(|f| f.slot == i) {
                Some(f) => {
                    keys::public_key_with_hint(&secret_key, |_| Ok((f.quotient, f.remainder)))?
                }
                None => keys::public_key(&secret_key)?,
            }
        };
        let index_bits = {
            rule!(cs, Rule::LeafIndex);
            merkle::alloc_index(cs.clone(), || self.value(&|t| t.inputs[i].path.index))?
        };
        {
            rule!(cs, Rule::Nullifier);
            let index = Boolean::le_bits_to_fp(&index_bits)?;
            notes::nullifier(&secret_key, &index)?.enforce_equal(&self.nullifiers[i])?;
        }
        let amount = {
            rule!(cs, Rule::AmountRange);
            amount::alloc(cs.clone(), || self.value(&|t| *t.inputs[i].value))?
        };
        // Unless the slot is the dummy, its note is in the tree: (root − merkle_root)·(n − D) = 0.
        let not_dummy = {
            rule!(cs, Rule::NoteInTree);
            let salt = slot(&|s| *s.salt)?;
            let note = self.token.note_commitment(&owner_key, &salt, &amount)?;
            let siblings = (0..DEPTH)
                .map(|level| slot(&|s| s.path.siblings[level]))
                .collect::<Result<Vec<_>, _>>()?;
            let root = merkle::root(&note, &index_bits, &siblings)?;
            let not_dummy = &self.nullifiers[i] - FpVar::Constant(dummy_nullifier());
            (root - &self.merkle_roots[i]).mul_equals(&not_dummy, &FpVar::zero())?;
            not_dummy
        };
        if i > 0 {
            rule!(cs, Rule::DummySlot);
            enforce_zero_when_zero(cs.clone(), &not_dummy, &amount)?;
        }
        Ok(SlotVars {
            owner_key,
            amount,
            not_dummy,
        })
    }

    /// Rule 5. Distinct nullifiers but for D: (n_i − n_j)·w = n_i − D.
    fn enforce_distinct_nullifiers(&self, slots: &[SlotVars]) -> Result<(), SynthesisError> {
        rule!(self.cs, Rule::DistinctNullifiers);
        for j in 1..INPUT_SLOTS {
            for (i, earlier) in slots[..j].iter().enumerate() {
                enforce_zero_when_zero(
                    self.cs.clone(),
                    &(&self.nullifiers[i] - &self.nullifiers[j]),
                    &earlier.not_dummy,
                )?;
            }
        }
        Ok(())
    }

    /// Rule 6. A dummy slot 0 means no input at all: Σ values_in = (n_0 − D)·w. Amounts are
    /// integers below 10^36, so a zero total has every amount zero, slot 0's included.
    fn enforce_revert_owner(
        &self,
        slot0: &SlotVars,
        total_in: &FpVar<Fr>,
    ) -> Result<(), SynthesisError> {
        rule!(self.cs, Rule::RevertOwner);
        enforce_zero_when_zero(self.cs.clone(), &slot0.not_dummy, total_in)
    }

    /// Each output commitment is its recipient's note of an amount below 10^36; returns the
    /// outputs' total.
    fn enforce_outputs(&self) -> Result<FpVar<Fr>, SynthesisError> {
        let mut total_out = FpVar::zero();
        for (o, commitment) in self.commitments_out.iter().enumerate() {
            let recipient_key = self.private(&|t| *t.outputs[o].recipient_key)?;
            let salt = self.private(&|t| *t.outputs[o].salt)?;
            let amount = {
                rule!(self.cs, Rule::AmountRange);
                amount::alloc(self.cs.clone(), || self.value(&|t| *t.outputs[o].value))?
            };
            {
                rule!(self.cs, Rule::OutputCommitment);
                self.token
                    .note_commitment(&recipient_key, &salt, &amount)?
                    .enforce_equal(commitment)?;
            }
            total_out += amount;
        }
        Ok(total_out)
    }

    /// The revert note: the input total back to slot 0's key.
    fn enforce_revert_commitment(
        &self,
        slot0: &SlotVars,
        total_in: &FpVar<Fr>,
    ) -> Result<(), SynthesisError> {
        let revert_salt = self.private(&|t| *t.revert_salt)?;
        rule!(self.cs, Rule::RevertCommitment);
        self.token
            .note_commitment(&slot0.owner_key, &revert_salt, total_in)?
            .enforce_equal(&self.revert_commitment)
    }
}

impl ConstraintSynthesizer<Fr> for JoinSplitCircuit {
    /// The rules of [`JoinSplitInputs::check`], each in its namespace ([`Rule::name`]).
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let Self {
            kind,
            inputs,
            forged_key,
        } = self;
        if inputs.as_ref().is_some_and(|t| t.kind() != kind) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let vars = JoinSplitVars::alloc(cs.clone(), kind, inputs.as_ref())?;
        let slots = (0..INPUT_SLOTS)
            .map(|i| vars.input_slot(i, forged_key))
            .collect::<Result<Vec<_>, _>>()?;
        let total_in: FpVar<Fr> = slots.iter().map(|s| &s.amount).sum();
        vars.enforce_distinct_nullifiers(&slots)?;
        vars.enforce_revert_owner(&slots[0], &total_in)?;
        let total_out = vars.enforce_outputs()?;
        vars.enforce_revert_commitment(&slots[0], &total_in)?;
        // Conservation: both totals are below 10^37 < r, so equal in the field means equal.
        rule!(cs, Rule::ValueConservation);
        total_in.enforce_equal(&total_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_relations::gr1cs::{ConstraintSystem, SynthesisMode};

    use crate::{
        amount::bound,
        dvp::join_split::{
            tests::{replant, rng, worked_example},
            InputSlot, NUM_PUBLIC_INPUTS,
        },
        keys::public_key,
        merkle::MerklePath,
        modl,
    };

    /// Synthesizes `circuit` with its honest hints; `true` if every constraint holds.
    fn satisfied(circuit: JoinSplitCircuit) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        match circuit.generate_constraints(cs.clone()) {
            Ok(()) => cs.is_satisfied().unwrap(),
            // A hint that cannot even be computed is a refusal too.
            Err(_) => false,
        }
    }

    fn proves(t: &JoinSplitInputs) -> bool {
        satisfied(JoinSplitCircuit::for_proving(t.clone()))
    }

    #[test]
    fn honest_inputs_satisfy_and_expose_the_public_inputs_in_order() {
        let mut rng = rng(11);
        for kind in TokenKind::ALL {
            for n in 0..=INPUT_SLOTS {
                let t = JoinSplitInputs::generate(kind, n, &mut rng);
                let cs = ConstraintSystem::<Fr>::new_ref();
                JoinSplitCircuit::for_proving(t.clone())
                    .generate_constraints(cs.clone())
                    .unwrap();
                assert!(
                    cs.is_satisfied().unwrap(),
                    "{kind} with {n} inputs: {:?}",
                    cs.which_is_unsatisfied()
                );
                let instance = cs.instance_assignment().unwrap();
                assert_eq!(instance.len(), 1 + NUM_PUBLIC_INPUTS);
                assert_eq!(&instance[1..], t.public_inputs().as_slice());
            }
        }
    }

    #[test]
    fn worked_examples_prove() {
        for kind in TokenKind::ALL {
            assert!(proves(&worked_example(kind)), "{kind}");
        }
    }

    #[test]
    fn inputs_of_the_other_token_are_refused() {
        let erc20 = JoinSplitInputs::generate(TokenKind::Erc20, 1, &mut rng(12));
        let circuit = JoinSplitCircuit {
            kind: TokenKind::Erc1155,
            inputs: Some(erc20),
            forged_key: None,
        };
        assert!(circuit
            .generate_constraints(ConstraintSystem::<Fr>::new_ref())
            .is_err());
    }

    /// Exact constraint counts (setup mode). Any change to a gadget moves these numbers;
    /// update them together with `benches/results/2026-12-03-dvp-constraints.md`.
    #[test]
    fn constraint_counts() {
        for (kind, expected) in TokenKind::ALL.into_iter().zip([40_705, 43_825]) {
            let cs = ConstraintSystem::<Fr>::new_ref();
            cs.set_mode(SynthesisMode::Setup);
            JoinSplitCircuit::for_setup(kind)
                .generate_constraints(cs.clone())
                .unwrap();
            assert_eq!(cs.num_constraints(), expected, "{kind}");
            assert_eq!(cs.num_instance_variables(), 1 + NUM_PUBLIC_INPUTS);
        }
    }

    /// A forgery of `rule`, refused natively and in the circuit, in `rule`'s namespace
    /// ([`crate::dvp::assert_forgery_refused`]).
    fn refused(good: &JoinSplitInputs, rule: Rule, edit: impl Fn(&mut JoinSplitInputs)) {
        crate::dvp::assert_forgery_refused(good, rule, rule, edit)
    }

    use crate::dvp::Rule;

    /// The reference takes every Poseidon output "mod r" from a free hint: any nullifier,
    /// root, output or revert commitment passes. Here each is computed in the circuit.
    #[test]
    fn forged_hash_outputs_are_refused() {
        for kind in TokenKind::ALL {
            let good = JoinSplitInputs::generate(kind, 3, &mut rng(13));
            assert!(proves(&good));
            let one = Fr::ONE;
            refused(&good, Rule::Nullifier, |t| t.inputs[1].nullifier += one);
            // Another key's nullifier for the same note.
            refused(&good, Rule::Nullifier, |t| {
                t.inputs[0].nullifier = crate::dvp::nullifier(&one, &t.inputs[0].path.index)
            });
            refused(&good, Rule::NoteInTree, |t| t.inputs[2].merkle_root += one);
            refused(&good, Rule::NoteInTree, |t| {
                t.inputs[0].path.siblings[5] += one
            });
            refused(&good, Rule::OutputCommitment, |t| {
                t.outputs[0].commitment += one
            });
            // An output to another recipient than the one committed.
            refused(&good, Rule::OutputCommitment, |t| {
                t.outputs[1].recipient_key += one
            });
            refused(&good, Rule::RevertCommitment, |t| {
                t.revert_commitment += one
            });
        }
    }

    /// The reference leaves the quotient of `H(sk, sk) mod L` free, so any key below L passes
    /// for any sk: another holder's note can be spent with one's own key. Here the thief's
    /// nullifier and revert are consistent, the note and root are the victim's, and no
    /// quotient (all eight are tried) makes the victim's key pass for the thief's sk.
    #[test]
    fn another_holders_note_cannot_be_spent_with_a_free_key_quotient() {
        for kind in TokenKind::ALL {
            let good = JoinSplitInputs::generate(kind, 2, &mut rng(14));
            let victim_key = public_key(&good.inputs[0].secret_key);
            // The honest hint through the same path: satisfied.
            let (q, pk) = modl::div_rem(&crate::poseidon::hash(&[
                *good.inputs[0].secret_key,
                *good.inputs[0].secret_key,
            ]));
            let honest = ForgedKey {
                slot: 0,
                quotient: q,
                remainder: pk,
            };
            assert!(satisfied(
                JoinSplitCircuit::for_proving(good.clone()).with_forged_key(honest)
            ));

            let mut stolen = good.clone();
            let thief = Fr::from(123_456_789u64);
            *stolen.inputs[0].secret_key = thief;
            stolen.derive_public_values();
            stolen.revert_commitment = stolen.token.note_commitment(
                &victim_key,
                &stolen.revert_salt,
                &stolen.input_total(),
            );
            assert_eq!(stolen.check().map_err(|e| e.rule), Err(Rule::NoteInTree));
            assert!(!proves(&stolen));
            for quotient in 0..8u8 {
                let forged = ForgedKey {
                    slot: 0,
                    quotient,
                    remainder: victim_key,
                };
                assert!(
                    !satisfied(
                        JoinSplitCircuit::for_proving(stolen.clone()).with_forged_key(forged)
                    ),
                    "{kind}: quotient {quotient}"
                );
            }
        }
    }

    #[test]
    fn a_note_counted_twice_is_refused() {
        for kind in TokenKind::ALL {
            let good = JoinSplitInputs::generate(kind, 2, &mut rng(15));
            refused(&good, Rule::DistinctNullifiers, |t| {
                t.inputs[9] = t.inputs[0].clone();
                *t.outputs[1].value += *t.inputs[0].value;
                t.derive_public_values();
            });
            // Dummies may repeat the dummy nullifier (slots 2..9 of `good` do).
            assert!(proves(&good));
        }
    }

    #[test]
    fn minting_is_refused() {
        for kind in TokenKind::ALL {
            let good = JoinSplitInputs::generate(kind, 2, &mut rng(16));
            // More out than in.
            refused(&good, Rule::ValueConservation, |t| {
                t.outputs[0].value += Fr::ONE;
                t.derive_public_values();
            });
            // A wrapped sum: outputs T + 5 and −5 add up to T in the field.
            crate::dvp::assert_forgery_refused(
                &good,
                Rule::AmountRange,
                Rule::OutputCommitment,
                |t| {
                    *t.outputs[0].value = t.input_total() + Fr::from(5u64);
                    *t.outputs[1].value = -Fr::from(5u64);
                    t.derive_public_values();
                },
            );
            // Amounts of 10^36: an output, then an input.
            let max = Fr::from(bound() - 1u32);
            refused(&good, Rule::AmountRange, |t| {
                *t.inputs[0].value = max;
                *t.inputs[1].value = Fr::ONE;
                *t.outputs[0].value = max + Fr::ONE;
                *t.outputs[1].value = Fr::ZERO;
                replant(t);
            });
            refused(&good, Rule::AmountRange, |t| {
                *t.inputs[0].value = max + Fr::ONE;
                *t.inputs[1].value = Fr::ZERO;
                *t.outputs[0].value = max;
                *t.outputs[1].value = Fr::ONE;
                replant(t);
            });
            // The largest amounts pass.
            let mut edge = good.clone();
            *edge.inputs[0].value = max;
            *edge.inputs[1].value = max;
            *edge.outputs[0].value = max;
            *edge.outputs[1].value = max;
            replant(&mut edge);
            assert_eq!(edge.check(), Ok(()));
            assert!(proves(&edge));
        }
    }

    /// An index of 256 + i would give a note at leaf i a second nullifier.
    #[test]
    fn an_index_of_256_or_more_is_refused() {
        let good = JoinSplitInputs::generate(TokenKind::Erc20, 1, &mut rng(17));
        crate::dvp::assert_forgery_refused(&good, Rule::LeafIndex, Rule::Nullifier, |t| {
            t.inputs[0].path.index += Fr::from(256u64);
            t.derive_public_values();
        });
    }

    #[test]
    fn dummy_slots_are_exactly_dummies() {
        for kind in TokenKind::ALL {
            let good = JoinSplitInputs::generate(kind, 2, &mut rng(18));
            // A zero-amount slot that is no note: the reference lets it publish H(sk, index)
            // for the prover's key and any index.
            refused(&good, Rule::NoteInTree, |t| {
                t.inputs[4] = InputSlot {
                    secret_key: t.inputs[0].secret_key.clone(),
                    path: MerklePath {
                        index: Fr::from(99u64),
                        ..MerklePath::zero()
                    }
                    .into(),
                    ..InputSlot::dummy()
                };
                t.derive_public_values();
            });
            // A note of key 0 at index 0 in the tree, with value, publishes H(0, 0), which a
            // contract must skip: the note would never be marked spent.
            refused(&good, Rule::DummySlot, |t| {
                let mut slot = InputSlot {
                    value: Fr::from(1000u64).into(),
                    ..InputSlot::dummy()
                };
                let mut tree = crate::merkle::Tree::new();
                tree.insert(0, slot.note(&t.token));
                *slot.path = tree.path(0);
                slot.merkle_root = tree.root();
                t.inputs[5] = slot;
                t.outputs[0].value += Fr::from(1000u64);
                t.derive_public_values();
            });
            // Slot 0 a dummy while another slot holds value: the revert would go to pk(0).
            refused(&good, Rule::RevertOwner, |t| {
                t.inputs.swap(0, 2);
                t.derive_public_values();
            });
            // A dummy's root and tree number are free, as in the reference.
            let mut free = good.clone();
            free.inputs[6].merkle_root = Fr::from(5u64);
            free.inputs[6].tree_number = Fr::from(3u64);
            assert_eq!(free.check(), Ok(()));
            assert!(proves(&free));
        }
    }
}
