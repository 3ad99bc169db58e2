//! The transfer statement: what a sender proves about a private transfer inside an anonymity set
//! of k members (see `shared/reference/README.md` for the reference's wording).
//!
//! The sender s is the member with `anonymity_set[s] = sender_id`. With L the order of Baby
//! Jubjub's prime subgroup and "mod L" the remainder of a field element's canonical integer:
//!
//! 1. `sender_id` occurs exactly once in the anonymity set.
//! 2. `tx_values[s] = (L − v) mod L`, where v is the amount sent (`sender_tx_value`).
//! 3. Every previous commitment and transaction commitment is on the curve.
//! 4. `shared_secrets[s] = Poseidon(R, secret_key) mod L` (R: the previous random value).
//! 5. `hashed_shared_secrets[i] = Poseidon(shared_secrets[i], shared_secrets[i]) mod L`.
//! 6. `public_keys[s] = Poseidon(secret_key, secret_key) mod L`.
//! 7. `previous_commits[s] = Pedersen(B, R)` (B: the previous balance).
//! 8. `message_tags[i] = Poseidon(Poseidon(12), shared_secrets[i], block_number) mod L`.
//! 9. `Σ tx_values ≡ 0` and `Σ tx_random_values ≡ 0 (mod L)`: Pedersen of the sums is the identity.
//! 10. The sum of all transaction commitments is the identity.
//! 11. B and v are below 2²⁵² and B ≥ v.
//! 12. `nullifier = Poseidon(hashed_shared_secrets[s], block_number)`.
//! 13. `tx_commits[i] = Pedersen(tx_values[i], tx_random_values[i])`, with every tx value below
//!     2²⁵² (the reference bounds only the sender's; see the README's differences table).
//! 14. With `hᵢ = Poseidon(Poseidon(21), shared_secrets[i], block_number) mod L`: a receiver's
//!     `tx_random_values[i] = L − hᵢ`, the sender's is `(Σ_{i≠s} hᵢ) mod L`.
//!
//! Public inputs, in this order (8k + 2): hashed_shared_secrets[k], public_keys[k],
//! previous_commits[k] as x0, y0, x1, y1, …, tx_commits[k] likewise, nullifier, block_number,
//! anonymity_set[k], message_tags[k]. Everything else is private.

pub mod constraints;

use std::fmt;

use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, BigInteger, PrimeField, UniformRand};
use ark_std::rand::Rng;

use crate::{
    babyjubjub::{self, Point},
    modl::{self, l_fr},
    poseidon, Fr,
};

/// Bound on balances and amounts (check 11) and on every tx value (check 13).
pub const VALUE_BITS: usize = 252;
/// Random factors are at most L, so they fit in L's 251 bits.
pub const RANDOM_FACTOR_BITS: usize = modl::L_BITS;

/// Number of public inputs for an anonymity set of k members.
pub const fn num_public_inputs(k: usize) -> usize {
    8 * k + 2
}

/// Every value of one transfer statement, public and private, as field elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferInputs {
    pub sender_id: Fr,
    pub anonymity_set: Vec<Fr>,
    pub secret_key: Fr,
    pub shared_secrets: Vec<Fr>,
    pub hashed_shared_secrets: Vec<Fr>,
    pub public_keys: Vec<Fr>,
    pub previous_sender_balance: Fr,
    pub previous_sender_random_value: Fr,
    pub previous_commits: Vec<(Fr, Fr)>,
    pub tx_commits: Vec<(Fr, Fr)>,
    pub tx_values: Vec<Fr>,
    pub tx_random_values: Vec<Fr>,
    pub sender_tx_value: Fr,
    pub nullifier: Fr,
    pub block_number: Fr,
    pub message_tags: Vec<Fr>,
}

/// A check of the statement that the inputs do not satisfy. Its message names the check and,
/// where it helps, the public field or index concerned; never a secret value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    pub check: u8,
    pub name: &'static str,
    pub detail: Option<String>,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check {} ({}) failed", self.check, self.name)?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CheckFailure {}

/// Names of the checks, indexed by number − 1.
pub const CHECK_NAMES: [&str; 14] = [
    "sender in anonymity set",
    "sender tx value",
    "points on curve",
    "shared secret",
    "hashed shared secrets",
    "public key",
    "previous commitment",
    "message tags",
    "value conservation",
    "sum of tx commitments",
    "balance range",
    "nullifier",
    "tx commitments",
    "random factors",
];

fn fail(check: u8, detail: Option<String>) -> CheckFailure {
    CheckFailure { check, name: CHECK_NAMES[check as usize - 1], detail }
}

fn ensure(ok: bool, check: u8) -> Result<(), CheckFailure> {
    if ok {
        Ok(())
    } else {
        Err(fail(check, None))
    }
}

/// The first index (if any) of a slice of which `bad` holds, for a message naming it.
fn first_bad<T>(items: &[T], bad: impl Fn(usize, &T) -> bool) -> Option<usize> {
    items.iter().enumerate().position(|(i, x)| bad(i, x))
}

fn ensure_all<T>(items: &[T], check: u8, field: &str, ok: impl Fn(usize, &T) -> bool) -> Result<(), CheckFailure> {
    match first_bad(items, |i, x| !ok(i, x)) {
        None => Ok(()),
        Some(i) => Err(fail(check, Some(format!("{field}[{i}]")))),
    }
}

/// `true` when `x`'s canonical integer is below `2^bits`.
pub fn fits_bits(x: &Fr, bits: usize) -> bool {
    x.into_bigint().num_bits() as usize <= bits
}

/// `Poseidon(Poseidon(21), shared_secret, block_number) mod L` (check 14's hᵢ).
pub fn random_factor_hash(shared_secret: &Fr, block_number: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[poseidon::random_factor_domain(), *shared_secret, *block_number]))
}

/// `Poseidon(Poseidon(12), shared_secret, block_number) mod L` (check 8).
pub fn message_tag(shared_secret: &Fr, block_number: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[poseidon::message_tag_domain(), *shared_secret, *block_number]))
}

/// `Poseidon(s, s) mod L` (check 5).
pub fn hashed_shared_secret(shared_secret: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[*shared_secret, *shared_secret]))
}

/// `Poseidon(sk, sk) mod L` (check 6).
pub fn public_key(secret_key: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[*secret_key, *secret_key]))
}

/// Random factors of check 14, given the sender's index.
pub fn random_factors(shared_secrets: &[Fr], block_number: &Fr, sender: usize) -> Vec<Fr> {
    let hashes: Vec<Fr> = shared_secrets.iter().map(|s| random_factor_hash(s, block_number)).collect();
    let receivers_sum: Fr = hashes.iter().enumerate().filter(|(i, _)| *i != sender).map(|(_, h)| *h).sum();
    hashes
        .iter()
        .enumerate()
        .map(|(i, h)| if i == sender { modl::reduce(&receivers_sum) } else { l_fr() - h })
        .collect()
}

fn point((x, y): &(Fr, Fr)) -> Point {
    Point::new_unchecked(*x, *y)
}

impl TransferInputs {
    /// The anonymity-set size.
    pub fn k(&self) -> usize {
        self.anonymity_set.len()
    }

    /// The public inputs in the circuit's (and `public_signal`'s) order.
    pub fn public_inputs(&self) -> Vec<Fr> {
        let coords = |pts: &[(Fr, Fr)]| pts.iter().flat_map(|(x, y)| [*x, *y]).collect::<Vec<_>>();
        let mut out = Vec::with_capacity(num_public_inputs(self.k()));
        out.extend(&self.hashed_shared_secrets);
        out.extend(&self.public_keys);
        out.extend(coords(&self.previous_commits));
        out.extend(coords(&self.tx_commits));
        out.push(self.nullifier);
        out.push(self.block_number);
        out.extend(&self.anonymity_set);
        out.extend(&self.message_tags);
        out
    }

    /// Evaluates all 14 checks natively, in order, and returns the sender's index. Proving
    /// inputs that fail here would only fail later, after far more work.
    pub fn check(&self) -> Result<usize, CheckFailure> {
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
        assert!(lengths.iter().all(|&n| n == k), "the request model guarantees k-long arrays");

        // 1
        let matches: Vec<usize> = (0..k).filter(|&i| self.anonymity_set[i] == self.sender_id).collect();
        let s = match matches.as_slice() {
            [s] => *s,
            [] => return Err(fail(1, Some("sender_id is not in anonymity_set".into()))),
            _ => return Err(fail(1, Some("sender_id occurs more than once in anonymity_set".into()))),
        };
        let (v, b, r) = (self.sender_tx_value, self.previous_sender_balance, self.previous_sender_random_value);
        // 2
        ensure(self.tx_values[s] == modl::reduce(&(l_fr() - v)), 2)?;
        // 3
        ensure_all(&self.previous_commits, 3, "previous_commits", |_, p| babyjubjub::is_on_curve(p.0, p.1))?;
        ensure_all(&self.tx_commits, 3, "tx_commits", |_, p| babyjubjub::is_on_curve(p.0, p.1))?;
        // 4
        ensure(self.shared_secrets[s] == modl::reduce(&poseidon::hash(&[r, self.secret_key])), 4)?;
        // 5
        ensure_all(&self.hashed_shared_secrets, 5, "hashed_shared_secrets", |i, h| {
            *h == hashed_shared_secret(&self.shared_secrets[i])
        })?;
        // 6
        ensure(self.public_keys[s] == public_key(&self.secret_key), 6)?;
        // 7
        ensure(point(&self.previous_commits[s]) == babyjubjub::pedersen(&b, &r), 7)?;
        // 8
        ensure_all(&self.message_tags, 8, "message_tags", |i, t| {
            *t == message_tag(&self.shared_secrets[i], &self.block_number)
        })?;
        // 9
        let tx_value_sum: Fr = self.tx_values.iter().sum();
        let random_sum: Fr = self.tx_random_values.iter().sum();
        ensure(modl::is_multiple_of_l(&tx_value_sum) && modl::is_multiple_of_l(&random_sum), 9)?;
        // 10
        let commit_sum = self.tx_commits.iter().map(point).fold(babyjubjub::PointProjective::default(), |acc, p| acc + p);
        ensure(commit_sum.into_affine().is_zero(), 10)?;
        // 11
        ensure(fits_bits(&b, VALUE_BITS) && fits_bits(&v, VALUE_BITS) && b.into_bigint() >= v.into_bigint(), 11)?;
        // 12
        ensure(self.nullifier == poseidon::hash(&[self.hashed_shared_secrets[s], self.block_number]), 12)?;
        // 13
        if let Some(i) = first_bad(&self.tx_values, |_, tv| !fits_bits(tv, VALUE_BITS)) {
            return Err(fail(13, Some(format!("tx_values[{i}] must be below 2^252"))));
        }
        ensure_all(&self.tx_commits, 13, "tx_commits", |i, c| {
            point(c) == babyjubjub::pedersen(&self.tx_values[i], &self.tx_random_values[i])
        })?;
        // 14
        let expected = random_factors(&self.shared_secrets, &self.block_number, s);
        ensure_all(&self.tx_random_values, 14, "tx_random_values", |i, t| *t == expected[i])?;
        Ok(s)
    }

    /// A valid transfer of `amount` from member `sender` (balance `balance`) to the next member,
    /// with every other value drawn from `rng`: the request pools of tests and load tests.
    pub fn generate<R: Rng>(k: usize, sender: usize, amount: u64, balance: u64, rng: &mut R) -> Self {
        assert!(crate::SUPPORTED_K.contains(&k) && sender < k && amount <= balance);
        let below_l = |rng: &mut R| modl::reduce(&Fr::rand(rng));
        let anonymity_set: Vec<Fr> = {
            let base: u64 = rng.gen_range(1..u64::MAX / 2);
            (0..k as u64).map(|i| Fr::from(base + i)).collect()
        };
        let secret_key = below_l(rng);
        let random_value = below_l(rng);
        let block_number = Fr::from(rng.gen_range(1..u32::MAX as u64));
        let (balance, amount) = (Fr::from(balance), Fr::from(amount));

        let shared_secrets: Vec<Fr> = (0..k)
            .map(|i| if i == sender { modl::reduce(&poseidon::hash(&[random_value, secret_key])) } else { below_l(rng) })
            .collect();
        let public_keys: Vec<Fr> =
            (0..k).map(|i| if i == sender { public_key(&secret_key) } else { public_key(&below_l(rng)) }).collect();
        let previous_commits: Vec<(Fr, Fr)> = (0..k)
            .map(|i| {
                let p = if i == sender {
                    babyjubjub::pedersen(&balance, &random_value)
                } else {
                    babyjubjub::pedersen(&Fr::from(rng.gen::<u32>()), &below_l(rng))
                };
                (p.x, p.y)
            })
            .collect();
        let receiver = (sender + 1) % k;
        let tx_values: Vec<Fr> = (0..k)
            .map(|i| match i {
                i if i == sender => modl::reduce(&(l_fr() - amount)),
                i if i == receiver => amount,
                _ => Fr::ZERO,
            })
            .collect();
        let tx_random_values = random_factors(&shared_secrets, &block_number, sender);
        let tx_commits = tx_values
            .iter()
            .zip(&tx_random_values)
            .map(|(v, r)| {
                let p = babyjubjub::pedersen(v, r);
                (p.x, p.y)
            })
            .collect();
        let hashed_shared_secrets: Vec<Fr> = shared_secrets.iter().map(hashed_shared_secret).collect();
        Self {
            sender_id: anonymity_set[sender],
            nullifier: poseidon::hash(&[hashed_shared_secrets[sender], block_number]),
            message_tags: shared_secrets.iter().map(|s| message_tag(s, &block_number)).collect(),
            anonymity_set,
            secret_key,
            shared_secrets,
            hashed_shared_secrets,
            public_keys,
            previous_sender_balance: balance,
            previous_sender_random_value: random_value,
            previous_commits,
            tx_commits,
            tx_values,
            tx_random_values,
            sender_tx_value: amount,
            block_number,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::Field;
    use rand::SeedableRng;

    #[test]
    fn generated_transfers_pass_every_check() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for k in crate::SUPPORTED_K {
            for sender in [0, k - 1] {
                let t = TransferInputs::generate(k, sender, 40, 100, &mut rng);
                assert_eq!(t.check(), Ok(sender));
                assert_eq!(t.public_inputs().len(), num_public_inputs(k));
            }
        }
        let zero = TransferInputs::generate(3, 1, 0, 0, &mut rng);
        assert_eq!(zero.check(), Ok(1));
    }

    #[test]
    fn each_broken_check_is_named() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let good = TransferInputs::generate(4, 2, 30, 50, &mut rng);
        let failing = |edit: &dyn Fn(&mut TransferInputs)| {
            let mut t = good.clone();
            edit(&mut t);
            t.check().unwrap_err().check
        };
        assert_eq!(failing(&|t| t.sender_id = Fr::ZERO), 1);
        assert_eq!(failing(&|t| t.anonymity_set[0] = t.sender_id), 1);
        assert_eq!(failing(&|t| t.tx_values[2] += Fr::ONE), 2);
        assert_eq!(failing(&|t| t.tx_commits[1].1 += Fr::ONE), 3);
        assert_eq!(failing(&|t| t.secret_key += Fr::ONE), 4);
        assert_eq!(failing(&|t| t.hashed_shared_secrets[0] += Fr::ONE), 5);
        assert_eq!(failing(&|t| t.public_keys[2] += Fr::ONE), 6);
        assert_eq!(failing(&|t| t.previous_sender_balance += Fr::ONE), 7);
        assert_eq!(failing(&|t| t.message_tags[3] += Fr::ONE), 8);
        assert_eq!(failing(&|t| t.nullifier += Fr::ONE), 12);
        assert_eq!(failing(&|t| t.tx_random_values[0] += Fr::ONE), 9);
        // Overspending: amount above balance, with everything else made consistent.
        let over = TransferInputs::generate(4, 2, 51, 51, &mut rng);
        let mut t = over.clone();
        t.previous_sender_balance = Fr::from(50u64);
        t.previous_commits[2] = {
            let p = babyjubjub::pedersen(&t.previous_sender_balance, &t.previous_sender_random_value);
            (p.x, p.y)
        };
        assert_eq!(t.check().unwrap_err().check, 11);
    }

    #[test]
    fn failure_messages_name_the_check_and_never_a_value() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut t = TransferInputs::generate(2, 0, 1, 1, &mut rng);
        t.message_tags[1] += Fr::ONE;
        let msg = t.check().unwrap_err().to_string();
        assert_eq!(msg, "check 8 (message tags) failed: message_tags[1]");
    }
}
