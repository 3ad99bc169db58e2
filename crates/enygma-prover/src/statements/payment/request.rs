//! The reference's transfer, deposit and withdraw requests, parsed strictly.
//!
//! All three share the transfer's fields. A deposit adds `hash`, `pk`, `address` and `saltOut`;
//! a withdraw adds `hashes`, `sk_deposits`, `v_per_deposit` and `saltsIn` (10 elements each) and
//! `address`: the JSON names of the reference's Go request structs (its Postman samples for
//! these routes are stale).
//!
//! The reference reduces values ≥ r, leading zeros and signs modulo r and accepts them, while
//! echoing the raw strings in `public_signal`; it parses `sender_id` and `block_number` with Go's
//! base-0 rules (hex, octal), truncates long arrays and panics on short ones. Here every number
//! must be a canonical decimal string (no sign, no leading zero, below r), every array exactly k
//! long, every field present. Each error names its field (`tx_values[3]: not a decimal number`)
//! and never repeats the value, which may be secret. Unknown fields are ignored, as the
//! reference's JSON binding ignores them.
//!
//! The statements with the hidden sender's nullifier take the same request, but `nullifier` may
//! be left out: it is then `Poseidon(Poseidon(R, sk) mod L, block_number)`, computed from the
//! request's own `previous_sender_random_value`, `secret_key` and `block_number`. A given
//! `nullifier` must be that value (check 12 refuses another, the reference's included).

use enygma_circuit::{
    dvp::WITHDRAW_SLOTS,
    payment::{sender_shared_secret, Deposit, Dvp, Kind, NullifierRule, PaymentInputs, Withdraw},
    Fr, Secret,
};
use serde_json::{Map, Value};

use crate::request::{
    error, parse_array, parse_field_element, parse_object, parse_secret, parse_secret_array,
    schema, to_decimal, RequestError,
};

/// How a request field is shaped, for its JSON Schema.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// One field element.
    Scalar,
    /// k field elements, one per member of the anonymity set.
    PerMember,
    /// k points `[x, y]`, one per member.
    PointPerMember,
    /// One field element per withdraw slot ([`WITHDRAW_SLOTS`]).
    PerSlot,
}

/// The fields every payment request has, in the parser's order.
const TRANSFER_FIELDS: &[(&str, Shape)] = &[
    ("sender_id", Shape::Scalar),
    ("anonymity_set", Shape::PerMember),
    ("secret_key", Shape::Scalar),
    ("shared_secrets", Shape::PerMember),
    ("hashed_shared_secrets", Shape::PerMember),
    ("public_keys", Shape::PerMember),
    ("previous_sender_balance", Shape::Scalar),
    ("previous_sender_random_value", Shape::Scalar),
    ("previous_commits", Shape::PointPerMember),
    ("tx_commits", Shape::PointPerMember),
    ("tx_values", Shape::PerMember),
    ("tx_random_values", Shape::PerMember),
    ("sender_tx_value", Shape::Scalar),
    ("nullifier", Shape::Scalar),
    ("block_number", Shape::Scalar),
    ("message_tags", Shape::PerMember),
];

/// What a deposit adds.
const DEPOSIT_FIELDS: &[(&str, Shape)] = &[
    ("hash", Shape::Scalar),
    ("pk", Shape::Scalar),
    ("address", Shape::Scalar),
    ("saltOut", Shape::Scalar),
];

/// What a withdraw adds.
const WITHDRAW_FIELDS: &[(&str, Shape)] = &[
    ("hashes", Shape::PerSlot),
    ("sk_deposits", Shape::PerSlot),
    ("v_per_deposit", Shape::PerSlot),
    ("address", Shape::Scalar),
    ("saltsIn", Shape::PerSlot),
];

/// The JSON Schema of a `kind` request for size `k` whose nullifier follows `rule`: what
/// [`parse_request_with`] accepts (every field present, `nullifier` optional for the hidden
/// sender's rule; canonical decimals below r, arrays of exactly k, or 10 per withdraw slot;
/// unknown fields allowed).
pub fn request_schema(kind: Kind, rule: NullifierRule, k: usize) -> Value {
    let extra = match kind {
        Kind::Transfer => &[][..],
        Kind::Deposit => DEPOSIT_FIELDS,
        Kind::Withdraw => WITHDRAW_FIELDS,
    };
    let fields = TRANSFER_FIELDS.iter().chain(extra).map(|&(name, shape)| {
        let field = match shape {
            Shape::Scalar => schema::field_element(),
            Shape::PerMember => schema::array(schema::field_element(), k),
            Shape::PointPerMember => schema::array(schema::array(schema::field_element(), 2), k),
            Shape::PerSlot => schema::array(schema::field_element(), WITHDRAW_SLOTS),
        };
        (name, field)
    });
    let mut object = schema::request_object(fields);
    if rule == NullifierRule::HiddenSender {
        if let Some(required) = object["required"].as_array_mut() {
            required.retain(|name| name != "nullifier");
        }
    }
    object
}

struct Fields<'a> {
    object: &'a Map<String, Value>,
    k: usize,
}

impl<'a> Fields<'a> {
    fn get(&self, name: &str) -> Result<&'a Value, RequestError> {
        self.object.get(name).ok_or_else(|| error(name, "missing"))
    }

    fn scalar(&self, name: &str) -> Result<Fr, RequestError> {
        parse_field_element(name, self.get(name)?)
    }

    fn optional_scalar(&self, name: &str) -> Result<Option<Fr>, RequestError> {
        self.object
            .get(name)
            .map(|v| parse_field_element(name, v))
            .transpose()
    }

    fn scalars(&self, name: &str) -> Result<Vec<Fr>, RequestError> {
        parse_array(name, self.k, self.get(name)?, parse_field_element)
    }

    fn slots(&self, name: &str) -> Result<Vec<Fr>, RequestError> {
        parse_array(name, WITHDRAW_SLOTS, self.get(name)?, parse_field_element)
    }

    fn secret(&self, name: &str) -> Result<Secret<Fr>, RequestError> {
        parse_secret(name, self.get(name)?)
    }

    fn secret_scalars(&self, name: &str) -> Result<Secret<Vec<Fr>>, RequestError> {
        parse_secret_array(name, self.k, self.get(name)?)
    }

    fn secret_slots(&self, name: &str) -> Result<Secret<Vec<Fr>>, RequestError> {
        parse_secret_array(name, WITHDRAW_SLOTS, self.get(name)?)
    }

    fn points(&self, name: &str) -> Result<Vec<(Fr, Fr)>, RequestError> {
        parse_array(name, self.k, self.get(name)?, |field, v| {
            let xy = parse_array(field, 2, v, parse_field_element)?;
            Ok((xy[0], xy[1]))
        })
    }
}

/// Parses the body of `/generateProof{Transfer,Deposit,Withdraw}-{k}`. The private values go
/// into [`Secret`]s; the JSON's strings are wiped when `object` drops, whatever the outcome.
pub fn parse_request(kind: Kind, k: usize, body: &[u8]) -> Result<PaymentInputs, RequestError> {
    parse_request_with(kind, NullifierRule::Reference, k, body)
}

/// Parses the body of a payment request whose nullifier follows `rule`; for the hidden sender's
/// rule a missing `nullifier` is computed (see the module documentation).
pub fn parse_request_with(
    kind: Kind,
    rule: NullifierRule,
    k: usize,
    body: &[u8],
) -> Result<PaymentInputs, RequestError> {
    let object = parse_object(body)?;
    let f = Fields { object: &object, k };
    let nullifier = match rule {
        NullifierRule::Reference => Some(f.scalar("nullifier")?),
        NullifierRule::HiddenSender => f.optional_scalar("nullifier")?,
    };
    let mut inputs = PaymentInputs {
        sender_id: f.secret("sender_id")?,
        anonymity_set: f.scalars("anonymity_set")?,
        secret_key: f.secret("secret_key")?,
        shared_secrets: f.secret_scalars("shared_secrets")?,
        hashed_shared_secrets: f.scalars("hashed_shared_secrets")?,
        public_keys: f.scalars("public_keys")?,
        previous_sender_balance: f.secret("previous_sender_balance")?,
        previous_sender_random_value: f.secret("previous_sender_random_value")?,
        previous_commits: f.points("previous_commits")?,
        tx_commits: f.points("tx_commits")?,
        tx_values: f.secret_scalars("tx_values")?,
        tx_random_values: f.secret_scalars("tx_random_values")?,
        sender_tx_value: f.secret("sender_tx_value")?,
        // Set below, once the values it is computed from are parsed.
        nullifier: Fr::from(0u64),
        block_number: f.scalar("block_number")?,
        message_tags: f.scalars("message_tags")?,
        dvp: match kind {
            Kind::Transfer => Dvp::None,
            Kind::Deposit => Dvp::Deposit(Deposit {
                hash: f.scalar("hash")?,
                pk: f.secret("pk")?,
                address: f.secret("address")?,
                salt_out: f.secret("saltOut")?,
            }),
            Kind::Withdraw => Dvp::Withdraw(Withdraw {
                hashes: f.slots("hashes")?,
                sk_deposits: f.secret_slots("sk_deposits")?,
                v_per_deposit: f.secret_slots("v_per_deposit")?,
                address: f.secret("address")?,
                salts_in: f.secret_slots("saltsIn")?,
            }),
        },
    };
    inputs.nullifier = match nullifier {
        Some(given) => given,
        // Check 4 makes shared_secrets[s] this value, so the nullifier needs neither s nor the
        // request's shared_secrets: a request whose shared secret is wrong is refused by check 4.
        None => {
            let (r, sk) = (*inputs.previous_sender_random_value, *inputs.secret_key);
            rule.nullifier(&sender_shared_secret(&r, &sk), &inputs.block_number)
        }
    };
    Ok(inputs)
}

/// The request body for `inputs`, in the reference's field names: what `enygma gen-request`
/// writes. Serializing and parsing it again gives the same inputs.
pub fn to_request_json(inputs: &PaymentInputs) -> Value {
    let scalars = |xs: &[Fr]| Value::from(xs.iter().map(to_decimal).collect::<Vec<_>>());
    let points = |ps: &[(Fr, Fr)]| {
        Value::from(
            ps.iter()
                .map(|(x, y)| Value::from(vec![to_decimal(x), to_decimal(y)]))
                .collect::<Vec<_>>(),
        )
    };
    let mut body = serde_json::json!({
        "sender_id": to_decimal(&inputs.sender_id),
        "anonymity_set": scalars(&inputs.anonymity_set),
        "secret_key": to_decimal(&inputs.secret_key),
        "shared_secrets": scalars(&inputs.shared_secrets),
        "hashed_shared_secrets": scalars(&inputs.hashed_shared_secrets),
        "public_keys": scalars(&inputs.public_keys),
        "previous_sender_balance": to_decimal(&inputs.previous_sender_balance),
        "previous_sender_random_value": to_decimal(&inputs.previous_sender_random_value),
        "previous_commits": points(&inputs.previous_commits),
        "tx_commits": points(&inputs.tx_commits),
        "tx_values": scalars(&inputs.tx_values),
        "tx_random_values": scalars(&inputs.tx_random_values),
        "sender_tx_value": to_decimal(&inputs.sender_tx_value),
        "nullifier": to_decimal(&inputs.nullifier),
        "block_number": to_decimal(&inputs.block_number),
        "message_tags": scalars(&inputs.message_tags),
    });
    let extra = match &inputs.dvp {
        Dvp::None => serde_json::json!({}),
        Dvp::Deposit(d) => serde_json::json!({
            "hash": to_decimal(&d.hash),
            "pk": to_decimal(&d.pk),
            "address": to_decimal(&d.address),
            "saltOut": to_decimal(&d.salt_out),
        }),
        Dvp::Withdraw(w) => serde_json::json!({
            "hashes": scalars(&w.hashes),
            "sk_deposits": scalars(&w.sk_deposits),
            "v_per_deposit": scalars(&w.v_per_deposit),
            "address": to_decimal(&w.address),
            "saltsIn": scalars(&w.salts_in),
        }),
    };
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn parse_transfer_request(k: usize, body: &[u8]) -> Result<PaymentInputs, RequestError> {
        parse_request(Kind::Transfer, k, body)
    }

    fn sample() -> PaymentInputs {
        sample_of(Kind::Transfer)
    }

    fn sample_of(kind: Kind) -> PaymentInputs {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        PaymentInputs::generate(kind, 3, 1, 5, 10, &mut rng)
    }

    fn with(edit: impl Fn(&mut Value)) -> Result<PaymentInputs, RequestError> {
        let mut v = to_request_json(&sample());
        edit(&mut v);
        parse_transfer_request(3, v.to_string().as_bytes())
    }

    #[test]
    fn round_trips() {
        assert_eq!(with(|_| {}).unwrap(), sample());
        for kind in [Kind::Transfer, Kind::Deposit, Kind::Withdraw] {
            let inputs = sample_of(kind);
            let body = to_request_json(&inputs).to_string();
            assert_eq!(
                parse_request(kind, 3, body.as_bytes()).unwrap(),
                inputs,
                "{kind}"
            );
        }
    }

    /// The schema and the parser agree: the schema's fields are the generated request's, each
    /// one the parser requires (all but the hidden sender's `nullifier`), and each array of the
    /// length the parser wants.
    #[test]
    fn the_schema_describes_what_the_parser_requires() {
        for (kind, rule) in [Kind::Transfer, Kind::Deposit, Kind::Withdraw]
            .into_iter()
            .flat_map(|kind| NullifierRule::ALL.map(|rule| (kind, rule)))
        {
            let parse_request = |kind, k, body: &[u8]| parse_request_with(kind, rule, k, body);
            let body = to_request_json(&sample_of(kind));
            let schema = request_schema(kind, rule, 3);
            let required: Vec<&str> = schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let mut fields: Vec<&str> = body
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .filter(|&name| rule == NullifierRule::Reference || name != "nullifier")
                .collect();
            let mut sorted = required.clone();
            sorted.sort();
            fields.sort();
            assert_eq!(sorted, fields, "{kind}");
            for name in required {
                let property = &schema["properties"][name];
                let mut without = body.clone();
                without.as_object_mut().unwrap().remove(name);
                assert_eq!(
                    parse_request(kind, 3, without.to_string().as_bytes())
                        .unwrap_err()
                        .to_string(),
                    format!("{name}: missing"),
                    "{kind}"
                );
                if property["type"] == "array" {
                    let len = property["minItems"].as_u64().unwrap() as usize;
                    assert_eq!(property["maxItems"], len, "{kind} {name}");
                    assert_eq!(body[name].as_array().unwrap().len(), len, "{kind} {name}");
                    let mut longer = body.clone();
                    longer[name]
                        .as_array_mut()
                        .unwrap()
                        .push(body[name][0].clone());
                    assert_eq!(
                        parse_request(kind, 3, longer.to_string().as_bytes())
                            .unwrap_err()
                            .to_string(),
                        format!("{name}: expected {len} elements, got {}", len + 1),
                        "{kind}"
                    );
                } else {
                    assert_eq!(
                        property["$ref"], "#/components/schemas/FieldElement",
                        "{name}"
                    );
                }
            }
        }
    }

    /// The hidden sender's request may leave `nullifier` out: it is then the one check 12 wants,
    /// computed from the sender's random value and key; a given one is taken as given, for check
    /// 12 to judge.
    #[test]
    fn the_hidden_senders_nullifier_may_be_left_out() {
        let rule = NullifierRule::HiddenSender;
        for kind in [Kind::Transfer, Kind::Deposit, Kind::Withdraw] {
            let reference = sample_of(kind);
            let hidden = enygma_circuit::payment::Spend::of(&reference).inputs_with(rule);
            let mut body = to_request_json(&hidden);
            let parse = |body: &Value| {
                parse_request_with(kind, rule, 3, body.to_string().as_bytes()).unwrap()
            };
            assert_eq!(parse(&body), hidden, "{kind}");
            // The reference's request, as a gateway sends it today, with its nullifier.
            let todays = to_request_json(&reference);
            assert_eq!(parse(&todays).nullifier, reference.nullifier, "{kind}");
            assert_eq!(
                parse(&todays).check_with(rule).unwrap_err().to_string(),
                "check 12 (nullifier) failed"
            );
            body.as_object_mut().unwrap().remove("nullifier");
            let computed = parse(&body);
            assert_eq!(computed, hidden, "{kind}");
            assert_eq!(computed.check_with(rule), Ok(1), "{kind}");
            // The reference's statement still requires it.
            assert_eq!(
                parse_request(kind, 3, body.to_string().as_bytes())
                    .unwrap_err()
                    .to_string(),
                "nullifier: missing"
            );
        }
    }

    #[test]
    fn deposit_and_withdraw_fields_are_required_and_named() {
        let parse = |kind: Kind, edit: &dyn Fn(&mut Value)| {
            let mut v = to_request_json(&sample_of(kind));
            edit(&mut v);
            parse_request(kind, 3, v.to_string().as_bytes())
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let remove = |name: &'static str| {
            move |v: &mut Value| {
                v.as_object_mut().unwrap().remove(name);
            }
        };
        for field in ["hash", "pk", "address", "saltOut"] {
            assert_eq!(
                parse(Kind::Deposit, &remove(field)),
                Err(format!("{field}: missing"))
            );
        }
        for field in [
            "hashes",
            "sk_deposits",
            "v_per_deposit",
            "address",
            "saltsIn",
        ] {
            assert_eq!(
                parse(Kind::Withdraw, &remove(field)),
                Err(format!("{field}: missing"))
            );
        }
        assert_eq!(
            parse(Kind::Withdraw, &|v| {
                v["hashes"].as_array_mut().unwrap().pop();
            }),
            Err("hashes: expected 10 elements, got 9".into())
        );
        assert_eq!(
            parse(Kind::Withdraw, &|v| v["v_per_deposit"][4] = "-1".into()),
            Err("v_per_deposit[4]: not a decimal number".into())
        );
        assert_eq!(
            parse(Kind::Deposit, &|v| v["saltOut"] = 7.into()),
            Err("saltOut: expected a decimal string".into())
        );
        // The stale Postman spelling is not accepted in place of the struct's.
        assert_eq!(
            parse(Kind::Withdraw, &|v| {
                let salts = v.as_object_mut().unwrap().remove("saltsIn").unwrap();
                v["salts_in"] = salts;
            }),
            Err("saltsIn: missing".into())
        );
        // A transfer body is not a deposit.
        let transfer = to_request_json(&sample()).to_string();
        assert_eq!(
            parse_request(Kind::Deposit, 3, transfer.as_bytes())
                .unwrap_err()
                .to_string(),
            "hash: missing"
        );
    }

    #[test]
    fn errors_name_the_field() {
        let cases: Vec<(crate::statements::Mutation, &str)> = vec![
            (
                Box::new(|v| v["tx_values"][2] = "12a".into()),
                "tx_values[2]: not a decimal number",
            ),
            (
                Box::new(|v| v["tx_values"][2] = "-1".into()),
                "tx_values[2]: not a decimal number",
            ),
            (
                Box::new(|v| v["tx_values"][2] = "0x10".into()),
                "tx_values[2]: not a decimal number",
            ),
            (
                Box::new(|v| v["block_number"] = "0123".into()),
                "block_number: leading zeros are not allowed",
            ),
            (
                Box::new(|v| v["block_number"] = 12.into()),
                "block_number: expected a decimal string",
            ),
            (
                Box::new(|v| v["secret_key"] = "".into()),
                "secret_key: not a decimal number",
            ),
            (
                Box::new(|v| {
                    v["nullifier"] =
                        "21888242871839275222246405745257275088548364400416034343698204186575808495617".into()
                }),
                "nullifier: not below the field modulus r",
            ),
            (
                Box::new(|v| v["anonymity_set"].as_array_mut().unwrap().push("1".into())),
                "anonymity_set: expected 3 elements, got 4",
            ),
            (
                Box::new(|v| {
                    v["message_tags"].as_array_mut().unwrap().pop();
                }),
                "message_tags: expected 3 elements, got 2",
            ),
            (
                Box::new(|v| {
                    v.as_object_mut().unwrap().remove("sender_tx_value");
                }),
                "sender_tx_value: missing",
            ),
            (
                Box::new(|v| v["tx_commits"][1] = Value::from(vec!["1"])),
                "tx_commits[1]: expected 2 elements, got 1",
            ),
            (
                Box::new(|v| v["previous_commits"][0][1] = "x".into()),
                "previous_commits[0][1]: not a decimal number",
            ),
            (
                Box::new(|v| v["shared_secrets"] = "1".into()),
                "shared_secrets: expected an array",
            ),
        ];
        for (edit, expected) in cases {
            assert_eq!(with(edit).unwrap_err().to_string(), expected);
        }
        assert_eq!(
            parse_transfer_request(3, b"[1]").unwrap_err().to_string(),
            "body: expected a JSON object"
        );
        assert!(parse_transfer_request(3, b"{\"a\":")
            .unwrap_err()
            .to_string()
            .starts_with("body: malformed JSON"));
    }

    #[test]
    fn errors_never_repeat_the_value() {
        let secret = "98765432109876543210x";
        let err = with(|v| v["secret_key"] = secret.into())
            .unwrap_err()
            .to_string();
        assert!(!err.contains("9876"), "{err}");
    }
}
