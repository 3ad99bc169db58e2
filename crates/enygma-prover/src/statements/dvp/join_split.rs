//! `POST /join-split-enygma` (ERC-20) and `POST /join-split-1155` (ERC-1155): one family, one
//! circuit struct (`JoinSplitCircuit`), two entries (dvp.md, sections 1 and 2).
//!
//! The request is the reference's Go struct: n ≤ 10 spent notes in `valuesIn`, `keyPairsIn`
//! (`privateKey` read, `publicKey` ignored), `merkleProofs`, `merkleRoots`, `treeNumbers` and
//! `saltsIn`, all exactly n long; two outputs in `valuesOut`, `pubKeysOut` (`publicKey` read,
//! `privateKey` ignored) and `saltsOut`; `revertSalt`, `nftCommitment`, the token
//! (`erc20Address`, or `erc1155Address` and `erc1155TokenId`) and an ignored `merkleDepth`.
//! Slots n..9 are the reference's dummies. As in the reference, the ERC-20 input arrays may be
//! absent (n = 0, a "zero swap"), the ERC-1155 ones must be present (possibly empty), and
//! `saltsIn` may be absent when n = 0. The nullifiers and the output and revert commitments are
//! computed, never taken from the request.

use enygma_circuit::{
    dvp::join_split::{
        constraints::JoinSplitCircuit, InputSlot, JoinSplitInputs, OutputNote, Token, TokenKind,
        INPUT_SLOTS, NUM_PUBLIC_INPUTS, OUTPUTS,
    },
    keys::public_key,
    Fr, Secret,
};
use rand::RngCore;
use serde_json::{json, Value};

use super::{
    merkle_proof_json, parse_integer, parse_merkle_proof, schemas, to_hex_address, to_integer,
    DvpCheckFailure, GoObject,
};
use crate::{
    request::{parse_field_element, parse_object, parse_secret, schema, to_decimal, RequestError},
    statements::{Circuit, Descriptor, Entry, GenerateError, RequestSpec, Statement},
};

/// One join-split statement: the token standard of its notes.
pub struct JoinSplit(pub TokenKind);

pub static JOIN_SPLIT_ENYGMA: Entry<JoinSplit> = Entry {
    descriptor: Descriptor {
        name: "join-split-enygma",
        sizes: None,
        prove_route: "/join-split-enygma",
        verify_route: "/verify-join-split-enygma",
        contract_title: "JoinSplitEnygma",
        hosted_by_default: true,
    },
    statement: JoinSplit(TokenKind::Erc20),
};

pub static JOIN_SPLIT_1155: Entry<JoinSplit> = Entry {
    descriptor: Descriptor {
        name: "join-split-1155",
        sizes: None,
        prove_route: "/join-split-1155",
        verify_route: "/verify-join-split-1155",
        contract_title: "JoinSplit1155",
        hosted_by_default: true,
    },
    statement: JoinSplit(TokenKind::Erc1155),
};

/// The input arrays, in the order the reference's struct declares them; `nullable` below says
/// which the ERC-20 request may leave out.
const INPUT_ARRAYS: [&str; 6] = [
    "valuesIn",
    "keyPairsIn",
    "merkleProofs",
    "merkleRoots",
    "treeNumbers",
    "saltsIn",
];

impl JoinSplit {
    /// Whether the input arrays (all but `saltsIn`) must be present: the ERC-1155 struct
    /// marks them `required`, the ERC-20 one does not.
    fn inputs_required(&self) -> bool {
        self.0 == TokenKind::Erc1155
    }

    fn address_field(&self) -> &'static str {
        match self.0 {
            TokenKind::Erc20 => "erc20Address",
            TokenKind::Erc1155 => "erc1155Address",
        }
    }

    /// Parses a request body (see the module documentation).
    pub fn parse_request(&self, body: &[u8]) -> Result<JoinSplitInputs, RequestError> {
        let object = parse_object(body)?;
        let f = GoObject::body(&object);
        let required = self.inputs_required();
        let values_in = f.array_up_to("valuesIn", INPUT_SLOTS, required, parse_secret)?;
        let n = values_in.len();
        let secret_keys = f.array("keyPairsIn", n, required, |name, v| {
            let pair = GoObject::at(name, v)?;
            pair.ignored_string("publicKey")?;
            pair.secret("privateKey")
        })?;
        let paths = f.array("merkleProofs", n, required, parse_merkle_proof)?;
        let roots = f.array("merkleRoots", n, required, parse_field_element)?;
        let trees = f.array("treeNumbers", n, required, parse_integer)?;
        let salts_in = f.array("saltsIn", n, false, parse_secret)?;
        let values_out = f.array("valuesOut", OUTPUTS, true, parse_secret)?;
        let recipients = f.array("pubKeysOut", OUTPUTS, true, |name, v| {
            let key = GoObject::at(name, v)?;
            key.ignored_string("privateKey")?;
            key.secret("publicKey")
        })?;
        let salts_out = f.array("saltsOut", OUTPUTS, true, parse_secret)?;
        let revert_salt = f.secret("revertSalt")?;
        let address = f.hex_address(self.address_field())?;
        let token = Secret::new(match self.0 {
            TokenKind::Erc20 => Token::Erc20 { address: *address },
            TokenKind::Erc1155 => Token::Erc1155 {
                address: *address,
                id: *f.secret("erc1155TokenId")?,
            },
        });
        let nft_commitment = f.decimal("nftCommitment")?;
        f.integer("merkleDepth")?;

        // The parsed secrets are moved (not copied) into the slots and notes, so each private
        // value keeps one owner that wipes it; slots n..9 are the reference's dummies.
        let mut parsed_slots = secret_keys
            .into_iter()
            .zip(salts_in)
            .zip(values_in)
            .zip(paths)
            .zip(roots.into_iter().zip(trees));
        let inputs = std::array::from_fn(|_| match parsed_slots.next() {
            Some(((((secret_key, salt), value), path), (merkle_root, tree_number))) => InputSlot {
                secret_key,
                salt,
                value,
                path,
                merkle_root,
                tree_number,
                nullifier: Fr::from(0u64),
            },
            None => InputSlot::dummy(),
        });
        let mut outputs = recipients.into_iter().zip(salts_out).zip(values_out);
        let outputs = std::array::from_fn(|_| {
            let ((recipient_key, salt), value) = outputs.next().expect("exactly OUTPUTS outputs");
            OutputNote {
                recipient_key,
                salt,
                value,
                commitment: Fr::from(0u64),
            }
        });
        let mut parsed = JoinSplitInputs {
            token,
            nft_commitment,
            inputs,
            outputs,
            revert_salt,
            revert_commitment: Fr::from(0u64),
        };
        parsed.derive_public_values();
        Ok(parsed)
    }

    /// The request body for `inputs`, as an honest client writes it: the slots up to the last
    /// one that is not the reference's dummy (the dummies after it are left to the padding).
    /// Parsing it gives `inputs` again.
    pub fn to_request_json(&self, inputs: &JoinSplitInputs) -> Value {
        assert_eq!(inputs.kind(), self.0, "inputs of the other join-split");
        let n = inputs
            .inputs
            .iter()
            .rposition(|slot| *slot != InputSlot::dummy())
            .map_or(0, |last| last + 1);
        let slots = &inputs.inputs[..n];
        let decimals =
            |f: fn(&InputSlot) -> &Fr| slots.iter().map(|s| to_decimal(f(s))).collect::<Vec<_>>();
        let mut body = json!({
            "nftCommitment": to_decimal(&inputs.nft_commitment),
            "valuesIn": decimals(|s| &s.value),
            "keyPairsIn": slots.iter().map(|s| json!({
                "publicKey": to_decimal(&public_key(&s.secret_key)),
                "privateKey": to_decimal(&s.secret_key),
            })).collect::<Vec<_>>(),
            "merkleProofs": slots.iter().map(|s| merkle_proof_json(&s.path)).collect::<Vec<_>>(),
            "merkleRoots": decimals(|s| &s.merkle_root),
            "treeNumbers": slots.iter().map(|s| to_integer(&s.tree_number)).collect::<Vec<_>>(),
            "saltsIn": decimals(|s| &s.salt),
            "valuesOut": inputs.outputs.iter().map(|o| to_decimal(&o.value)).collect::<Vec<_>>(),
            "pubKeysOut": inputs.outputs.iter().map(|o| json!({
                "publicKey": to_decimal(&o.recipient_key),
                "privateKey": "",
            })).collect::<Vec<_>>(),
            "saltsOut": inputs.outputs.iter().map(|o| to_decimal(&o.salt)).collect::<Vec<_>>(),
            "revertSalt": to_decimal(&inputs.revert_salt),
            "merkleDepth": enygma_circuit::merkle::DEPTH,
        });
        match *inputs.token {
            Token::Erc20 { address } => {
                body["erc20Address"] = to_hex_address(&address).into();
            }
            Token::Erc1155 { address, id } => {
                body["erc1155Address"] = to_hex_address(&address).into();
                body["erc1155TokenId"] = to_decimal(&id).into();
            }
        }
        body
    }
}

impl Statement for JoinSplit {
    type Inputs = JoinSplitInputs;

    fn num_public_inputs(&self, _k: Option<usize>) -> usize {
        NUM_PUBLIC_INPUTS
    }

    fn parse(&self, _k: Option<usize>, body: &[u8]) -> Result<JoinSplitInputs, RequestError> {
        self.parse_request(body)
    }

    fn request_schema(&self, _k: Option<usize>) -> Value {
        let decimal = schema::decimal;
        let per_input = |items: Value| schema::array_up_to(items, INPUT_SLOTS);
        let outputs = |items: Value| schema::array(items, OUTPUTS);
        let mut properties = vec![
            ("nftCommitment", decimal()),
            ("valuesIn", per_input(decimal())),
            ("keyPairsIn", per_input(schemas::key_pair("privateKey"))),
            ("merkleProofs", per_input(schemas::merkle_proof())),
            ("merkleRoots", per_input(decimal())),
            ("treeNumbers", per_input(schemas::integer())),
            ("saltsIn", per_input(decimal())),
            ("valuesOut", outputs(decimal())),
            ("pubKeysOut", outputs(schemas::key_pair("publicKey"))),
            ("saltsOut", outputs(decimal())),
            ("revertSalt", decimal()),
            (self.address_field(), schemas::hex_address()),
            ("merkleDepth", schemas::integer()),
        ];
        let mut required = vec![
            "nftCommitment",
            "valuesOut",
            "pubKeysOut",
            "saltsOut",
            "revertSalt",
            self.address_field(),
        ];
        if self.0 == TokenKind::Erc1155 {
            properties.push(("erc1155TokenId", decimal()));
            required.push("erc1155TokenId");
            required.extend(&INPUT_ARRAYS[..5]);
        }
        schemas::described(
            schema::object(properties, &required),
            &format!(
                "{} have the same length n (at most {INPUT_SLOTS}); an absent array is empty{}.",
                INPUT_ARRAYS.join(", "),
                if self.inputs_required() {
                    " (saltsIn only)"
                } else {
                    ""
                }
            ),
        )
    }

    type CheckFailure = DvpCheckFailure;

    fn check(&self, inputs: &JoinSplitInputs) -> Result<(), DvpCheckFailure> {
        inputs.check().map_err(DvpCheckFailure)
    }

    fn circuit_for_setup(&self, _k: Option<usize>) -> Circuit {
        Circuit::new(JoinSplitCircuit::for_setup(self.0))
    }

    fn circuit_for_proving(&self, inputs: &JoinSplitInputs) -> Circuit {
        Circuit::new(JoinSplitCircuit::for_proving(inputs.clone()))
    }

    fn public_inputs(&self, inputs: &JoinSplitInputs) -> Vec<Fr> {
        inputs.public_inputs()
    }

    fn to_request(&self, inputs: &JoinSplitInputs) -> Value {
        self.to_request_json(inputs)
    }

    /// Spends `1 + spec.index mod 10` notes (so a pool covers every number of inputs) of one
    /// to three owners in real depth-8 trees; every value is random. The payment hints
    /// (`amount`, `balance`) do not apply; a sender index is refused.
    fn generate(
        &self,
        _k: Option<usize>,
        spec: &RequestSpec,
        mut rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        spec.refuse_sender("a join-split")?;
        let real_inputs = 1 + spec.index % INPUT_SLOTS;
        let inputs = JoinSplitInputs::generate(self.0, real_inputs, &mut rng);
        Ok(self.to_request_json(&inputs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng(seed: u64) -> rand_chacha::ChaCha20Rng {
        rand_chacha::ChaCha20Rng::seed_from_u64(seed)
    }

    fn statement(kind: TokenKind) -> &'static JoinSplit {
        match kind {
            TokenKind::Erc20 => &JOIN_SPLIT_ENYGMA.statement,
            TokenKind::Erc1155 => &JOIN_SPLIT_1155.statement,
        }
    }

    fn generated(kind: TokenKind, real_inputs: usize, seed: u64) -> (JoinSplitInputs, Value) {
        let inputs = JoinSplitInputs::generate(kind, real_inputs, &mut rng(seed));
        let body = statement(kind).to_request_json(&inputs);
        (inputs, body)
    }

    fn parse(kind: TokenKind, body: &Value) -> Result<JoinSplitInputs, String> {
        statement(kind)
            .parse_request(body.to_string().as_bytes())
            .map_err(|e| e.to_string())
    }

    fn refused(kind: TokenKind, body: &Value) -> String {
        parse(kind, body).unwrap_err()
    }

    #[test]
    fn generated_requests_round_trip_for_every_number_of_inputs() {
        for kind in TokenKind::ALL {
            for n in 0..=INPUT_SLOTS {
                let (inputs, body) = generated(kind, n, n as u64);
                assert_eq!(body["valuesIn"].as_array().unwrap().len(), n, "{kind}");
                assert_eq!(parse(kind, &body), Ok(inputs.clone()), "{kind} {n}");
                assert_eq!(JoinSplit(kind).check(&inputs), Ok(()));
            }
        }
    }

    /// The reference's padding written out by the client is the same request.
    #[test]
    fn written_out_dummies_are_the_padding() {
        let (inputs, mut body) = generated(TokenKind::Erc20, 2, 3);
        let push = |body: &mut Value, field: &str, item: Value| {
            body[field].as_array_mut().unwrap().push(item);
        };
        push(&mut body, "valuesIn", json!("0"));
        push(
            &mut body,
            "keyPairsIn",
            json!({"publicKey": "", "privateKey": "0"}),
        );
        push(
            &mut body,
            "merkleProofs",
            json!({"indices": "0", "elements": vec!["0"; 8]}),
        );
        push(&mut body, "merkleRoots", json!("0"));
        push(&mut body, "treeNumbers", json!(0));
        push(&mut body, "saltsIn", json!("0"));
        assert_eq!(parse(TokenKind::Erc20, &body), Ok(inputs));
    }

    #[test]
    fn keys_in_another_case_and_addresses_without_0x_are_accepted() {
        let (inputs, body) = generated(TokenKind::Erc1155, 3, 4);
        let mut shouted = serde_json::Map::new();
        for (key, value) in body.as_object().unwrap() {
            let value = match key.as_str() {
                "erc1155Address" => Value::from(value.as_str().unwrap().trim_start_matches("0x")),
                "keyPairsIn" => value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|pair| json!({"PRIVATEKEY": pair["privateKey"]}))
                    .collect(),
                _ => value.clone(),
            };
            shouted.insert(key.to_uppercase(), value);
        }
        assert_eq!(parse(TokenKind::Erc1155, &Value::from(shouted)), Ok(inputs));
    }

    #[test]
    fn an_erc20_zero_swap_may_leave_the_inputs_out() {
        let (inputs, mut body) = generated(TokenKind::Erc20, 0, 5);
        for field in INPUT_ARRAYS {
            body.as_object_mut().unwrap().remove(field);
        }
        body["merkleRoots"] = Value::Null;
        assert_eq!(parse(TokenKind::Erc20, &body), Ok(inputs));
        // The ERC-1155 struct requires them (present, possibly empty), but for saltsIn.
        let (inputs, mut body) = generated(TokenKind::Erc1155, 0, 5);
        body.as_object_mut().unwrap().remove("saltsIn");
        assert_eq!(parse(TokenKind::Erc1155, &body), Ok(inputs));
        for field in &INPUT_ARRAYS[..5] {
            let mut b = body.clone();
            b.as_object_mut().unwrap().remove(*field);
            assert_eq!(refused(TokenKind::Erc1155, &b), format!("{field}: missing"));
        }
    }

    #[test]
    fn bad_requests_name_the_field() {
        let r = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
        let cases: Vec<(crate::statements::Mutation, &str)> = vec![
            (
                Box::new(|b| b["valuesIn"][1] = "-5".into()),
                "valuesIn[1]: not a decimal number",
            ),
            (
                Box::new(|b| b["valuesOut"][0] = "012".into()),
                "valuesOut[0]: leading zeros are not allowed",
            ),
            (
                Box::new(|b| b["valuesOut"][0] = "+12".into()),
                "valuesOut[0]: not a decimal number",
            ),
            (
                Box::new(move |b| b["merkleProofs"][0]["elements"][4] = r.into()),
                "merkleProofs[0].elements[4]: not below the field modulus r",
            ),
            (
                Box::new(|b| {
                    b["merkleProofs"][2]["elements"]
                        .as_array_mut()
                        .unwrap()
                        .pop();
                }),
                "merkleProofs[2].elements: expected 8 elements, got 7",
            ),
            (
                Box::new(|b| {
                    b["merkleProofs"][2]["elements"]
                        .as_array_mut()
                        .unwrap()
                        .push("0".into())
                }),
                "merkleProofs[2].elements: expected 8 elements, got 9",
            ),
            (
                Box::new(|b| {
                    b["saltsIn"].as_array_mut().unwrap().pop();
                }),
                "saltsIn: expected 3 elements, got 2",
            ),
            (
                Box::new(|b| b["treeNumbers"].as_array_mut().unwrap().push(0.into())),
                "treeNumbers: expected 3 elements, got 4",
            ),
            (
                Box::new(|b| b["treeNumbers"][1] = (-1).into()),
                "treeNumbers[1]: expected a non-negative JSON integer",
            ),
            (
                Box::new(|b| b["treeNumbers"][1] = "1".into()),
                "treeNumbers[1]: expected a non-negative JSON integer",
            ),
            (
                Box::new(|b| b["keyPairsIn"][0] = json!({"publicKey": "1"})),
                "keyPairsIn[0].privateKey: missing",
            ),
            (
                Box::new(|b| b["keyPairsIn"][0]["publicKey"] = 5.into()),
                "keyPairsIn[0].publicKey: expected a string",
            ),
            (
                Box::new(|b| b["pubKeysOut"][1] = json!({"privateKey": ""})),
                "pubKeysOut[1].publicKey: missing",
            ),
            (
                Box::new(|b| {
                    b["pubKeysOut"].as_array_mut().unwrap().pop();
                }),
                "pubKeysOut: expected 2 elements, got 1",
            ),
            (
                Box::new(|b| b["erc20Address"] = "0X22e5".into()),
                "erc20Address: not a hex address",
            ),
            (
                Box::new(|b| {
                    b.as_object_mut().unwrap().remove("revertSalt");
                }),
                "revertSalt: missing",
            ),
            (
                Box::new(|b| b["merkleDepth"] = "8".into()),
                "merkleDepth: expected a non-negative JSON integer",
            ),
            (
                Box::new(|b| {
                    for _ in 0..8 {
                        b["valuesIn"].as_array_mut().unwrap().push("0".into());
                    }
                }),
                "valuesIn: at most 10 elements, got 11",
            ),
            (
                Box::new(|b| b["NFTcommitment"] = "1".into()),
                "nftCommitment: given more than once, in different letter cases",
            ),
        ];
        let (_, good) = generated(TokenKind::Erc20, 3, 6);
        for (edit, expected) in cases {
            let mut body = good.clone();
            edit(&mut body);
            assert_eq!(refused(TokenKind::Erc20, &body), expected);
        }
        let (_, good) = generated(TokenKind::Erc1155, 1, 7);
        let mut body = good.clone();
        body.as_object_mut().unwrap().remove("erc1155TokenId");
        assert_eq!(
            refused(TokenKind::Erc1155, &body),
            "erc1155TokenId: missing"
        );
        // An ERC-20 body on the ERC-1155 route lacks its token.
        let (_, erc20) = generated(TokenKind::Erc20, 1, 7);
        assert_eq!(
            refused(TokenKind::Erc1155, &erc20),
            "erc1155Address: missing"
        );
    }

    /// dvp.md's stale samples carry no salts: refused with 400 naming the first salt field.
    #[test]
    fn the_stale_samples_are_refused() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/reference/requests");
        for (file, kind) in [
            ("joinsplit-enygma.json", TokenKind::Erc20),
            ("joinsplit-erc-1155.json", TokenKind::Erc1155),
        ] {
            let body = std::fs::read(dir.join(file)).unwrap();
            assert_eq!(
                statement(kind)
                    .parse_request(&body)
                    .unwrap_err()
                    .to_string(),
                "saltsIn: missing"
            );
        }
    }

    #[test]
    fn broken_rules_name_the_rule_and_the_request_field() {
        let (inputs, _) = generated(TokenKind::Erc20, 3, 8);
        let statement = JoinSplit(TokenKind::Erc20);
        let mut t = inputs.clone();
        t.inputs[1].merkle_root += Fr::from(1u64);
        assert_eq!(
            statement.check(&t).map_err(|e| e.to_string()),
            Err("check (note in the tree) failed: merkleRoots[1]".into())
        );
        let mut t = inputs.clone();
        t.outputs[0].value += Fr::from(1u64);
        t.derive_public_values();
        assert_eq!(
            statement.check(&t).map_err(|e| e.to_string()),
            Err("check (value conservation) failed: valuesOut".into())
        );
    }

    #[test]
    fn schemas_name_every_field_the_parser_reads() {
        for kind in TokenKind::ALL {
            let (_, body) = generated(kind, 2, 9);
            let schema = statement(kind).request_schema(None);
            let properties = schema["properties"].as_object().unwrap();
            for key in body.as_object().unwrap().keys() {
                assert!(properties.contains_key(key), "{kind}: {key}");
            }
            for required in schema["required"].as_array().unwrap() {
                assert!(body.get(required.as_str().unwrap()).is_some(), "{required}");
            }
            assert_eq!(properties["valuesOut"]["minItems"], 2);
            assert_eq!(
                properties["merkleProofs"]["items"]["properties"]["elements"]["maxItems"],
                8
            );
        }
    }
}
