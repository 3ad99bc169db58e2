//! A simulated ledger against forged payments.
//!
//! Accounts hold integer balances in [0, L) behind Pedersen commitments, as the contract holds
//! them; DvP notes hold the values deposited. Random honest transfers, deposits and withdraws
//! move value between them. Before each honest request is applied, a mutation engine derives
//! forged requests from it: every choice of the sender (balance, random value, amount, each tx
//! value, each shared secret, the secret key, each claimed note's value) replaced by an alias
//! (x + L, x + kL, L − x, r − x, x + r − 8L, x ± 1), tx values moved between members mod L or
//! swapped, a balance alias used to overspend; every other value derived again, as a forger
//! would ([`Spend::inputs`]). Each forged request that the contract would take (the previous
//! commitments are the ledger's, the claimed notes exist) and that the native checks accept
//! must keep the ledger's invariants:
//!
//! - the sender's balance moves by exactly −v (transfer, deposit) or +v (withdraw), staying an
//!   integer in [0, L); every other member's balance only grows, and stays below L;
//! - total supply (balances plus unspent notes) is unchanged, so a transfer leaves the balances'
//!   sum unchanged, a deposit takes v from it and a withdraw adds v;
//! - one nullifier per (account, block): every accepted spend of an account in a block has the
//!   same nullifier.
//!
//! The ledger runs once with the reference's nullifier rule and once with the hidden sender's
//! ([`NullifierRule`]): a nullifier only the sender can compute must still be one per account and
//! block.
//!
//! For a sample of the requests with k = 2, the circuit must be satisfied exactly when the
//! native checks accept. `LEDGER_STEPS` and `LEDGER_SEED` make longer runs
//! (`benches/ledger.sh`).

use std::collections::HashMap;

use ark_ff::{AdditiveGroup, Field, PrimeField, UniformRand, Zero};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem};
use enygma_circuit::{
    babyjubjub, dvp,
    modl::{self, l_biguint, l_fr},
    payment::{
        constraints::PaymentCircuit, public_key, sender_tx_value, Deposit, Dvp, Kind,
        NullifierRule, PaymentInputs, Spend, Withdraw,
    },
    Fr,
};
use num_bigint::BigUint;
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The token address of every note (one ERC-20 contract).
const TOKEN: u64 = 0xE20;
const ACCOUNTS: usize = 6;
const STEPS: usize = 24;
/// Circuit syntheses per run: each takes tens of milliseconds in the test profile.
const CIRCUIT_SAMPLES: usize = 48;

fn int(x: &Fr) -> BigUint {
    modl::to_biguint(x)
}

struct Account {
    id: Fr,
    secret_key: Fr,
    balance: BigUint,
    random_value: Fr,
}

impl Account {
    fn commitment(&self) -> (Fr, Fr) {
        let p = babyjubjub::pedersen(&Fr::from(self.balance.clone()), &self.random_value);
        (p.x, p.y)
    }
}

/// A DvP note: what a deposit locked, claimable by the holder of `owner_secret`.
#[derive(Clone)]
struct Note {
    value: Fr,
    owner_secret: Fr,
    salt: Fr,
}

#[derive(Default)]
struct Nullifiers(HashMap<(usize, u64), Fr>);

struct Ledger {
    accounts: Vec<Account>,
    /// Unspent notes by their public hash.
    notes: HashMap<Fr, Note>,
    block: u64,
}

/// What went wrong in the ledger when a forged request was applied.
#[derive(Debug)]
struct Violation(String);

impl Ledger {
    fn new(rng: &mut ChaCha8Rng) -> Self {
        let accounts = (0..ACCOUNTS)
            .map(|i| Account {
                id: Fr::from(1_000 + i as u64),
                secret_key: modl::reduce(&Fr::rand(rng)),
                // Some accounts start empty: a member at 0 is where a wrap shows at once.
                balance: BigUint::from(if i % 3 == 0 {
                    0
                } else {
                    rng.gen_range(1..1_000_000u64)
                }),
                random_value: modl::reduce(&Fr::rand(rng)),
            })
            .collect();
        Self {
            accounts,
            notes: HashMap::new(),
            block: 1,
        }
    }

    fn supply(&self) -> BigUint {
        let balances: BigUint = self.accounts.iter().map(|a| &a.balance).sum();
        balances + self.notes.values().map(|n| int(&n.value)).sum::<BigUint>()
    }

    /// The sender's unspent notes, at most two of them.
    fn notes_of(&self, sender: usize) -> Vec<(Fr, Note)> {
        let sk = self.accounts[sender].secret_key;
        let mut notes: Vec<(Fr, Note)> = self
            .notes
            .iter()
            .filter(|(_, n)| n.owner_secret == sk && !n.value.is_zero())
            .map(|(h, n)| (*h, n.clone()))
            .collect();
        notes.sort_by_key(|(h, _)| h.into_bigint());
        notes.truncate(2);
        notes
    }

    /// An honest request: a random kind, anonymity set and amount.
    fn honest(&self, rng: &mut ChaCha8Rng) -> (Kind, Vec<usize>, Spend) {
        let k = rng.gen_range(2..=4);
        let mut members: Vec<usize> = (0..ACCOUNTS).collect();
        members.shuffle(rng);
        members.truncate(k);
        let sender = rng.gen_range(0..k);
        let account = &self.accounts[members[sender]];
        let notes = self.notes_of(members[sender]);
        let kind = match rng.gen_range(0..3) {
            2 if !notes.is_empty() => Kind::Withdraw,
            1 => Kind::Deposit,
            _ => Kind::Transfer,
        };
        let balance: u64 = (&account.balance)
            .try_into()
            .expect("honest balances are small");
        let (amount, dvp) = match kind {
            Kind::Transfer => (rng.gen_range(0..=balance), Dvp::None),
            Kind::Deposit => {
                let pk = public_key(&account.secret_key);
                (
                    rng.gen_range(0..=balance),
                    Dvp::Deposit(Deposit {
                        hash: Fr::ZERO,
                        pk: pk.into(),
                        address: Fr::from(TOKEN).into(),
                        salt_out: Fr::rand(rng).into(),
                    }),
                )
            }
            Kind::Withdraw => {
                let mut w = Withdraw {
                    hashes: vec![Fr::ZERO; dvp::WITHDRAW_SLOTS],
                    sk_deposits: vec![Fr::ZERO; dvp::WITHDRAW_SLOTS].into(),
                    v_per_deposit: vec![Fr::ZERO; dvp::WITHDRAW_SLOTS].into(),
                    address: Fr::from(TOKEN).into(),
                    salts_in: vec![Fr::ZERO; dvp::WITHDRAW_SLOTS].into(),
                };
                let mut total = 0u64;
                for (j, (_, note)) in notes.iter().enumerate() {
                    w.sk_deposits[j] = note.owner_secret;
                    w.v_per_deposit[j] = note.value;
                    w.salts_in[j] = note.salt;
                    total += u64::try_from(int(&note.value)).expect("honest notes are small");
                }
                (total, Dvp::Withdraw(w))
            }
        };
        let amount = Fr::from(amount);
        let receiver = (sender + 1) % k;
        let tx_values = (0..k)
            .map(|i| match i {
                i if i == sender => sender_tx_value(kind, &amount),
                i if i == receiver && kind == Kind::Transfer => amount,
                _ => Fr::ZERO,
            })
            .collect();
        let spend = Spend {
            anonymity_set: members.iter().map(|&m| self.accounts[m].id).collect(),
            sender,
            secret_key: account.secret_key,
            public_keys: members
                .iter()
                .map(|&m| public_key(&self.accounts[m].secret_key))
                .collect(),
            previous_commits: members
                .iter()
                .map(|&m| self.accounts[m].commitment())
                .collect(),
            balance: Fr::from(balance),
            random_value: account.random_value,
            amount,
            tx_values,
            shared_secrets: (0..k).map(|_| modl::reduce(&Fr::rand(rng))).collect(),
            block_number: Fr::from(self.block),
            dvp,
        };
        (kind, members, spend)
    }

    /// What the contract checks of the public inputs: the members' public keys are theirs,
    /// the previous commitments are their current ones, the block is the current one, every
    /// claimed note is unspent.
    fn contract_takes(&self, members: &[usize], t: &PaymentInputs) -> bool {
        let commitments_current = members.iter().enumerate().all(|(i, &m)| {
            let account = &self.accounts[m];
            account.commitment() == t.previous_commits[i]
                && public_key(&account.secret_key) == t.public_keys[i]
        });
        let notes_unspent = match &t.dvp {
            Dvp::Withdraw(w) => w
                .hashes
                .iter()
                .all(|h| h.is_zero() || self.notes.contains_key(h)),
            _ => true,
        };
        commitments_current && t.block_number == Fr::from(self.block) && notes_unspent
    }

    /// Applies an accepted request as the contract would (every member's commitment plus its
    /// tx commitment, notes created or spent), each member's new balance being what its new
    /// commitment opens to, and checks the invariants.
    fn apply(&mut self, members: &[usize], t: &PaymentInputs) -> Result<(), Violation> {
        let supply = self.supply();
        let s = t
            .anonymity_set
            .iter()
            .position(|m| *m == *t.sender_id)
            .expect("check 1 passed");
        let v = int(&t.sender_tx_value);
        let l = l_biguint();
        for (i, &m) in members.iter().enumerate() {
            let account = &mut self.accounts[m];
            let before = account.balance.clone();
            let after = (&before + int(&t.tx_values[i])) % l;
            let random_after = modl::reduce(&(account.random_value + t.tx_random_values[i]));
            // The new balance is what the homomorphic sum of the commitments opens to.
            let new_commitment = babyjubjub::pedersen(&Fr::from(after.clone()), &random_after);
            let sum: babyjubjub::Point =
                (babyjubjub::Point::new_unchecked(
                    t.previous_commits[i].0,
                    t.previous_commits[i].1,
                ) + babyjubjub::Point::new_unchecked(t.tx_commits[i].0, t.tx_commits[i].1))
                .into();
            assert_eq!(new_commitment, sum, "the ledger's opening of member {i}");
            if i == s {
                let expected = match t.kind() {
                    Kind::Withdraw => Some(&before + &v),
                    Kind::Transfer | Kind::Deposit => (before >= v).then(|| &before - &v),
                };
                if expected.as_ref() != Some(&after) || after >= *l {
                    return Err(Violation(format!(
                        "the sender's balance went from {before} to {after}, paying v = {v}"
                    )));
                }
            } else if after < before {
                return Err(Violation(format!(
                    "member {i}, not the sender, went from {before} to {after}"
                )));
            }
            account.balance = after;
            account.random_value = random_after;
        }
        match &t.dvp {
            Dvp::None => {}
            Dvp::Deposit(d) => {
                let note = Note {
                    value: *t.sender_tx_value,
                    owner_secret: self.accounts[members[s]].secret_key,
                    salt: *d.salt_out,
                };
                // A note only its depositor can claim: made for the sender's own key.
                if *d.pk != public_key(&note.owner_secret) {
                    return Err(Violation("a deposit for another key".into()));
                }
                self.notes.insert(d.hash, note);
            }
            Dvp::Withdraw(w) => {
                for h in w.hashes.iter().filter(|h| !h.is_zero()) {
                    self.notes.remove(h);
                }
            }
        }
        if self.supply() != supply {
            return Err(Violation(format!(
                "total supply went from {supply} to {}",
                self.supply()
            )));
        }
        Ok(())
    }

    fn snapshot(&self) -> Self {
        Self {
            accounts: self
                .accounts
                .iter()
                .map(|a| Account {
                    id: a.id,
                    secret_key: a.secret_key,
                    balance: a.balance.clone(),
                    random_value: a.random_value,
                })
                .collect(),
            notes: self.notes.clone(),
            block: self.block,
        }
    }
}

/// The aliases of a value the engine tries: the same residue mod L, its negation mod L or in
/// the field, and its neighbours.
fn aliases(x: Fr) -> Vec<Fr> {
    let l = l_fr();
    vec![
        x + l,
        x + l.double(),
        x + l * Fr::from(7u64),
        l - x,
        -x,
        x - l * Fr::from(8u64),
        x + Fr::ONE,
        x - Fr::ONE,
    ]
}

/// Forged spends derived from an honest one, each with a name for failure messages.
fn mutations(kind: Kind, honest: &Spend) -> Vec<(String, Spend)> {
    let mut out = Vec::new();
    let mut push = |name: String, edit: &dyn Fn(&mut Spend)| {
        let mut s = honest.clone();
        edit(&mut s);
        out.push((name, s));
    };
    let k = honest.tx_values.len();
    let sender = honest.sender;
    let receiver = (sender + 1) % k;
    // Pays `amount` the honest way: the sender's slot as check 2 wants it, a transfer's
    // receiver given all of it.
    let pay = |s: &mut Spend, amount: Fr| {
        s.amount = amount;
        s.tx_values[sender] = sender_tx_value(kind, &amount);
        if kind == Kind::Transfer {
            s.tx_values[receiver] = amount;
        }
    };
    for (n, a) in aliases(honest.balance).into_iter().enumerate() {
        push(format!("balance alias {n}"), &|s| s.balance = a);
        // Spend what the alias claims: more than the balance, as far as check 11 lets it.
        for big in [honest.balance + Fr::ONE, Fr::from(10u128.pow(30)), a] {
            push(format!("balance alias {n}, overspent"), &|s| {
                s.balance = a;
                pay(s, big)
            });
        }
    }
    for (n, a) in aliases(honest.random_value).into_iter().enumerate() {
        push(format!("random value alias {n}"), &|s| s.random_value = a);
    }
    for (n, a) in aliases(honest.secret_key).into_iter().enumerate() {
        push(format!("secret key alias {n}"), &|s| s.secret_key = a);
    }
    for (n, a) in aliases(honest.amount).into_iter().enumerate() {
        push(format!("amount alias {n}"), &|s| s.amount = a);
        push(format!("amount alias {n}, paid"), &|s| pay(s, a));
        push(format!("amount alias {n}, sender's slot"), &|s| {
            s.amount = a;
            s.tx_values[sender] = sender_tx_value(kind, &a);
        });
    }
    for i in 0..k {
        for (n, a) in aliases(honest.tx_values[i]).into_iter().enumerate() {
            push(format!("tx value {i} alias {n}"), &|s| s.tx_values[i] = a);
        }
        for (n, a) in aliases(honest.shared_secrets[i]).into_iter().enumerate() {
            push(format!("shared secret {i} alias {n}"), &|s| {
                s.shared_secrets[i] = a
            });
        }
        for j in (0..k).filter(|&j| j != i) {
            push(format!("tx values {i} and {j} swapped"), &|s| {
                s.tx_values.swap(i, j)
            });
            // d moved from member i to member j mod L: every value stays below L and the sum
            // mod L stays the same (`[0, L − 1, 1]`).
            for d in [Fr::ONE, honest.tx_values[i] + Fr::ONE] {
                push(format!("{d} moved from tx value {i} to {j} mod L"), &|s| {
                    s.tx_values[i] = modl::reduce(&(s.tx_values[i] - d + l_fr()));
                    s.tx_values[j] += d;
                });
            }
        }
    }
    if let Dvp::Withdraw(w) = &honest.dvp {
        for j in (0..dvp::WITHDRAW_SLOTS).filter(|&j| !w.v_per_deposit[j].is_zero()) {
            for (n, a) in aliases(w.v_per_deposit[j]).into_iter().enumerate() {
                push(format!("note {j} value alias {n}"), &|s| {
                    let Dvp::Withdraw(w) = &mut s.dvp else {
                        unreachable!()
                    };
                    w.v_per_deposit[j] = a;
                    let total: Fr = w.v_per_deposit.iter().sum();
                    pay(s, total);
                });
            }
        }
    }
    out
}

fn circuit_satisfied(t: &PaymentInputs, rule: NullifierRule) -> bool {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let circuit = PaymentCircuit::for_proving(t.clone()).with_nullifier_rule(rule);
    match circuit.generate_constraints(cs.clone()) {
        Ok(()) => cs.is_satisfied().unwrap(),
        Err(_) => false,
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} is a number")))
        .unwrap_or(default)
}

#[test]
fn forged_payments_the_checks_accept_keep_the_ledger_invariants() {
    run_ledger(NullifierRule::Reference);
}

#[test]
fn forged_payments_keep_the_ledger_invariants_with_the_hidden_senders_nullifier() {
    run_ledger(NullifierRule::HiddenSender);
}

fn run_ledger(rule: NullifierRule) {
    let seed = env_or("LEDGER_SEED", 26);
    let steps = env_or("LEDGER_STEPS", STEPS as u64);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ledger = Ledger::new(&mut rng);
    let mut nullifiers = Nullifiers::default();
    let (mut tried, mut accepted, mut circuit_checked) = (0, 0, 0);
    let mut kinds = HashMap::new();
    for _ in 0..steps {
        let (kind, members, honest) = ledger.honest(&mut rng);
        *kinds.entry(kind).or_insert(0) += 1;
        let honest_inputs = honest.inputs_with(rule);
        assert_eq!(
            honest_inputs.check_with(rule),
            Ok(honest.sender),
            "honest {kind}"
        );
        let sender_account = members[honest.sender];
        for (name, forged) in mutations(kind, &honest) {
            let t = forged.inputs_with(rule);
            tried += 1;
            let native = t.check_with(rule);
            if members.len() == 2 && circuit_checked < CIRCUIT_SAMPLES && rng.gen_bool(0.3) {
                circuit_checked += 1;
                assert_eq!(
                    circuit_satisfied(&t, rule),
                    native.is_ok(),
                    "{kind}, {name}: the circuit disagrees with the native verdict {native:?}"
                );
            }
            if native.is_err() || !ledger.contract_takes(&members, &t) {
                continue;
            }
            accepted += 1;
            let nullifier = nullifiers
                .0
                .entry((sender_account, ledger.block))
                .or_insert(honest_inputs.nullifier);
            assert_eq!(
                *nullifier, t.nullifier,
                "{kind}, {name}: a second nullifier for one account in one block"
            );
            if let Err(Violation(what)) = ledger.snapshot().apply(&members, &t) {
                panic!("{kind}, {name}: accepted, and {what}");
            }
        }
        ledger
            .apply(&members, &honest_inputs)
            .expect("an honest request keeps the invariants");
        ledger.block += 1;
    }
    // The run covered what it claims to: every kind, forgeries accepted (those that mean the
    // same thing, e.g. a receiver's shared secret), the circuit compared.
    assert!(kinds.len() == 3 || steps < STEPS as u64, "kinds: {kinds:?}");
    assert!(accepted > 0 && tried > accepted);
    assert!(circuit_checked > 0 || steps < STEPS as u64);
    eprintln!(
        "seed {seed}, {rule:?} nullifier: {steps} steps {kinds:?}, {tried} forged requests, {accepted} accepted \
         (each kept the invariants), {circuit_checked} compared with the circuit"
    );
}
