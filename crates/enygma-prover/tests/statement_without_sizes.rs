//! A statement without sizes, with its own request, inputs and circuit types, plugs into the
//! registry's machinery unchanged: instance naming, paths, keys, prepare, prove and verify.
//! (The DvP statements are of this shape; this toy proves the path before they land.)

use ark_r1cs_std::{alloc::AllocVar, eq::EqGadget, fields::fp::FpVar};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use enygma_circuit::{Fr, Secret};
use enygma_prover::{
    keys, prepare,
    request::{parse_secret, schema, to_decimal, RequestError},
    statements::{
        AnyStatement, Circuit, Descriptor, Entry, GenerateError, Instance, RequestSpec, Statement,
    },
    MissingKeys, ProveError, Prover,
};
use rand::RngCore;
use serde_json::Value;

/// Knowledge of two non-zero factors of a public product.
struct Factors;

/// The factors are the private inputs: `Secret`s, as every statement's are.
#[derive(Clone, Debug)]
struct FactorsInputs {
    a: Secret<Fr>,
    b: Secret<Fr>,
}

struct FactorsCircuit(Option<FactorsInputs>);

impl ConstraintSynthesizer<Fr> for FactorsCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let value = |f: fn(&FactorsInputs) -> Fr| {
            let inputs = self.0.clone();
            move || {
                inputs
                    .map(|i| f(&i))
                    .ok_or(SynthesisError::AssignmentMissing)
            }
        };
        let product = FpVar::new_input(cs.clone(), value(|i| *i.a * *i.b))?;
        let a = FpVar::new_witness(cs.clone(), value(|i| *i.a))?;
        let b = FpVar::new_witness(cs, value(|i| *i.b))?;
        (a * b).enforce_equal(&product)
    }
}

impl Statement for Factors {
    type Inputs = FactorsInputs;

    fn num_public_inputs(&self, _k: Option<usize>) -> usize {
        1
    }

    /// The keys' canonical spelling (the parser also takes other cases).
    fn request_schema(&self, _k: Option<usize>) -> Value {
        schema::request_object([
            ("a", schema::field_element()),
            ("b", schema::field_element()),
        ])
    }

    /// Keys are matched case-insensitively, as Go's decoder does for the DvP requests.
    fn parse(&self, _k: Option<usize>, body: &[u8]) -> Result<FactorsInputs, RequestError> {
        let value: Value = serde_json::from_slice(body).map_err(|_| RequestError {
            field: "body".into(),
            reason: "malformed JSON".into(),
        })?;
        let field = |name: &str| {
            let found = value
                .as_object()
                .and_then(|o| o.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v)
                .ok_or_else(|| RequestError {
                    field: name.into(),
                    reason: "missing".into(),
                })?;
            parse_secret(name, found)
        };
        Ok(FactorsInputs {
            a: field("a")?,
            b: field("b")?,
        })
    }

    type CheckFailure = ZeroFactor;

    fn check(&self, inputs: &FactorsInputs) -> Result<(), ZeroFactor> {
        if *inputs.a == Fr::from(0u64) || *inputs.b == Fr::from(0u64) {
            return Err(ZeroFactor);
        }
        Ok(())
    }

    fn circuit_for_setup(&self, _k: Option<usize>) -> Circuit {
        Circuit::new(FactorsCircuit(None))
    }

    fn circuit_for_proving(&self, inputs: &FactorsInputs) -> Circuit {
        Circuit::new(FactorsCircuit(Some(inputs.clone())))
    }

    fn public_inputs(&self, inputs: &FactorsInputs) -> Vec<Fr> {
        vec![*inputs.a * *inputs.b]
    }

    fn to_request(&self, inputs: &FactorsInputs) -> Value {
        serde_json::json!({
            "a": to_decimal(&inputs.a),
            "b": to_decimal(&inputs.b),
        })
    }

    fn generate(
        &self,
        _k: Option<usize>,
        spec: &RequestSpec,
        rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        let a = 2 + rng.next_u32() as u64;
        Ok(serde_json::json!({ "A": a.to_string(), "b": (spec.amount.max(1)).to_string() }))
    }
}

/// The statement's one rule.
#[derive(Debug, thiserror::Error)]
#[error("rule 1 (non-zero factors) failed")]
struct ZeroFactor;

static FACTORS: Entry<Factors> = Entry {
    descriptor: Descriptor {
        name: "factors-2",
        sizes: None,
        prove_route: "/factors-2",
        verify_route: "/verify-factors-2",
        contract_title: "Factors2",
        hosted_by_default: true,
    },
    statement: Factors,
};

#[test]
fn a_statement_without_sizes_gets_names_keys_and_proofs() {
    let statement: &'static dyn AnyStatement = &FACTORS;
    assert_eq!(
        Instance::new(statement, Some(3)).unwrap_err().to_string(),
        "factors-2 has no size k"
    );
    let instance = Instance::new(statement, None).unwrap();
    assert_eq!(instance.key_stem(), "factors-2");
    assert_eq!(instance.contract_name(), "EnygmaFactors2Verifier");
    assert_eq!(instance.prove_path(), "/factors-2");
    assert_eq!(instance.verify_path(), "/verify-factors-2");
    assert_eq!(
        instance.development_seed_text(),
        "enygma-prover development keys v1: factors-2"
    );
    let paths = keys::KeyPaths::new(std::path::Path::new("k"), instance);
    assert_eq!(paths.proving, std::path::Path::new("k/factors-2.pk"));

    // 400 naming the field, 422 naming the rule, before any key exists.
    let bad = |body: &str| match prepare(instance, body.as_bytes()) {
        Err(e @ (ProveError::BadRequest(_) | ProveError::CheckFailed(_))) => e.to_string(),
        Err(e) => panic!("{body}: {e}"),
        Ok(_) => panic!("{body} accepted"),
    };
    assert_eq!(bad(r#"{"a": "3"}"#), "b: missing");
    assert_eq!(bad(r#"{"a": "3", "B": "x"}"#), "b: not a decimal number");
    assert_eq!(
        bad(r#"{"a": "0", "b": "5"}"#),
        "rule 1 (non-zero factors) failed"
    );

    // Development keys made, saved under the stem, loaded; a proof of a generated request.
    let dir = std::env::temp_dir().join(format!("enygma-factors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prover = Prover::load(&dir, &[instance], MissingKeys::Create).unwrap();
    assert!(dir.join("factors-2.pk").exists() && dir.join("factors-2.vk").exists());
    let mut rng = rand::thread_rng();
    let body = instance
        .generate(&RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let prepared = prepare(instance, body.as_bytes()).unwrap();
    let (response, _) = prover.prove(&prepared).unwrap();
    let public = prepared.public_inputs().unwrap();
    assert_eq!(response.public_signal, [to_decimal(&public[0])]);
    assert!(prover.verify(instance, &response).unwrap());
    let mut tampered = response.clone();
    tampered.public_signal[0] = "7".into();
    assert!(!prover.verify(instance, &tampered).unwrap());
    // Loaded again from disk: the same verifying key.
    let again = Prover::load(&dir, &[instance], MissingKeys::Refuse).unwrap();
    assert!(again.verify(instance, &response).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}
