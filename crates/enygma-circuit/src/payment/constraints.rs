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
    bits::alloc_bits,
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
        let sender_id = private(&|t| t.sender_id)?;
        let secret_key = private(&|t| t.secret_key)?;
        let shared_secrets = (0..k)
            .map(|i| private(&|t| t.shared_secrets[i]))
            .collect::<Result<Vec<_>, _>>()?;
        let random_value = private(&|t| t.previous_sender_random_value)?;
        let balance_bits = alloc_bits(
            cs.clone(),
            || value(&|t| t.previous_sender_balance),
            VALUE_BITS,
        )?;
        let amount_bits = alloc_bits(cs.clone(), || value(&|t| t.sender_tx_value), VALUE_BITS)?;
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
                let pk = private(&|t| deposit(t).pk)?;
                let salt_out = private(&|t| deposit(t).salt_out)?;
                let address = private(&|t| deposit(t).address)?;
                dvp_gadget::erc20_commitment(&pk, &salt_out, &amount, &address)?
                    .enforce_equal(&dvp_hashes[0])?;
            }
            Kind::Withdraw => {
                let address = private(&|t| withdraw(t).address)?;
                for (j, hash) in dvp_hashes.iter().enumerate() {
                    let sk = private(&|t| withdraw(t).sk_deposits[j])?;
                    let salt = private(&|t| withdraw(t).salts_in[j])?;
                    let value = private(&|t| withdraw(t).v_per_deposit[j])?;
                    let owner_key = keys::public_key(&sk)?;
                    let computed =
                        dvp_gadget::erc20_commitment(&owner_key, &salt, &value, &address)?;
                    // [v ≠ 0]·(hash − computed) = 0: an empty slot's hash is free, as in the reference.
                    let used = !value.is_zero()?;
                    FpVar::from(used).mul_equals(&(hash - computed), &FpVar::zero())?;
                }
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
        [26_945, 30_781, 34_617, 38_453, 42_289],
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
                refused(&|t| t.sender_id = Fr::ZERO),
                "{kind}: sender missing from the anonymity set"
            );
            assert!(
                refused(&|t| t.anonymity_set[0] = t.sender_id),
                "{kind}: sender twice in the set"
            );
            assert!(refused(&|t| t.nullifier += one), "{kind}: wrong nullifier");
            assert!(
                refused(&|t| t.secret_key += one),
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
                refused(&|t| t.sender_tx_value += one),
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
            over.previous_sender_balance = Fr::from(100u64);
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
        assert!(!edit_deposit(&|d| d.pk += Fr::ONE));
        assert!(!edit_deposit(&|d| d.address += Fr::ONE));
        // The deposited amount is the one hashed: a deposit of 24 cannot claim a hash of 25.
        let mut smaller = deposit.clone();
        smaller.sender_tx_value -= Fr::ONE;
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
        // An unused slot's hash is free, as in the reference.
        assert!(edit_withdraw(&|w| w.hashes[7] = Fr::from(99u64)));
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
