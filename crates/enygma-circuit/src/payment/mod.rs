//! The three payment statements of the reference, which share the anonymity-set machinery:
//! a private **transfer** inside an anonymity set of k members, a **deposit** of part of the
//! sender's private balance into the DvP contract, and a **withdraw** of DvP deposits back into
//! it (see `shared/reference/README.md` and the reference's `enygma-{transfer,deposit,withdraw}`
//! circuits at 67c4c26).
//!
//! The sender s is the member with `anonymity_set[s] = sender_id`; v is `sender_tx_value`, B the
//! previous balance, R the previous random value, L the order of Baby Jubjub's prime subgroup and
//! "mod L" the remainder of a field element's canonical integer. Checks 1–14 are the transfer's;
//! deposit and withdraw change some and add check 15, and a withdraw adds checks 16–18:
//!
//! 1. `sender_id` occurs exactly once in the anonymity set.
//! 2. Transfer and deposit: `tx_values[s] = (L − v) mod L`, the sender pays v.
//!    Withdraw: `tx_values[s] = v`, the sender receives v.
//! 3. Every previous commitment and transaction commitment is on the curve.
//! 4. `shared_secrets[s] = Poseidon(R, secret_key) mod L`.
//! 5. `hashed_shared_secrets[i] = Poseidon(shared_secrets[i], shared_secrets[i]) mod L`.
//! 6. `public_keys[s] = Poseidon(secret_key, secret_key) mod L`.
//! 7. `previous_commits[s] = Pedersen(B, R)`.
//! 8. `message_tags[i] = Poseidon(Poseidon(12), shared_secrets[i], block_number) mod L`.
//! 9. Value conservation: the members other than the sender receive v in all for a transfer
//!    (`Σ_{i≠s} tx_values[i] = v`) and nothing for a deposit or a withdraw (every other tx value
//!    is 0), and `Σ tx_random_values ≡ 0 (mod L)`. Every tx value is below L (check 13), so at
//!    most five of them add up to less than 5L < r: the field sums are integer sums. (The
//!    reference only asks `Σ tx_values ≡ 0 (mod L)`, which `[0, L − 1, 1]` passes: one member
//!    loses 1, or a member at 0 is handed a balance of L − 1; and for deposit and withdraw it
//!    compares Pedersen commitments of the *field* sums, which receivers' values summing to r
//!    fool.)
//! 10. Transfer only: the sum of all transaction commitments is the identity.
//! 11. B < L and v < L, and for transfer and deposit v ≤ B. A balance is a residue mod L, and
//!     B + L opens the same commitment (check 7): without the bound, a sender holding 10 could
//!     claim 10 + L and pay out up to that. (The reference bounds B and v below 2²⁵² only, and
//!     its withdraw bounds only v.)
//! 12. `nullifier = Poseidon(hashed_shared_secrets[s], block_number)` (the reference's rule), or
//!     `nullifier = Poseidon(shared_secrets[s], block_number)` for the statements that hide the
//!     sender ([`NullifierRule`]).
//! 13. `tx_commits[i] = Pedersen(tx_values[i], tx_random_values[i])`, every tx value below L
//!     (the reference: below 2²⁵², so L − x passes as a "receiver's value" that takes x away).
//! 14. With `hᵢ = Poseidon(Poseidon(21), shared_secrets[i], block_number) mod L`: a receiver's
//!     `tx_random_values[i] = L − hᵢ`, the sender's is `(Σ_{i≠s} hᵢ) mod L`.
//! 15. Deposit: `hash = DvpHash(pk, saltOut, v, address)`, with
//!     `DvpHash(key, salt, value, address) = Poseidon(Poseidon(Poseidon(key, salt), value), address)`.
//!     Withdraw: for each of the 10 slots j with `v_per_deposit[j] ≠ 0`,
//!     `hashes[j] = DvpHash(Poseidon(sk_deposits[j], sk_deposits[j]) mod L, saltsIn[j],
//!     v_per_deposit[j], address)`.
//! 16. Withdraw: every `v_per_deposit[j]` is below 2²⁵² and `v = Σ v_per_deposit` over the
//!     integers: the sender is credited exactly the value of the deposits it claims.
//! 17. Withdraw: a slot with `v_per_deposit[j] = 0` is empty, its `hashes[j]` is 0.
//! 18. Withdraw: the non-zero `hashes` are pairwise distinct (no deposit is claimed twice).
//! 19. R < L. Check 7 only sees R mod L, but check 4 hashes R itself: R, R + L, …, R + 7L would
//!     open the same commitment with as many shared secrets, tags and nullifiers, several
//!     spends of one balance in one block. (The reference has no such bound.)
//! 20. The members of `anonymity_set` are pairwise distinct. Check 1 only refuses the sender
//!     twice; a contract that writes one commitment per named member would write a member
//!     named twice from the same previous commitment and drop one of its tx commitments (a
//!     burn), and a set naming k − 1 members hides the sender among fewer than k. (The
//!     reference accepts it.)
//! 21. Deposit: v < 10^36. The deposit's note is spent by the ERC-20 join-split, whose amounts
//!     are below 10^36 ([`crate::amount`]); a larger deposit would make a note no join-split can
//!     spend. (The reference bounds v below 2²⁵² only.)
//!
//! The argument that these checks leave every quantity one representative, statement by
//! statement, is in `docs/soundness.md`.
//!
//! Public inputs, in this order: hashed_shared_secrets[k], public_keys[k], previous_commits[k] as
//! x0, y0, x1, y1, …, tx_commits[k] likewise, nullifier, block_number, anonymity_set[k],
//! message_tags[k] (8k + 2, the transfer's), then the deposit's `hash` (8k + 3) or the withdraw's
//! `hashes[10]` (8k + 12). Everything else is private.
//!
//! ## Why a withdraw has checks 16–18
//!
//! The reference's withdraw credits v (check 2, conserved by check 9) and proves the hashes of
//! the deposits it names (check 15), but nothing ties v to those deposits' values: a request that
//! claims one deposit of 1 unit, or none at all (every `v_per_deposit` zero, so no hash is
//! checked), proves a credit of any v below 2²⁵². Value appears from nothing; check 16 refuses
//! it. An empty slot's hash is unchecked there too, so it can be any public value, including
//! another holder's real deposit hash, which the contract then marks spent: check 17 refuses
//! that. And once v is the sum of the claimed values, one deposit named in two slots would count
//! twice: check 18 refuses that.
//!
//! Check 16's bound: every `v_per_deposit[j]` is a non-negative part of v < L (check 11), so
//! bounding each below 2²⁵² refuses no honest request (and every deposit hash a deposit creates
//! is for a value below L, by the deposit's check 11). With that bound, ten parts sum to less
//! than 2²⁵⁶, which can exceed r: the field sum alone could wrap around, so the circuit adds the
//! parts' low and high 126-bit halves separately, with a 4-bit carry between them
//! ([`crate::bits::enforce_integer_sum`]: 252 booleanity constraints a slot, plus 6). Bounding
//! every running partial sum below 2²⁵² would be just as lossless but costs 8 × 252 more
//! constraints; bounding each part below 2²⁴⁸ (so that ten add up below 2²⁵²) would refuse a
//! single deposit of 2²⁴⁸ or more and save only 40.
//!
//! Check 17 makes a zero-value deposit impossible to claim. It holds nothing, so nothing is lost;
//! the reference's own clients fill unused slots with the hash 0.

pub mod constraints;

use std::fmt;

use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, BigInteger, PrimeField, UniformRand, Zero};
use ark_std::rand::Rng;

use crate::{
    babyjubjub::{self, Point},
    dvp::{self, WITHDRAW_SLOTS},
    modl::{self, l_fr},
    poseidon, Fr, Secret,
};

/// Bits of an amount (v, and a withdraw's `v_per_deposit`): below 2²⁵², so that ten of them add
/// up below 2²⁵⁶ without overflowing the integer sum of check 16. Check 11 then bounds v below L.
pub const VALUE_BITS: usize = 252;
/// Random factors are at most L, so they fit in L's 251 bits.
pub const RANDOM_FACTOR_BITS: usize = modl::L_BITS;

/// How check 12 derives the nullifier. Both rules are functions of the sender's shared secret
/// `s_s = Poseidon(R, sk) mod L` and the block number alone, and s_s is one value per balance
/// (checks 4, 7, 11 and 19), so either gives a balance exactly one nullifier per block. They
/// differ in who can compute it (`docs/soundness.md`, P1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NullifierRule {
    /// The reference's: `Poseidon(hashed_shared_secrets[s], block_number)`. Its inputs are public,
    /// so anyone who tries the k members' hashed shared secrets finds the sender.
    Reference,
    /// `Poseidon(shared_secrets[s], block_number)`. s_s is private and the public
    /// `hashed_shared_secrets[s] = Poseidon(s_s, s_s) mod L` does not give it back, so only the
    /// sender can compute it and the nullifier names no member.
    HiddenSender,
}

impl NullifierRule {
    /// Both rules, the reference's first.
    pub const ALL: [NullifierRule; 2] = [NullifierRule::Reference, NullifierRule::HiddenSender];

    /// The nullifier of the sender whose shared secret is `shared_secret` (check 12).
    pub fn nullifier(self, shared_secret: &Fr, block_number: &Fr) -> Fr {
        let hashed = match self {
            NullifierRule::Reference => hashed_shared_secret(shared_secret),
            NullifierRule::HiddenSender => *shared_secret,
        };
        poseidon::hash(&[hashed, *block_number])
    }
}

/// Which of the three payment statements a [`PaymentInputs`] or circuit is. Their names, routes,
/// sizes and keys belong to the statement registry (`enygma_prover::statements`), not to this
/// enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Transfer,
    Deposit,
    Withdraw,
}

impl Kind {
    /// Every kind, for this crate's tests.
    #[cfg(test)]
    pub(crate) const ALL: [Kind; 3] = [Kind::Transfer, Kind::Deposit, Kind::Withdraw];

    /// Number of public inputs for an anonymity set of k members.
    pub const fn num_public_inputs(self, k: usize) -> usize {
        8 * k
            + 2
            + match self {
                Kind::Transfer => 0,
                Kind::Deposit => 1,
                Kind::Withdraw => WITHDRAW_SLOTS,
            }
    }
}

/// For messages: the variant's name (`Transfer`).
impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What a deposit adds: the public DvP commitment `hash` and its private preimage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deposit {
    pub hash: Fr,
    /// The DvP owner key, used as given (`pk` in the request).
    pub pk: Secret<Fr>,
    pub address: Secret<Fr>,
    pub salt_out: Secret<Fr>,
}

/// What a withdraw adds: 10 DvP commitment slots (public `hashes`), their preimages, and the
/// address they were made for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Withdraw {
    pub hashes: Vec<Fr>,
    pub sk_deposits: Secret<Vec<Fr>>,
    pub v_per_deposit: Secret<Vec<Fr>>,
    pub address: Secret<Fr>,
    pub salts_in: Secret<Vec<Fr>>,
}

#[cfg(test)]
impl Withdraw {
    /// Copies the deposit claimed in slot `from` into slot `to`: one deposit claimed twice, the
    /// forgery check 18 refuses (the native and the circuit tests build it alike).
    pub(crate) fn claim_twice(&mut self, from: usize, to: usize) {
        self.hashes[to] = self.hashes[from];
        for values in [
            &mut self.sk_deposits,
            &mut self.v_per_deposit,
            &mut self.salts_in,
        ] {
            values[to] = values[from];
        }
    }
}

/// The statement-specific part of the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dvp {
    /// A transfer touches no DvP commitment.
    None,
    Deposit(Deposit),
    Withdraw(Withdraw),
}

/// Every value of one payment statement, public and private, as field elements. The private
/// ones (everything but the public inputs listed in the module documentation) are
/// [`Secret`]s: redacted in `Debug`, zeroized on drop. `sender_id` is one, since it tells which
/// member of the anonymity set is paying (the reference's nullifier tells it too, from public
/// inputs only: `docs/soundness.md`, P1; [`NullifierRule::HiddenSender`]'s does not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentInputs {
    pub sender_id: Secret<Fr>,
    pub anonymity_set: Vec<Fr>,
    pub secret_key: Secret<Fr>,
    pub shared_secrets: Secret<Vec<Fr>>,
    pub hashed_shared_secrets: Vec<Fr>,
    pub public_keys: Vec<Fr>,
    pub previous_sender_balance: Secret<Fr>,
    pub previous_sender_random_value: Secret<Fr>,
    pub previous_commits: Vec<(Fr, Fr)>,
    pub tx_commits: Vec<(Fr, Fr)>,
    pub tx_values: Secret<Vec<Fr>>,
    pub tx_random_values: Secret<Vec<Fr>>,
    pub sender_tx_value: Secret<Fr>,
    pub nullifier: Fr,
    pub block_number: Fr,
    pub message_tags: Vec<Fr>,
    pub dvp: Dvp,
}

/// Declares [`Check`] from one list: each check's number, variant and name, so that the failure
/// messages and the circuit's constraint namespaces cannot disagree.
macro_rules! checks {
    ($($(#[$doc:meta])* $number:literal $variant:ident $name:literal,)*) => {
        /// A check of the payment statements (see the module documentation), as reported by
        /// [`PaymentInputs::check`] and named by the circuit's constraint namespaces.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Check {
            $($(#[$doc])* $variant = $number,)*
        }

        impl Check {
            /// Every check, in order.
            pub const ALL: [Check; [$($number),*].len()] = [$(Check::$variant),*];

            /// The check's number in the module documentation (1–19).
            pub const fn number(self) -> u8 {
                self as u8
            }

            /// The check's name in messages (`shared secret`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Check::$variant => $name,)*
                }
            }

            /// `check 4 (shared secret)`: how messages and the circuit's constraint namespaces
            /// name the check.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Check::$variant => concat!("check ", $number, " (", $name, ")"),)*
                }
            }
        }
    };
}

checks! {
    1 SenderInAnonymitySet "sender in anonymity set",
    2 SenderTxValue "sender tx value",
    3 PointsOnCurve "points on curve",
    4 SharedSecret "shared secret",
    5 HashedSharedSecrets "hashed shared secrets",
    6 PublicKey "public key",
    7 PreviousCommitment "previous commitment",
    8 MessageTags "message tags",
    9 ValueConservation "value conservation",
    10 SumOfTxCommitments "sum of tx commitments",
    11 BalanceRange "balance range",
    12 Nullifier "nullifier",
    13 TxCommitments "tx commitments",
    14 RandomFactors "random factors",
    15 DvpHash "dvp hash",
    16 WithdrawnValue "withdrawn value",
    17 EmptyDepositSlot "empty deposit slot",
    18 DistinctDeposits "distinct deposits",
    19 RandomValueRange "random value range",
    20 DistinctMembers "distinct members",
    21 DepositValueRange "deposit value range",
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A check of the statement that the inputs do not satisfy. Its message names the check and,
/// where it helps, the public field or index concerned; never a secret value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    pub check: Check,
    pub detail: Option<String>,
}

impl CheckFailure {
    fn new(check: Check, detail: impl Into<String>) -> Self {
        Self {
            check,
            detail: Some(detail.into()),
        }
    }
}

impl From<Check> for CheckFailure {
    fn from(check: Check) -> Self {
        Self {
            check,
            detail: None,
        }
    }
}

/// `check 8 (message tags) failed: message_tags[1]`.
impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.check)?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CheckFailure {}

fn ensure(ok: bool, check: Check) -> Result<(), CheckFailure> {
    if ok {
        Ok(())
    } else {
        Err(check.into())
    }
}

/// The first index (if any) of a slice of which `bad` holds, for a message naming it.
fn first_bad<T>(items: &[T], bad: impl Fn(usize, &T) -> bool) -> Option<usize> {
    items.iter().enumerate().position(|(i, x)| bad(i, x))
}

/// `ok` holds for every item, else the failure of `check` naming the first other as `field[i]`.
fn ensure_all<T>(
    items: &[T],
    check: Check,
    field: &str,
    ok: impl Fn(usize, &T) -> bool,
) -> Result<(), CheckFailure> {
    match first_bad(items, |i, x| !ok(i, x)) {
        None => Ok(()),
        Some(i) => Err(CheckFailure::new(check, format!("{field}[{i}]"))),
    }
}

/// `true` when `x`'s canonical integer is below `2^bits`.
pub fn fits_bits(x: &Fr, bits: usize) -> bool {
    x.into_bigint().num_bits() as usize <= bits
}

/// `Poseidon(Poseidon(21), shared_secret, block_number) mod L` (check 14's hᵢ).
pub fn random_factor_hash(shared_secret: &Fr, block_number: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[
        poseidon::random_factor_domain(),
        *shared_secret,
        *block_number,
    ]))
}

/// `Poseidon(Poseidon(12), shared_secret, block_number) mod L` (check 8).
pub fn message_tag(shared_secret: &Fr, block_number: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[
        poseidon::message_tag_domain(),
        *shared_secret,
        *block_number,
    ]))
}

/// `Poseidon(R, sk) mod L`: the sender's shared secret s_s (check 4), one value per balance.
pub fn sender_shared_secret(random_value: &Fr, secret_key: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[*random_value, *secret_key]))
}

/// `Poseidon(s, s) mod L` (check 5).
pub fn hashed_shared_secret(shared_secret: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[*shared_secret, *shared_secret]))
}

/// `Poseidon(sk, sk) mod L` (check 6, and the owner key of a withdrawn deposit in check 15).
pub use crate::keys::public_key;

/// Random factors of check 14, given the sender's index.
pub fn random_factors(shared_secrets: &[Fr], block_number: &Fr, sender: usize) -> Vec<Fr> {
    let hashes: Vec<Fr> = shared_secrets
        .iter()
        .map(|s| random_factor_hash(s, block_number))
        .collect();
    let receivers_sum: Fr = hashes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != sender)
        .map(|(_, h)| *h)
        .sum();
    hashes
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == sender {
                modl::reduce(&receivers_sum)
            } else {
                l_fr() - h
            }
        })
        .collect()
}

/// What the members other than the sender receive in all (check 9): v for a transfer, nothing
/// for a deposit or a withdraw (the value goes to or comes from a DvP commitment).
pub fn received(kind: Kind, amount: &Fr) -> Fr {
    match kind {
        Kind::Transfer => *amount,
        Kind::Deposit | Kind::Withdraw => Fr::ZERO,
    }
}

/// `tx_values[s]` as check 2 wants it.
pub fn sender_tx_value(kind: Kind, amount: &Fr) -> Fr {
    match kind {
        Kind::Transfer | Kind::Deposit => modl::reduce(&(l_fr() - amount)),
        Kind::Withdraw => *amount,
    }
}

fn point((x, y): &(Fr, Fr)) -> Point {
    Point::new_unchecked(*x, *y)
}

impl PaymentInputs {
    /// The anonymity-set size.
    pub fn k(&self) -> usize {
        self.anonymity_set.len()
    }

    pub fn kind(&self) -> Kind {
        match self.dvp {
            Dvp::None => Kind::Transfer,
            Dvp::Deposit(_) => Kind::Deposit,
            Dvp::Withdraw(_) => Kind::Withdraw,
        }
    }

    /// The public inputs in the circuit's (and `public_signal`'s) order.
    pub fn public_inputs(&self) -> Vec<Fr> {
        let coords = |pts: &[(Fr, Fr)]| pts.iter().flat_map(|(x, y)| [*x, *y]).collect::<Vec<_>>();
        let mut out = Vec::with_capacity(self.kind().num_public_inputs(self.k()));
        out.extend(&self.hashed_shared_secrets);
        out.extend(&self.public_keys);
        out.extend(coords(&self.previous_commits));
        out.extend(coords(&self.tx_commits));
        out.push(self.nullifier);
        out.push(self.block_number);
        out.extend(&self.anonymity_set);
        out.extend(&self.message_tags);
        match &self.dvp {
            Dvp::None => {}
            Dvp::Deposit(d) => out.push(d.hash),
            Dvp::Withdraw(w) => out.extend(&w.hashes),
        }
        out
    }

    /// Evaluates every check of the reference's statement natively, in order, and returns the
    /// sender's index: [`PaymentInputs::check_with`] the reference's nullifier rule.
    pub fn check(&self) -> Result<usize, CheckFailure> {
        self.check_with(NullifierRule::Reference)
    }

    /// Evaluates every check of the statement whose nullifier follows `rule`, in order, and
    /// returns the sender's index. Proving inputs that fail here would only fail later, after far
    /// more work. Each check is one function, named as its gadget in [`constraints`]
    /// (`check_nullifier` ↔ `enforce_nullifier`).
    pub fn check_with(&self, rule: NullifierRule) -> Result<usize, CheckFailure> {
        self.assert_lengths();
        let s = self.check_sender_in_anonymity_set()?;
        self.check_sender_tx_value(s)?;
        self.check_points_on_curve()?;
        self.check_shared_secret(s)?;
        self.check_hashed_shared_secrets()?;
        self.check_public_key(s)?;
        self.check_previous_commitment(s)?;
        self.check_message_tags()?;
        self.check_value_conservation(s)?;
        if self.kind() == Kind::Transfer {
            self.check_sum_of_tx_commitments()?;
        }
        self.check_balance_range()?;
        self.check_nullifier(s, rule)?;
        self.check_tx_commitments()?;
        self.check_random_factors(s)?;
        self.check_random_value_range()?;
        self.check_distinct_members()?;
        match &self.dvp {
            Dvp::None => {}
            Dvp::Deposit(d) => {
                check_deposit_value_range(&self.sender_tx_value)?;
                d.check_dvp_hash(&self.sender_tx_value)?
            }
            Dvp::Withdraw(w) => {
                w.check_dvp_hashes()?;
                w.check_withdrawn_value(&self.sender_tx_value)?;
                w.check_empty_deposit_slots()?;
                w.check_distinct_deposits()?;
            }
        }
        Ok(s)
    }

    fn assert_lengths(&self) {
        let k = self.k();
        let lengths = [
            self.shared_secrets.len(),
            self.hashed_shared_secrets.len(),
            self.public_keys.len(),
            self.previous_commits.len(),
            self.tx_commits.len(),
            self.tx_values.len(),
            self.tx_random_values.len(),
            self.message_tags.len(),
        ];
        assert!(
            lengths.iter().all(|&n| n == k),
            "the request model guarantees k-long arrays"
        );
        if let Dvp::Withdraw(w) = &self.dvp {
            let slots = [
                w.hashes.len(),
                w.sk_deposits.len(),
                w.v_per_deposit.len(),
                w.salts_in.len(),
            ];
            assert!(
                slots.iter().all(|&n| n == WITHDRAW_SLOTS),
                "the request model guarantees 10 slots"
            );
        }
    }

    /// Check 1; returns the sender's index s.
    fn check_sender_in_anonymity_set(&self) -> Result<usize, CheckFailure> {
        let check = Check::SenderInAnonymitySet;
        let mut matches = (0..self.k()).filter(|&i| self.anonymity_set[i] == *self.sender_id);
        match (matches.next(), matches.next()) {
            (Some(s), None) => Ok(s),
            (None, _) => Err(CheckFailure::new(
                check,
                "sender_id is not in anonymity_set",
            )),
            (Some(_), Some(_)) => Err(CheckFailure::new(
                check,
                "sender_id occurs more than once in anonymity_set",
            )),
        }
    }

    fn check_sender_tx_value(&self, s: usize) -> Result<(), CheckFailure> {
        ensure(
            self.tx_values[s] == sender_tx_value(self.kind(), &self.sender_tx_value),
            Check::SenderTxValue,
        )
    }

    fn check_points_on_curve(&self) -> Result<(), CheckFailure> {
        let on_curve = |_, p: &(Fr, Fr)| babyjubjub::is_on_curve(p.0, p.1);
        ensure_all(
            &self.previous_commits,
            Check::PointsOnCurve,
            "previous_commits",
            on_curve,
        )?;
        ensure_all(
            &self.tx_commits,
            Check::PointsOnCurve,
            "tx_commits",
            on_curve,
        )
    }

    fn check_shared_secret(&self, s: usize) -> Result<(), CheckFailure> {
        // Copies on the stack, as every computation with them makes (see `crate::secret`).
        let (r, sk) = (*self.previous_sender_random_value, *self.secret_key);
        ensure(
            self.shared_secrets[s] == sender_shared_secret(&r, &sk),
            Check::SharedSecret,
        )
    }

    fn check_hashed_shared_secrets(&self) -> Result<(), CheckFailure> {
        ensure_all(
            &self.hashed_shared_secrets,
            Check::HashedSharedSecrets,
            "hashed_shared_secrets",
            |i, h| *h == hashed_shared_secret(&self.shared_secrets[i]),
        )
    }

    fn check_public_key(&self, s: usize) -> Result<(), CheckFailure> {
        ensure(
            self.public_keys[s] == public_key(&self.secret_key),
            Check::PublicKey,
        )
    }

    fn check_previous_commitment(&self, s: usize) -> Result<(), CheckFailure> {
        let (b, r) = (
            *self.previous_sender_balance,
            *self.previous_sender_random_value,
        );
        ensure(
            point(&self.previous_commits[s]) == babyjubjub::pedersen(&b, &r),
            Check::PreviousCommitment,
        )
    }

    fn check_message_tags(&self) -> Result<(), CheckFailure> {
        ensure_all(
            &self.message_tags,
            Check::MessageTags,
            "message_tags",
            |i, t| *t == message_tag(&self.shared_secrets[i], &self.block_number),
        )
    }

    /// Check 9, in the field, as the circuit states it: each tx value is below L (check 13) and
    /// at most five receivers' values add up to less than 5L < r, so the field equation is the
    /// integer one.
    fn check_value_conservation(&self, s: usize) -> Result<(), CheckFailure> {
        let check = Check::ValueConservation;
        let receivers_sum: Fr = (0..self.k())
            .filter(|&i| i != s)
            .map(|i| self.tx_values[i])
            .sum();
        if receivers_sum != received(self.kind(), &self.sender_tx_value) {
            return Err(CheckFailure::new(
                check,
                match self.kind() {
                    Kind::Transfer => "the receivers' tx_values must sum to sender_tx_value",
                    Kind::Deposit | Kind::Withdraw => {
                        "the tx_values of members other than the sender must be 0"
                    }
                },
            ));
        }
        let random_sum: Fr = self.tx_random_values.iter().sum();
        ensure(modl::is_multiple_of_l(&random_sum), check)
    }

    /// Check 10, of a transfer.
    fn check_sum_of_tx_commitments(&self) -> Result<(), CheckFailure> {
        let commit_sum = self
            .tx_commits
            .iter()
            .map(point)
            .fold(babyjubjub::PointProjective::default(), |acc, p| acc + p);
        ensure(
            commit_sum.into_affine().is_zero(),
            Check::SumOfTxCommitments,
        )
    }

    /// Check 11: B < L and v < L (the one representative of each), and v ≤ B but for a
    /// withdraw.
    fn check_balance_range(&self) -> Result<(), CheckFailure> {
        let check = Check::BalanceRange;
        let (b, v) = (*self.previous_sender_balance, *self.sender_tx_value);
        if !modl::is_reduced(&b) {
            return Err(CheckFailure::new(
                check,
                "previous_sender_balance must be below L",
            ));
        }
        if !modl::is_reduced(&v) {
            return Err(CheckFailure::new(check, "sender_tx_value must be below L"));
        }
        if self.kind() != Kind::Withdraw && b.into_bigint() < v.into_bigint() {
            return Err(CheckFailure::new(
                check,
                "sender_tx_value must not exceed previous_sender_balance",
            ));
        }
        Ok(())
    }

    /// Check 12. Check 4 has passed, so `shared_secrets[s]` is `Poseidon(R, sk) mod L`, and
    /// check 5 made `hashed_shared_secrets[s]` its hash: the reference's rule reads the same
    /// value the circuit selects.
    fn check_nullifier(&self, s: usize, rule: NullifierRule) -> Result<(), CheckFailure> {
        ensure(
            self.nullifier == rule.nullifier(&self.shared_secrets[s], &self.block_number),
            Check::Nullifier,
        )
    }

    fn check_tx_commitments(&self) -> Result<(), CheckFailure> {
        let check = Check::TxCommitments;
        if let Some(i) = first_bad(&self.tx_values, |_, tv| !modl::is_reduced(tv)) {
            return Err(CheckFailure::new(
                check,
                format!("tx_values[{i}] must be below L"),
            ));
        }
        ensure_all(&self.tx_commits, check, "tx_commits", |i, c| {
            point(c) == babyjubjub::pedersen(&self.tx_values[i], &self.tx_random_values[i])
        })
    }

    fn check_random_factors(&self, s: usize) -> Result<(), CheckFailure> {
        let expected = random_factors(&self.shared_secrets, &self.block_number, s);
        ensure_all(
            &self.tx_random_values,
            Check::RandomFactors,
            "tx_random_values",
            |i, t| *t == expected[i],
        )
    }

    /// Check 19: R < L. R·H only depends on R mod L, but check 4 hashes R itself: R + L would
    /// open the same previous commitment with another shared secret, tag and nullifier.
    fn check_random_value_range(&self) -> Result<(), CheckFailure> {
        ensure(
            modl::is_reduced(&self.previous_sender_random_value),
            Check::RandomValueRange,
        )
    }

    /// Check 20: no member named twice (the public indices are named, no secret).
    fn check_distinct_members(&self) -> Result<(), CheckFailure> {
        match repeated_member(&self.anonymity_set) {
            None => Ok(()),
            Some((i, j)) => Err(CheckFailure::new(
                Check::DistinctMembers,
                format!("anonymity_set[{i}] and anonymity_set[{j}] name one member"),
            )),
        }
    }
}

/// The first pair of indices (i < j) at which `anonymity_set` names one member twice; `None`
/// when its members are pairwise distinct (check 20).
pub fn repeated_member(anonymity_set: &[Fr]) -> Option<(usize, usize)> {
    (0..anonymity_set.len())
        .flat_map(|j| (0..j).map(move |i| (i, j)))
        .find(|&(i, j)| anonymity_set[i] == anonymity_set[j])
}

/// Check 21: a deposit's v is a valid DvP amount, below 10^36.
fn check_deposit_value_range(v: &Fr) -> Result<(), CheckFailure> {
    if crate::amount::is_valid(v) {
        Ok(())
    } else {
        Err(CheckFailure::new(
            Check::DepositValueRange,
            "a deposit's sender_tx_value must be below 10^36",
        ))
    }
}

impl Deposit {
    /// Check 15 of a deposit, for the deposited value v.
    fn check_dvp_hash(&self, v: &Fr) -> Result<(), CheckFailure> {
        ensure(
            self.hash == dvp::erc20_commitment(&self.pk, &self.salt_out, v, &self.address),
            Check::DvpHash,
        )
    }
}

/// Checks 15–18 of a withdraw (see the module documentation).
impl Withdraw {
    /// Check 15: every claimed deposit's hash.
    fn check_dvp_hashes(&self) -> Result<(), CheckFailure> {
        ensure_all(&self.hashes, Check::DvpHash, "hashes", |j, h| {
            self.v_per_deposit[j].is_zero()
                || *h
                    == dvp::erc20_commitment(
                        &public_key(&self.sk_deposits[j]),
                        &self.salts_in[j],
                        &self.v_per_deposit[j],
                        &self.address,
                    )
        })
    }

    /// Check 16, for the credited value v.
    fn check_withdrawn_value(&self, v: &Fr) -> Result<(), CheckFailure> {
        let check = Check::WithdrawnValue;
        if let Some(j) = first_bad(&self.v_per_deposit, |_, x| !fits_bits(x, VALUE_BITS)) {
            return Err(CheckFailure::new(
                check,
                format!("v_per_deposit[{j}] must be below 2^252"),
            ));
        }
        // The sum over the integers, in four limbs on the stack (each term is below 2^252, so a
        // carry out of 256 bits is a mismatch): the values are secret, so no heap copy is
        // made and the limbs are wiped.
        use zeroize::Zeroize;
        let mut claimed = ark_ff::BigInt::<4>([0; 4]);
        let mut overflowed = false;
        for x in self.v_per_deposit.iter() {
            let mut term = x.into_bigint();
            overflowed |= claimed.add_with_carry(&term);
            term.0.zeroize();
        }
        let mut expected = v.into_bigint();
        let equal = !overflowed && claimed == expected;
        claimed.0.zeroize();
        expected.0.zeroize();
        if !equal {
            return Err(CheckFailure::new(
                check,
                "sender_tx_value must be the sum of v_per_deposit",
            ));
        }
        Ok(())
    }

    fn check_empty_deposit_slots(&self) -> Result<(), CheckFailure> {
        ensure_all(&self.hashes, Check::EmptyDepositSlot, "hashes", |j, h| {
            !self.v_per_deposit[j].is_zero() || h.is_zero()
        })
    }

    fn check_distinct_deposits(&self) -> Result<(), CheckFailure> {
        match dvp::repeated_note(&self.hashes) {
            None => Ok(()),
            Some((i, j)) => Err(CheckFailure::new(
                Check::DistinctDeposits,
                format!("hashes[{i}] and hashes[{j}]"),
            )),
        }
    }
}

/// What the sender of a payment chooses, from which every other value of its inputs follows
/// (generated requests and tests use it; requests to prove are parsed into [`PaymentInputs`]):
/// what an honest client computes, and what a forger recomputes after changing one choice (the
/// ledger tests do exactly that). [`Spend::inputs`] derives the sender's shared secret, public
/// key and previous commitment, the random factors, every commitment, hash, tag, the nullifier
/// and the DvP hashes; the other members' public keys and previous commitments are taken as
/// given (they are the ledger's), and so are their shared secrets (the sender's entry is
/// ignored).
#[derive(Clone, Debug)]
pub struct Spend {
    pub anonymity_set: Vec<Fr>,
    pub sender: usize,
    pub secret_key: Fr,
    pub public_keys: Vec<Fr>,
    pub previous_commits: Vec<(Fr, Fr)>,
    /// B and R: the opening of the sender's previous commitment.
    pub balance: Fr,
    pub random_value: Fr,
    /// v.
    pub amount: Fr,
    /// Every member's tx value, the sender's included (as check 2 wants it, for an honest one).
    pub tx_values: Vec<Fr>,
    pub shared_secrets: Vec<Fr>,
    pub block_number: Fr,
    /// The deposit's or withdraw's preimages; their public hashes are recomputed.
    pub dvp: Dvp,
}

impl Spend {
    /// The choices behind `inputs`, whose sender must be in its anonymity set (check 1): so
    /// that a test can change one and derive the rest again.
    pub fn of(inputs: &PaymentInputs) -> Self {
        let sender = inputs
            .anonymity_set
            .iter()
            .position(|m| *m == *inputs.sender_id)
            .expect("the sender is in the anonymity set");
        Self {
            anonymity_set: inputs.anonymity_set.clone(),
            sender,
            secret_key: *inputs.secret_key,
            public_keys: inputs.public_keys.clone(),
            previous_commits: inputs.previous_commits.clone(),
            balance: *inputs.previous_sender_balance,
            random_value: *inputs.previous_sender_random_value,
            amount: *inputs.sender_tx_value,
            tx_values: inputs.tx_values.to_vec(),
            shared_secrets: inputs.shared_secrets.to_vec(),
            block_number: inputs.block_number,
            dvp: inputs.dvp.clone(),
        }
    }

    /// The inputs this spend stands for, every derived value recomputed, the nullifier by the
    /// reference's rule.
    pub fn inputs(&self) -> PaymentInputs {
        self.inputs_with(NullifierRule::Reference)
    }

    /// The inputs this spend stands for, every derived value recomputed, the nullifier by `rule`.
    pub fn inputs_with(&self, rule: NullifierRule) -> PaymentInputs {
        let s = self.sender;
        let (sk, r) = (self.secret_key, self.random_value);
        let mut shared_secrets = self.shared_secrets.clone();
        shared_secrets[s] = sender_shared_secret(&r, &sk);
        let mut public_keys = self.public_keys.clone();
        public_keys[s] = public_key(&sk);
        let mut previous_commits = self.previous_commits.clone();
        let p = babyjubjub::pedersen(&self.balance, &r);
        previous_commits[s] = (p.x, p.y);
        let tx_random_values = random_factors(&shared_secrets, &self.block_number, s);
        let tx_commits = self
            .tx_values
            .iter()
            .zip(&tx_random_values)
            .map(|(v, r)| {
                let p = babyjubjub::pedersen(v, r);
                (p.x, p.y)
            })
            .collect();
        let hashed_shared_secrets: Vec<Fr> =
            shared_secrets.iter().map(hashed_shared_secret).collect();
        let mut dvp = self.dvp.clone();
        match &mut dvp {
            Dvp::None => {}
            Dvp::Deposit(d) => {
                d.hash = dvp::erc20_commitment(&d.pk, &d.salt_out, &self.amount, &d.address)
            }
            Dvp::Withdraw(w) => {
                for j in 0..WITHDRAW_SLOTS {
                    w.hashes[j] = if w.v_per_deposit[j].is_zero() {
                        Fr::ZERO
                    } else {
                        dvp::erc20_commitment(
                            &public_key(&w.sk_deposits[j]),
                            &w.salts_in[j],
                            &w.v_per_deposit[j],
                            &w.address,
                        )
                    };
                }
            }
        }
        PaymentInputs {
            sender_id: self.anonymity_set[s].into(),
            nullifier: rule.nullifier(&shared_secrets[s], &self.block_number),
            message_tags: shared_secrets
                .iter()
                .map(|x| message_tag(x, &self.block_number))
                .collect(),
            anonymity_set: self.anonymity_set.clone(),
            secret_key: sk.into(),
            shared_secrets: shared_secrets.into(),
            hashed_shared_secrets,
            public_keys,
            previous_sender_balance: self.balance.into(),
            previous_sender_random_value: r.into(),
            previous_commits,
            tx_commits,
            tx_values: self.tx_values.clone().into(),
            tx_random_values: tx_random_values.into(),
            sender_tx_value: self.amount.into(),
            block_number: self.block_number,
            dvp,
        }
    }
}

impl PaymentInputs {
    /// Valid inputs of `kind` for member `sender` (balance `balance`) moving `amount`, with every
    /// other value drawn from `rng`: the request pools of tests and load tests. A transfer pays
    /// the next member; a deposit puts `amount` into one DvP commitment; a withdraw claims it
    /// from two (or one, for amount 1; none for 0), leaving the other slots empty.
    pub fn generate<R: Rng>(
        kind: Kind,
        k: usize,
        sender: usize,
        amount: u64,
        balance: u64,
        rng: &mut R,
    ) -> Self {
        assert!(kind == Kind::Withdraw || amount <= balance);
        let notes = match kind {
            Kind::Withdraw => vec![amount / 2, amount - amount / 2],
            Kind::Transfer | Kind::Deposit => vec![],
        };
        Self::generate_with_notes(kind, k, sender, Fr::from(amount), balance, &notes, rng)
    }

    /// A valid withdraw for member `sender` (balance `balance`) that claims one deposit of each
    /// of the values `notes` (at most 10; zero values leave their slot empty), in the first
    /// slots, and is credited their sum; every other value is drawn from `rng`.
    pub fn generate_withdraw<R: Rng>(
        k: usize,
        sender: usize,
        notes: &[u64],
        balance: u64,
        rng: &mut R,
    ) -> Self {
        let amount: Fr = notes.iter().map(|&n| Fr::from(n)).sum();
        Self::generate_with_notes(Kind::Withdraw, k, sender, amount, balance, notes, rng)
    }

    fn generate_with_notes<R: Rng>(
        kind: Kind,
        k: usize,
        sender: usize,
        amount: Fr,
        balance: u64,
        notes: &[u64],
        rng: &mut R,
    ) -> Self {
        assert!(k >= 2 && sender < k && notes.len() <= WITHDRAW_SLOTS);
        let below_l = |rng: &mut R| modl::reduce(&Fr::rand(rng));
        let anonymity_set: Vec<Fr> = {
            let base: u64 = rng.gen_range(1..u64::MAX / 2);
            (0..k as u64).map(|i| Fr::from(base + i)).collect()
        };
        let secret_key = below_l(rng);
        let random_value = below_l(rng);
        let block_number = Fr::from(rng.gen_range(1..u32::MAX as u64));
        let shared_secrets: Vec<Fr> = (0..k).map(|_| below_l(rng)).collect();
        let public_keys: Vec<Fr> = (0..k).map(|_| public_key(&below_l(rng))).collect();
        let previous_commits: Vec<(Fr, Fr)> = (0..k)
            .map(|_| {
                let p = babyjubjub::pedersen(&Fr::from(rng.gen::<u32>()), &below_l(rng));
                (p.x, p.y)
            })
            .collect();
        let receiver = (sender + 1) % k;
        let tx_values: Vec<Fr> = (0..k)
            .map(|i| match i {
                i if i == sender => sender_tx_value(kind, &amount),
                i if i == receiver && kind == Kind::Transfer => amount,
                _ => Fr::ZERO,
            })
            .collect();
        Spend {
            anonymity_set,
            sender,
            secret_key,
            public_keys,
            previous_commits,
            balance: Fr::from(balance),
            random_value,
            amount,
            tx_values,
            shared_secrets,
            block_number,
            dvp: Self::generate_dvp(kind, notes, rng),
        }
        .inputs()
    }

    /// The DvP preimages of a generated request; [`Spend::inputs`] computes their hashes.
    fn generate_dvp<R: Rng>(kind: Kind, notes: &[u64], rng: &mut R) -> Dvp {
        match kind {
            Kind::Transfer => Dvp::None,
            Kind::Deposit => {
                let address = Fr::from(rng.gen::<u128>());
                let (pk, salt_out) = (Fr::rand(rng), Fr::rand(rng));
                Dvp::Deposit(Deposit {
                    hash: Fr::ZERO,
                    pk: pk.into(),
                    address: address.into(),
                    salt_out: salt_out.into(),
                })
            }
            Kind::Withdraw => {
                let address = Fr::from(rng.gen::<u128>());
                let mut values: Vec<Fr> = notes.iter().map(|&n| Fr::from(n)).collect();
                values.resize(WITHDRAW_SLOTS, Fr::ZERO);
                let mut w = Withdraw {
                    hashes: vec![Fr::ZERO; WITHDRAW_SLOTS],
                    sk_deposits: vec![Fr::ZERO; WITHDRAW_SLOTS].into(),
                    v_per_deposit: values.into(),
                    address: address.into(),
                    salts_in: vec![Fr::ZERO; WITHDRAW_SLOTS].into(),
                };
                for j in (0..WITHDRAW_SLOTS).filter(|&j| w.v_per_deposit[j] != Fr::ZERO) {
                    w.sk_deposits[j] = modl::reduce(&Fr::rand(rng));
                    w.salts_in[j] = Fr::rand(rng);
                }
                Dvp::Withdraw(w)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::Field;
    use rand::SeedableRng;

    fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn generated_inputs_pass_every_check() {
        let mut rng = rng(3);
        for kind in Kind::ALL {
            for k in crate::SUPPORTED_K {
                for sender in [0, k - 1] {
                    let t = PaymentInputs::generate(kind, k, sender, 40, 100, &mut rng);
                    assert_eq!(t.check(), Ok(sender), "{kind} k={k}");
                    assert_eq!(t.kind(), kind);
                    assert_eq!(t.public_inputs().len(), kind.num_public_inputs(k));
                }
            }
            for small in [0, 1] {
                let t = PaymentInputs::generate(kind, 3, 1, small, small, &mut rng);
                assert_eq!(t.check(), Ok(1), "{kind} of {small}");
            }
        }
        // A withdraw may exceed the balance: there is no B ≥ v rule.
        assert_eq!(
            PaymentInputs::generate(Kind::Withdraw, 2, 0, 500, 100, &mut rng).check(),
            Ok(0)
        );
    }

    /// Recomputes tx_commits[i] from its value and random factor, so that only the check under
    /// test can fail.
    fn recommit(t: &mut PaymentInputs, i: usize) {
        let p = babyjubjub::pedersen(&t.tx_values[i], &t.tx_random_values[i]);
        t.tx_commits[i] = (p.x, p.y);
    }

    fn failing(good: &PaymentInputs, edit: &dyn Fn(&mut PaymentInputs)) -> u8 {
        let mut t = good.clone();
        edit(&mut t);
        t.check().unwrap_err().check.number()
    }

    #[test]
    fn each_broken_check_is_named() {
        for kind in Kind::ALL {
            let good = PaymentInputs::generate(kind, 4, 2, 30, 50, &mut rng(4));
            let failing = |edit: &dyn Fn(&mut PaymentInputs)| failing(&good, edit);
            assert_eq!(failing(&|t| *t.sender_id = Fr::ZERO), 1);
            assert_eq!(failing(&|t| t.anonymity_set[0] = *t.sender_id), 1);
            assert_eq!(failing(&|t| t.tx_values[2] += Fr::ONE), 2);
            assert_eq!(failing(&|t| t.tx_commits[1].1 += Fr::ONE), 3);
            assert_eq!(failing(&|t| *t.secret_key += Fr::ONE), 4);
            assert_eq!(failing(&|t| t.hashed_shared_secrets[0] += Fr::ONE), 5);
            assert_eq!(failing(&|t| t.public_keys[2] += Fr::ONE), 6);
            assert_eq!(failing(&|t| *t.previous_sender_balance += Fr::ONE), 7);
            assert_eq!(failing(&|t| t.message_tags[3] += Fr::ONE), 8);
            assert_eq!(failing(&|t| t.nullifier += Fr::ONE), 12);
            assert_eq!(failing(&|t| t.tx_random_values[0] += Fr::ONE), 9);
            // A receiver's value changed, its commitment made consistent: only conservation fails.
            assert_eq!(
                failing(&|t| {
                    t.tx_values[1] += Fr::ONE;
                    recommit(t, 1)
                }),
                9
            );
            assert_eq!(
                failing(&|t| *t.sender_tx_value = Fr::from(1u64 << 40)),
                2,
                "{kind}"
            );
            assert_eq!(failing(&|t| t.tx_commits.swap(0, 1)), 13);
            // A random factor broken by a multiple that keeps its sum: only check 14 can see it.
            assert_eq!(
                failing(&|t| {
                    t.tx_random_values[0] += Fr::ONE;
                    t.tx_random_values[1] -= Fr::ONE;
                    recommit(t, 0);
                    recommit(t, 1);
                }),
                14
            );
        }
        // Overspending: amount above balance, with everything else made consistent.
        for kind in [Kind::Transfer, Kind::Deposit] {
            let mut t = PaymentInputs::generate(kind, 4, 2, 51, 51, &mut rng(5));
            *t.previous_sender_balance = Fr::from(50u64);
            let p =
                babyjubjub::pedersen(&t.previous_sender_balance, &t.previous_sender_random_value);
            t.previous_commits[2] = (p.x, p.y);
            assert_eq!(t.check().unwrap_err().check.number(), 11, "{kind}");
        }
    }

    #[test]
    fn dvp_hashes_are_checked() {
        let deposit = PaymentInputs::generate(Kind::Deposit, 3, 0, 9, 10, &mut rng(6));
        let edit_deposit = |edit: &dyn Fn(&mut Deposit)| {
            failing(&deposit, &|t| match &mut t.dvp {
                Dvp::Deposit(d) => edit(d),
                _ => unreachable!(),
            })
        };
        assert_eq!(edit_deposit(&|d| d.hash += Fr::ONE), 15);
        assert_eq!(edit_deposit(&|d| *d.pk += Fr::ONE), 15);
        assert_eq!(edit_deposit(&|d| *d.salt_out += Fr::ONE), 15);
        assert_eq!(edit_deposit(&|d| *d.address += Fr::ONE), 15);

        let withdraw = PaymentInputs::generate(Kind::Withdraw, 3, 0, 9, 10, &mut rng(7));
        let edit_withdraw = |edit: &dyn Fn(&mut Withdraw)| {
            let mut t = withdraw.clone();
            let Dvp::Withdraw(w) = &mut t.dvp else {
                unreachable!()
            };
            edit(w);
            t.check().map_err(|e| e.to_string())
        };
        assert_eq!(
            edit_withdraw(&|w| w.hashes[1] += Fr::ONE),
            Err("check 15 (dvp hash) failed: hashes[1]".into())
        );
        assert_eq!(
            edit_withdraw(&|w| w.sk_deposits[0] += Fr::ONE),
            Err("check 15 (dvp hash) failed: hashes[0]".into())
        );
        assert_eq!(
            edit_withdraw(&|w| w.v_per_deposit[1] += Fr::ONE),
            Err("check 15 (dvp hash) failed: hashes[1]".into())
        );
        assert_eq!(
            edit_withdraw(&|w| *w.address += Fr::ONE),
            Err("check 15 (dvp hash) failed: hashes[0]".into())
        );
        // An empty slot must say so: hash 0 (check 17, below).
        assert_eq!(
            edit_withdraw(&|w| w.hashes[9] = Fr::from(123u64)),
            Err("check 17 (empty deposit slot) failed: hashes[9]".into())
        );
    }

    /// Empties slot j of a withdraw: no deposit, value 0, hash 0.
    fn empty_slot(w: &mut Withdraw, j: usize) {
        w.hashes[j] = Fr::ZERO;
        w.v_per_deposit[j] = Fr::ZERO;
        w.sk_deposits[j] = Fr::ZERO;
        w.salts_in[j] = Fr::ZERO;
    }

    #[test]
    fn withdraws_of_one_to_ten_deposits_pass_every_check() {
        let mut rng = rng(9);
        for n in 1..=WITHDRAW_SLOTS {
            let notes: Vec<u64> = (1..=n as u64).map(|i| i * 1_000_003).collect();
            let t = PaymentInputs::generate_withdraw(3, 2, &notes, 10, &mut rng);
            assert_eq!(t.check(), Ok(2), "{n} deposits");
            assert_eq!(
                *t.sender_tx_value,
                Fr::from(notes.iter().sum::<u64>()),
                "credited their sum"
            );
            let Dvp::Withdraw(w) = &t.dvp else {
                unreachable!()
            };
            assert_eq!(w.hashes.iter().filter(|h| !h.is_zero()).count(), n);
        }
    }

    /// The reference proves each of these; checks 16–18 refuse them, naming the rule.
    #[test]
    fn minting_griefing_and_repeated_withdraws_are_named() {
        let withdraw = PaymentInputs::generate_withdraw(3, 0, &[1, 99], 10, &mut rng(10));
        let edit = |edit: &dyn Fn(&mut Withdraw)| {
            let mut t = withdraw.clone();
            let Dvp::Withdraw(w) = &mut t.dvp else {
                unreachable!()
            };
            edit(w);
            t.check().map_err(|e| e.to_string())
        };
        assert_eq!(edit(&|_| {}), Ok(0));
        let not_the_sum = Err(
            "check 16 (withdrawn value) failed: sender_tx_value must be the sum of v_per_deposit"
                .to_string(),
        );
        // Credited 100 for one deposit of 1.
        assert_eq!(edit(&|w| empty_slot(w, 1)), not_the_sum);
        // Credited 100 for no deposit at all.
        assert_eq!(
            edit(&|w| (0..WITHDRAW_SLOTS).for_each(|j| empty_slot(w, j))),
            not_the_sum
        );
        // A value of 2^252 or more, even with the field sum right.
        assert_eq!(
            edit(&|w| {
                let big = Fr::from(num_bigint::BigUint::from(1u8) << 252u32);
                w.v_per_deposit[0] += big;
                w.v_per_deposit[1] -= big;
                for j in [0, 1] {
                    w.hashes[j] = dvp::erc20_commitment(
                        &public_key(&w.sk_deposits[j]),
                        &w.salts_in[j],
                        &w.v_per_deposit[j],
                        &w.address,
                    );
                }
            }),
            Err("check 16 (withdrawn value) failed: v_per_deposit[0] must be below 2^252".into())
        );
        // An empty slot naming another holder's deposit, for the contract to mark spent.
        let someone_elses = dvp::erc20_commitment(
            &Fr::from(5u64),
            &Fr::from(6u64),
            &Fr::from(7u64),
            &Fr::from(8u64),
        );
        assert_eq!(
            edit(&|w| w.hashes[4] = someone_elses),
            Err("check 17 (empty deposit slot) failed: hashes[4]".into())
        );
        // One deposit in two slots.
        let repeated = PaymentInputs::generate_withdraw(3, 0, &[50, 50], 10, &mut rng(11));
        let mut t = repeated.clone();
        let Dvp::Withdraw(w) = &mut t.dvp else {
            unreachable!()
        };
        w.claim_twice(0, 1);
        assert_eq!(
            t.check().map_err(|e| e.to_string()),
            Err("check 18 (distinct deposits) failed: hashes[0] and hashes[1]".into())
        );
    }

    /// Receivers' values that sum to r over the integers sum to 0 in the field, which is all the
    /// reference's deposit and withdraw compare; their commitments then add up to (r mod L)·G,
    /// value created from nothing. Each of them is at least L, which check 13 refuses.
    #[test]
    fn receivers_values_wrapping_past_r_are_refused() {
        let r = modl::to_biguint(&-Fr::ONE) + 1u32;
        let quarter = &r / 4u32;
        let shares = [
            quarter.clone(),
            quarter.clone(),
            quarter.clone(),
            &r - &quarter * 3u32,
        ];
        for kind in [Kind::Deposit, Kind::Withdraw] {
            let mut t = PaymentInputs::generate(kind, 5, 0, 9, 10, &mut rng(8));
            for (i, share) in (1..5).zip(&shares) {
                t.tx_values[i] = Fr::from(share.clone());
                recommit(&mut t, i);
            }
            assert_eq!(
                (1..5).map(|i| t.tx_values[i]).sum::<Fr>(),
                Fr::ZERO,
                "the field sum is blind to it"
            );
            assert_eq!(
                t.check().map_err(|e| e.to_string()),
                Err("check 13 (tx commitments) failed: tx_values[1] must be below L".into()),
                "{kind}"
            );
        }
    }

    /// `L`, and `x` as a field element, for the forgeries below.
    fn l_plus(x: u128) -> Fr {
        l_fr() + Fr::from(x)
    }

    /// A sender holding 10 claims a balance of 10 + L (the same commitment) and pays 10^30:
    /// the reference proves it, and the sender is left with a balance of L + 10 − 10^30.
    #[test]
    fn a_balance_aliased_by_l_is_refused() {
        for kind in [Kind::Transfer, Kind::Deposit] {
            let honest = PaymentInputs::generate(kind, 3, 0, 10, 10, &mut rng(40));
            let mut spend = Spend::of(&honest);
            let big = Fr::from(10u128.pow(30));
            spend.balance = l_plus(10);
            spend.amount = big;
            spend.tx_values[0] = sender_tx_value(kind, &big);
            if kind == Kind::Transfer {
                spend.tx_values[1] = big;
            }
            let forged = spend.inputs();
            assert_eq!(
                forged.previous_commits[0], honest.previous_commits[0],
                "the same commitment"
            );
            assert_eq!(
                forged.check().map_err(|e| e.to_string()),
                Err(
                    "check 11 (balance range) failed: previous_sender_balance must be below L"
                        .into()
                ),
                "{kind}"
            );
        }
        // A withdraw credited L or more.
        let mut w = Spend::of(&PaymentInputs::generate_withdraw(
            2,
            0,
            &[5],
            10,
            &mut rng(41),
        ));
        let Dvp::Withdraw(notes) = &mut w.dvp else {
            unreachable!()
        };
        notes.v_per_deposit[0] = l_plus(5);
        w.amount = l_plus(5);
        w.tx_values[0] = w.amount;
        assert_eq!(
            w.inputs().check().map_err(|e| e.to_string()),
            Err("check 11 (balance range) failed: sender_tx_value must be below L".into())
        );
    }

    /// Values below L that conserve value mod L but not over the integers: a transfer of 0 that
    /// takes 1 from one member (`L − 1` is −1 mod L) and gives it to another, or hands a member
    /// at 0 a balance of L − 1; for deposit and withdraw, other members' values that are not 0.
    #[test]
    fn receivers_values_that_only_cancel_mod_l_are_refused() {
        let mut transfer = Spend::of(&PaymentInputs::generate(
            Kind::Transfer,
            3,
            0,
            0,
            5,
            &mut rng(42),
        ));
        transfer.tx_values = vec![Fr::ZERO, l_fr() - Fr::ONE, Fr::ONE];
        assert_eq!(
            transfer.inputs().check().map_err(|e| e.to_string()),
            Err("check 9 (value conservation) failed: the receivers' tx_values must sum to sender_tx_value".into())
        );
        for kind in [Kind::Deposit, Kind::Withdraw] {
            let mut spend = Spend::of(&PaymentInputs::generate(kind, 3, 0, 4, 5, &mut rng(43)));
            spend.tx_values[1] = l_fr() - Fr::ONE;
            spend.tx_values[2] = Fr::ONE;
            assert_eq!(
                spend.inputs().check().map_err(|e| e.to_string()),
                Err("check 9 (value conservation) failed: the tx_values of members other than the sender must be 0".into()),
                "{kind}"
            );
        }
    }

    /// R + L opens the same previous commitment, with another shared secret, tag and nullifier:
    /// a second spend of one balance in the same block.
    #[test]
    fn a_random_value_aliased_by_l_is_refused() {
        for kind in Kind::ALL {
            let honest = PaymentInputs::generate(kind, 2, 1, 3, 7, &mut rng(44));
            let mut spend = Spend::of(&honest);
            spend.random_value += l_fr();
            let forged = spend.inputs();
            assert_eq!(forged.previous_commits, honest.previous_commits);
            assert_ne!(forged.nullifier, honest.nullifier, "another nullifier");
            assert_eq!(
                forged.check().map_err(|e| e.to_string()),
                Err("check 19 (random value range) failed".into()),
                "{kind}"
            );
        }
    }

    /// The hidden sender's nullifier is `Poseidon(shared_secrets[s], block_number)`: generated
    /// inputs pass under it at every k, and each rule refuses the other's nullifier by check 12.
    #[test]
    fn each_nullifier_rule_refuses_the_others_nullifier() {
        let mut rng = rng(46);
        for kind in Kind::ALL {
            for k in crate::SUPPORTED_K {
                let reference = PaymentInputs::generate(kind, k, k - 1, 3, 7, &mut rng);
                let hidden = Spend::of(&reference).inputs_with(NullifierRule::HiddenSender);
                let s_s = reference.shared_secrets[k - 1];
                assert_eq!(
                    hidden.nullifier,
                    poseidon::hash(&[s_s, reference.block_number])
                );
                assert_eq!(hidden.check_with(NullifierRule::HiddenSender), Ok(k - 1));
                let mut others = hidden.clone();
                others.nullifier = reference.nullifier;
                assert_eq!(
                    hidden.public_inputs().len(),
                    reference.public_inputs().len()
                );
                for (t, rule) in [
                    (&reference, NullifierRule::HiddenSender),
                    (&others, NullifierRule::HiddenSender),
                    (&hidden, NullifierRule::Reference),
                ] {
                    assert_eq!(
                        t.check_with(rule).map_err(|e| e.to_string()),
                        Err("check 12 (nullifier) failed".into()),
                        "{kind}, k = {k}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_spend_derives_the_inputs_it_was_taken_from() {
        for kind in Kind::ALL {
            let t = PaymentInputs::generate(kind, 4, 3, 6, 9, &mut rng(45));
            assert_eq!(Spend::of(&t).inputs(), t, "{kind}");
        }
    }

    #[test]
    fn checks_are_numbered_in_order_and_labelled_by_number_and_name() {
        for (i, check) in Check::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(check.number()), i + 1);
            assert_eq!(check.label(), format!("check {} ({})", i + 1, check.name()));
        }
        assert_eq!(Check::ALL.len(), 21);
    }

    #[test]
    fn failure_messages_name_the_check_and_never_a_value() {
        let mut t = PaymentInputs::generate(Kind::Transfer, 2, 0, 1, 1, &mut rng(5));
        t.message_tags[1] += Fr::ONE;
        let msg = t.check().unwrap_err().to_string();
        assert_eq!(msg, "check 8 (message tags) failed: message_tags[1]");
    }
}
