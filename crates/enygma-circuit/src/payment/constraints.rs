//! The payment statements as constraints, generic over the kind and k. Each check is enforced
//! with the gadget next to its native twin; hints (quotients, remainders, bits, selectors) are all
//! tied down by constraints. The sender's index is a private input, so every per-member check
//! runs for all k members and the sender's values are picked with the selector bits of check 1.
//! (The reference's nullifier, computed from public inputs only, reveals it all the same: see
//! `docs/soundness.md`, P1. [`NullifierRule::HiddenSender`]'s does not.)
//!
//! Each check is one method of [`PaymentVars`], named as its native twin on
//! [`PaymentInputs`] (`enforce_nullifier` ↔ `check_nullifier`), and enforced inside a constraint
//! namespace named by its [`Check::label`]: with a [`ConstraintLayer`] installed,
//! `cs.which_is_unsatisfied()` names the check an unsatisfied constraint belongs to.
//!
//! The order of allocations and constraints below is the circuit's layout, which the committed
//! keys depend on: moving a check or an allocation changes the keys even when the constraint
//! count stays the same.
//!
//! [`ConstraintLayer`]: ark_relations::gr1cs::ConstraintLayer

use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

use super::{
    Check, Deposit, Dvp, Kind, NullifierRule, PaymentInputs, Withdraw, RANDOM_FACTOR_BITS,
    VALUE_BITS,
};
use crate::{
    amount,
    babyjubjub::{
        self,
        constraints::{pedersen, PointVar},
        Point,
    },
    bits::{alloc_bits, enforce_at_most, enforce_integer_sum},
    dvp::{constraints as dvp_gadget, WITHDRAW_SLOTS},
    keys::constraints as keys,
    modl::{
        self,
        constraints::{self as modl_gadgets, REDUCED_ALLOC_BITS},
    },
    poseidon::{self, constraints as poseidon_gadget},
    Fr,
};

/// The circuit of one statement for an anonymity set of `k` members. `inputs` is `None` for key
/// generation.
#[derive(Clone)]
pub struct PaymentCircuit {
    pub kind: Kind,
    pub k: usize,
    /// How check 12 derives the nullifier: the reference's rule unless
    /// [`PaymentCircuit::with_nullifier_rule`] says otherwise.
    pub nullifier_rule: NullifierRule,
    pub inputs: Option<PaymentInputs>,
}

impl PaymentCircuit {
    pub fn for_setup(kind: Kind, k: usize) -> Self {
        Self {
            kind,
            k,
            nullifier_rule: NullifierRule::Reference,
            inputs: None,
        }
    }

    pub fn for_proving(inputs: PaymentInputs) -> Self {
        Self {
            kind: inputs.kind(),
            k: inputs.k(),
            nullifier_rule: NullifierRule::Reference,
            inputs: Some(inputs),
        }
    }

    /// The same circuit with check 12 following `rule`: another statement, with its own keys.
    pub fn with_nullifier_rule(self, rule: NullifierRule) -> Self {
        Self {
            nullifier_rule: rule,
            ..self
        }
    }
}

/// The deposit's values (zero in setup mode, where they are never read).
fn deposit(t: &PaymentInputs) -> &Deposit {
    match &t.dvp {
        Dvp::Deposit(d) => d,
        _ => panic!("deposit circuit given {} inputs", t.kind()),
    }
}

fn withdraw(t: &PaymentInputs) -> &Withdraw {
    match &t.dvp {
        Dvp::Withdraw(w) => w,
        _ => panic!("withdraw circuit given {} inputs", t.kind()),
    }
}

/// Enters the constraint namespace of a [`Check`] until the end of the enclosing block.
macro_rules! namespace {
    ($cs:expr, $check:expr) => {
        let _namespace = ark_relations::ns!($cs, $check.label());
    };
}

/// The sender's entry of a per-member list, picked with the selector bits of check 1.
trait SelectSender: Sized {
    fn select_sender(sender: &[Boolean<Fr>], members: &[Self]) -> Self;
}

/// `Σ eᵢ·xᵢ` (one constraint per member).
impl SelectSender for FpVar<Fr> {
    fn select_sender(sender: &[Boolean<Fr>], members: &[Self]) -> Self {
        sender
            .iter()
            .zip(members)
            .map(|(e, x)| FpVar::from(e.clone()) * x)
            .sum()
    }
}

/// Each coordinate picked as a field element (two constraints per member).
impl SelectSender for PointVar {
    fn select_sender(sender: &[Boolean<Fr>], members: &[Self]) -> Self {
        let coordinate = |c: fn(&PointVar) -> &FpVar<Fr>| {
            FpVar::select_sender(sender, &members.iter().map(c).cloned().collect::<Vec<_>>())
        };
        PointVar::new(coordinate(|p| &p.x), coordinate(|p| &p.y))
    }
}

/// Every variable of one statement, public inputs first in the reference's order. Values with
/// a known bound are allocated as their bits (the range checks of checks 11, 13 and 19, and the
/// scalars of checks 7 and 13), so the value is a free linear combination of them. The reduced
/// quantities (B, R, the tx values) get one bit more than L has, so that an alias `x + L` is
/// representable and refused by its own check's comparison with L.
struct PaymentVars<'a> {
    cs: ConstraintSystemRef<Fr>,
    kind: Kind,
    inputs: Option<&'a PaymentInputs>,
    // Public.
    hashed_shared_secrets: Vec<FpVar<Fr>>,
    public_keys: Vec<FpVar<Fr>>,
    previous_commits: Vec<PointVar>,
    tx_commits: Vec<PointVar>,
    nullifier: FpVar<Fr>,
    block_number: FpVar<Fr>,
    anonymity_set: Vec<FpVar<Fr>>,
    message_tags: Vec<FpVar<Fr>>,
    /// The deposit's `hash`, or the withdraw's `hashes`.
    dvp_hashes: Vec<FpVar<Fr>>,
    // Private.
    sender_id: FpVar<Fr>,
    secret_key: FpVar<Fr>,
    shared_secrets: Vec<FpVar<Fr>>,
    random_value: FpVar<Fr>,
    random_value_bits: Vec<Boolean<Fr>>,
    balance_bits: Vec<Boolean<Fr>>,
    amount_bits: Vec<Boolean<Fr>>,
    tx_value_bits: Vec<Vec<Boolean<Fr>>>,
    tx_random_bits: Vec<Vec<Boolean<Fr>>>,
    balance: FpVar<Fr>,
    amount: FpVar<Fr>,
    tx_values: Vec<FpVar<Fr>>,
    tx_randoms: Vec<FpVar<Fr>>,
}

impl<'a> PaymentVars<'a> {
    fn value(&self, f: impl Fn(&PaymentInputs) -> Fr) -> Result<Fr, SynthesisError> {
        self.inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
    }

    fn witness(&self, f: impl Fn(&PaymentInputs) -> Fr) -> Result<FpVar<Fr>, SynthesisError> {
        FpVar::new_witness(self.cs.clone(), || self.value(f))
    }

    fn bits(
        &self,
        f: impl Fn(&PaymentInputs) -> Fr,
        num_bits: usize,
    ) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
        alloc_bits(self.cs.clone(), || self.value(&f), num_bits)
    }

    fn alloc(
        cs: ConstraintSystemRef<Fr>,
        kind: Kind,
        k: usize,
        inputs: Option<&'a PaymentInputs>,
    ) -> Result<Self, SynthesisError> {
        let value = |f: &dyn Fn(&PaymentInputs) -> Fr| -> Result<Fr, SynthesisError> {
            inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
        };
        let public = |f: &dyn Fn(&PaymentInputs) -> Fr| FpVar::new_input(cs.clone(), || value(f));
        let public_vec =
            |f: &dyn Fn(&PaymentInputs, usize) -> Fr| -> Result<Vec<FpVar<Fr>>, SynthesisError> {
                (0..k).map(|i| public(&|t| f(t, i))).collect()
            };
        let public_points = |f: fn(&PaymentInputs) -> &[(Fr, Fr)]| {
            (0..k)
                .map(|i| {
                    PointVar::new_input(cs.clone(), || {
                        inputs
                            .map(|t| Point::new_unchecked(f(t)[i].0, f(t)[i].1))
                            .ok_or(SynthesisError::AssignmentMissing)
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let hashed_shared_secrets = public_vec(&|t, i| t.hashed_shared_secrets[i])?;
        let public_keys = public_vec(&|t, i| t.public_keys[i])?;
        let previous_commits = public_points(|t| &t.previous_commits)?;
        let tx_commits = public_points(|t| &t.tx_commits)?;
        let nullifier = public(&|t| t.nullifier)?;
        let block_number = public(&|t| t.block_number)?;
        let anonymity_set = public_vec(&|t, i| t.anonymity_set[i])?;
        let message_tags = public_vec(&|t, i| t.message_tags[i])?;
        let dvp_hashes = match kind {
            Kind::Transfer => vec![],
            Kind::Deposit => vec![public(&|t| deposit(t).hash)?],
            Kind::Withdraw => (0..WITHDRAW_SLOTS)
                .map(|j| public(&|t| withdraw(t).hashes[j]))
                .collect::<Result<_, _>>()?,
        };

        let private =
            |f: &dyn Fn(&PaymentInputs) -> Fr| FpVar::new_witness(cs.clone(), || value(f));
        let sender_id = private(&|t| *t.sender_id)?;
        let secret_key = private(&|t| *t.secret_key)?;
        let shared_secrets = (0..k)
            .map(|i| private(&|t| t.shared_secrets[i]))
            .collect::<Result<Vec<_>, _>>()?;
        let bits = |f: &dyn Fn(&PaymentInputs) -> Fr, num_bits| {
            alloc_bits(cs.clone(), || value(f), num_bits)
        };
        let random_value_bits = {
            namespace!(cs, Check::RandomValueRange);
            bits(&|t| *t.previous_sender_random_value, REDUCED_ALLOC_BITS)?
        };
        let (balance_bits, amount_bits) = {
            namespace!(cs, Check::BalanceRange);
            (
                bits(&|t| *t.previous_sender_balance, REDUCED_ALLOC_BITS)?,
                bits(&|t| *t.sender_tx_value, VALUE_BITS)?,
            )
        };
        let tx_value_bits = {
            namespace!(cs, Check::TxCommitments);
            (0..k)
                .map(|i| bits(&|t| t.tx_values[i], REDUCED_ALLOC_BITS))
                .collect::<Result<Vec<_>, _>>()?
        };
        let tx_random_bits = {
            namespace!(cs, Check::RandomFactors);
            (0..k)
                .map(|i| bits(&|t| t.tx_random_values[i], RANDOM_FACTOR_BITS))
                .collect::<Result<Vec<_>, _>>()?
        };
        let to_fp = |bits: &[Boolean<Fr>]| Boolean::le_bits_to_fp(bits);
        Ok(Self {
            random_value: to_fp(&random_value_bits)?,
            balance: to_fp(&balance_bits)?,
            amount: to_fp(&amount_bits)?,
            tx_values: tx_value_bits
                .iter()
                .map(|b| to_fp(b))
                .collect::<Result<_, _>>()?,
            tx_randoms: tx_random_bits
                .iter()
                .map(|b| to_fp(b))
                .collect::<Result<_, _>>()?,
            cs,
            kind,
            inputs,
            hashed_shared_secrets,
            public_keys,
            previous_commits,
            tx_commits,
            nullifier,
            block_number,
            anonymity_set,
            message_tags,
            dvp_hashes,
            sender_id,
            secret_key,
            shared_secrets,
            random_value_bits,
            balance_bits,
            amount_bits,
            tx_value_bits,
            tx_random_bits,
        })
    }

    /// Check 1: sender_id occurs exactly once, eᵢ = [anonymity_set[i] = sender_id] and
    /// Σ eᵢ = 1. Returns the selector bits eᵢ, which pick the sender's entries.
    fn enforce_sender_in_anonymity_set(&self) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
        namespace!(self.cs, Check::SenderInAnonymitySet);
        let sender = self
            .anonymity_set
            .iter()
            .map(|m| m.is_eq(&self.sender_id))
            .collect::<Result<Vec<_>, _>>()?;
        sender
            .iter()
            .map(|e| FpVar::from(e.clone()))
            .sum::<FpVar<Fr>>()
            .enforce_equal(&FpVar::one())?;
        Ok(sender)
    }

    /// Check 2. Transfer and deposit: tx_values[s] = (L − v) mod L, i.e. tx_values[s] + v is 0
    /// or L (one constraint): both are below L (checks 13 and 11), so their sum is an integer
    /// below 2L, a multiple of L exactly when it is one of those two. Withdraw: tx_values[s] = v,
    /// two combinations of bits: an equality of integers.
    fn enforce_sender_tx_value(&self, sender: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::SenderTxValue);
        let sender_tx_value = FpVar::select_sender(sender, &self.tx_values);
        match self.kind {
            Kind::Transfer | Kind::Deposit => {
                let paid = sender_tx_value + &self.amount;
                paid.mul_equals(&(&paid - modl::l_fr()), &FpVar::zero())
            }
            Kind::Withdraw => sender_tx_value.enforce_equal(&self.amount),
        }
    }

    /// Check 3: every commitment is on the curve.
    fn enforce_points_on_curve(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::PointsOnCurve);
        for p in self.previous_commits.iter().chain(&self.tx_commits) {
            p.enforce_on_curve()?;
        }
        Ok(())
    }

    /// Check 4: shared_secrets[s] = Poseidon(R, sk) mod L. Returns that remainder, s_s: a
    /// variable that only R and sk determine, whatever the prover puts in `shared_secrets`.
    fn enforce_shared_secret(&self, sender: &[Boolean<Fr>]) -> Result<FpVar<Fr>, SynthesisError> {
        namespace!(self.cs, Check::SharedSecret);
        let sender_shared_secret = FpVar::select_sender(sender, &self.shared_secrets);
        let remainder = modl_gadgets::reduce(&poseidon_gadget::hash(&[
            self.random_value.clone(),
            self.secret_key.clone(),
        ])?)?
        .remainder;
        remainder.enforce_equal(&sender_shared_secret)?;
        Ok(remainder)
    }

    /// Check 5: hashed_shared_secrets[i] = Poseidon(sᵢ, sᵢ) mod L.
    fn enforce_hashed_shared_secrets(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::HashedSharedSecrets);
        for (s, h) in self.shared_secrets.iter().zip(&self.hashed_shared_secrets) {
            modl_gadgets::reduce(&poseidon_gadget::hash(&[s.clone(), s.clone()])?)?
                .remainder
                .enforce_equal(h)?;
        }
        Ok(())
    }

    /// Check 6: public_keys[s] = Poseidon(sk, sk) mod L.
    fn enforce_public_key(&self, sender: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::PublicKey);
        keys::public_key(&self.secret_key)?
            .enforce_equal(&FpVar::select_sender(sender, &self.public_keys))
    }

    /// Check 7: previous_commits[s] = Pedersen(B, R), with B's and R's bits as the scalars.
    fn enforce_previous_commitment(&self, sender: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::PreviousCommitment);
        let sender_previous_commit = PointVar::select_sender(sender, &self.previous_commits);
        pedersen(&self.balance_bits, &self.random_value_bits)?
            .enforce_equal(&sender_previous_commit)
    }

    /// Check 8: message_tags[i] = Poseidon(Poseidon(12), sᵢ, block_number) mod L.
    fn enforce_message_tags(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::MessageTags);
        let tag_domain = FpVar::Constant(poseidon::message_tag_domain());
        for (s, tag) in self.shared_secrets.iter().zip(&self.message_tags) {
            modl_gadgets::reduce(&poseidon_gadget::hash(&[
                tag_domain.clone(),
                s.clone(),
                self.block_number.clone(),
            ])?)?
            .remainder
            .enforce_equal(tag)?;
        }
        Ok(())
    }

    /// Check 9: the members other than the sender receive v in all (transfer) or nothing
    /// (deposit, withdraw), and Σ tx_random_values is a multiple of L. Each tx value is below L
    /// (check 13) and each random factor below 2²⁵¹, so at most six of either cannot wrap past r:
    /// both sums are integer sums.
    fn enforce_value_conservation(&self, sender: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::ValueConservation);
        let receivers_sum = self.tx_values.iter().sum::<FpVar<Fr>>()
            - FpVar::select_sender(sender, &self.tx_values);
        let received = match self.kind {
            Kind::Transfer => self.amount.clone(),
            Kind::Deposit | Kind::Withdraw => FpVar::zero(),
        };
        receivers_sum.enforce_equal(&received)?;
        modl_gadgets::enforce_multiple_of_l(&self.tx_randoms.iter().sum())
    }

    /// Check 10, of a transfer: the tx commitments sum to the identity.
    fn enforce_sum_of_tx_commitments(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::SumOfTxCommitments);
        let points = &self.tx_commits;
        points[1..]
            .iter()
            .try_fold(points[0].clone(), |sum, p| sum.add(p))?
            .enforce_equal(&PointVar::constant(&babyjubjub::identity()))
    }

    /// Check 11: B < L, and v < L for a withdraw (for transfer and deposit it follows from
    /// v ≤ B), and but for a withdraw B − v ≥ 0, i.e. B − v < 2²⁵² (B and v are below 2²⁵²,
    /// so a negative difference is a field element above r − 2²⁵² > 2²⁵²).
    fn enforce_balance_range(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::BalanceRange);
        modl_gadgets::enforce_reduced(&self.balance_bits)?;
        if self.kind == Kind::Withdraw {
            modl_gadgets::enforce_reduced(&self.amount_bits)
        } else {
            let headroom = &self.balance - &self.amount;
            let headroom_bits = alloc_bits(self.cs.clone(), || headroom.value(), VALUE_BITS)?;
            headroom.enforce_equal(&Boolean::le_bits_to_fp(&headroom_bits)?)
        }
    }

    /// Check 12. The reference's rule: nullifier = Poseidon(hashed_shared_secrets[s],
    /// block_number), the public hash picked with the selector bits (k constraints). The hidden
    /// sender's: nullifier = Poseidon(s_s, block_number), with s_s the remainder check 4 computed
    /// (no selection: k constraints fewer).
    fn enforce_nullifier(
        &self,
        rule: NullifierRule,
        sender: &[Boolean<Fr>],
        sender_shared_secret: &FpVar<Fr>,
    ) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::Nullifier);
        let hashed = match rule {
            NullifierRule::Reference => FpVar::select_sender(sender, &self.hashed_shared_secrets),
            NullifierRule::HiddenSender => sender_shared_secret.clone(),
        };
        poseidon_gadget::hash(&[hashed, self.block_number.clone()])?.enforce_equal(&self.nullifier)
    }

    /// Check 13: tx_commits[i] = Pedersen(tx_values[i], tx_random_values[i]), every tx value
    /// below L (its bits, allocated in this check's namespace, compared with L − 1).
    fn enforce_tx_commitments(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::TxCommitments);
        for ((vb, rb), c) in self
            .tx_value_bits
            .iter()
            .zip(&self.tx_random_bits)
            .zip(&self.tx_commits)
        {
            modl_gadgets::enforce_reduced(vb)?;
            pedersen(vb, rb)?.enforce_equal(c)?;
        }
        Ok(())
    }

    /// Check 14. Receivers: tx_random_values[i] = L − hᵢ; sender: (Σ_{i≠s} hᵢ) mod L.
    fn enforce_random_factors(&self, sender: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::RandomFactors);
        let random_domain = FpVar::Constant(poseidon::random_factor_domain());
        let mut hashes = Vec::with_capacity(sender.len());
        for ((s, e), r) in self.shared_secrets.iter().zip(sender).zip(&self.tx_randoms) {
            let h = modl_gadgets::reduce(&poseidon_gadget::hash(&[
                random_domain.clone(),
                s.clone(),
                self.block_number.clone(),
            ])?)?
            .remainder;
            // (1 − eᵢ)·(rᵢ + hᵢ − L) = 0
            FpVar::from(!e).mul_equals(&(r + &h - modl::l_fr()), &FpVar::zero())?;
            hashes.push(h);
        }
        let receivers_sum =
            hashes.iter().sum::<FpVar<Fr>>() - FpVar::select_sender(sender, &hashes);
        modl_gadgets::enforce_remainder(
            &receivers_sum,
            &FpVar::select_sender(sender, &self.tx_randoms),
        )
    }

    /// Check 19: R < L (its bits, allocated in this check's namespace).
    fn enforce_random_value_range(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::RandomValueRange);
        modl_gadgets::enforce_reduced(&self.random_value_bits)
    }

    /// Check 20: the members of the anonymity set are pairwise distinct.
    fn enforce_distinct_members(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::DistinctMembers);
        enforce_distinct_members(&self.anonymity_set)
    }

    /// Check 21 of a deposit: v < 10^36, on the bits check 11 allocated (49 constraints: one for
    /// the bits above 10^36's 120, 48 for the comparison of the rest, see `bits`).
    fn enforce_deposit_value_range(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::DepositValueRange);
        enforce_at_most(&self.amount_bits, &(amount::bound() - 1u32))
    }

    /// Check 15 of a deposit: hash = DvpHash(pk, saltOut, v, address).
    fn enforce_dvp_hash(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::DvpHash);
        let pk = self.witness(|t| *deposit(t).pk)?;
        let salt_out = self.witness(|t| *deposit(t).salt_out)?;
        let address = self.witness(|t| *deposit(t).address)?;
        dvp_gadget::erc20_commitment(&pk, &salt_out, &self.amount, &address)?
            .enforce_equal(&self.dvp_hashes[0])
    }

    /// Check 16: every claimed value below 2²⁵² (its bits) and v = Σ v_per_deposit over the
    /// integers (a carry between 126-bit halves; see `bits`). Returns the values' bits.
    fn enforce_withdrawn_value(&self) -> Result<Vec<Vec<Boolean<Fr>>>, SynthesisError> {
        namespace!(self.cs, Check::WithdrawnValue);
        let value_bits = (0..WITHDRAW_SLOTS)
            .map(|j| self.bits(|t| withdraw(t).v_per_deposit[j], VALUE_BITS))
            .collect::<Result<Vec<_>, _>>()?;
        enforce_integer_sum(&value_bits, &self.amount_bits)?;
        Ok(value_bits)
    }

    /// Checks 15 and 17 of a withdraw, one product per slot: hashes[j] = [v ≠ 0]·computed, so
    /// a claimed deposit's hash is the one computed and an empty slot's hash is 0 (not
    /// someone else's deposit). That constraint sits in both checks' namespaces.
    fn enforce_dvp_hashes(
        &self,
        address: &FpVar<Fr>,
        value_bits: &[Vec<Boolean<Fr>>],
    ) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::DvpHash);
        for (j, (bits, hash)) in value_bits.iter().zip(&self.dvp_hashes).enumerate() {
            let sk = self.witness(|t| withdraw(t).sk_deposits[j])?;
            let salt = self.witness(|t| withdraw(t).salts_in[j])?;
            let value = Boolean::le_bits_to_fp(bits)?;
            let owner_key = keys::public_key(&sk)?;
            let computed = dvp_gadget::erc20_commitment(&owner_key, &salt, &value, address)?;
            let used = !value.is_zero()?;
            namespace!(self.cs, Check::EmptyDepositSlot);
            FpVar::from(used).mul_equals(&computed, hash)?;
        }
        Ok(())
    }

    /// Check 18: no deposit claimed twice, i.e. any two equal hashes are 0 (empty slots).
    fn enforce_distinct_deposits(&self) -> Result<(), SynthesisError> {
        namespace!(self.cs, Check::DistinctDeposits);
        dvp_gadget::enforce_distinct_notes(&self.dvp_hashes)
    }

    /// Checks 15–18 of a withdraw.
    fn enforce_claimed_deposits(&self) -> Result<(), SynthesisError> {
        let address = self.witness(|t| *withdraw(t).address)?;
        let value_bits = self.enforce_withdrawn_value()?;
        self.enforce_dvp_hashes(&address, &value_bits)?;
        self.enforce_distinct_deposits()
    }
}

/// Enforces what [`super::repeated_member`] checks: the members are pairwise distinct. For each
/// pair i < j, one constraint `(mᵢ − mⱼ)·wᵢⱼ = 1` with the hint wᵢⱼ = 1 / (mᵢ − mⱼ): no wᵢⱼ
/// satisfies it when mᵢ = mⱼ. k members cost k(k − 1)/2 constraints: 1 to 15 for k = 2..6.
pub fn enforce_distinct_members(members: &[FpVar<Fr>]) -> Result<(), SynthesisError> {
    enforce_distinct_members_with_hints(members, |a, b| {
        // Equal members have no inverse; 0 leaves the constraint unsatisfied, as any hint would.
        ark_ff::Field::inverse(&(a - b)).unwrap_or_default()
    })
}

/// [`enforce_distinct_members`] with the hint wᵢⱼ computed by `inverse(mᵢ, mⱼ)` (tests forge it).
fn enforce_distinct_members_with_hints(
    members: &[FpVar<Fr>],
    inverse: impl Fn(Fr, Fr) -> Fr,
) -> Result<(), SynthesisError> {
    for j in 0..members.len() {
        for i in 0..j {
            let (mi, mj) = (&members[i], &members[j]);
            let w = FpVar::new_witness(members.cs(), || Ok(inverse(mi.value()?, mj.value()?)))?;
            (mi - mj).mul_equals(&w, &FpVar::one())?;
        }
    }
    Ok(())
}

impl ConstraintSynthesizer<Fr> for PaymentCircuit {
    /// The checks in the order of [`PaymentInputs::check`].
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let (kind, k) = (self.kind, self.k);
        let inputs = self.inputs.as_ref();
        if inputs.is_some_and(|t| t.kind() != kind || t.k() != k) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let vars = PaymentVars::alloc(cs, kind, k, inputs)?;
        let sender = vars.enforce_sender_in_anonymity_set()?;
        vars.enforce_sender_tx_value(&sender)?;
        vars.enforce_points_on_curve()?;
        let sender_shared_secret = vars.enforce_shared_secret(&sender)?;
        vars.enforce_hashed_shared_secrets()?;
        vars.enforce_public_key(&sender)?;
        vars.enforce_previous_commitment(&sender)?;
        vars.enforce_message_tags()?;
        vars.enforce_value_conservation(&sender)?;
        if kind == Kind::Transfer {
            vars.enforce_sum_of_tx_commitments()?;
        }
        vars.enforce_balance_range()?;
        vars.enforce_nullifier(self.nullifier_rule, &sender, &sender_shared_secret)?;
        vars.enforce_tx_commitments()?;
        vars.enforce_random_factors(&sender)?;
        vars.enforce_random_value_range()?;
        vars.enforce_distinct_members()?;
        match kind {
            Kind::Transfer => Ok(()),
            Kind::Deposit => {
                vars.enforce_deposit_value_range()?;
                vars.enforce_dvp_hash()
            }
            Kind::Withdraw => vars.enforce_claimed_deposits(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    use crate::{
        babyjubjub,
        payment::{Spend, Withdraw},
    };

    /// Synthesizes the reference's circuit for `inputs` with their honest hints; `true` if
    /// satisfied.
    fn satisfied(inputs: &PaymentInputs) -> bool {
        satisfied_with(inputs, NullifierRule::Reference)
    }

    /// [`satisfied`] for the circuit whose nullifier follows `rule`.
    fn satisfied_with(inputs: &PaymentInputs, rule: NullifierRule) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let circuit = PaymentCircuit::for_proving(inputs.clone()).with_nullifier_rule(rule);
        match circuit.generate_constraints(cs.clone()) {
            Ok(()) => cs.is_satisfied().unwrap(),
            // A hint that cannot even be computed (e.g. a division by zero) is a refusal too.
            Err(_) => false,
        }
    }

    fn sample(kind: Kind, k: usize, sender: usize, seed: u64) -> PaymentInputs {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        PaymentInputs::generate(kind, k, sender, 25, 100, &mut rng)
    }

    fn recommit(t: &mut PaymentInputs, i: usize) {
        let p = babyjubjub::pedersen(&t.tx_values[i], &t.tx_random_values[i]);
        t.tx_commits[i] = (p.x, p.y);
    }

    #[test]
    fn valid_inputs_satisfy_the_circuit_and_expose_the_public_inputs_in_order() {
        for kind in Kind::ALL {
            for (k, sender) in [(2, 1), (4, 0), (6, 5)] {
                let t = sample(kind, k, sender, k as u64);
                let cs = ConstraintSystem::<Fr>::new_ref();
                PaymentCircuit::for_proving(t.clone())
                    .generate_constraints(cs.clone())
                    .unwrap();
                assert!(
                    cs.is_satisfied().unwrap(),
                    "{kind} k = {k}: {:?}",
                    cs.which_is_unsatisfied()
                );
                let instance = cs.instance_assignment().unwrap();
                assert_eq!(instance.len(), 1 + kind.num_public_inputs(k));
                assert_eq!(&instance[1..], t.public_inputs().as_slice());
            }
        }
    }

    #[test]
    fn inputs_of_another_statement_or_size_are_refused() {
        let deposit = sample(Kind::Deposit, 3, 0, 1);
        let cs = ConstraintSystem::<Fr>::new_ref();
        let circuit = PaymentCircuit {
            kind: Kind::Withdraw,
            k: 3,
            nullifier_rule: NullifierRule::Reference,
            inputs: Some(deposit.clone()),
        };
        assert!(circuit.generate_constraints(cs).is_err());
        let cs = ConstraintSystem::<Fr>::new_ref();
        assert!(PaymentCircuit {
            kind: Kind::Deposit,
            k: 4,
            nullifier_rule: NullifierRule::Reference,
            inputs: Some(deposit)
        }
        .generate_constraints(cs)
        .is_err());
    }

    /// Exact constraint counts, per statement and k. Any change to a gadget moves these numbers;
    /// update them together with `benches/results/` and the README.
    #[test]
    fn constraint_counts() {
        for (rule, table) in [
            (NullifierRule::Reference, EXPECTED_CONSTRAINTS),
            (
                NullifierRule::HiddenSender,
                EXPECTED_HIDDEN_SENDER_CONSTRAINTS,
            ),
        ] {
            for (kind, expected) in Kind::ALL.into_iter().zip(table) {
                let counts: Vec<usize> = crate::SUPPORTED_K
                    .map(|k| constraints(kind, k, rule))
                    .collect();
                assert_eq!(counts, expected, "{kind}, {rule:?}");
            }
        }
    }

    fn constraints(kind: Kind, k: usize, rule: NullifierRule) -> usize {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_mode(ark_relations::gr1cs::SynthesisMode::Setup);
        PaymentCircuit::for_setup(kind, k)
            .with_nullifier_rule(rule)
            .generate_constraints(cs.clone())
            .unwrap();
        cs.num_constraints()
    }

    /// Transfer, deposit, withdraw; k = 2..6. Check 20 costs k(k − 1)/2 of them (1 to 15),
    /// check 21 a deposit's 49.
    const EXPECTED_CONSTRAINTS: [[usize; 5]; 3] = [
        [12_324, 16_315, 20_307, 24_300, 28_294],
        [13_086, 17_071, 21_057, 25_044, 29_032],
        [29_506, 33_491, 37_477, 41_464, 45_452],
    ];

    /// The same with the hidden sender's nullifier: k fewer each, the selection of
    /// `hashed_shared_secrets[s]` that check 12 no longer makes.
    const EXPECTED_HIDDEN_SENDER_CONSTRAINTS: [[usize; 5]; 3] = [
        [12_322, 16_312, 20_303, 24_295, 28_288],
        [13_084, 17_068, 21_053, 25_039, 29_026],
        [29_504, 33_488, 37_473, 41_459, 45_446],
    ];

    /// Check 12 alone, in each rule: the reference's selection (k) and Poseidon of two inputs
    /// with the equality; the hidden sender's Poseidon only. Counted as the difference of whole
    /// circuits, so that nothing else of the circuit depends on the rule.
    #[test]
    fn the_hidden_senders_nullifier_costs_k_constraints_fewer() {
        for kind in Kind::ALL {
            for k in crate::SUPPORTED_K {
                assert_eq!(
                    constraints(kind, k, NullifierRule::Reference)
                        - constraints(kind, k, NullifierRule::HiddenSender),
                    k,
                    "{kind}, k = {k}"
                );
            }
        }
    }

    /// `inputs` with its nullifier derived by `rule`.
    fn under(rule: NullifierRule, inputs: &PaymentInputs) -> PaymentInputs {
        Spend::of(inputs).inputs_with(rule)
    }

    /// The trace of the first unsatisfied constraint of the circuit for `inputs` whose nullifier
    /// follows `rule`; `None` if it is satisfied. (Every synthesis of a test that reads traces
    /// goes through the tracing layer: a callsite first reached without it can stay silent.)
    fn first_unsatisfied_with(inputs: &PaymentInputs, rule: NullifierRule) -> Option<String> {
        let circuit = PaymentCircuit::for_proving(inputs.clone()).with_nullifier_rule(rule);
        crate::first_unsatisfied(circuit).expect("the hints of these forgeries can be computed")
    }

    /// Forged nullifiers for the hidden sender's statement: each is refused by the native checks,
    /// naming the check, and leaves the circuit unsatisfied in that check's namespace.
    #[test]
    fn the_hidden_senders_nullifier_is_the_one_of_its_balance_and_block() {
        let rule = NullifierRule::HiddenSender;
        for kind in Kind::ALL {
            let honest = under(rule, &sample(kind, 3, 1, 50));
            assert_eq!(honest.check_with(rule), Ok(1), "{kind}");
            assert_eq!(first_unsatisfied_with(&honest, rule), None, "{kind}");
            let s_s = honest.shared_secrets[1];
            let b = honest.block_number;
            type Forgery<'a> = (&'a str, Check, Box<dyn Fn(&mut PaymentInputs)>);
            let forgeries: Vec<Forgery> = vec![
                // The reference's nullifier of the same payment, and the other way round below.
                ("the reference's nullifier", Check::Nullifier, {
                    let reference = NullifierRule::Reference.nullifier(&s_s, &b);
                    Box::new(move |t| t.nullifier = reference)
                }),
                // A decoy's shared secret in place of the sender's.
                ("a decoy's nullifier", Check::Nullifier, {
                    Box::new(move |t| t.nullifier = rule.nullifier(&t.shared_secrets[0], &b))
                }),
                ("another block's nullifier", Check::Nullifier, {
                    Box::new(move |t| t.nullifier = rule.nullifier(&s_s, &(b + Fr::ONE)))
                }),
                ("an arbitrary nullifier", Check::Nullifier, {
                    Box::new(|t| t.nullifier += Fr::ONE)
                }),
                // The sender's shared secret off by L, with everything derived from it again: a
                // second nullifier for the balance, if check 4 did not reduce it.
                ("the shared secret plus L", Check::SharedSecret, {
                    Box::new(move |t| {
                        let alias = s_s + modl::l_fr();
                        t.shared_secrets[1] = alias;
                        t.hashed_shared_secrets[1] = crate::payment::hashed_shared_secret(&alias);
                        t.message_tags[1] = crate::payment::message_tag(&alias, &b);
                        t.nullifier = rule.nullifier(&alias, &b);
                    })
                }),
                // The balance's random value plus L: the same previous commitment, another
                // shared secret, hence a second nullifier in the same block.
                ("the random value plus L", Check::RandomValueRange, {
                    Box::new(move |t| {
                        let mut spend = Spend::of(t);
                        spend.random_value += modl::l_fr();
                        let forged = spend.inputs_with(rule);
                        assert_eq!(forged.previous_commits, t.previous_commits);
                        assert_ne!(forged.nullifier, t.nullifier);
                        *t = forged;
                    })
                }),
            ];
            for (name, check, edit) in forgeries {
                let mut t = honest.clone();
                edit(&mut t);
                assert_eq!(
                    t.check_with(rule).unwrap_err().check,
                    check,
                    "{kind}, {name}"
                );
                let trace = first_unsatisfied_with(&t, rule)
                    .unwrap_or_else(|| panic!("{kind}, {name}: satisfied"));
                assert!(
                    trace.contains(check.label()),
                    "{kind}, {name}: the first unsatisfied constraint is at\n{trace}"
                );
            }
            // Each statement refuses the other's nullifier.
            let reference = sample(kind, 3, 1, 50);
            assert_eq!(
                reference.check_with(rule).unwrap_err().check,
                Check::Nullifier
            );
            let label = Check::Nullifier.label();
            assert!(first_unsatisfied_with(&reference, rule).is_some_and(|t| t.contains(label)));
            assert_eq!(honest.check().unwrap_err().check, Check::Nullifier);
            let as_reference = first_unsatisfied_with(&honest, NullifierRule::Reference);
            assert!(as_reference.is_some_and(|t| t.contains(label)), "{kind}");
        }
    }

    #[test]
    fn each_bad_class_is_unsatisfiable() {
        for kind in Kind::ALL {
            let good = sample(kind, 3, 1, 9);
            assert!(satisfied(&good));
            let refused = |edit: &dyn Fn(&mut PaymentInputs)| {
                let mut t = good.clone();
                edit(&mut t);
                !satisfied(&t)
            };
            let one = Fr::ONE;
            assert!(
                refused(&|t| *t.sender_id = Fr::ZERO),
                "{kind}: sender missing from the anonymity set"
            );
            assert!(
                refused(&|t| t.anonymity_set[0] = *t.sender_id),
                "{kind}: sender twice in the set"
            );
            assert!(refused(&|t| t.nullifier += one), "{kind}: wrong nullifier");
            assert!(
                refused(&|t| *t.secret_key += one),
                "{kind}: wrong secret key"
            );
            assert!(
                refused(&|t| t.previous_commits[1] = t.previous_commits[0]),
                "{kind}: wrong previous commit"
            );
            assert!(
                refused(&|t| t.tx_commits[2].0 += one),
                "{kind}: off-curve commit"
            );
            assert!(
                refused(&|t| *t.sender_tx_value += one),
                "{kind}: amount not the sender's tx value"
            );
            assert!(
                refused(&|t| {
                    t.tx_values[2] += one;
                    recommit(t, 2)
                }),
                "{kind}: values not conserved"
            );
            assert!(
                refused(&|t| {
                    // Random factors that still sum to 0 mod L, commitments consistent: check 14.
                    t.tx_random_values[0] += one;
                    t.tx_random_values[2] -= one;
                    recommit(t, 0);
                    recommit(t, 2);
                }),
                "{kind}: random factors"
            );
        }
        // Overspending: amount 101 from a balance of 100, everything else consistent.
        for kind in [Kind::Transfer, Kind::Deposit] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
            let mut over = PaymentInputs::generate(kind, 3, 1, 101, 101, &mut rng);
            *over.previous_sender_balance = Fr::from(100u64);
            let p = babyjubjub::pedersen(
                &over.previous_sender_balance,
                &over.previous_sender_random_value,
            );
            over.previous_commits[1] = (p.x, p.y);
            assert_eq!(over.check().unwrap_err().check.number(), 11);
            assert!(!satisfied(&over), "{kind}: overspend");
        }
    }

    #[test]
    fn dvp_commitments_are_bound() {
        let deposit = sample(Kind::Deposit, 2, 0, 12);
        let edit_deposit = |edit: &dyn Fn(&mut super::super::Deposit)| {
            let mut t = deposit.clone();
            let Dvp::Deposit(d) = &mut t.dvp else {
                unreachable!()
            };
            edit(d);
            satisfied(&t)
        };
        assert!(edit_deposit(&|_| {}));
        assert!(!edit_deposit(&|d| d.hash += Fr::ONE));
        assert!(!edit_deposit(&|d| *d.pk += Fr::ONE));
        assert!(!edit_deposit(&|d| *d.address += Fr::ONE));
        // The deposited amount is the one hashed: a deposit of 24 cannot claim a hash of 25.
        let mut smaller = deposit.clone();
        *smaller.sender_tx_value -= Fr::ONE;
        smaller.tx_values[0] =
            crate::payment::sender_tx_value(Kind::Deposit, &smaller.sender_tx_value);
        recommit(&mut smaller, 0);
        assert_eq!(smaller.check().unwrap_err().check.number(), 15);
        assert!(!satisfied(&smaller));

        let withdraw = sample(Kind::Withdraw, 2, 1, 13);
        let edit_withdraw = |edit: &dyn Fn(&mut Withdraw)| {
            let mut t = withdraw.clone();
            let Dvp::Withdraw(w) = &mut t.dvp else {
                unreachable!()
            };
            edit(w);
            satisfied(&t)
        };
        assert!(edit_withdraw(&|_| {}));
        assert!(!edit_withdraw(&|w| w.hashes[0] += Fr::ONE));
        assert!(!edit_withdraw(&|w| w.sk_deposits[1] += Fr::ONE));
        assert!(!edit_withdraw(&|w| w.salts_in[0] += Fr::ONE));
        assert!(!edit_withdraw(&|w| w.v_per_deposit[1] += Fr::ONE));
        // An empty slot's hash is 0 (check 17), not free as in the reference.
        assert!(!edit_withdraw(&|w| w.hashes[7] = Fr::from(99u64)));
    }

    /// Empties slot j of a withdraw: no deposit, value 0, hash 0.
    fn empty_slot(w: &mut Withdraw, j: usize) {
        w.hashes[j] = Fr::ZERO;
        w.v_per_deposit[j] = Fr::ZERO;
        w.sk_deposits[j] = Fr::ZERO;
        w.salts_in[j] = Fr::ZERO;
    }

    fn withdraw_mut(t: &mut PaymentInputs) -> &mut Withdraw {
        match &mut t.dvp {
            Dvp::Withdraw(w) => w,
            _ => unreachable!(),
        }
    }

    /// Gives the claimed deposits the values `values` (their hashes recomputed) and credits the
    /// sender v = their field sum, its tx value and commitment made consistent: only checks
    /// 16–18 can then fail.
    fn claim(t: &mut PaymentInputs, sender: usize, values: &[Fr]) {
        let w = withdraw_mut(t);
        for (j, v) in values.iter().enumerate() {
            w.v_per_deposit[j] = *v;
            w.hashes[j] = crate::dvp::erc20_commitment(
                &crate::payment::public_key(&w.sk_deposits[j]),
                &w.salts_in[j],
                v,
                &w.address,
            );
        }
        *t.sender_tx_value = values.iter().sum();
        t.tx_values[sender] = *t.sender_tx_value;
        recommit(t, sender);
    }

    /// Honest withdraws of 1 to 10 deposits, in leading or scattered slots, and of the largest
    /// values the bound allows (v = L − 1 from one deposit, or from ten with carries), and a
    /// credit of L refused.
    #[test]
    fn honest_withdraws_of_one_to_ten_deposits_satisfy_the_circuit() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(16);
        for n in 1..=WITHDRAW_SLOTS {
            let notes: Vec<u64> = (0..n).map(|_| rand::Rng::gen(&mut rng)).collect();
            let t = PaymentInputs::generate_withdraw(2, n % 2, &notes, 7, &mut rng);
            assert_eq!(t.check(), Ok(n % 2));
            assert!(satisfied(&t), "{n} deposits");
        }
        let mut scattered = PaymentInputs::generate_withdraw(2, 0, &[3, 4, 5], 7, &mut rng);
        let w = withdraw_mut(&mut scattered);
        for field in [
            &mut w.hashes,
            &mut w.sk_deposits,
            &mut w.v_per_deposit,
            &mut w.salts_in,
        ] {
            field.swap(0, 9);
            field.swap(1, 5);
        }
        assert_eq!(scattered.check(), Ok(0));
        assert!(satisfied(&scattered), "deposits in slots 2, 5, 9");

        let max = modl::l_fr() - Fr::ONE;
        let ten: Vec<u64> = vec![1; WITHDRAW_SLOTS];
        let mut largest = PaymentInputs::generate_withdraw(2, 1, &ten, 7, &mut rng);
        let mut one = vec![Fr::ZERO; WITHDRAW_SLOTS];
        one[3] = max;
        claim(&mut largest, 1, &one);
        // Slots left at value 0 but with their old hashes: empty them.
        for j in (0..WITHDRAW_SLOTS).filter(|&j| j != 3) {
            empty_slot(withdraw_mut(&mut largest), j);
        }
        assert_eq!(largest.check(), Ok(1));
        assert!(satisfied(&largest), "one deposit of L - 1");
        let mut credited_l = largest.clone();
        let mut one_more = one.clone();
        one_more[3] = modl::l_fr();
        claim(&mut credited_l, 1, &one_more);
        assert_eq!(credited_l.check().unwrap_err().check, Check::BalanceRange);
        assert!(!satisfied(&credited_l), "a credit of L");
        // Ten deposits of about L / 10 each, summing to L − 1.
        let mut spread = PaymentInputs::generate_withdraw(2, 1, &ten, 7, &mut rng);
        let part = Fr::from(modl::l_biguint() / 10u32 + 7u32);
        let mut parts = vec![part; WITHDRAW_SLOTS];
        parts[9] = max - part * Fr::from(9u64);
        claim(&mut spread, 1, &parts);
        assert_eq!(*spread.sender_tx_value, max);
        assert_eq!(spread.check(), Ok(1));
        assert!(satisfied(&spread), "ten deposits summing to L - 1");
    }

    /// Forged withdraws the reference proves, each refused by the circuit with the native checks
    /// bypassed (and named by them): value minted from one small deposit, from none, or from
    /// parts that wrap past r; an empty slot naming another holder's deposit; a deposit claimed
    /// twice.
    #[test]
    fn minting_griefing_and_repeated_withdraws_are_unsatisfiable() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let good = PaymentInputs::generate_withdraw(2, 1, &[1, 99], 7, &mut rng);
        assert!(satisfied(&good));
        let refused_as = |check: u8, edit: &dyn Fn(&mut PaymentInputs)| {
            let mut t = good.clone();
            edit(&mut t);
            assert_eq!(t.check().unwrap_err().check.number(), check);
            !satisfied(&t)
        };
        // v = 100 credited for one deposit of 1.
        assert!(refused_as(16, &|t| empty_slot(withdraw_mut(t), 1)));
        // v = 100 credited for no deposit: no hash is checked at all.
        assert!(refused_as(16, &|t| {
            (0..WITHDRAW_SLOTS).for_each(|j| empty_slot(withdraw_mut(t), j))
        }));
        // A value of 2^252 or more, balanced in the field by another.
        assert!(refused_as(16, &|t| {
            let big = Fr::from(num_bigint::BigUint::from(1u8) << 252u32);
            let values = [Fr::ONE + big, Fr::from(99u64) - big];
            claim(t, 1, &values);
        }));
        // An empty slot carrying another holder's real deposit hash.
        let other = PaymentInputs::generate_withdraw(2, 0, &[5], 7, &mut rng);
        let others_hash = match &other.dvp {
            Dvp::Withdraw(w) => w.hashes[0],
            _ => unreachable!(),
        };
        assert!(refused_as(17, &|t| withdraw_mut(t).hashes[6] = others_hash));
        // One deposit of 50 in two slots, credited 100.
        assert!(refused_as(18, &|t| {
            claim(t, 1, &[Fr::from(50u64), Fr::from(50u64)]);
            withdraw_mut(t).claim_twice(0, 1);
        }));

        // Ten deposits below 2^252 whose integer sum is v + r: their field sum is v = 10.
        let mut wrapped = PaymentInputs::generate_withdraw(2, 1, &[1; WITHDRAW_SLOTS], 7, &mut rng);
        let r = modl::to_biguint(&-Fr::ONE) + 1u32;
        let total = &r + 10u32;
        let part = &total / 10u32;
        let mut parts = vec![Fr::from(part.clone()); WITHDRAW_SLOTS];
        parts[9] = Fr::from(&total - &part * 9u32);
        assert!(parts
            .iter()
            .all(|p| crate::payment::fits_bits(p, VALUE_BITS)));
        claim(&mut wrapped, 1, &parts);
        assert_eq!(*wrapped.sender_tx_value, Fr::from(10u64));
        assert_eq!(wrapped.check().unwrap_err().check.number(), 16);
        assert!(!satisfied(&wrapped), "value minted by wrapping past r");
    }

    /// The reference takes each "mod L" remainder from an unconstrained hint (checks 2, 4, 5, 6,
    /// 8), leaves the quotient unbounded (check 14, and the owner key of a withdrawn deposit:
    /// any key below L passes there), or compares field sums that can wrap past r (check 9 of
    /// deposit and withdraw). Each such forgery is refused here.
    #[test]
    fn values_the_reference_leaves_free_are_bound() {
        let l = modl::l_fr();
        for kind in Kind::ALL {
            let good = sample(kind, 2, 0, 11);
            let refused = |edit: &dyn Fn(&mut PaymentInputs)| {
                let mut t = good.clone();
                edit(&mut t);
                !satisfied(&t)
            };
            // Check 5 and 8: public remainders off by L (same residue, not reduced) or by one.
            assert!(refused(&|t| t.hashed_shared_secrets[1] += l));
            assert!(refused(&|t| t.hashed_shared_secrets[1] += Fr::ONE));
            assert!(refused(&|t| t.message_tags[0] += l));
            // Check 6: the sender's public key off by L.
            assert!(refused(&|t| t.public_keys[0] += l));
            // Check 4: the sender's shared secret off by L (hashes recomputed so only 4 can fail).
            assert!(refused(&|t| {
                t.shared_secrets[0] += l;
                t.hashed_shared_secrets[0] =
                    crate::payment::hashed_shared_secret(&t.shared_secrets[0]);
                t.message_tags[0] =
                    crate::payment::message_tag(&t.shared_secrets[0], &t.block_number);
            }));
            // Check 2: the sender's tx value plus L, committed consistently.
            assert!(
                refused(&|t| {
                    t.tx_values[0] += l;
                    recommit(t, 0)
                }),
                "{kind}"
            );
            // Check 14: a receiver's random factor from a remainder other than hᵢ.
            assert!(refused(&|t| t.tx_random_values[1] += Fr::ONE));
        }

        // Check 15 of a withdraw: a deposit hash made for an owner key that is not
        // Poseidon(sk, sk) mod L, but below L, as the reference's free remainder allows.
        let mut stolen = sample(Kind::Withdraw, 2, 0, 14);
        let Dvp::Withdraw(w) = &mut stolen.dvp else {
            unreachable!()
        };
        let someone_elses_key = crate::payment::public_key(&w.sk_deposits[0]) + Fr::ONE;
        w.hashes[0] = crate::dvp::erc20_commitment(
            &someone_elses_key,
            &w.salts_in[0],
            &w.v_per_deposit[0],
            &w.address,
        );
        assert_eq!(stolen.check().unwrap_err().check.number(), 15);
        assert!(!satisfied(&stolen));

        // Check 9 of deposit and withdraw: receivers' values summing to r over the integers (each
        // above L, so check 13 names them now).
        let r = modl::to_biguint(&-Fr::ONE) + 1u32;
        let quarter = &r / 4u32;
        for kind in [Kind::Deposit, Kind::Withdraw] {
            let mut minted = sample(kind, 5, 0, 15);
            for i in 1..5 {
                minted.tx_values[i] = Fr::from(if i < 4 {
                    quarter.clone()
                } else {
                    &r - &quarter * 3u32
                });
                recommit(&mut minted, i);
            }
            assert_eq!(minted.check().unwrap_err().check.number(), 13);
            assert!(
                !satisfied(&minted),
                "{kind}: value minted by wrapping past r"
            );
        }
    }

    /// `inputs` with one choice of its sender changed and every other value derived again, as a
    /// forger would.
    fn respend(inputs: &PaymentInputs, edit: impl Fn(&mut Spend)) -> PaymentInputs {
        let mut spend = Spend::of(inputs);
        edit(&mut spend);
        spend.inputs()
    }

    /// The trace of the first unsatisfied constraint of `inputs`' circuit.
    fn first_unsatisfied(inputs: &PaymentInputs) -> Option<String> {
        crate::first_unsatisfied(PaymentCircuit::for_proving(inputs.clone()))
            .expect("the hints of these forgeries can be computed")
    }

    /// A forged witness that breaks one check: the native checks report that check, and the
    /// circuit's first unsatisfied constraint lies in its namespace.
    #[test]
    fn an_unsatisfied_constraint_names_its_check() {
        let transfer = sample(Kind::Transfer, 3, 1, 21);
        let deposit = sample(Kind::Deposit, 2, 0, 22);
        let withdraw = sample(Kind::Withdraw, 2, 1, 23);
        let repeated = PaymentInputs::generate_withdraw(
            2,
            0,
            &[50, 50],
            100,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(24),
        );
        type Edit = fn(&mut PaymentInputs);
        let forgeries: [(&PaymentInputs, Check, Edit); 23] = [
            // The aliases mod L of a balance, of the receivers' values and of a random value.
            (&transfer, Check::BalanceRange, |t| {
                *t = respend(t, |s| {
                    let big = Fr::from(10u128.pow(30));
                    s.balance += modl::l_fr();
                    s.amount = big;
                    s.tx_values = vec![big, modl::l_fr() - big, Fr::ZERO];
                })
            }),
            (&transfer, Check::ValueConservation, |t| {
                *t = respend(t, |s| {
                    s.amount = Fr::ZERO;
                    s.tx_values = vec![Fr::ONE, Fr::ZERO, modl::l_fr() - Fr::ONE];
                })
            }),
            (&deposit, Check::ValueConservation, |t| {
                *t = respend(t, |s| s.tx_values[1] = modl::l_fr())
            }),
            (&withdraw, Check::RandomValueRange, |t| {
                *t = respend(t, |s| s.random_value += modl::l_fr())
            }),
            (&transfer, Check::SenderInAnonymitySet, |t| {
                t.anonymity_set[0] = *t.sender_id
            }),
            (&transfer, Check::SenderTxValue, |t| {
                t.tx_values[1] += Fr::ONE
            }),
            (&transfer, Check::PointsOnCurve, |t| {
                t.previous_commits[2].0 += Fr::ONE
            }),
            (&transfer, Check::SharedSecret, |t| *t.secret_key += Fr::ONE),
            (&transfer, Check::HashedSharedSecrets, |t| {
                t.hashed_shared_secrets[0] += Fr::ONE
            }),
            (&transfer, Check::PublicKey, |t| t.public_keys[1] += Fr::ONE),
            (&transfer, Check::PreviousCommitment, |t| {
                *t.previous_sender_balance += Fr::ONE
            }),
            (&transfer, Check::MessageTags, |t| {
                t.message_tags[2] += Fr::ONE
            }),
            (&transfer, Check::ValueConservation, |t| {
                t.tx_values[2] += Fr::ONE;
                recommit(t, 2)
            }),
            (&transfer, Check::Nullifier, |t| t.nullifier += Fr::ONE),
            (&transfer, Check::TxCommitments, |t| t.tx_commits.swap(0, 2)),
            (&transfer, Check::RandomFactors, |t| {
                t.tx_random_values[0] += Fr::ONE;
                t.tx_random_values[2] -= Fr::ONE;
                recommit(t, 0);
                recommit(t, 2);
            }),
            (&deposit, Check::DvpHash, |t| match &mut t.dvp {
                Dvp::Deposit(d) => *d.salt_out += Fr::ONE,
                _ => unreachable!(),
            }),
            (&withdraw, Check::DvpHash, |t| {
                withdraw_mut(t).hashes[0] += Fr::ONE
            }),
            (&withdraw, Check::WithdrawnValue, |t| {
                empty_slot(withdraw_mut(t), 1)
            }),
            (&withdraw, Check::EmptyDepositSlot, |t| {
                withdraw_mut(t).hashes[5] = Fr::from(5u64)
            }),
            // Two decoys that are one member: the sender (index 1) is there once.
            (&transfer, Check::DistinctMembers, |t| {
                t.anonymity_set[2] = t.anonymity_set[0]
            }),
            // A deposit of 10^36 from a balance of 10^36, every other value derived again.
            (&deposit, Check::DepositValueRange, |t| {
                *t = respend(t, |s| {
                    let big = Fr::from(amount::bound().clone());
                    s.balance = big;
                    s.amount = big;
                    s.tx_values[s.sender] = crate::payment::sender_tx_value(Kind::Deposit, &big);
                })
            }),
            // One deposit of 50 in two slots, credited 100.
            (&repeated, Check::DistinctDeposits, |t| {
                withdraw_mut(t).claim_twice(0, 1)
            }),
        ];
        for (good, check, edit) in forgeries {
            let mut t = good.clone();
            edit(&mut t);
            assert_eq!(t.check().unwrap_err().check, check);
            let trace = first_unsatisfied(&t).expect("unsatisfied");
            assert!(
                trace.contains(check.label()),
                "{check}: the first unsatisfied constraint is at\n{trace}"
            );
        }
    }

    /// Allocates `members` and enforces check 20's gadget, with every hint `forged` when given
    /// and the honest one otherwise; (satisfied, constraints).
    fn distinct_members(members: &[Fr], forged: Option<Fr>) -> (bool, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars: Vec<FpVar<Fr>> = members
            .iter()
            .map(|m| FpVar::new_input(cs.clone(), || Ok(*m)).unwrap())
            .collect();
        match forged {
            None => enforce_distinct_members(&vars).unwrap(),
            Some(w) => enforce_distinct_members_with_hints(&vars, |_, _| w).unwrap(),
        }
        (cs.is_satisfied().unwrap(), cs.num_constraints())
    }

    #[test]
    fn distinct_members_gadget_agrees_with_native_and_costs_one_constraint_a_pair() {
        use ark_ff::UniformRand;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
        for k in crate::SUPPORTED_K {
            let distinct: Vec<Fr> = (0..k).map(|_| Fr::rand(&mut rng)).collect();
            let mut sets = vec![distinct.clone(), vec![distinct[0]; k]];
            for j in 1..k {
                for i in 0..j {
                    let mut set = distinct.clone();
                    set[j] = set[i];
                    sets.push(set);
                }
            }
            // Neighbours differing by one, as generated anonymity sets do.
            sets.push((0..k as u64).map(Fr::from).collect());
            for set in sets {
                let (satisfied, constraints) = distinct_members(&set, None);
                assert_eq!(constraints, k * (k - 1) / 2);
                assert_eq!(
                    satisfied,
                    crate::payment::repeated_member(&set).is_none(),
                    "k = {k}"
                );
            }
        }
    }

    #[test]
    fn no_hint_lets_a_member_named_twice_pass() {
        use ark_ff::UniformRand;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        let mut set: Vec<Fr> = (0..4).map(|_| Fr::rand(&mut rng)).collect();
        set[3] = set[1];
        for hint in [Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::rand(&mut rng)] {
            assert!(!distinct_members(&set, Some(hint)).0, "hint {hint}");
        }
    }

    /// Every field element of the inputs, public or private.
    fn elements_mut(t: &mut PaymentInputs) -> Vec<&mut Fr> {
        let PaymentInputs {
            sender_id,
            anonymity_set,
            secret_key,
            shared_secrets,
            hashed_shared_secrets,
            public_keys,
            previous_sender_balance,
            previous_sender_random_value,
            previous_commits,
            tx_commits,
            tx_values,
            tx_random_values,
            sender_tx_value,
            nullifier,
            block_number,
            message_tags,
            dvp,
        } = t;
        let mut out: Vec<&mut Fr> = vec![
            &mut **sender_id,
            &mut **secret_key,
            &mut **previous_sender_balance,
            &mut **previous_sender_random_value,
            &mut **sender_tx_value,
            nullifier,
            block_number,
        ];
        for list in [
            &mut **anonymity_set,
            &mut **shared_secrets,
            &mut **hashed_shared_secrets,
            &mut **public_keys,
            &mut **tx_values,
            &mut **tx_random_values,
            &mut **message_tags,
        ] {
            out.extend(list.iter_mut());
        }
        for (x, y) in previous_commits.iter_mut().chain(tx_commits.iter_mut()) {
            out.extend([x, y]);
        }
        match dvp {
            Dvp::None => {}
            Dvp::Deposit(d) => {
                out.extend([&mut d.hash, &mut *d.pk, &mut *d.address, &mut *d.salt_out])
            }
            Dvp::Withdraw(w) => {
                out.push(&mut *w.address);
                for list in [
                    &mut w.hashes,
                    &mut *w.sk_deposits,
                    &mut *w.v_per_deposit,
                    &mut *w.salts_in,
                ] {
                    out.extend(list.iter_mut());
                }
            }
        }
        out
    }

    /// The valid k = 2 witness of `kind` under `rule` that every case of the property below
    /// mutates: made once per kind and rule (making one took longer than checking it).
    fn valid_witness(kind: Kind, rule: NullifierRule) -> PaymentInputs {
        static WITNESSES: std::sync::OnceLock<
            std::collections::HashMap<(Kind, NullifierRule), PaymentInputs>,
        > = std::sync::OnceLock::new();
        WITNESSES.get_or_init(|| {
            Kind::ALL
                .into_iter()
                .flat_map(|kind| NullifierRule::ALL.into_iter().map(move |rule| (kind, rule)))
                .map(|(kind, rule)| ((kind, rule), under(rule, &sample(kind, 2, 1, 30))))
                .collect()
        })[&(kind, rule)]
            .clone()
    }

    proptest::proptest! {
        // The three statements at k = 2, under both nullifier rules.
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..Default::default()
        })]

        /// For a single field element of a valid witness changed (by one, by L, to zero, to its
        /// negation or to a random element), the native checks pass exactly when the circuit
        /// is satisfied.
        #[test]
        fn native_checks_pass_exactly_when_the_circuit_is_satisfied(
            kind in proptest::sample::select(Kind::ALL.to_vec()),
            rule in proptest::sample::select(NullifierRule::ALL.to_vec()),
            element in proptest::prelude::any::<proptest::sample::Index>(),
            mutation in 0..5u8,
            seed in proptest::prelude::any::<u64>(),
        ) {
            use ark_ff::UniformRand;
            let mut t = valid_witness(kind, rule);
            {
                let mut elements = elements_mut(&mut t);
                let x = elements.swap_remove(element.index(elements.len()));
                *x = match mutation {
                    0 => *x + Fr::ONE,
                    1 => *x + modl::l_fr(),
                    2 => Fr::ZERO,
                    3 => -*x,
                    _ => Fr::rand(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed)),
                };
            }
            let native = t.check_with(rule);
            proptest::prop_assert_eq!(
                native.is_ok(),
                satisfied_with(&t, rule),
                "native: {:?}",
                native
            );
        }
    }
}
