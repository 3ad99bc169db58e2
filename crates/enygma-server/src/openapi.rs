//! The OpenAPI 3.1 description of the service, generated from the statement registry (every
//! instance's routes, request and proof schemas, `enygma_prover::statements`) and from the
//! server's error model (what each stage of [`crate::app`]'s pipeline answers). No path is
//! written by hand. Served at `GET /openapi.json` and committed as
//! `crates/enygma-server/openapi.json`; a test keeps the two equal. Regenerate with
//! `cargo run -p enygma-server -- openapi > crates/enygma-server/openapi.json`.
//!
//! Choices:
//! - **Concrete paths per instance** (`/generateProofTransfer-6`): a body's array lengths and a
//!   proof's number of public inputs depend on k, which a templated path could only express as
//!   a `oneOf` that validators and schemathesis cannot tie to the path. Each operation has the
//!   exact schemas of its instance and a valid example request (generated with a fixed seed by
//!   the statement's own generator).
//! - **Every other k**: beside the concrete paths, each sized route's template
//!   (`/generateProofTransfer-{k}`) is an operation whose `k` is anything that is not one of
//!   the sizes (Go's `Atoi` reads `+4` and `06` as sizes; the parameter's pattern excludes what
//!   it reads as one), answering the reference's 400 messages. OpenAPI matches concrete paths
//!   before templated ones.
//! - **One document for every replica**: the whole registry is described whatever
//!   `--circuits` hosts; every instance operation lists the 404 its route answers when the
//!   instance is not hosted here.
//! - **`/openapi.json` is in the API token scope**, like the proving routes: with
//!   `--auth-token-file` it needs a token (an unauthenticated client learns nothing about the
//!   routes, as for unknown paths); without tokens it is open. It holds nothing secret either
//!   way: the same bytes as the committed file.
//! - **Statuses** are those the code answers on each route, stage by stage (see
//!   [`crate::app::router`]): 401 from [`crate::auth`] (only with tokens, hence the optional
//!   security requirement `{}`), 400 k / 404 not hosted / 503 loading from the path and
//!   readiness, 413 / 408 from reading the body, 503 early shed, 400 / 422 from parsing and the
//!   checks, 503 / 504 from admission, 500 from
//!   the prover, and 431 from the transport (a request head over `--max-header-bytes`, no body).
//!   Not described: 404 `404 page not found` (text) for a path that is no route, and 405 with
//!   `Allow` for a method a route does not take.

use std::sync::OnceLock;

use enygma_prover::request::schema;
use enygma_prover::statements::{self, Instance, RequestSpec};
use rand::SeedableRng;
use serde_json::{json, Map, Value};

/// The committed document's path, relative to this crate.
#[cfg(test)]
pub const COMMITTED_PATH: &str = "openapi.json";

/// The seed of the example requests: `enygma gen-request`-style bodies, the same every time.
const EXAMPLE_SEED: u64 = 0x0a11_0a91;

const JSON: &str = "application/json";
const API_TOKEN: &str = "apiToken";
const METRICS_TOKEN: &str = "metricsToken";

/// The document, pretty-printed with a final newline: the committed file's bytes and what
/// `GET /openapi.json` answers. Built once.
pub fn document_json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut text = serde_json::to_string_pretty(&document()).expect("JSON values serialize");
        text.push('\n');
        text
    })
}

/// The OpenAPI 3.1 document of the service.
pub fn document() -> Value {
    let mut paths = Map::new();
    let mut schemas = schema::definitions();
    schemas.insert("Error".into(), error_schema());
    for statement in statements::all() {
        let instances = statements::instances_of(statement);
        for instance in &instances {
            let stem = instance.key_stem();
            schemas.insert(request_name(instance), instance.request_schema());
            schemas.insert(proof_name(instance), instance.proof_schema());
            paths.insert(
                instance.prove_path(),
                json!({ "post": prove_operation(instance, &stem) }),
            );
            paths.insert(
                instance.verify_path(),
                json!({ "post": verify_operation(instance, &stem) }),
            );
        }
        let d = statement.descriptor();
        if let Some(sizes) = &d.sizes {
            for (route, action) in [(d.prove_route, "prove"), (d.verify_route, "verify")] {
                paths.insert(
                    route.to_string(),
                    json!({ "post": other_k_operation(d.name, action, sizes) }),
                );
            }
        }
    }
    for (path, operation) in service_operations() {
        paths.insert(path.into(), json!({ "get": operation }));
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": schema::DIALECT,
        "info": {
            "title": "enygma-prover",
            "version": env!("CARGO_PKG_VERSION"),
            "description": INFO,
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
        },
        "tags": tags(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": shared_responses(),
            "parameters": { "IdempotencyKey": idempotency_key() },
            "headers": headers(),
            "securitySchemes": {
                API_TOKEN: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token of --auth-token-file, when the server runs with \
                        one: required on every route but /healthcheck, /livez, /readyz and \
                        /metrics. Without --auth-token-file these routes are open.",
                },
                METRICS_TOKEN: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token of --metrics-token-file, when the server runs with \
                        one: required on /metrics (the API tokens do not open it). With \
                        --auth-token-file and no --metrics-token-file, /metrics answers 401 to \
                        every request here; the admin listener (--admin-bind) serves it \
                        without a token.",
                },
            },
        },
    })
}

const INFO: &str = "Groth16 prove service for the Rayls Enygma statements, a drop-in \
replacement for rayls-sovereign-gnark-api: the same routes and JSON, with a cap on proofs in \
flight, a bounded queue and load shedding. Every prove and verify route of every statement \
instance is listed with its exact request and proof schemas. Error bodies are \
{\"error\": message}; messages name fields and checks, never values. Every response carries \
X-Request-Id. Not described as operations: a path that is no route answers 404 with the text \
`404 page not found`; a method a route does not take answers 405 with Allow; a request head \
over --max-header-bytes answers 431 on any route (HTTP/1.1).";

fn tags() -> Value {
    let mut tags: Vec<Value> = statements::all()
        .map(|s| {
            let d = s.descriptor();
            let sizes = d.sizes.as_ref().map_or(String::new(), |r| {
                format!(" (k = {} to {})", r.start(), r.end())
            });
            json!({
                "name": d.name,
                "description": format!("The {} statement{sizes}: prove and verify.", d.name),
            })
        })
        .collect();
    tags.push(json!({ "name": "service", "description": "Probes, metrics and this document." }));
    Value::from(tags)
}

fn request_name(instance: &Instance) -> String {
    format!("{}.request", instance.key_stem())
}

fn proof_name(instance: &Instance) -> String {
    format!("{}.proof", instance.key_stem())
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("{}{name}", schema::REF_PREFIX) })
}

fn response_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/responses/{name}") })
}

fn header_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/headers/{name}") })
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["error"],
        "properties": { "error": { "type": "string" } },
        "additionalProperties": false,
    })
}

/// An `{"error": message}` body whose message is one of `messages`.
fn error_with(messages: &[String]) -> Value {
    let message = match messages {
        [one] => json!({ "type": "string", "const": one }),
        many => json!({ "type": "string", "enum": many }),
    };
    json!({
        "type": "object",
        "required": ["error"],
        "properties": { "error": message },
        "additionalProperties": false,
    })
}

/// A response with a JSON body of `schema` and the request id, plus `headers`.
fn json_response(description: &str, schema: Value, headers: &[&str]) -> Value {
    let mut all = Map::new();
    for name in std::iter::once(&"X-Request-Id").chain(headers) {
        all.insert(name.to_string(), header_ref(name));
    }
    json!({
        "description": description,
        "headers": all,
        "content": { JSON: { "schema": schema } },
    })
}

fn headers() -> Value {
    json!({
        "X-Request-Id": {
            "description": "The request's id: the incoming X-Request-Id when it is 1 to 128 of \
                A-Z a-z 0-9 - _ . : / + = @, else a generated one. Also in the log line.",
            "required": true,
            "schema": { "type": "string", "pattern": "^[A-Za-z0-9_.:/+=@-]{1,128}$" },
        },
        "Retry-After": {
            "description": "Seconds until a newcomer would find room (1 to 60), or until the \
                keys should be loaded.",
            "required": true,
            "schema": { "type": "string", "pattern": "^[0-9]+$" },
        },
        "Server-Timing": {
            "description": "Where the time went, in milliseconds: queue;dur=.., \
                witness;dur=.., prove;dur=.., total;dur=.. (on errors only the parts that \
                happened).",
            "required": true,
            "schema": { "type": "string" },
        },
        "Enygma-Key-Sha256": {
            "description": "The SHA-256 (hex) of the proving key file the proof was made with: \
                which verifying key it is for while keys are replaced (SIGHUP); /readyz on the \
                admin listener gives each loaded key's.",
            "required": true,
            "schema": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
        },
        "Idempotent-Replayed": {
            "description": "`true` on an answer an earlier request with the same \
                Idempotency-Key and body caused: kept and given again, or waited for while it \
                was in flight. Absent on the answer of the request that was proved.",
            "required": false,
            "schema": { "type": "string", "enum": ["true"] },
        },
        "WWW-Authenticate": {
            "description": "Bearer realm=\"enygma-prover\", with error=\"invalid_token\" when \
                a token was sent but is not accepted (RFC 6750).",
            "required": true,
            "schema": { "type": "string", "pattern": "^Bearer realm=" },
        },
    })
}

/// The error answers several operations share, by status.
fn shared_responses() -> Value {
    let error = schema_ref("Error");
    json!({
        "BadRequest": json_response(
            "The body is not a well-formed request of this route: malformed JSON, a missing or \
             mis-shaped field, a number that is not a canonical decimal below the modulus, an \
             array of the wrong length (the message names the field, never its value); or the \
             body could not be read.",
            error.clone(), &[]),
        "Unauthorized": json_response(
            "Only when the server runs with bearer tokens: the token is missing or not \
             accepted. Checked before anything else.",
            error.clone(), &["WWW-Authenticate"]),
        "RequestTimeout": json_response(
            "The body did not arrive within --body-read-timeout; the connection closes.",
            error.clone(), &[]),
        "PayloadTooLarge": json_response(
            "The body is larger than --body-limit (65536 bytes by default).",
            error.clone(), &[]),
        "ProveBadRequest": json_response(
            "The body is not a well-formed request of this route (the message names the field, \
             never its value), the body could not be read, or the Idempotency-Key header is not \
             1 to 255 visible ASCII characters sent once.",
            error.clone(), &["Idempotent-Replayed"]),
        "CheckFailed": json_response(
            "A well-formed request that fails one of the statement's rules, found by the native \
             checks before any proving work (the message names the rule); or an Idempotency-Key \
             this caller already sent with another body.",
            error.clone(), &["Idempotent-Replayed"]),
        "RequestHeaderFieldsTooLarge": {
            "description": "The request head is larger than --max-header-bytes (HTTP/1.1; \
                HTTP/2 resets the stream). Answered by the transport, without a body.",
        },
        "Internal": json_response(
            "The prover or verifier failed unexpectedly (never expected).",
            error.clone(), &[]),
        "Unavailable": json_response(
            "Shed at once: the queue is full, or the expected wait is longer than \
             --queue-timeout; or the request checks' own queue is full; or the keys are still \
             loading. Retry after Retry-After.",
            error.clone(), &["Retry-After"]),
        "TooManyFailedAuthentications": json_response(
            "A missing or wrong token from a client address that has spent its allowance of \
             failed authentications (--auth-failure-burst, --auth-failure-rate): answered \
             instead of 401, and the connection is closed. A valid token is never refused. \
             Retry after Retry-After.",
            error.clone(), &["Retry-After"]),
        "QueueTimeout": json_response(
            "Waited longer than --queue-timeout for a slot.",
            error, &[]),
    })
}

/// The API token scope: a token when the server has `--auth-token-file`, else nothing.
fn api_security() -> Value {
    json!([{ API_TOKEN: [] }, {}])
}

fn not_hosted(instance: &Instance) -> Value {
    json_response(
        "This server does not host the instance (--circuits, or retired from its list file \
         since): route it to a replica that does.",
        error_with(&[format!("circuit {instance} is not hosted here")]),
        &[],
    )
}

fn example_request(instance: &Instance) -> Value {
    // A fresh generator per instance, so that adding a statement leaves the others' examples
    // alone.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(EXAMPLE_SEED);
    instance
        .generate(&RequestSpec::default(), &mut rng)
        .unwrap_or_else(|e| panic!("{instance}: the registry's generator failed: {e}"))
}

fn prove_operation(instance: &Instance, stem: &str) -> Value {
    let d = instance.descriptor();
    json!({
        "operationId": format!("prove-{stem}"),
        "tags": [d.name],
        "summary": format!("Prove a {} ({stem})", d.name),
        "description": format!(
            "Parses the body strictly, runs every check of the {} statement natively, waits \
             for a proving slot (shared by every statement and k) and answers the Groth16 \
             proof, verified before it is returned.", d.name),
        "security": api_security(),
        "parameters": [{ "$ref": "#/components/parameters/IdempotencyKey" }],
        "requestBody": {
            "required": true,
            "content": { JSON: {
                "schema": schema_ref(&request_name(instance)),
                "example": example_request(instance),
            } },
        },
        "responses": {
            "200": json_response(
                "The proof and its public inputs (the reference's JSON).",
                schema_ref(&proof_name(instance)),
                &["Server-Timing", "Enygma-Key-Sha256", "Idempotent-Replayed"],
            ),
            "400": response_ref("ProveBadRequest"),
            "401": response_ref("Unauthorized"),
            "404": not_hosted(instance),
            "408": response_ref("RequestTimeout"),
            "413": response_ref("PayloadTooLarge"),
            "422": response_ref("CheckFailed"),
            "429": response_ref("TooManyFailedAuthentications"),
            "431": response_ref("RequestHeaderFieldsTooLarge"),
            "500": response_ref("Internal"),
            "503": response_ref("Unavailable"),
            "504": response_ref("QueueTimeout"),
        },
    })
}

/// The optional `Idempotency-Key` request header of the prove routes ([`crate::idempotency`]).
fn idempotency_key() -> Value {
    json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Names the request, so that sending it again proves nothing twice (a \
            gateway's retry after a timeout): while the first request of a key is in flight, \
            one with the same key and body waits for its answer; once answered, the answer (a \
            proof, 400 or 422) is kept for --idempotency-ttl (10 minutes by default, within \
            --idempotency-memory) and given again, marked Idempotent-Replayed: true. The same \
            key with another body is refused with 422. Answers for load or time (503, 504) are \
            not kept: a retry is proved. Keys are per caller (token or client certificate; \
            unnamed callers share one) and per route.",
        "schema": { "type": "string", "pattern": "^[!-~]{1,255}$" },
    })
}

fn verify_operation(instance: &Instance, stem: &str) -> Value {
    let d = instance.descriptor();
    json!({
        "operationId": format!("verify-{stem}"),
        "tags": [d.name],
        "summary": format!("Verify a {} proof ({stem})", d.name),
        "description": format!(
            "Takes a 200 body of {} and verifies it against the instance's verifying key. \
             Verifications have their own small limit and queue, never the proving queue. A \
             coordinate that is not a point of the curve is a 400.", instance.prove_path()),
        "security": api_security(),
        "requestBody": {
            "required": true,
            "content": { JSON: { "schema": schema_ref(&proof_name(instance)) } },
        },
        "responses": {
            "200": json_response(
                "Whether the proof is valid for these public inputs.",
                json!({
                    "type": "object",
                    "required": ["valid"],
                    "properties": { "valid": { "type": "boolean" } },
                    "additionalProperties": false,
                }),
                &[],
            ),
            "400": response_ref("BadRequest"),
            "401": response_ref("Unauthorized"),
            "404": not_hosted(instance),
            "408": response_ref("RequestTimeout"),
            "413": response_ref("PayloadTooLarge"),
            "429": response_ref("TooManyFailedAuthentications"),
            "431": response_ref("RequestHeaderFieldsTooLarge"),
            "500": response_ref("Internal"),
            "503": response_ref("Unavailable"),
            "504": response_ref("QueueTimeout"),
        },
    })
}

/// The strings Go's `Atoi` (and [`statements::parse_k`]) reads as one of `sizes`: an optional
/// `+`, any leading zeros, the number.
pub fn size_pattern(sizes: &std::ops::RangeInclusive<usize>) -> String {
    let alternatives: Vec<String> = sizes.clone().map(|k| k.to_string()).collect();
    format!("^\\+?0*({})$", alternatives.join("|"))
}

/// A sized route's template for every k that is not a size: the reference's 400s, answered
/// before the body is read.
fn other_k_operation(name: &str, action: &str, sizes: &std::ops::RangeInclusive<usize>) -> Value {
    json!({
        "operationId": format!("{action}-{name}-other-k"),
        "tags": [name],
        "summary": format!("{action} a {name} with a k that is not one of its sizes"),
        "description": format!(
            "The reference's answers for a k that is not a number, or a number outside {} to \
             {}. (A k that Go's Atoi reads as a size, such as +{} or 0{}, is that size's \
             operation.)", sizes.start(), sizes.end(), sizes.start(), sizes.end()),
        "security": api_security(),
        "parameters": [{
            "name": "k",
            "in": "path",
            "required": true,
            "description": "Anything but a size.",
            "schema": {
                "type": "string",
                "minLength": 1,
                "not": { "pattern": size_pattern(sizes) },
            },
        }],
        "responses": {
            "400": json_response(
                "k is not a number, or not one of the sizes.",
                error_with(&[
                    statements::NON_NUMERIC_K.to_string(),
                    statements::unsupported_k_message(sizes),
                ]),
                &[],
            ),
            "401": response_ref("Unauthorized"),
            "429": response_ref("TooManyFailedAuthentications"),
            "431": response_ref("RequestHeaderFieldsTooLarge"),
        },
    })
}

/// `/readyz`'s 200 body: the status, and on the admin listener each loaded key's record
/// (`enygma_prover::keys::KeyRecord`).
fn ready_body() -> Value {
    let origin = json!({
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": {
                "type": "string",
                "enum": ["development-seed", "single-party-random", "ceremony"],
            },
            "contributions": { "type": "integer", "minimum": 0 },
            "final_hash": { "type": ["string", "null"] },
            "zkey_sha256": { "type": "string" },
        },
    });
    json!({
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": { "type": "string", "enum": ["ready"] },
            "keys": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["origin", "reduction"],
                    "properties": {
                        "origin": origin,
                        "reduction": { "type": "string", "enum": ["libsnark", "circom"] },
                    },
                    "additionalProperties": false,
                },
            },
        },
        "additionalProperties": false,
    })
}

/// The routes outside the statements: probes, metrics and this document.
fn service_operations() -> Vec<(&'static str, Value)> {
    let status = |values: &[&str]| {
        json!({
            "type": "object",
            "required": ["status"],
            "properties": { "status": { "type": "string", "enum": values } },
            "additionalProperties": false,
        })
    };
    let probe = |id: &str, summary: &str, responses: Value| {
        json!({
            "operationId": id,
            "tags": ["service"],
            "summary": summary,
            "security": [],
            "responses": responses,
        })
    };
    let too_large = response_ref("RequestHeaderFieldsTooLarge");
    vec![
        (
            "/healthcheck",
            probe(
                "healthcheck",
                "The reference's health check (its exact bytes); never limited, open",
                json!({
                    "200": json_response(
                        "The service runs.",
                        json!({
                            "type": "object",
                            "required": ["message", "status"],
                            "properties": {
                                "message": { "const": "Server is healthy" },
                                "status": { "const": "ok" },
                            },
                            "additionalProperties": false,
                        }),
                        &[],
                    ),
                    "431": too_large.clone(),
                }),
            ),
        ),
        (
            "/livez",
            probe(
                "livez",
                "Liveness: answers while the process serves; open",
                json!({
                    "200": json_response("The process serves.", status(&["ok"]), &[]),
                    "431": too_large.clone(),
                }),
            ),
        ),
        (
            "/readyz",
            probe(
                "readyz",
                "Readiness: the keys of every hosted instance are loaded and the service is not \
                 draining; open",
                json!({
                    "200": json_response(
                        "Ready to prove. The API listener answers the status alone; the admin \
                         listener adds the keys it proves with: per key stem, the key's origin \
                         (who could forge proofs) and the QAP reduction it is for.",
                        ready_body(),
                        &[],
                    ),
                    "503": json_response(
                        "Keys still loading, or draining after SIGTERM.",
                        status(&["loading", "draining"]),
                        &[],
                    ),
                    "431": too_large.clone(),
                }),
            ),
        ),
        (
            "/metrics",
            json!({
                "operationId": "metrics",
                "tags": ["service"],
                "summary": "Prometheus metrics (text format 0.0.4); open unless a token file \
                    is configured (also on the admin listener, without a token)",
                "security": [{ METRICS_TOKEN: [] }, {}],
                "responses": {
                    "200": {
                        "description": "The metrics.",
                        "headers": { "X-Request-Id": header_ref("X-Request-Id") },
                        "content": { "text/plain": { "schema": { "type": "string" } } },
                    },
                    "401": response_ref("Unauthorized"),
                    "431": too_large.clone(),
                },
            }),
        ),
        (
            "/openapi.json",
            json!({
                "operationId": "openapi",
                "tags": ["service"],
                "summary": "This document; needs an API token when the server has \
                    --auth-token-file",
                "security": api_security(),
                "responses": {
                    "200": json_response(
                        "The OpenAPI 3.1 description of the service.",
                        json!({ "type": "object", "required": ["openapi", "paths"] }),
                        &[],
                    ),
                    "401": response_ref("Unauthorized"),
                    "429": response_ref("TooManyFailedAuthentications"),
                    "431": too_large,
                    "500": response_ref("Internal"),
                },
            }),
        ),
    ]
}

#[cfg(test)]
pub(crate) mod tests;
