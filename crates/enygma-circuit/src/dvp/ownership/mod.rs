//! The ERC-721 ownership statement, `POST /ownership-721` (dvp.md, section 3): the holder of
//! an NFT note hands it to a recipient, with a revert note back to themselves.
//!
//! With `pk = Poseidon(sk, sk) mod L` and C721 the ERC-721 note commitment, the circuit proves:
//!
//! 1. `nullifier = H(sk, index)` with `index < 256`.
//! 2. The note `C721(pk, salt_in, uid)` is the leaf at `index` of the depth-8 tree with root
//!    `merkle_root`, for **every** uid.
//! 3. `commitment_out = C721(recipient_key, salt_out, uid)`: the same uid goes out (uid is one
//!    variable, so `uidOut = uidIn` costs nothing).
//! 4. `revert_commitment = C721(pk, revert_salt, uid)`.
//!
//! Public inputs (6, the reference's order): `payment_commitment`, `merkle_root`, `nullifier`,
//! `tree_number`, `commitment_out`, `revert_commitment`. `payment_commitment` and the tree
//! number enter no constraint (the reference defines none); Groth16 over arkworks still binds
//! them.
//!
//! # Decision: the tree check holds for uid 0 too
//!
//! The reference checks the root only when `uid ≠ 0`, so ownership of NFT 0 needs no note:
//! anyone can publish a nullifier and an output note for uid 0, taking it from its holder. A
//! rule whose absence lets another holder's note be spent belongs in the statement, so rule 2
//! has no exemption (one constraint, `root = merkle_root`). An honest request always spends a
//! note of the tree, uid 0 or not, so none is refused; what is refused is a request for uid 0
//! whose note is not in the tree (the theft), or one that would use uid 0 as an "empty" leg,
//! which the reference documents nowhere.

pub mod constraints;

use ark_ff::{AdditiveGroup, UniformRand};
use ark_std::rand::Rng;

use super::{ensure, erc721_commitment, nullifier, CheckFailure, Rule};
use crate::{
    keys::public_key,
    merkle::{MerklePath, Tree, LEAVES},
    Fr, Secret,
};

/// `payment_commitment`, `merkle_root`, `nullifier`, `tree_number`, `commitment_out`,
/// `revert_commitment`.
pub const NUM_PUBLIC_INPUTS: usize = 6;

/// Every value of one ERC-721 ownership transfer, public and private, as field elements. The
/// private ones are [`Secret`]s: redacted in `Debug`, zeroized on drop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnershipInputs {
    /// Public, in no constraint: `paymentCommitment`.
    pub payment_commitment: Fr,
    /// `keyPairIn.privateKey`.
    pub secret_key: Secret<Fr>,
    /// `saltIn`.
    pub salt_in: Secret<Fr>,
    /// `uid`: the NFT, the same in the spent and the new note.
    pub uid: Secret<Fr>,
    /// `merkleProof`.
    pub path: Secret<MerklePath>,
    /// Public: `merkleRoot`.
    pub merkle_root: Fr,
    /// Public, in no constraint: `treeNumber`.
    pub tree_number: Fr,
    /// Public, computed: `H(secret_key, path.index)`.
    pub nullifier: Fr,
    /// `pubKeyOut.publicKey`, used as given.
    pub recipient_key: Secret<Fr>,
    /// `saltOut`.
    pub salt_out: Secret<Fr>,
    /// Public, computed: `C721(recipient_key, salt_out, uid)`.
    pub commitment_out: Fr,
    /// `revertSalt`.
    pub revert_salt: Secret<Fr>,
    /// Public, computed: `C721(pk(secret_key), revert_salt, uid)`.
    pub revert_commitment: Fr,
}

impl OwnershipInputs {
    /// The spent note's commitment (the tree leaf it claims).
    pub fn note(&self) -> Fr {
        erc721_commitment(&public_key(&self.secret_key), &self.salt_in, &self.uid)
    }

    /// Sets the public values the service computes rather than takes from the request, as the
    /// reference does: the nullifier, the output commitment and the revert commitment.
    pub fn derive_public_values(&mut self) {
        self.nullifier = nullifier(&self.secret_key, &self.path.index);
        self.commitment_out = erc721_commitment(&self.recipient_key, &self.salt_out, &self.uid);
        self.revert_commitment =
            erc721_commitment(&public_key(&self.secret_key), &self.revert_salt, &self.uid);
    }

    /// The public inputs in the circuit's (and `public_signal`'s) order.
    pub fn public_inputs(&self) -> Vec<Fr> {
        vec![
            self.payment_commitment,
            self.merkle_root,
            self.nullifier,
            self.tree_number,
            self.commitment_out,
            self.revert_commitment,
        ]
    }

    /// Evaluates every rule of the statement natively (see the module documentation).
    pub fn check(&self) -> Result<(), CheckFailure> {
        ensure(self.path.leaf_index().is_some(), Rule::LeafIndex, || {
            "merkle_proof.indices".into()
        })?;
        ensure(
            self.nullifier == nullifier(&self.secret_key, &self.path.index),
            Rule::Nullifier,
            || "nullifier".into(),
        )?;
        ensure(
            self.path.root(self.note()) == Some(self.merkle_root),
            Rule::NoteInTree,
            || "merkle_root".into(),
        )?;
        ensure(
            self.commitment_out
                == erc721_commitment(&self.recipient_key, &self.salt_out, &self.uid),
            Rule::OutputCommitment,
            || "commitment_out".into(),
        )?;
        ensure(
            self.revert_commitment
                == erc721_commitment(&public_key(&self.secret_key), &self.revert_salt, &self.uid),
            Rule::RevertCommitment,
            || "revert_commitment".into(),
        )
    }

    /// Valid inputs: an NFT note at a random leaf of a real depth-8 tree among a few notes of
    /// others, handed to a random recipient. Every value is drawn from `rng`.
    pub fn generate<R: Rng>(rng: &mut R) -> Self {
        let mut tree = Tree::new();
        for _ in 0..rng.gen_range(0..6) {
            tree.insert(rng.gen_range(0..LEAVES), Fr::rand(rng));
        }
        let index = loop {
            let index = rng.gen_range(0..LEAVES);
            if !tree.is_occupied(index) {
                break index;
            }
        };
        let mut generated = Self {
            payment_commitment: Fr::rand(rng),
            secret_key: Fr::rand(rng).into(),
            salt_in: Fr::rand(rng).into(),
            uid: Fr::rand(rng).into(),
            path: MerklePath::zero().into(),
            merkle_root: Fr::ZERO,
            tree_number: Fr::from(rng.gen_range(0..4u64)),
            nullifier: Fr::ZERO,
            recipient_key: public_key(&Fr::rand(rng)).into(),
            salt_out: Fr::rand(rng).into(),
            commitment_out: Fr::ZERO,
            revert_salt: Fr::rand(rng).into(),
            revert_commitment: Fr::ZERO,
        };
        tree.insert(index, generated.note());
        generated.path = tree.path(index).into();
        generated.merkle_root = tree.root();
        generated.derive_public_values();
        generated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::Field;
    use std::str::FromStr;

    pub(crate) fn fr(decimal: &str) -> Fr {
        Fr::from_str(decimal).unwrap()
    }

    /// The ERC-721 sample with dvp.md's salts (saltIn "11", saltOut "21", revertSalt "31") and
    /// the root that its siblings reach in the current note format.
    pub(crate) fn worked_example() -> OwnershipInputs {
        let mut siblings = crate::merkle::zeros()[..8].to_vec();
        siblings[1] =
            fr("10290200826501912825024752539740464465071391900877964304129901339157769145207");
        let mut t = OwnershipInputs {
            payment_commitment: fr(
                "8466219644382948445405248208049387594975942715678383828500932869438579211485",
            ),
            secret_key: fr(
                "9788415874988784019157736045180065897169664925354506868069413473014165509182",
            )
            .into(),
            salt_in: Fr::from(11u64).into(),
            uid: fr("3394704224311584249040954192159419364195268500122569915103844474180361767719")
                .into(),
            path: MerklePath {
                index: Fr::from(2u64),
                siblings: siblings.try_into().unwrap(),
            }
            .into(),
            merkle_root: Fr::ZERO,
            tree_number: Fr::ZERO,
            nullifier: Fr::ZERO,
            recipient_key: fr(
                "5531596323607733673733817933101902436840363804556480215976690544318581584769",
            )
            .into(),
            salt_out: Fr::from(21u64).into(),
            commitment_out: Fr::ZERO,
            revert_salt: Fr::from(31u64).into(),
            revert_commitment: Fr::ZERO,
        };
        t.merkle_root = t.path.root(t.note()).unwrap();
        t.derive_public_values();
        t
    }

    /// dvp.md, "Worked example in the current format": the whole `public_signal`.
    #[test]
    fn worked_example_reproduces_dvp_md() {
        let t = worked_example();
        assert_eq!(t.check(), Ok(()));
        let expected = [
            "8466219644382948445405248208049387594975942715678383828500932869438579211485",
            "2384236742782977619694957139140570301472742802991863769081020912282174359373",
            "10753399827014812770327673787108254740870327571732195289703056448020839574444",
            "0",
            "115281552422263385330014154390460092120980157925154458736864846421827307202",
            "312967550040503206848031675775722053472495902006737436765287725957826077686",
        ];
        assert_eq!(t.public_inputs(), expected.map(fr).to_vec());
        assert_eq!(t.public_inputs().len(), NUM_PUBLIC_INPUTS);
    }

    #[test]
    fn generated_inputs_pass_and_each_broken_rule_is_named() {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(41);
        let good = OwnershipInputs::generate(&mut rng);
        assert_eq!(good.check(), Ok(()));
        let broken = |edit: &dyn Fn(&mut OwnershipInputs)| {
            let mut t = good.clone();
            edit(&mut t);
            t.check().unwrap_err().to_string()
        };
        let one = Fr::ONE;
        assert_eq!(
            broken(&|t| {
                t.path.index += Fr::from(256u64);
                t.derive_public_values()
            }),
            "check (leaf index below 256) failed: merkle_proof.indices"
        );
        assert_eq!(
            broken(&|t| t.nullifier += one),
            "check (nullifier) failed: nullifier"
        );
        assert_eq!(
            broken(&|t| {
                *t.uid += one;
                t.derive_public_values()
            }),
            "check (note in the tree) failed: merkle_root"
        );
        assert_eq!(
            broken(&|t| t.commitment_out += one),
            "check (output commitment) failed: commitment_out"
        );
        assert_eq!(
            broken(&|t| t.revert_commitment += one),
            "check (revert commitment) failed: revert_commitment"
        );
        // uid 0 without a note in the tree: the reference's exemption is gone.
        assert_eq!(
            broken(&|t| {
                *t.uid = Fr::ZERO;
                t.derive_public_values()
            }),
            "check (note in the tree) failed: merkle_root"
        );
        // The values the reference leaves free change nothing.
        let mut t = good.clone();
        t.payment_commitment += one;
        t.tree_number += one;
        assert_eq!(t.check(), Ok(()));
    }
}
