//! The reference's three payment statements, one family: transfer, deposit and withdraw share
//! the request model ([`request`]), the inputs ([`PaymentInputs`]), the checks and one circuit
//! struct ([`PaymentCircuit`]), all generic over the anonymity-set size k = 2..6.

pub mod request;

use std::ops::RangeInclusive;

use enygma_circuit::{
    payment::{constraints::PaymentCircuit, CheckFailure, Kind, PaymentInputs},
    Fr,
};
use rand::RngCore;
use serde_json::Value;

use super::{Circuit, Descriptor, Entry, GenerateError, RequestSpec, Statement};
use crate::request::RequestError;

/// The anonymity-set sizes the reference serves.
const SIZES: RangeInclusive<usize> = 2..=6;

/// One payment statement: the circuit's [`Kind`].
pub struct Payment(pub Kind);

pub static TRANSFER: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "transfer",
        sizes: Some(SIZES),
        prove_route: "/generateProofTransfer-{k}",
        verify_route: "/verifyProofTransfer-{k}",
        contract_title: "Transfer",
    },
    statement: Payment(Kind::Transfer),
};

pub static DEPOSIT: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "deposit",
        sizes: Some(SIZES),
        prove_route: "/generateProofDeposit-{k}",
        verify_route: "/verifyProofDeposit-{k}",
        contract_title: "Deposit",
    },
    statement: Payment(Kind::Deposit),
};

pub static WITHDRAW: Entry<Payment> = Entry {
    descriptor: Descriptor {
        name: "withdraw",
        sizes: Some(SIZES),
        prove_route: "/generateProofWithdraw-{k}",
        verify_route: "/verifyProofWithdraw-{k}",
        contract_title: "Withdraw",
    },
    statement: Payment(Kind::Withdraw),
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
        request::request_schema(self.0, size(k))
    }

    fn parse(&self, k: Option<usize>, body: &[u8]) -> Result<PaymentInputs, RequestError> {
        request::parse_request(self.0, size(k), body)
    }

    type CheckFailure = CheckFailure;

    fn check(&self, inputs: &PaymentInputs) -> Result<(), CheckFailure> {
        inputs.check().map(|_sender| ())
    }

    fn circuit_for_setup(&self, k: Option<usize>) -> Circuit {
        Circuit::new(PaymentCircuit::for_setup(self.0, size(k)))
    }

    fn circuit_for_proving(&self, inputs: &PaymentInputs) -> Circuit {
        Circuit::new(PaymentCircuit::for_proving(inputs.clone()))
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
        Ok(request::to_request_json(&inputs))
    }

    fn size_of_request(&self, body: &Value) -> Option<usize> {
        body.get("anonymity_set")?.as_array().map(Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use crate::statements::{instances, RequestSpec};

    /// Generated requests parse, pass the checks, and their public inputs are the circuit's.
    #[test]
    fn generated_requests_prepare_with_the_circuits_public_inputs() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        for instance in instances().filter(|i| i.k() == Some(2)) {
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
