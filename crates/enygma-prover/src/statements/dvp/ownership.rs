//! `POST /ownership-721`: the ERC-721 ownership transfer (dvp.md, section 3; circuit
//! `OwnershipCircuit`).
//!
//! The request is the reference's Go struct: `paymentCommitment`, `uid`, `saltIn`, `saltOut`,
//! `revertSalt`, `merkleRoot` (decimals); `keyPairIn` (`privateKey` read, `publicKey` required
//! non-empty and ignored); `pubKeyOut` (`publicKey` read, `privateKey` ignored); `merkleProof`
//! (`indices`, 8 `elements`); `treeNumber` (a JSON integer, 0 when absent) and an ignored
//! `merkleDepth`. The nullifier and the output and revert commitments are computed.

use enygma_circuit::{
    dvp::ownership::{constraints::OwnershipCircuit, OwnershipInputs, NUM_PUBLIC_INPUTS},
    keys::public_key,
    merkle::DEPTH,
    Fr,
};
use rand::RngCore;
use serde_json::{json, Value};

use super::{
    merkle_proof_json, parse_merkle_proof, schemas, to_integer, DvpCheckFailure, GoObject,
};
use crate::{
    request::{parse_object, schema, to_decimal, RequestError},
    statements::{Circuit, Descriptor, Entry, GenerateError, RequestSpec, Statement},
};

pub struct Ownership;

pub static OWNERSHIP_721: Entry<Ownership> = Entry {
    descriptor: Descriptor {
        name: "ownership-721",
        sizes: None,
        prove_route: "/ownership-721",
        verify_route: "/verify-ownership-721",
        contract_title: "Ownership721",
        hosted_by_default: true,
    },
    statement: Ownership,
};

/// Parses a request body (see the module documentation).
pub fn parse_request(body: &[u8]) -> Result<OwnershipInputs, RequestError> {
    let object = parse_object(body)?;
    let f = GoObject::body(&object);
    let payment_commitment = f.decimal("paymentCommitment")?;
    let uid = f.secret("uid")?;
    let salt_in = f.secret("saltIn")?;
    let salt_out = f.secret("saltOut")?;
    let revert_salt = f.secret("revertSalt")?;
    let key_pair = f.object("keyPairIn")?;
    key_pair.non_empty_string("publicKey")?;
    let secret_key = key_pair.secret("privateKey")?;
    let key_out = f.object("pubKeyOut")?;
    key_out.ignored_string("privateKey")?;
    let recipient_key = key_out.secret("publicKey")?;
    let path = f.parsed("merkleProof", parse_merkle_proof)?;
    let merkle_root = f.decimal("merkleRoot")?;
    let tree_number = f.integer("treeNumber")?.unwrap_or(Fr::from(0u64));
    f.integer("merkleDepth")?;
    let mut parsed = OwnershipInputs {
        payment_commitment,
        secret_key,
        salt_in,
        uid,
        path,
        merkle_root,
        tree_number,
        nullifier: Fr::from(0u64),
        recipient_key,
        salt_out,
        commitment_out: Fr::from(0u64),
        revert_salt,
        revert_commitment: Fr::from(0u64),
    };
    parsed.derive_public_values();
    Ok(parsed)
}

/// The request body for `inputs`; parsing it gives `inputs` again.
pub fn to_request_json(inputs: &OwnershipInputs) -> Value {
    json!({
        "paymentCommitment": to_decimal(&inputs.payment_commitment),
        "uid": to_decimal(&inputs.uid),
        "saltIn": to_decimal(&inputs.salt_in),
        "saltOut": to_decimal(&inputs.salt_out),
        "revertSalt": to_decimal(&inputs.revert_salt),
        "keyPairIn": {
            "publicKey": to_decimal(&public_key(&inputs.secret_key)),
            "privateKey": to_decimal(&inputs.secret_key),
        },
        "pubKeyOut": { "publicKey": to_decimal(&inputs.recipient_key), "privateKey": "" },
        "merkleProof": merkle_proof_json(&inputs.path),
        "merkleRoot": to_decimal(&inputs.merkle_root),
        "treeNumber": to_integer(&inputs.tree_number),
        "merkleDepth": DEPTH,
    })
}

impl Statement for Ownership {
    type Inputs = OwnershipInputs;

    fn num_public_inputs(&self, _k: Option<usize>) -> usize {
        NUM_PUBLIC_INPUTS
    }

    fn parse(&self, _k: Option<usize>, body: &[u8]) -> Result<OwnershipInputs, RequestError> {
        parse_request(body)
    }

    fn request_schema(&self, _k: Option<usize>) -> Value {
        let decimal = schema::decimal;
        let properties = vec![
            ("paymentCommitment", decimal()),
            ("uid", decimal()),
            ("saltIn", decimal()),
            ("saltOut", decimal()),
            ("revertSalt", decimal()),
            (
                "keyPairIn",
                schema::object(
                    vec![
                        ("publicKey", json!({ "type": "string", "minLength": 1 })),
                        ("privateKey", decimal()),
                    ],
                    &["publicKey", "privateKey"],
                ),
            ),
            ("pubKeyOut", schemas::key_pair("publicKey")),
            ("merkleProof", schemas::merkle_proof()),
            ("merkleRoot", decimal()),
            ("treeNumber", schemas::integer()),
            ("merkleDepth", schemas::integer()),
        ];
        let required: Vec<&str> = properties
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| !["treeNumber", "merkleDepth"].contains(name))
            .collect();
        schemas::described(schema::object(properties, &required), "")
    }

    type CheckFailure = DvpCheckFailure;

    fn check(&self, inputs: &OwnershipInputs) -> Result<(), DvpCheckFailure> {
        inputs.check().map_err(DvpCheckFailure)
    }

    fn circuit_for_setup(&self, _k: Option<usize>) -> Circuit {
        Circuit::new(OwnershipCircuit::for_setup())
    }

    fn circuit_for_proving(&self, inputs: &OwnershipInputs) -> Circuit {
        Circuit::new(OwnershipCircuit::for_proving(inputs.clone()))
    }

    fn public_inputs(&self, inputs: &OwnershipInputs) -> Vec<Fr> {
        inputs.public_inputs()
    }

    fn to_request(&self, inputs: &OwnershipInputs) -> Value {
        to_request_json(inputs)
    }

    /// An NFT note at a random free leaf of a real depth-8 tree, handed to a random recipient.
    /// The payment hints do not apply; a sender index is refused.
    fn generate(
        &self,
        _k: Option<usize>,
        spec: &RequestSpec,
        mut rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        spec.refuse_sender("an ownership transfer")?;
        Ok(to_request_json(&OwnershipInputs::generate(&mut rng)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn generated(seed: u64) -> (OwnershipInputs, Value) {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let inputs = OwnershipInputs::generate(&mut rng);
        let body = to_request_json(&inputs);
        (inputs, body)
    }

    fn parse(body: &Value) -> Result<OwnershipInputs, String> {
        parse_request(body.to_string().as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn generated_requests_round_trip_and_pass() {
        for seed in 0..4 {
            let (inputs, body) = generated(seed);
            assert_eq!(parse(&body), Ok(inputs.clone()));
            assert_eq!(Ownership.check(&inputs), Ok(()));
        }
    }

    #[test]
    fn other_cases_defaults_and_ignored_fields() {
        let (inputs, mut body) = generated(5);
        let o = body.as_object_mut().unwrap();
        let uid = o.remove("uid").unwrap();
        o.insert("UID".into(), uid);
        let proof = o.remove("merkleProof").unwrap();
        o.insert("merkleproof".into(), proof);
        o.remove("merkleDepth");
        o["pubKeyOut"].as_object_mut().unwrap().remove("privateKey");
        o.insert("unknown".into(), json!([1, 2]));
        assert_eq!(parse(&body), Ok(inputs.clone()));
        // treeNumber absent reads as 0, as Go's int zero value.
        body.as_object_mut().unwrap().remove("treeNumber");
        assert_eq!(parse(&body).unwrap().tree_number, Fr::from(0u64));
    }

    #[test]
    fn bad_requests_name_the_field() {
        let cases: Vec<(crate::statements::Mutation, &str)> = vec![
            (
                Box::new(|b| b["uid"] = "-1".into()),
                "uid: not a decimal number",
            ),
            (
                Box::new(|b| b["saltOut"] = "00".into()),
                "saltOut: leading zeros are not allowed",
            ),
            (
                Box::new(|b| b["keyPairIn"]["publicKey"] = "".into()),
                "keyPairIn.publicKey: missing",
            ),
            (
                Box::new(|b| b["keyPairIn"] = "1".into()),
                "keyPairIn: expected a JSON object",
            ),
            (
                Box::new(|b| {
                    b["merkleProof"]["elements"].as_array_mut().unwrap().pop();
                }),
                "merkleProof.elements: expected 8 elements, got 7",
            ),
            (
                Box::new(|b| b["treeNumber"] = 1.5.into()),
                "treeNumber: expected a non-negative JSON integer",
            ),
            (
                Box::new(|b| {
                    b.as_object_mut().unwrap().remove("merkleRoot");
                }),
                "merkleRoot: missing",
            ),
            (
                Box::new(|b| b["pubKeyOut"]["publicKey"] = Value::Null),
                "pubKeyOut.publicKey: missing",
            ),
        ];
        let (_, good) = generated(6);
        for (edit, expected) in cases {
            let mut body = good.clone();
            edit(&mut body);
            assert_eq!(parse(&body).unwrap_err(), expected);
        }
    }

    #[test]
    fn the_stale_sample_is_refused_and_rules_are_named() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/reference/requests/ownership-erc-721.json");
        let body = std::fs::read(path).unwrap();
        assert_eq!(
            parse_request(&body).unwrap_err().to_string(),
            "saltIn: missing"
        );
        let (inputs, _) = generated(7);
        let mut t = inputs.clone();
        t.salt_in += Fr::from(1u64);
        assert_eq!(
            Ownership.check(&t).map_err(|e| e.to_string()),
            Err("check (note in the tree) failed: merkleRoot".into())
        );
        let schema = Ownership.request_schema(None);
        assert_eq!(schema["required"].as_array().unwrap().len(), 9);
        assert_eq!(
            schema["properties"]["merkleProof"]["properties"]["elements"]["minItems"],
            8
        );
    }
}
