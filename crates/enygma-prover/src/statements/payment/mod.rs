//! The reference's three payment statements, one family: transfer, deposit and withdraw share
//! the request model ([`request`]), the inputs ([`PaymentInputs`]), the checks and one circuit
//! struct ([`PaymentCircuit`]), all generic over the anonymity-set size k = 2..6.
//!
//! Beside them, the same three with the hidden sender's nullifier
//! ([`NullifierRule::HiddenSender`], `docs/soundness.md` P1): `hidden-sender-transfer`,
//! `hidden-sender-deposit` and `hidden-sender-withdraw`. Their requests are the reference's, but
//! `nullifier` may be left out: the statement computes it from the sender's random value and key,
//! and the response's `public_signal` carries it where the reference's does (index 6k). They are
//! another statement with its own keys, and a ledger accepts one nullifier rule only, so they
//! are hosted only where an operator names them.

pub mod request;

use std::ops::RangeInclusive;

use enygma_circuit::{
    payment::{
        constraints::PaymentCircuit, CheckFailure, Kind, NullifierRule, PaymentInputs, Spend,
    },
    Fr,
};
use rand::RngCore;
use serde_json::Value;

use super::{Circuit, Descriptor, Entry, GenerateError, RequestSpec, Statement};
use crate::request::RequestError;

/// The anonymity-set sizes the reference serves.
const SIZES: RangeInclusive<usize> = 2..=6;

/// One payment statement: the circuit's [`Kind`] and how its nullifier is derived.
pub struct Payment(pub Kind, pub NullifierRule);

pub static TRANSFER: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "transfer",
        sizes: Some(SIZES),
        prove_route: "/generateProofTransfer-{k}",
        verify_route: "/verifyProofTransfer-{k}",
        contract_title: "Transfer",
        hosted_by_default: true,
    },
    statement: Payment(Kind::Transfer, NullifierRule::Reference),
};

pub static DEPOSIT: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "deposit",
        sizes: Some(SIZES),
        prove_route: "/generateProofDeposit-{k}",
        verify_route: "/verifyProofDeposit-{k}",
        contract_title: "Deposit",
        hosted_by_default: true,
    },
    statement: Payment(Kind::Deposit, NullifierRule::Reference),
};

pub static WITHDRAW: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "withdraw",
        sizes: Some(SIZES),
        prove_route: "/generateProofWithdraw-{k}",
        verify_route: "/verifyProofWithdraw-{k}",
        contract_title: "Withdraw",
        hosted_by_default: true,
    },
    statement: Payment(Kind::Withdraw, NullifierRule::Reference),
};

pub static HIDDEN_SENDER_TRANSFER: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "hidden-sender-transfer",
        sizes: Some(SIZES),
        prove_route: "/generateProofHiddenSenderTransfer-{k}",
        verify_route: "/verifyProofHiddenSenderTransfer-{k}",
        contract_title: "HiddenSenderTransfer",
        hosted_by_default: false,
    },
    statement: Payment(Kind::Transfer, NullifierRule::HiddenSender),
};

pub static HIDDEN_SENDER_DEPOSIT: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "hidden-sender-deposit",
        sizes: Some(SIZES),
        prove_route: "/generateProofHiddenSenderDeposit-{k}",
        verify_route: "/verifyProofHiddenSenderDeposit-{k}",
        contract_title: "HiddenSenderDeposit",
        hosted_by_default: false,
    },
    statement: Payment(Kind::Deposit, NullifierRule::HiddenSender),
};

pub static HIDDEN_SENDER_WITHDRAW: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "hidden-sender-withdraw",
        sizes: Some(SIZES),
        prove_route: "/generateProofHiddenSenderWithdraw-{k}",
        verify_route: "/verifyProofHiddenSenderWithdraw-{k}",
        contract_title: "HiddenSenderWithdraw",
        hosted_by_default: false,
    },
    statement: Payment(Kind::Withdraw, NullifierRule::HiddenSender),
};

/// The registry gives every payment statement a k (they all have sizes).
fn size(k: Option<usize>) -> usize {
    k.expect("the registry passes a k to a statement with sizes")
}

impl Statement for Payment {
    type Inputs = PaymentInputs;

    fn num_public_inputs(&self, k: Option<usize>) -> usize {
        self.0.num_public_inputs(size(k))
    }

    fn request_schema(&self, k: Option<usize>) -> Value {
        request::request_schema(self.0, self.1, size(k))
    }

    fn parse(&self, k: Option<usize>, body: &[u8]) -> Result<PaymentInputs, RequestError> {
        request::parse_request_with(self.0, self.1, size(k), body)
    }

    type CheckFailure = CheckFailure;

    fn check(&self, inputs: &PaymentInputs) -> Result<(), CheckFailure> {
        inputs.check_with(self.1).map(|_sender| ())
    }

    fn circuit_for_setup(&self, k: Option<usize>) -> Circuit {
        Circuit::new(PaymentCircuit::for_setup(self.0, size(k)).with_nullifier_rule(self.1))
    }

    fn circuit_for_proving(&self, inputs: &PaymentInputs) -> Circuit {
        Circuit::new(PaymentCircuit::for_proving(inputs.clone()).with_nullifier_rule(self.1))
    }

    fn public_inputs(&self, inputs: &PaymentInputs) -> Vec<Fr> {
        inputs.public_inputs()
    }

    fn to_request(&self, inputs: &PaymentInputs) -> Value {
        request::to_request_json(inputs)
    }

    /// A member pays (or, for a withdraw, receives) `amount` out of `balance`; the sender is
    /// `spec.sender`, else `spec.index mod k`.
    fn generate(
        &self,
        k: Option<usize>,
        spec: &RequestSpec,
        mut rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        let k = size(k);
        let sender = spec.sender.unwrap_or(spec.index % k);
        if sender >= k {
            return Err(GenerateError::SenderOutOfRange { k });
        }
        if self.0 != Kind::Withdraw && spec.amount > spec.balance {
            return Err(GenerateError::AmountAboveBalance);
        }
        let inputs =
            PaymentInputs::generate(self.0, k, sender, spec.amount, spec.balance, &mut rng);
        let inputs = match self.1 {
            NullifierRule::Reference => inputs,
            rule => Spend::of(&inputs).inputs_with(rule),
        };
        Ok(request::to_request_json(&inputs))
    }

    fn size_of_request(&self, body: &Value) -> Option<usize> {
        body.get("anonymity_set")?.as_array().map(Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use enygma_circuit::{poseidon, Fr};
    use rand::SeedableRng;

    use crate::statements::{all_instances, RequestSpec};

    /// What anyone who reads a payment's public signal (the response's `public_signal`, the
    /// chain's record) can try without a secret: for every member i and every per-member public
    /// value x_i (hashed shared secret, public key, id, message tag), `Poseidon(x_i,
    /// block_number)` against the nullifier. The member whose try matches is the sender.
    fn sender_from_public_signal(signal: &[Fr], k: usize) -> Option<usize> {
        let (nullifier, block_number) = (signal[6 * k], signal[6 * k + 1]);
        let per_member = [0, k, 6 * k + 2, 7 * k + 2];
        (0..k).find(|&i| {
            per_member
                .iter()
                .any(|&start| poseidon::hash(&[signal[start + i], block_number]) == nullifier)
        })
    }

    /// The reference's nullifier names the sender of every payment, at every k and every sender
    /// index; the hidden sender's names none (`docs/soundness.md`, P1).
    #[test]
    fn the_public_signal_names_the_sender_of_the_reference_statements_only() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
        for (reference, hidden) in [
            ("transfer", "hidden-sender-transfer"),
            ("deposit", "hidden-sender-deposit"),
            ("withdraw", "hidden-sender-withdraw"),
        ] {
            for k in 2..=6 {
                for sender in 0..k {
                    let spec = RequestSpec {
                        sender: Some(sender),
                        ..RequestSpec::default()
                    };
                    let signal = |name: &str, rng: &mut rand_chacha::ChaCha20Rng| {
                        let instance = crate::statements::instance(name, Some(k)).unwrap();
                        let body = instance.generate(&spec, rng).unwrap();
                        crate::prepare(instance, body.to_string().as_bytes())
                            .unwrap()
                            .public_inputs()
                            .unwrap()
                    };
                    assert_eq!(
                        sender_from_public_signal(&signal(reference, &mut rng), k),
                        Some(sender),
                        "{reference}, k = {k}"
                    );
                    assert_eq!(
                        sender_from_public_signal(&signal(hidden, &mut rng), k),
                        None,
                        "{hidden}, k = {k}"
                    );
                }
            }
        }
    }

    /// Generated requests parse, pass the checks, and their public inputs are the circuit's.
    #[test]
    fn generated_requests_prepare_with_the_circuits_public_inputs() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        for instance in all_instances().filter(|i| i.k() == Some(2)) {
            let spec = RequestSpec {
                index: 1,
                ..RequestSpec::default()
            };
            let body = instance.generate(&spec, &mut rng).unwrap();
            assert_eq!(
                instance.statement().size_of_request(&body),
                Some(2),
                "{instance}"
            );
            crate::statements::assert_request_proves_its_public_inputs(instance, &body);
        }
        let transfer = crate::statements::instance("transfer", Some(3)).unwrap();
        let bad = RequestSpec {
            sender: Some(3),
            ..RequestSpec::default()
        };
        assert!(transfer.generate(&bad, &mut rng).is_err());
        let overspend = RequestSpec {
            amount: 2,
            balance: 1,
            ..RequestSpec::default()
        };
        assert!(transfer.generate(&overspend, &mut rng).is_err());
        let withdraw = crate::statements::instance("withdraw", Some(3)).unwrap();
        assert!(withdraw.generate(&overspend, &mut rng).is_ok());
    }
}
