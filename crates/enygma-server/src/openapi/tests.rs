//! The document against the code: the committed file, the registry, the parsers, and (through
//! [`assert_conforms`], used by the HTTP tests) the answers the server gives.

use super::*;
use enygma_prover::statements::{all_instances, NON_NUMERIC_K};

fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(document)
}

/// A validator for `schema` (which may `$ref` the document's components).
fn validator(schema: &Value) -> jsonschema::Validator {
    let root = json!({
        "$schema": schema::DIALECT,
        "allOf": [schema],
        "components": doc()["components"],
    });
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("invalid schema: {e}"))
}

fn resolve(value: &Value) -> &Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r.strip_prefix('#').expect("local reference");
            resolve(
                doc()
                    .pointer(pointer)
                    .unwrap_or_else(|| panic!("dangling {r}")),
            )
        }
        None => value,
    }
}

/// The operation that describes `method path`: the concrete path, else the registry's route
/// template it belongs to.
fn operation(method: &str, path: &str) -> &'static Value {
    let paths = &doc()["paths"];
    let item = paths.get(path).or_else(|| {
        let route = statements::match_path(path)?.route;
        paths.get(route)
    });
    item.and_then(|i| i.get(method.to_ascii_lowercase()))
        .unwrap_or_else(|| panic!("{method} {path} is not described"))
}

/// Panics unless the document describes this answer of `method path`: its status, its
/// required headers and its JSON body.
pub(crate) fn assert_conforms(
    method: &str,
    path: &str,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) {
    let op = operation(method, path);
    let response = op["responses"]
        .get(status.to_string())
        .map(resolve)
        .unwrap_or_else(|| panic!("{method} {path}: status {status} is not documented ({body})"));
    let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name));
    for (name, spec) in response["headers"].as_object().into_iter().flatten() {
        let spec = resolve(spec);
        match header(name) {
            Some((_, value)) => assert!(
                validator(&spec["schema"]).is_valid(&Value::from(value.as_str())),
                "{method} {path} {status}: header {name}: {value:?}"
            ),
            None => assert!(
                spec["required"] != true,
                "{method} {path} {status}: no {name}"
            ),
        }
    }
    if let Some(schema) = response.pointer("/content/application~1json/schema") {
        let body: Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{method} {path} {status}: not JSON ({e}): {body}"));
        let v = validator(schema);
        if let Err(e) = v.validate(&body) {
            panic!("{method} {path} {status}: {e}: {body}");
        }
    }
}

#[test]
fn the_committed_document_is_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = document_json();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                committed.lines().count().min(generated.lines().count()),
                |i| i,
            )
            + 1;
        panic!(
            "{} differs from the generated document (first at line {line}); regenerate it: \
             cargo run -p enygma-server -- openapi > crates/enygma-server/openapi.json",
            path.display()
        );
    }
}

/// Every route the router registers is described: every instance's prove and verify path with
/// its own schemas, every template for the other k, the service routes.
#[test]
fn every_route_is_described_with_its_instances_schemas() {
    let paths = doc()["paths"].as_object().unwrap();
    let mut expected = 0;
    for instance in all_instances() {
        let stem = instance.key_stem();
        let prove = operation("POST", &instance.prove_path());
        assert_eq!(prove["operationId"], format!("prove-{stem}"));
        assert_eq!(
            prove["requestBody"]["content"][JSON]["schema"]["$ref"],
            format!("#/components/schemas/{stem}.request")
        );
        assert_eq!(
            doc()["components"]["schemas"][format!("{stem}.request")],
            instance.request_schema()
        );
        let proof = &doc()["components"]["schemas"][format!("{stem}.proof")];
        assert_eq!(
            proof["properties"]["public_signal"]["minItems"],
            instance.num_public_inputs()
        );
        assert_eq!(
            resolve(&prove["responses"]["200"])["content"][JSON]["schema"]["$ref"],
            format!("#/components/schemas/{stem}.proof")
        );
        let verify = operation("POST", &instance.verify_path());
        assert_eq!(
            verify["requestBody"]["content"][JSON]["schema"]["$ref"],
            format!("#/components/schemas/{stem}.proof")
        );
        assert_eq!(
            verify["responses"]["404"]["content"][JSON]["schema"]["properties"]["error"]["const"],
            format!("circuit {stem} is not hosted here")
        );
        expected += 2;
    }
    for statement in statements::all() {
        let d = statement.descriptor();
        if d.sizes.is_some() {
            for route in [d.prove_route, d.verify_route] {
                assert!(
                    paths[route]["post"]["parameters"][0]["name"] == "k",
                    "{route}"
                );
                expected += 1;
            }
        }
    }
    for probe in [
        "/healthcheck",
        "/livez",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(paths[probe]["get"].is_object(), "{probe}");
        expected += 1;
    }
    assert_eq!(paths.len(), expected, "a path the router does not have");
    // Every operation id is unique, every reference resolves.
    let mut ids = std::collections::HashSet::new();
    for item in paths.values() {
        for op in item.as_object().unwrap().values() {
            assert!(
                ids.insert(op["operationId"].as_str().unwrap()),
                "{}",
                op["operationId"]
            );
            for response in op["responses"].as_object().unwrap().values() {
                resolve(response);
            }
        }
    }
}

/// The examples are valid requests (schemathesis sends them, so the 200 path is exercised);
/// what the parser refuses, the schema refuses, and unknown fields pass both.
#[test]
fn the_request_schemas_accept_and_refuse_what_the_parsers_do() {
    let r = enygma_verifier::SCALAR_FIELD_MODULUS;
    for instance in all_instances() {
        let op = operation("POST", &instance.prove_path());
        let media = &op["requestBody"]["content"][JSON];
        let example = &media["example"];
        let v = validator(&media["schema"]);
        let parses = |body: &Value| enygma_prover::prepare(instance, body.to_string().as_bytes());
        assert!(
            v.is_valid(example),
            "{instance}: example does not match the schema"
        );
        assert!(
            parses(example).is_ok(),
            "{instance}: example is not a valid request"
        );

        let mut extra = example.clone();
        extra["comment"] = "ignored".into();
        assert!(v.is_valid(&extra) && parses(&extra).is_ok(), "{instance}");

        // A required field is one the parser cannot do without. The payment statements require
        // every field and are made of decimal field elements only, so for them the schema and
        // the parser must agree on every mutation below; the DvP statements' Go structs have
        // optional arrays whose lengths must match each other (which JSON Schema cannot say),
        // so only their required fields are checked here, the rest by their own tests.
        let request_schema = instance.request_schema();
        let required: Vec<&str> = request_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let strict = required.len() == request_schema["properties"].as_object().unwrap().len();
        let fields: Vec<String> = example.as_object().unwrap().keys().cloned().collect();
        for field in &fields {
            let mut without = example.clone();
            without.as_object_mut().unwrap().remove(field);
            if required.contains(&field.as_str()) {
                assert!(!v.is_valid(&without), "{instance}: {field} not required");
                assert!(parses(&without).is_err(), "{instance}: {field}");
            } else {
                assert!(!strict, "{instance}: {field} not required");
                continue;
            }

            // The rest is about fields made of decimal field elements (every payment field);
            // the DvP requests' addresses, tree numbers and nested objects have other shapes,
            // which their statements' own tests refuse field by field.
            let field_schema = &request_schema["properties"][field];
            let mut leaf = field_schema;
            while leaf["type"] == "array" {
                leaf = &leaf["items"];
            }
            if leaf["$ref"] != "#/components/schemas/FieldElement" {
                continue;
            }

            // The first field element of the field, replaced by something not canonical.
            let pointer = {
                let mut p = format!("/{field}");
                let mut at = &example[field];
                while let Some(first) = at.as_array().and_then(|a| a.first()) {
                    p.push_str("/0");
                    at = first;
                }
                p
            };
            for bad in [
                json!(r),
                json!("01"),
                json!("-1"),
                json!(""),
                json!(7),
                json!(" 1"),
            ] {
                let mut body = example.clone();
                *body.pointer_mut(&pointer).unwrap() = bad.clone();
                assert!(!v.is_valid(&body), "{instance}: {pointer} = {bad}");
                assert!(parses(&body).is_err(), "{instance}: {pointer} = {bad}");
            }
            if example[field].is_array() && field_schema.get("minItems").is_some() {
                let mut shorter = example.clone();
                shorter[field].as_array_mut().unwrap().pop();
                assert!(!v.is_valid(&shorter), "{instance}: {field} shorter");
                assert!(parses(&shorter).is_err(), "{instance}: {field} shorter");
            }
        }
    }
}

#[test]
fn the_proof_schemas_take_proofs_of_their_instance_only() {
    let t2 = statements::instance("transfer", Some(2)).unwrap();
    let v = validator(&schema_ref(&proof_name(&t2)));
    let signal: Vec<String> = (0..t2.num_public_inputs()).map(|i| i.to_string()).collect();
    let proof = json!({
        "pi_a": ["1", "2"],
        "pi_b": [["0", "1"], ["2", "3"]],
        "pi_c": ["1", "2"],
        "public_signal": signal,
    });
    assert!(v.is_valid(&proof));
    let mut longer = proof.clone();
    longer["public_signal"]
        .as_array_mut()
        .unwrap()
        .push("1".into());
    assert!(!v.is_valid(&longer));
    let mut extra = proof.clone();
    extra["tag"] = "x".into();
    assert!(
        !v.is_valid(&extra),
        "the verify routes refuse unknown fields"
    );
    let mut above_p = proof;
    above_p["pi_a"][0] = enygma_verifier::BASE_FIELD_MODULUS.into();
    assert!(!v.is_valid(&above_p));
}

/// The other-k operations' parameter is exactly what `parse_k` does not read as a size.
#[test]
fn the_other_k_parameter_is_what_the_reference_refuses() {
    for statement in statements::all() {
        let d = statement.descriptor();
        let Some(sizes) = &d.sizes else { continue };
        let parameter = &doc()["paths"][d.prove_route]["post"]["parameters"][0]["schema"];
        let v = validator(parameter);
        for k in [
            "2",
            "6",
            "+4",
            "06",
            "0006",
            "+02",
            "7",
            "1",
            "0",
            "-3",
            "-0",
            "abc",
            "+",
            "4 ",
            " 4",
            "4.0",
            "99999999999999999999",
            "%36",
            "\u{0664}",
        ] {
            let refused = statements::parse_k(sizes, k).is_err();
            assert_eq!(v.is_valid(&Value::from(k)), refused, "{} k={k:?}", d.name);
        }
        let answers = &doc()["paths"][d.prove_route]["post"]["responses"]["400"]["content"][JSON]
            ["schema"]["properties"]["error"]["enum"];
        assert_eq!(answers[0], NON_NUMERIC_K);
        assert_eq!(answers[1], statements::unsupported_k_message(sizes));
    }
}
