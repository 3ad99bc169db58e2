//! The DvP join-split statements: `POST /join-split-enygma` (ERC-20) and `POST /join-split-1155`
//! (ERC-1155), one relation parameterised by the [`Token`] (dvp.md, sections 1 and 2).
//!
//! Up to ten notes of one token are spent (slots 0..9; the unused ones are dummies) and two are
//! created; a revert note returns the whole input total to the owner of slot 0 if the swap is
//! reverted. With `C` the token's note commitment (C20 or C1155, [`Token::note_commitment`]),
//! `pk(sk) = Poseidon(sk, sk) mod L` and `D = H(0, 0)` the dummy nullifier, the circuit proves:
//!
//! For each input slot i:
//! 1. `values_in[i] < 10^36`.
//! 2. `nullifiers[i] = H(sk_i, index_i)` with `index_i < 256`.
//! 3. Unless `nullifiers[i] = D`, the note `C(pk(sk_i), salts_in[i], values_in[i])` is the leaf
//!    at `index_i` of the depth-8 tree with root `merkle_roots[i]`.
//! 4. If `nullifiers[i] = D`, `values_in[i] = 0`.
//! 5. No two slots publish the same nullifier, unless it is `D`.
//! 6. If slot 0 publishes `D`, every `values_in` is 0.
//!
//! For each output o: `values_out[o] < 10^36` and `commitments_out[o] =
//! C(recipient_o, salts_out[o], values_out[o])`. Then `revert_commitment = C(pk(sk_0),
//! revert_salt, Σ values_in)` and `Σ values_in = Σ values_out` (no wrap: 10·10^36 < r).
//!
//! Public inputs (34, the reference's order): `nft_commitment`, `merkle_roots[10]`,
//! `nullifiers[10]`, `tree_numbers[10]`, `commitments_out[2]`, `revert_commitment`. The token,
//! keys, salts, amounts and paths are private. `nft_commitment` and the tree numbers enter no
//! constraint (the reference defines none); Groth16 over arkworks still binds them, so a proof
//! verifies with no other value there.
//!
//! # Decisions (where the reference's relation is silent or unsound)
//!
//! - **A dummy is a slot that publishes `D`.** The reference skips the tree check of every
//!   zero-amount slot, so such a slot can publish `H(sk, index)` for any key of the prover's and
//!   any index, and a verifier contract, which must skip `D`, would never mark the note of key 0
//!   at index 0 spent (anyone knows sk = 0). Here rules 3 and 4 make every slot either a note of
//!   the tree or exactly the dummy: a zero-amount slot may publish a real note's nullifier only
//!   when that note is in the tree (a real zero-value note can still be spent), and `D` never
//!   carries value. Honest requests are unaffected: the reference's own padding (and a client's
//!   written-out dummy) is key 0, index 0, amount 0. What is refused: a zero-amount slot with a
//!   key or index that is not a note in the tree, and a non-zero note of key 0 at index 0.
//!   A dummy's root and tree number stay free, as in the reference (the contract skips `D`).
//!   Cost: one constraint per slot for each rule (`(root − merkle_root)·(n − D) = 0` and
//!   `amount = (n − D)·w`).
//! - **Distinct nullifiers.** Ten copies of one note would count its value ten times; the
//!   reference leaves this to the contract. Rule 5 costs one constraint per pair (45):
//!   `(n_i − n_j)·w_ij = n_i − D`, which two equal nullifiers satisfy only when they are `D`.
//! - **Slot 0 is a note whenever the input total is not zero.** The revert note goes to slot 0's
//!   key with the whole total; in the reference a dummy slot 0 sends it to pk(0), whose secret
//!   key (0) is public, so anyone could take the reverted funds. Rule 6 replaces rule 4 for slot
//!   0 at no extra cost: `Σ values_in = (n_0 − D)·w` (amounts are non-negative integers that
//!   cannot wrap, so a zero total means every amount is zero). Honest clients fill real inputs
//!   from slot 0; a zero swap (no input at all) still proves, its revert note being a zero-value
//!   note to pk(0).
//!
//! Not changed (protocol, not relation): the nullifier ignores the note's tree, so two notes of
//! one key at the same index in two trees share a nullifier (dvp.md, defect 5); the revert note
//! gathers every slot's value for slot 0's key, whoever owns the other slots (the prover knows
//! every key); output keys are used as given.

pub mod constraints;

use std::fmt;

use ark_ff::{AdditiveGroup, UniformRand};
use ark_std::rand::Rng;

use super::{
    dummy_nullifier, ensure, erc1155_commitment, erc20_commitment, nullifier, CheckFailure, Rule,
};
use crate::{
    amount,
    keys::public_key,
    merkle::{MerklePath, Tree, LEAVES},
    Fr, Secret,
};

/// Input slots of every join-split, used or not.
pub const INPUT_SLOTS: usize = 10;
/// Output notes of every join-split.
pub const OUTPUTS: usize = 2;
/// `nft_commitment`, 10 roots, 10 nullifiers, 10 tree numbers, 2 output commitments and the
/// revert commitment: 34.
pub const NUM_PUBLIC_INPUTS: usize = 1 + 3 * INPUT_SLOTS + OUTPUTS + 1;

/// Which join-split: the token standard its notes hold. The statements' names, routes and keys
/// belong to the prover's statement registry (`enygma_prover::statements`), not to this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TokenKind {
    Erc20,
    Erc1155,
}

impl TokenKind {
    pub const ALL: [TokenKind; 2] = [TokenKind::Erc20, TokenKind::Erc1155];
}

/// The token standard (`ERC-20`), for test and error messages.
impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenKind::Erc20 => "ERC-20",
            TokenKind::Erc1155 => "ERC-1155",
        })
    }
}

/// The token every note of one join-split holds (private in the statement, so held as a
/// [`Secret<Token>`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// `erc20Address`, the 160-bit integer its hex spells.
    Erc20 { address: Fr },
    /// `erc1155Address` and `erc1155TokenId`.
    Erc1155 { address: Fr, id: Fr },
}

impl zeroize::Zeroize for Token {
    fn zeroize(&mut self) {
        match self {
            Token::Erc20 { address } => address.zeroize(),
            Token::Erc1155 { address, id } => {
                address.zeroize();
                id.zeroize();
            }
        }
    }
}

impl Token {
    pub fn kind(&self) -> TokenKind {
        match self {
            Token::Erc20 { .. } => TokenKind::Erc20,
            Token::Erc1155 { .. } => TokenKind::Erc1155,
        }
    }

    /// The note of `amount` of this token for `owner_key`: C20 or C1155.
    pub fn note_commitment(&self, owner_key: &Fr, salt: &Fr, amount: &Fr) -> Fr {
        match self {
            Token::Erc20 { address } => erc20_commitment(owner_key, salt, amount, address),
            Token::Erc1155 { address, id } => {
                erc1155_commitment(owner_key, salt, address, id, amount)
            }
        }
    }
}

/// One input slot: a spent note, or a dummy ([`InputSlot::dummy`]). The private values are
/// [`Secret`]s: redacted in `Debug`, zeroized on drop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSlot {
    /// `keyPairsIn[i].privateKey`.
    pub secret_key: Secret<Fr>,
    /// `saltsIn[i]`.
    pub salt: Secret<Fr>,
    /// `valuesIn[i]`.
    pub value: Secret<Fr>,
    /// `merkleProofs[i]`: the leaf index and its siblings.
    pub path: Secret<MerklePath>,
    /// Public: `merkleRoots[i]`.
    pub merkle_root: Fr,
    /// Public, in no constraint: `treeNumbers[i]`.
    pub tree_number: Fr,
    /// Public, computed: `H(secret_key, path.index)`.
    pub nullifier: Fr,
}

impl InputSlot {
    /// The reference's padding: key 0, salt 0, amount 0, index 0, siblings 0, root 0, tree 0,
    /// nullifier `H(0, 0)`.
    pub fn dummy() -> Self {
        Self {
            secret_key: Fr::ZERO.into(),
            salt: Fr::ZERO.into(),
            value: Fr::ZERO.into(),
            path: MerklePath::zero().into(),
            merkle_root: Fr::ZERO,
            tree_number: Fr::ZERO,
            nullifier: dummy_nullifier(),
        }
    }

    /// The slot's note commitment (the tree leaf it claims).
    pub fn note(&self, token: &Token) -> Fr {
        token.note_commitment(&public_key(&self.secret_key), &self.salt, &self.value)
    }
}

/// One output note. The private values are [`Secret`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputNote {
    /// `pubKeysOut[o].publicKey`, used as given.
    pub recipient_key: Secret<Fr>,
    /// `saltsOut[o]`.
    pub salt: Secret<Fr>,
    /// `valuesOut[o]`.
    pub value: Secret<Fr>,
    /// Public, computed: the note's commitment.
    pub commitment: Fr,
}

/// Every value of one join-split, public and private, as field elements; the private ones are
/// [`Secret`]s (here and in the slots and notes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinSplitInputs {
    pub token: Secret<Token>,
    /// Public, in no constraint: `nftCommitment`.
    pub nft_commitment: Fr,
    pub inputs: [InputSlot; INPUT_SLOTS],
    pub outputs: [OutputNote; OUTPUTS],
    /// `revertSalt`.
    pub revert_salt: Secret<Fr>,
    /// Public, computed: the revert note (slot 0's key, the input total).
    pub revert_commitment: Fr,
}

impl JoinSplitInputs {
    pub fn kind(&self) -> TokenKind {
        self.token.kind()
    }

    /// `Σ values_in` in the field (an integer below 10^37 once every amount is checked).
    pub fn input_total(&self) -> Fr {
        self.inputs.iter().map(|s| *s.value).sum()
    }

    /// Sets the public values the service computes rather than takes from the request, as the
    /// reference does: every slot's nullifier, the output commitments and the revert commitment.
    pub fn derive_public_values(&mut self) {
        for slot in &mut self.inputs {
            slot.nullifier = nullifier(&slot.secret_key, &slot.path.index);
        }
        let token = &self.token;
        for out in &mut self.outputs {
            out.commitment = token.note_commitment(&out.recipient_key, &out.salt, &out.value);
        }
        self.revert_commitment = token.note_commitment(
            &public_key(&self.inputs[0].secret_key),
            &self.revert_salt,
            &self.input_total(),
        );
    }

    /// The public inputs in the circuit's (and `public_signal`'s) order.
    pub fn public_inputs(&self) -> Vec<Fr> {
        let mut out = Vec::with_capacity(NUM_PUBLIC_INPUTS);
        out.push(self.nft_commitment);
        out.extend(self.inputs.iter().map(|s| s.merkle_root));
        out.extend(self.inputs.iter().map(|s| s.nullifier));
        out.extend(self.inputs.iter().map(|s| s.tree_number));
        out.extend(self.outputs.iter().map(|o| o.commitment));
        out.push(self.revert_commitment);
        out
    }

    /// Evaluates every rule of the statement natively (see the module documentation), slot by
    /// slot. Inputs that fail here would only fail later, after far more work.
    pub fn check(&self) -> Result<(), CheckFailure> {
        let dummy = dummy_nullifier();
        for (i, slot) in self.inputs.iter().enumerate() {
            ensure(amount::is_valid(&slot.value), Rule::AmountRange, || {
                format!("values_in[{i}]")
            })?;
            ensure(slot.path.leaf_index().is_some(), Rule::LeafIndex, || {
                format!("merkle_proofs[{i}].indices")
            })?;
            ensure(
                slot.nullifier == nullifier(&slot.secret_key, &slot.path.index),
                Rule::Nullifier,
                || format!("nullifiers[{i}]"),
            )?;
            let is_dummy = slot.nullifier == dummy;
            ensure(
                !is_dummy || *slot.value == Fr::ZERO,
                Rule::DummySlot,
                || format!("values_in[{i}]"),
            )?;
            ensure(
                is_dummy || slot.path.root(slot.note(&self.token)) == Some(slot.merkle_root),
                Rule::NoteInTree,
                || format!("merkle_roots[{i}]"),
            )?;
        }
        for j in 1..INPUT_SLOTS {
            let n = self.inputs[j].nullifier;
            ensure(
                n == dummy || self.inputs[..j].iter().all(|s| s.nullifier != n),
                Rule::DistinctNullifiers,
                || format!("nullifiers[{j}]"),
            )?;
        }
        let total = self.input_total();
        ensure(
            total == Fr::ZERO || self.inputs[0].nullifier != dummy,
            Rule::RevertOwner,
            || "key_pairs_in[0]".into(),
        )?;
        for (o, out) in self.outputs.iter().enumerate() {
            ensure(amount::is_valid(&out.value), Rule::AmountRange, || {
                format!("values_out[{o}]")
            })?;
            ensure(
                out.commitment
                    == self
                        .token
                        .note_commitment(&out.recipient_key, &out.salt, &out.value),
                Rule::OutputCommitment,
                || format!("commitments_out[{o}]"),
            )?;
        }
        ensure(
            self.revert_commitment
                == self.token.note_commitment(
                    &public_key(&self.inputs[0].secret_key),
                    &self.revert_salt,
                    &total,
                ),
            Rule::RevertCommitment,
            || "revert_commitment".into(),
        )?;
        // Every amount is below 10^36: the field sums are the integer sums.
        ensure(
            total == self.outputs.iter().map(|o| *o.value).sum::<Fr>(),
            Rule::ValueConservation,
            || "values_out".into(),
        )
    }

    /// Valid inputs of `kind` spending `real_inputs` notes (0 to 10; 0 is a zero swap) from
    /// slot 0 on, the other slots dummies. The notes belong to one to three owners and sit in
    /// one to three real depth-8 trees (built from the empty values Z0..Z8) among a few notes of
    /// others; a spent note after slot 0 may hold zero. Every other value is drawn from `rng`.
    pub fn generate<R: Rng>(kind: TokenKind, real_inputs: usize, rng: &mut R) -> Self {
        assert!(real_inputs <= INPUT_SLOTS, "at most {INPUT_SLOTS} inputs");
        let address = Fr::from(rng.gen::<u128>()) * Fr::from(1u64 << 32);
        let token = match kind {
            TokenKind::Erc20 => Token::Erc20 { address },
            TokenKind::Erc1155 => Token::Erc1155 {
                address,
                id: Fr::from(rng.gen::<u64>()),
            },
        };
        let owners: Vec<Fr> = (0..rng.gen_range(1..=3)).map(|_| Fr::rand(rng)).collect();
        let mut trees: Vec<Tree> = (0..rng.gen_range(1..=3))
            .map(|_| {
                let mut tree = Tree::new();
                for _ in 0..rng.gen_range(0..4) {
                    tree.insert(rng.gen_range(0..LEAVES), Fr::rand(rng));
                }
                tree
            })
            .collect();

        let mut inputs: [InputSlot; INPUT_SLOTS] = std::array::from_fn(|_| InputSlot::dummy());
        let mut placed: Vec<(Fr, usize, usize)> = Vec::with_capacity(real_inputs);
        for slot in inputs.iter_mut().take(real_inputs) {
            let secret_key = owners[rng.gen_range(0..owners.len())];
            let tree = rng.gen_range(0..trees.len());
            // A free leaf, at an index this owner spends nowhere else (the nullifier ignores
            // the tree).
            let index = loop {
                let index = rng.gen_range(0..LEAVES);
                if !trees[tree].is_occupied(index)
                    && !placed
                        .iter()
                        .any(|&(k, _, j)| k == secret_key && j == index)
                {
                    break index;
                }
            };
            let value = if !placed.is_empty() && rng.gen_ratio(1, 5) {
                0
            } else {
                rng.gen_range(1..10u128.pow(35))
            };
            *slot = InputSlot {
                secret_key: secret_key.into(),
                salt: Fr::rand(rng).into(),
                value: Fr::from(value).into(),
                tree_number: Fr::from(tree as u64),
                ..InputSlot::dummy()
            };
            trees[tree].insert(index, slot.note(&token));
            placed.push((secret_key, tree, index));
        }
        // Paths and roots once every note is in its tree.
        for (slot, &(_, tree, index)) in inputs.iter_mut().zip(&placed) {
            slot.path = trees[tree].path(index).into();
            slot.merkle_root = trees[tree].root();
        }

        let total: u128 = inputs
            .iter()
            .map(|s| u128::try_from(crate::modl::to_biguint(&s.value)).expect("below 10^35"))
            .sum();
        let first = rng.gen_range(0..=total);
        let mut output = |value: u128| OutputNote {
            recipient_key: public_key(&Fr::rand(rng)).into(),
            salt: Fr::rand(rng).into(),
            value: Fr::from(value).into(),
            commitment: Fr::ZERO,
        };
        let outputs = [output(first), output(total - first)];
        let mut generated = Self {
            token: token.into(),
            nft_commitment: Fr::rand(rng),
            inputs,
            outputs,
            revert_salt: Fr::rand(rng).into(),
            revert_commitment: Fr::ZERO,
        };
        generated.derive_public_values();
        generated
    }
}

#[cfg(test)]
mod tests;
