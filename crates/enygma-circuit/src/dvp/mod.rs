//! The DvP (delivery-versus-payment) notes and statements.
//!
//! A note is a leaf of a depth-8 Merkle tree ([`crate::merkle`]) owned by a key
//! `pk = Poseidon(sk, sk) mod L` ([`crate::keys`]). Its commitment chains 2-input Poseidons, the
//! owner key first, in one of three formats (dvp.md, "Note commitments"):
//!
//! - ERC-20: `C20(pk, salt, amount, token) = H(H(H(pk, salt), amount), token)`. It is also the
//!   commitment a deposit leaves in the DvP contract and a withdraw claims back (the reference's
//!   "V2" formula), with the deposited value as the amount and the contract address as token.
//! - ERC-1155: `C1155(pk, salt, token, id, amount) = H(H(H(H(pk, salt), token), id), amount)`.
//! - ERC-721: `C721(pk, salt, uid) = H(H(pk, salt), uid)`.
//!
//! Spending a note publishes its nullifier `N(sk, index) = H(sk, index)`, with the note's leaf
//! index; unused slots of a join-split publish the dummy nullifier `H(0, 0)`.
//!
//! The statements: [`join_split`] (the ERC-20 and ERC-1155 join-splits, one circuit
//! parameterised by the token kind) and [`ownership`] (the ERC-721 ownership transfer). Both
//! report a failed rule with [`CheckFailure`].
//!
//! A deposit proves C20 for its public `hash` with the owner's key given directly; a withdraw
//! proves it for each of its 10 public `hashes` whose value is not zero, with the owner's key
//! derived from the deposit's secret key (`Poseidon(sk, sk) mod L`, the same public-key rule as
//! the transfer's check 6).
//!
//! A withdraw must not claim the same commitment twice ([`repeated_note`]): once its credited
//! value is the sum of its deposits' values, a repeated deposit would count twice. Empty slots
//! carry the hash 0 and may repeat.
//!
//! What the proofs leave to the contract (known roots per note kind, one nullifier set per kind,
//! each note in exactly one store) and the decision on a note that could be both withdrawn by
//! its hash and spent in a join-split by its nullifier are in `docs/soundness.md`.

/// Enters the constraint namespace of a [`Rule`] until the end of the enclosing block: with a
/// `ConstraintLayer` installed, `cs.which_is_unsatisfied()` names the rule an unsatisfied
/// constraint belongs to. A rule's constraints may come in several blocks (a key is derived
/// before the index is allocated): the allocation order is the keys', so it stays.
macro_rules! rule {
    ($cs:expr, $rule:expr) => {
        let _namespace = ark_relations::ns!($cs, $rule.name());
    };
}

pub mod constraints;
pub mod join_split;
pub mod ownership;

use std::{fmt, sync::OnceLock};

use ark_ff::Zero;

use crate::{poseidon, Fr};

/// Slots a withdraw always carries, used or not (the reference's fixed `[10]` arrays).
pub const WITHDRAW_SLOTS: usize = 10;

/// `C20 = H(H(H(owner_key, salt), amount), token)`: an ERC-20 note, and a deposit's DvP
/// commitment (with the deposited value and the DvP contract's address).
pub fn erc20_commitment(owner_key: &Fr, salt: &Fr, amount: &Fr, token: &Fr) -> Fr {
    let keyed = poseidon::hash(&[*owner_key, *salt]);
    let valued = poseidon::hash(&[keyed, *amount]);
    poseidon::hash(&[valued, *token])
}

/// `C1155 = H(H(H(H(owner_key, salt), token), id), amount)`: an ERC-1155 note.
pub fn erc1155_commitment(owner_key: &Fr, salt: &Fr, token: &Fr, id: &Fr, amount: &Fr) -> Fr {
    let keyed = poseidon::hash(&[*owner_key, *salt]);
    let of_token = poseidon::hash(&[keyed, *token]);
    let of_id = poseidon::hash(&[of_token, *id]);
    poseidon::hash(&[of_id, *amount])
}

/// `C721 = H(H(owner_key, salt), uid)`: an ERC-721 note.
pub fn erc721_commitment(owner_key: &Fr, salt: &Fr, uid: &Fr) -> Fr {
    poseidon::hash(&[poseidon::hash(&[*owner_key, *salt]), *uid])
}

/// `N(sk, index) = H(sk, index)`: the nullifier that spending the note at leaf `index` with
/// secret key `sk` publishes. It depends on neither the note nor its tree (dvp.md, defect 5).
pub fn nullifier(secret_key: &Fr, leaf_index: &Fr) -> Fr {
    poseidon::hash(&[*secret_key, *leaf_index])
}

/// `H(0, 0)`: the nullifier of a dummy slot (key 0, index 0), which may repeat.
pub fn dummy_nullifier() -> Fr {
    static D: OnceLock<Fr> = OnceLock::new();
    *D.get_or_init(|| nullifier(&Fr::from(0u64), &Fr::from(0u64)))
}

/// A rule of the DvP statements. [`Rule::name`] is what a failure message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// An amount is below 10^36.
    AmountRange,
    /// A leaf index is below 256.
    LeafIndex,
    /// A published nullifier is `H(sk, index)` of its slot.
    Nullifier,
    /// A spent note is a leaf of the tree with the published root (a join-split slot is exempt
    /// only when it is a dummy).
    NoteInTree,
    /// A slot that publishes the dummy nullifier carries no amount.
    DummySlot,
    /// No two slots publish the same nullifier, except dummies.
    DistinctNullifiers,
    /// Slot 0 holds a note whenever the input total is not zero (the revert note goes to its
    /// key).
    RevertOwner,
    /// An output commitment is the note of its recipient, salt and amount.
    OutputCommitment,
    /// The revert commitment returns the input total (ERC-721: the NFT) to the spender.
    RevertCommitment,
    /// The outputs' total equals the inputs'.
    ValueConservation,
}

impl Rule {
    /// How messages and the circuits' constraint namespaces name the rule.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::AmountRange => "amount below 10^36",
            Rule::LeafIndex => "leaf index below 256",
            Rule::Nullifier => "nullifier",
            Rule::NoteInTree => "note in the tree",
            Rule::DummySlot => "dummy slot carries no amount",
            Rule::DistinctNullifiers => "distinct nullifiers",
            Rule::RevertOwner => "slot 0 holds a note",
            Rule::OutputCommitment => "output commitment",
            Rule::RevertCommitment => "revert commitment",
            Rule::ValueConservation => "value conservation",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rule that a DvP statement's inputs break, with the field concerned (named as in the
/// request, in snake case, e.g. `merkle_roots[3]`). The message never carries a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    pub rule: Rule,
    pub field: String,
}

impl CheckFailure {
    pub(crate) fn new(rule: Rule, field: impl Into<String>) -> Self {
        Self {
            rule,
            field: field.into(),
        }
    }
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check ({}) failed: {}", self.rule, self.field)
    }
}

impl std::error::Error for CheckFailure {}

/// `Ok(())` when `ok`, else the failure of `rule` at `field` (built only when needed).
pub(crate) fn ensure(
    ok: bool,
    rule: Rule,
    field: impl FnOnce() -> String,
) -> Result<(), CheckFailure> {
    if ok {
        Ok(())
    } else {
        Err(CheckFailure::new(rule, field()))
    }
}

/// The first pair of slots (i < j) that carry the same non-zero hash, i.e. claim the same DvP
/// commitment twice; `None` when the non-zero hashes are pairwise distinct.
pub fn repeated_note(hashes: &[Fr]) -> Option<(usize, usize)> {
    (0..hashes.len())
        .flat_map(|j| (0..j).map(move |i| (i, j)))
        .find(|&(i, j)| hashes[i] == hashes[j] && !hashes[i].is_zero())
}

/// The inputs of a DvP statement as the forged-witness tests use them: the native rules, and
/// the circuit that proves the inputs without running those rules.
#[cfg(test)]
pub(crate) trait Forgeable: Clone {
    type Circuit: ark_relations::gr1cs::ConstraintSynthesizer<Fr>;
    fn check(&self) -> Result<(), CheckFailure>;
    fn circuit(self) -> Self::Circuit;
}

#[cfg(test)]
impl Forgeable for join_split::JoinSplitInputs {
    type Circuit = join_split::constraints::JoinSplitCircuit;
    fn check(&self) -> Result<(), CheckFailure> {
        join_split::JoinSplitInputs::check(self)
    }
    fn circuit(self) -> Self::Circuit {
        join_split::constraints::JoinSplitCircuit::for_proving(self)
    }
}

#[cfg(test)]
impl Forgeable for ownership::OwnershipInputs {
    type Circuit = ownership::constraints::OwnershipCircuit;
    fn check(&self) -> Result<(), CheckFailure> {
        ownership::OwnershipInputs::check(self)
    }
    fn circuit(self) -> Self::Circuit {
        ownership::constraints::OwnershipCircuit::for_proving(self)
    }
}

/// Applies `edit` to valid inputs and asserts that the native rules name `rule`, and that the
/// circuit, given the edited values (the rules bypassed), is refused: its first unsatisfied
/// constraint lies in the namespace of `caught_by`, or one of its hints cannot even be computed.
///
/// `caught_by` is `rule` itself but for the ranges (an amount below 10^36, a leaf index below
/// 256): the circuit enforces those by allocating the value as its bits, so they have no
/// constraint of their own to fail. An out-of-range value has no such bits; they read as another
/// value, and the first constraint that binds the value fails instead (the nullifier for an
/// index, the note commitment for an amount).
#[cfg(test)]
pub(crate) fn assert_forgery_refused<T: Forgeable>(
    good: &T,
    rule: Rule,
    caught_by: Rule,
    edit: impl Fn(&mut T),
) {
    let mut forged = good.clone();
    edit(&mut forged);
    assert_eq!(forged.check().map_err(|e| e.rule), Err(rule));
    match crate::first_unsatisfied(forged.circuit()) {
        Ok(Some(trace)) => assert!(
            trace
                .lines()
                .any(|l| l.trim_end().ends_with(&format!("::{}", caught_by.name()))),
            "{rule}: the first unsatisfied constraint is at\n{trace}"
        ),
        Ok(None) => panic!("the circuit accepts a broken {rule}"),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn the_order_of_the_chain_matters() {
        let (a, b, c, d) = (
            Fr::from(1u64),
            Fr::from(2u64),
            Fr::from(3u64),
            Fr::from(4u64),
        );
        assert_ne!(
            erc20_commitment(&a, &b, &c, &d),
            erc20_commitment(&b, &a, &c, &d)
        );
        assert_ne!(
            erc20_commitment(&a, &b, &c, &d),
            erc20_commitment(&a, &b, &d, &c)
        );
        assert_ne!(
            erc1155_commitment(&a, &b, &c, &d, &a),
            erc1155_commitment(&a, &b, &d, &c, &a)
        );
        assert_ne!(erc721_commitment(&a, &b, &c), erc721_commitment(&b, &a, &c));
    }

    /// dvp.md: the reference's hard-coded dummy nullifier is exactly H(0, 0).
    #[test]
    fn dummy_nullifier_is_the_references() {
        assert_eq!(
            dummy_nullifier(),
            Fr::from_str(
                "14744269619966411208579211824598458697587494354926760081771325075741142829156"
            )
            .unwrap()
        );
    }

    #[test]
    fn failure_messages_name_the_rule_and_the_field() {
        let failure = CheckFailure::new(Rule::NoteInTree, "merkle_roots[3]");
        assert_eq!(
            failure.to_string(),
            "check (note in the tree) failed: merkle_roots[3]"
        );
    }

    #[test]
    fn repeated_note_finds_the_first_repeat_and_ignores_empty_slots() {
        let h = |x: u64| Fr::from(x);
        assert_eq!(repeated_note(&[h(1), h(2), h(3)]), None);
        assert_eq!(repeated_note(&[h(0), h(0), h(5), h(0)]), None);
        assert_eq!(repeated_note(&[h(7), h(0), h(7)]), Some((0, 2)));
        assert_eq!(repeated_note(&[h(1), h(4), h(9), h(4), h(1)]), Some((1, 3)));
        assert_eq!(repeated_note(&[]), None);
    }
}
