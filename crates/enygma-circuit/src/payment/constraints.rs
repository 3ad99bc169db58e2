//! The payment statements as constraints, generic over the kind and k. Each check is enforced
//! with the gadget next to its native twin; hints (quotients, remainders, bits, selectors) are all tied
//! down by constraints. The sender's index is private, so every per-member check runs for all
//! k members and the sender's values are picked with the selector bits of check 1.

use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

use super::{Dvp, Kind, PaymentInputs, RANDOM_FACTOR_BITS, VALUE_BITS};
use crate::{
    babyjubjub::constraints::{fixed_base_msm, pedersen, Generator, PointVar},
    bits::{alloc_bits, enforce_integer_sum},
    dvp::{constraints as dvp_gadget, WITHDRAW_SLOTS},
    keys::constraints as keys,
    modl::{self, constraints as modl_gadgets},
    poseidon::{self, constraints as poseidon_gadget},
    Fr,
};

/// The circuit of one statement for an anonymity set of `k` members. `inputs` is `None` for key
/// generation.
#[derive(Clone)]
pub struct PaymentCircuit {
    pub kind: Kind,
    pub k: usize,
    pub inputs: Option<PaymentInputs>,
}

impl PaymentCircuit {
    pub fn for_setup(kind: Kind, k: usize) -> Self {
        Self {
            kind,
            k,
            inputs: None,
        }
    }

    pub fn for_proving(inputs: PaymentInputs) -> Self {
        Self {
            kind: inputs.kind(),
            k: inputs.k(),
            inputs: Some(inputs),
        }
    }
}

/// The deposit's values (zero in setup mode, where they are never read).
fn deposit(t: &PaymentInputs) -> &super::Deposit {
    match &t.dvp {
        Dvp::Deposit(d) => d,
        _ => panic!("deposit circuit given {} inputs", t.kind()),
    }
}

fn withdraw(t: &PaymentInputs) -> &super::Withdraw {
    match &t.dvp {
        Dvp::Withdraw(w) => w,
        _ => panic!("withdraw circuit given {} inputs", t.kind()),
    }
}

/// `Σ eᵢ·xᵢ`: the sender's entry, with eᵢ the selector bits of check 1 (one constraint each).
fn select(selectors: &[Boolean<Fr>], xs: &[FpVar<Fr>]) -> FpVar<Fr> {
    selectors
        .iter()
        .zip(xs)
        .map(|(e, x)| FpVar::from(e.clone()) * x)
        .sum()
}

impl ConstraintSynthesizer<Fr> for PaymentCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let (kind, k) = (self.kind, self.k);
        let inputs = self.inputs.as_ref();
        if inputs.is_some_and(|t| t.kind() != kind || t.k() != k) {
            return Err(SynthesisError::Unsatisfiable);
        }
        let value = |f: &dyn Fn(&PaymentInputs) -> Fr| -> Result<Fr, SynthesisError> {
            inputs.map(f).ok_or(SynthesisError::AssignmentMissing)
        };
        let public = |f: &dyn Fn(&PaymentInputs) -> Fr| FpVar::new_input(cs.clone(), || value(f));
        let private =
            |f: &dyn Fn(&PaymentInputs) -> Fr| FpVar::new_witness(cs.clone(), || value(f));
        let public_vec =
            |f: &dyn Fn(&PaymentInputs, usize) -> Fr| -> Result<Vec<FpVar<Fr>>, SynthesisError> {
                (0..k).map(|i| public(&|t| f(t, i))).collect()
            };
        let public_points = |f: &dyn Fn(&PaymentInputs, usize) -> (Fr, Fr)| -> Result<Vec<PointVar>, SynthesisError> {
            (0..k).map(|i| Ok(PointVar::new(public(&|t| f(t, i).0)?, public(&|t| f(t, i).1)?))).collect()
        };

        // Public inputs, in the reference's order.
        let hashed_shared_secrets = public_vec(&|t, i| t.hashed_shared_secrets[i])?;
        let public_keys = public_vec(&|t, i| t.public_keys[i])?;
        let previous_commits = public_points(&|t, i| t.previous_commits[i])?;
        let tx_commits = public_points(&|t, i| t.tx_commits[i])?;
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

        // Private inputs. Values with a known bound are allocated as their bits (check 11's
        // range checks, and the scalars of checks 7 and 13), so the value is a free linear
        // combination of them.
        let sender_id = private(&|t| *t.sender_id)?;
        let secret_key = private(&|t| *t.secret_key)?;
        let shared_secrets = (0..k)
            .map(|i| private(&|t| t.shared_secrets[i]))
            .collect::<Result<Vec<_>, _>>()?;
        let random_value = private(&|t| *t.previous_sender_random_value)?;
        let balance_bits = alloc_bits(
            cs.clone(),
            || value(&|t| *t.previous_sender_balance),
            VALUE_BITS,
        )?;
        let amount_bits = alloc_bits(cs.clone(), || value(&|t| *t.sender_tx_value), VALUE_BITS)?;
        let tx_value_bits = (0..k)
            .map(|i| alloc_bits(cs.clone(), || value(&|t| t.tx_values[i]), VALUE_BITS))
            .collect::<Result<Vec<_>, _>>()?;
        let tx_random_bits = (0..k)
            .map(|i| {
                alloc_bits(
                    cs.clone(),
                    || value(&|t| t.tx_random_values[i]),
                    RANDOM_FACTOR_BITS,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let balance = Boolean::le_bits_to_fp(&balance_bits)?;
        let amount = Boolean::le_bits_to_fp(&amount_bits)?;
        let tx_values = tx_value_bits
            .iter()
            .map(|b| Boolean::le_bits_to_fp(b))
            .collect::<Result<Vec<_>, _>>()?;
        let tx_randoms = tx_random_bits
            .iter()
            .map(|b| Boolean::le_bits_to_fp(b))
            .collect::<Result<Vec<_>, _>>()?;

        // 1. sender_id occurs exactly once: eᵢ = [anonymity_set[i] = sender_id], Σ eᵢ = 1.
        let selectors = anonymity_set
            .iter()
            .map(|m| m.is_eq(&sender_id))
            .collect::<Result<Vec<_>, _>>()?;
        selectors
            .iter()
            .map(|e| FpVar::from(e.clone()))
            .sum::<FpVar<Fr>>()
            .enforce_equal(&FpVar::one())?;

        // 2. Transfer and deposit: tx_values[s] = (L − v) mod L. tx_values[s] is a combination of
        //    its 252 bits, so only its upper bound is missing.
        //    Withdraw: tx_values[s] = v, two combinations of 252 bits: an equality of integers.
        let sender_tx_value = select(&selectors, &tx_values);
        match kind {
            Kind::Transfer | Kind::Deposit => modl_gadgets::enforce_remainder(
                &(FpVar::Constant(modl::l_fr()) - &amount),
                &sender_tx_value,
            )?,
            Kind::Withdraw => sender_tx_value.enforce_equal(&amount)?,
        }

        // 3. Every commitment is on the curve.
        for p in previous_commits.iter().chain(&tx_commits) {
            p.enforce_on_curve()?;
        }

        // 4. shared_secrets[s] = Poseidon(R, sk) mod L.
        let sender_shared_secret = select(&selectors, &shared_secrets);
        modl_gadgets::reduce(&poseidon_gadget::hash(&[
            random_value.clone(),
            secret_key.clone(),
        ])?)?
        .remainder
        .enforce_equal(&sender_shared_secret)?;

        // 5. hashed_shared_secrets[i] = Poseidon(sᵢ, sᵢ) mod L.
        for (s, h) in shared_secrets.iter().zip(&hashed_shared_secrets) {
            modl_gadgets::reduce(&poseidon_gadget::hash(&[s.clone(), s.clone()])?)?
                .remainder
                .enforce_equal(h)?;
        }

        // 6. public_keys[s] = Poseidon(sk, sk) mod L.
        keys::public_key(&secret_key)?.enforce_equal(&select(&selectors, &public_keys))?;

        // 7. previous_commits[s] = Pedersen(B, R). R·H depends only on R mod L, so the scalar is
        //    R's exact remainder (251 bits) rather than its canonical 254-bit decomposition.
        let sender_previous_commit = PointVar::new(
            select(
                &selectors,
                &previous_commits
                    .iter()
                    .map(|p| p.x.clone())
                    .collect::<Vec<_>>(),
            ),
            select(
                &selectors,
                &previous_commits
                    .iter()
                    .map(|p| p.y.clone())
                    .collect::<Vec<_>>(),
            ),
        );
        pedersen(
            &balance_bits,
            &modl_gadgets::reduce(&random_value)?.remainder_bits,
        )?
        .enforce_equal(&sender_previous_commit)?;

        // 8. message_tags[i] = Poseidon(Poseidon(12), sᵢ, block_number) mod L.
        let tag_domain = FpVar::Constant(poseidon::message_tag_domain());
        for (s, tag) in shared_secrets.iter().zip(&message_tags) {
            modl_gadgets::reduce(&poseidon_gadget::hash(&[
                tag_domain.clone(),
                s.clone(),
                block_number.clone(),
            ])?)?
            .remainder
            .enforce_equal(tag)?;
        }

        // 9. Σ tx_random_values is a multiple of L (six values below 2²⁵¹ cannot wrap past r).
        let sum_of = |points: &[PointVar]| -> Result<PointVar, SynthesisError> {
            points[1..]
                .iter()
                .try_fold(points[0].clone(), |sum, p| sum.add(p))
        };
        match kind {
            // Transfer: Σ tx_values is a multiple of L in the field; check 10 closes the wrap-around.
            Kind::Transfer => {
                modl_gadgets::enforce_multiple_of_l(&tx_values.iter().sum())?;
                modl_gadgets::enforce_multiple_of_l(&tx_randoms.iter().sum())?;
            }
            // Σ tx_commits = tx_values[s]·G, which check 2 makes −v·G for a deposit (L·G is the
            // identity, so v = 0 needs no case) and v·G for a withdraw. With check 13 this is
            // conservation over the integers: nothing can wrap inside the group.
            Kind::Deposit | Kind::Withdraw => {
                modl_gadgets::enforce_multiple_of_l(&tx_randoms.iter().sum())?;
                let paid = fixed_base_msm(&[(Generator::G, &amount_bits)])?;
                let expected = match kind {
                    Kind::Deposit => PointVar::new(FpVar::zero() - &paid.x, paid.y),
                    _ => paid,
                };
                sum_of(&tx_commits)?.enforce_equal(&expected)?;
            }
        }

        // 10. Transfer: the tx commitments sum to the identity.
        if kind == Kind::Transfer {
            sum_of(&tx_commits)?
                .enforce_equal(&PointVar::constant(&crate::babyjubjub::identity()))?;
        }

        // 11. B, v < 2²⁵² (their bits above) and, but for a withdraw, B − v ≥ 0, i.e. B − v < 2²⁵²
        //     too.
        if kind != Kind::Withdraw {
            let headroom = &balance - &amount;
            let headroom_bits = alloc_bits(cs.clone(), || headroom.value(), VALUE_BITS)?;
            headroom.enforce_equal(&Boolean::le_bits_to_fp(&headroom_bits)?)?;
        }

        // 12. nullifier = Poseidon(hashed_shared_secrets[s], block_number).
        poseidon_gadget::hash(&[
            select(&selectors, &hashed_shared_secrets),
            block_number.clone(),
        ])?
        .enforce_equal(&nullifier)?;

        // 13. tx_commits[i] = Pedersen(tx_values[i], tx_random_values[i]).
        for ((vb, rb), c) in tx_value_bits.iter().zip(&tx_random_bits).zip(&tx_commits) {
            pedersen(vb, rb)?.enforce_equal(c)?;
        }

        // 14. Receivers: tx_random_values[i] = L − hᵢ; sender: (Σ_{i≠s} hᵢ) mod L.
        let random_domain = FpVar::Constant(poseidon::random_factor_domain());
        let mut hashes = Vec::with_capacity(k);
        for ((s, e), r) in shared_secrets.iter().zip(&selectors).zip(&tx_randoms) {
            let h = modl_gadgets::reduce(&poseidon_gadget::hash(&[
                random_domain.clone(),
                s.clone(),
                block_number.clone(),
            ])?)?
            .remainder;
            // (1 − eᵢ)·(rᵢ + hᵢ − L) = 0
            FpVar::from(!e).mul_equals(&(r + &h - modl::l_fr()), &FpVar::zero())?;
            hashes.push(h);
        }
        let receivers_sum = hashes.iter().sum::<FpVar<Fr>>() - select(&selectors, &hashes);
        modl_gadgets::enforce_remainder(&receivers_sum, &select(&selectors, &tx_randoms))?;

        // 15. The DvP commitments.
        match kind {
            Kind::Transfer => {}
            Kind::Deposit => {
                let pk = private(&|t| *deposit(t).pk)?;
                let salt_out = private(&|t| *deposit(t).salt_out)?;
                let address = private(&|t| *deposit(t).address)?;
                dvp_gadget::erc20_commitment(&pk, &salt_out, &amount, &address)?
                    .enforce_equal(&dvp_hashes[0])?;
            }
            Kind::Withdraw => {
                let address = private(&|t| *withdraw(t).address)?;
                // 16. Every claimed value below 2²⁵² (its bits) and v = Σ v_per_deposit over
                //     the integers (a carry between 126-bit halves; see `bits`).
                let value_bits = (0..WITHDRAW_SLOTS)
                    .map(|j| {
                        alloc_bits(
                            cs.clone(),
                            || value(&|t| withdraw(t).v_per_deposit[j]),
                            VALUE_BITS,
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                enforce_integer_sum(&value_bits, &amount_bits)?;
                for (j, (bits, hash)) in value_bits.iter().zip(&dvp_hashes).enumerate() {
                    let sk = private(&|t| withdraw(t).sk_deposits[j])?;
                    let salt = private(&|t| withdraw(t).salts_in[j])?;
                    let value = Boolean::le_bits_to_fp(bits)?;
                    let owner_key = keys::public_key(&sk)?;
                    let computed =
                        dvp_gadget::erc20_commitment(&owner_key, &salt, &value, &address)?;
                    // 15 and 17. hashes[j] = [v ≠ 0]·computed: a claimed deposit's hash is the
                    //     one computed, an empty slot's hash is 0 (not someone else's deposit).
                    let used = !value.is_zero()?;
                    FpVar::from(used).mul_equals(&computed, hash)?;
                }
                // 18. No deposit claimed twice: any two equal hashes are 0 (empty slots).
                dvp_gadget::enforce_distinct_notes(&dvp_hashes)?;
            }
        }

        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    use crate::{babyjubjub, payment::Withdraw};

    /// Synthesizes the circuit for `inputs` with their honest hints; `Ok(true)` if satisfied.
    fn satisfied(inputs: &PaymentInputs) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        match PaymentCircuit::for_proving(inputs.clone()).generate_constraints(cs.clone()) {
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
            inputs: Some(deposit.clone()),
        };
        assert!(circuit.generate_constraints(cs).is_err());
        let cs = ConstraintSystem::<Fr>::new_ref();
        assert!(PaymentCircuit {
            kind: Kind::Deposit,
            k: 4,
            inputs: Some(deposit)
        }
        .generate_constraints(cs)
        .is_err());
    }

    /// Exact constraint counts, per statement and k. Any change to a gadget moves these numbers;
    /// update them together with `benches/results/` and the README.
    #[test]
    fn constraint_counts() {
        for (kind, expected) in Kind::ALL.into_iter().zip(EXPECTED_CONSTRAINTS) {
            let counts: Vec<usize> = crate::SUPPORTED_K
                .map(|k| {
                    let cs = ConstraintSystem::<Fr>::new_ref();
                    cs.set_mode(ark_relations::gr1cs::SynthesisMode::Setup);
                    PaymentCircuit::for_setup(kind, k)
                        .generate_constraints(cs.clone())
                        .unwrap();
                    cs.num_constraints()
                })
                .collect();
            assert_eq!(counts, expected, "{kind}");
        }
    }

    /// Transfer, deposit, withdraw; k = 2..6.
    const EXPECTED_CONSTRAINTS: [[usize; 5]; 3] = [
        [12_231, 16_067, 19_903, 23_739, 27_575],
        [13_456, 17_292, 21_128, 24_964, 28_800],
        [29_516, 33_352, 37_188, 41_024, 44_860],
    ];

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
            assert_eq!(over.check().unwrap_err().check, 11);
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
        assert_eq!(smaller.check().unwrap_err().check, 15);
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
    /// values the bound allows (v = 2²⁵² − 1 from one deposit, or from ten with carries).
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

        let max = Fr::from((num_bigint::BigUint::from(1u8) << 252u32) - 1u32);
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
        assert!(satisfied(&largest), "one deposit of 2^252 - 1");
        // Ten deposits of about 2^252 / 10 each, summing to 2^252 − 1.
        let mut spread = PaymentInputs::generate_withdraw(2, 1, &ten, 7, &mut rng);
        let part = Fr::from((num_bigint::BigUint::from(1u8) << 252u32) / 10u32 + 7u32);
        let mut parts = vec![part; WITHDRAW_SLOTS];
        parts[9] = max - part * Fr::from(9u64);
        claim(&mut spread, 1, &parts);
        assert_eq!(*spread.sender_tx_value, max);
        assert_eq!(spread.check(), Ok(1));
        assert!(satisfied(&spread), "ten deposits summing to 2^252 - 1");
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
            assert_eq!(t.check().unwrap_err().check, check);
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
            let w = withdraw_mut(t);
            for field in [
                &mut w.hashes,
                &mut w.sk_deposits,
                &mut w.v_per_deposit,
                &mut w.salts_in,
            ] {
                field[1] = field[0];
            }
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
        assert_eq!(wrapped.check().unwrap_err().check, 16);
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
        assert_eq!(stolen.check().unwrap_err().check, 15);
        assert!(!satisfied(&stolen));

        // Check 9 of deposit and withdraw: receivers' values summing to r over the integers.
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
            assert_eq!(minted.check().unwrap_err().check, 9);
            assert!(
                !satisfied(&minted),
                "{kind}: value minted by wrapping past r"
            );
        }
    }
}
