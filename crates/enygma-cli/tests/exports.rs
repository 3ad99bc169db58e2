//! The verifier artifacts committed in `keys/` are what `enygma export-vk` makes from the committed
//! verifying keys, and `export-proof` / `verifier-fixtures` produce files that convert back to
//! the proof; and `--version` names the build.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use enygma_prover::{
    keys,
    statements::{self, Instance},
};
use enygma_verifier::snarkjs;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn keys_dir() -> PathBuf {
    repo().join("keys")
}

fn enygma(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_enygma"))
        .args(args)
        .env_remove("ENYGMA_KEYS_DIR")
        .env_remove("RUST_LOG")
        .current_dir(repo())
        .output()
        .expect("running enygma")
}

fn enygma_ok(args: &[&str]) -> Vec<u8> {
    let out = enygma(args);
    assert!(
        out.status.success(),
        "enygma {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `enygma` expecting it to fail; returns what it said on stderr.
fn enygma_err(args: &[&str]) -> String {
    let out = enygma(args);
    assert!(!out.status.success(), "enygma {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `enygma --version` prints the package version and the git commit of the checkout it was built
/// in (whether the tree is dirty may have changed since the build; the hash may not).
#[test]
fn version_names_the_package_version_and_the_git_commit() {
    let text = String::from_utf8(enygma_ok(&["--version"])).unwrap();
    let commit = text
        .trim()
        .strip_prefix(&format!("enygma {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version output {text:?}"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    assert_eq!(
        commit.strip_suffix("-dirty").unwrap_or(commit),
        head.as_deref().unwrap_or("unknown")
    );
}

/// `enygma export-vk --k K --format FORMAT --keys-dir DIR` and `extra`.
fn export_vk<'a>(
    k: &'a str,
    format: &'a str,
    keys_dir: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let args = [
        "export-vk",
        "--k",
        k,
        "--format",
        format,
        "--keys-dir",
        keys_dir,
    ];
    [&args[..], extra].concat()
}

/// (file in keys/, --format) of every committed export of an instance.
fn committed_exports(instance: Instance) -> [(String, &'static str); 2] {
    [
        (format!("{instance}.verification_key.json"), "snarkjs"),
        (format!("{}.sol", instance.contract_name()), "solidity"),
    ]
}

#[test]
fn committed_exports_are_what_export_vk_makes_from_the_committed_keys() {
    let dir = keys_dir();
    let dir_arg = dir.to_str().unwrap();
    for instance in statements::all_instances() {
        for (file, format) in committed_exports(instance) {
            let committed =
                std::fs::read(dir.join(&file)).unwrap_or_else(|e| panic!("keys/{file}: {e}"));
            let exported = enygma_ok(&[
                "export-vk",
                "--circuit",
                &instance.key_stem(),
                "--format",
                format,
                "--keys-dir",
                dir_arg,
            ]);
            assert!(
                committed == exported,
                "keys/{file} differs from `enygma export-vk --circuit {instance} --format {format}`: regenerate it with\n  \
                 enygma setup --exports-only\n\
                 (`enygma setup` rewrites keys and exports together)"
            );
        }
    }
}

#[test]
fn committed_snarkjs_keys_read_back_to_the_committed_verifying_keys() {
    let dir = keys_dir();
    for instance in statements::all_instances() {
        let vk = keys::load_verifying_key(&keys::KeyPaths::new(&dir, instance).verifying).unwrap();
        let json =
            std::fs::read_to_string(dir.join(format!("{instance}.verification_key.json"))).unwrap();
        assert_eq!(
            snarkjs::vk_from_snarkjs_json(&json).unwrap(),
            vk,
            "{instance}"
        );
        assert_eq!(
            enygma_verifier::num_public_inputs(&vk),
            instance.num_public_inputs()
        );
        let contract = instance.contract_name();
        let sol = std::fs::read_to_string(dir.join(format!("{contract}.sol"))).unwrap();
        assert!(sol.contains(&format!("contract {contract} {{")));
        assert!(sol.contains(&format!(
            "uint256 public constant PUBLIC_INPUTS = {};",
            instance.num_public_inputs()
        )));
    }
}

#[test]
fn export_vk_formats_and_errors() {
    let dir = keys_dir();
    let dir_arg = dir.to_str().unwrap();
    // arkworks: the hex of the committed .vk file.
    let hex = String::from_utf8(enygma_ok(&export_vk("3", "arkworks", dir_arg, &[]))).unwrap();
    let bytes = std::fs::read(dir.join("transfer-k3.vk")).unwrap();
    assert_eq!(hex, hex::encode(&bytes));
    assert_eq!(
        enygma_ok(&export_vk("3", "arkworks-bin", dir_arg, &[])),
        bytes
    );
    // --out writes the same bytes as standard output.
    let tmp = std::env::temp_dir().join(format!("enygma-export-vk-{}.sol", std::process::id()));
    let out = ["--contract", "MyVerifier", "--out", tmp.to_str().unwrap()];
    enygma_ok(&export_vk("2", "solidity", dir_arg, &out));
    let sol = std::fs::read_to_string(&tmp).unwrap();
    std::fs::remove_file(&tmp).unwrap();
    assert!(sol.contains("contract MyVerifier {"));

    // Refused: a k out of range, a keys directory without keys, a contract name Solidity
    // cannot take.
    let err = enygma_err(&export_vk("7", "snarkjs", dir_arg, &[]));
    assert!(err.contains("k value not supported"), "{err}");
    let err = enygma_err(&export_vk("2", "snarkjs", "/nonexistent", &[]));
    assert!(err.contains("enygma setup"), "{err}");
    enygma_err(&export_vk(
        "2",
        "solidity",
        dir_arg,
        &["--contract", "1bad"],
    ));
}

/// One real proof (k = 2) through `verifier-fixtures`, then `export-proof` and `verify` on it.
#[test]
fn fixtures_and_export_proof_round_trip_a_real_proof() {
    let tmp = std::env::temp_dir().join(format!("enygma-cli-fixtures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let dir = keys_dir();
    enygma_ok(&[
        "verifier-fixtures",
        tmp.to_str().unwrap(),
        "--ks",
        "2",
        "--keys-dir",
        dir.to_str().unwrap(),
    ]);
    let fx = tmp.join("transfer-k2-generated");
    let read = |f: &str| std::fs::read_to_string(fx.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));

    // The fixture holds the committed artifacts.
    assert_eq!(
        read("verification_key.json"),
        std::fs::read_to_string(dir.join("transfer-k2.verification_key.json")).unwrap()
    );
    assert_eq!(
        read("Verifier.sol"),
        std::fs::read_to_string(dir.join("EnygmaTransferVerifierK2.sol")).unwrap()
    );
    // The statements a server hosts only when named have fixtures too, by default.
    let hidden = tmp.join("hidden-sender-transfer-k2-generated");
    assert_eq!(
        std::fs::read_to_string(hidden.join("Verifier.sol")).unwrap(),
        std::fs::read_to_string(dir.join("EnygmaHiddenSenderTransferVerifierK2.sol")).unwrap()
    );

    // export-proof --out-dir writes the fixture's proof.json and public.json ...
    let response = fx.join("response.json");
    let out = tmp.join("exported");
    enygma_ok(&[
        "export-proof",
        response.to_str().unwrap(),
        "--format",
        "snarkjs",
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    let proof_json = std::fs::read_to_string(out.join("proof.json")).unwrap();
    let public_json = std::fs::read_to_string(out.join("public.json")).unwrap();
    assert_eq!(proof_json, read("proof.json"));
    assert_eq!(public_json, read("public.json"));
    // ... which convert back to the response, and the response verifies.
    let back = snarkjs::snarkjs_to_response(&proof_json, &public_json).unwrap();
    assert_eq!(
        back,
        enygma_verifier::ProofResponse::from_json(&read("response.json")).unwrap()
    );
    enygma_ok(&[
        "verify",
        response.to_str().unwrap(),
        "--circuit",
        "transfer",
        "--k",
        "2",
        "--keys-dir",
        dir.to_str().unwrap(),
    ]);
    // The statement is explicit: the transfer proof against the deposit key is refused.
    let wrong = enygma(&[
        "verify",
        response.to_str().unwrap(),
        "--circuit",
        "deposit-k2",
        "--keys-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(!wrong.status.success());
    assert!(
        String::from_utf8_lossy(&wrong.stderr)
            .contains("public_signal: expected 19 elements, got 18"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    // The deposit and withdraw fixtures too, with those statements' committed verifiers.
    for (kind, contract) in [
        ("deposit", "EnygmaDepositVerifierK2"),
        ("withdraw", "EnygmaWithdrawVerifierK2"),
    ] {
        let fx = tmp.join(format!("{kind}-k2-generated"));
        let out = enygma(&[
            "verify",
            fx.join("response.json").to_str().unwrap(),
            "--circuit",
            &format!("{kind}-k2"),
            "--keys-dir",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("valid ({kind}-k2)")));
        let sol = std::fs::read_to_string(fx.join("Verifier.sol")).unwrap();
        assert_eq!(
            sol,
            std::fs::read_to_string(dir.join(format!("{contract}.sol"))).unwrap()
        );
    }

    // Without --out-dir: one object with both.
    let both: serde_json::Value =
        serde_json::from_slice(&enygma_ok(&["export-proof", response.to_str().unwrap()])).unwrap();
    assert_eq!(
        both["proof"],
        serde_json::from_str::<serde_json::Value>(&proof_json).unwrap()
    );
    assert_eq!(
        both["public"],
        serde_json::from_str::<serde_json::Value>(&public_json).unwrap()
    );

    // A malformed response is refused.
    let bad = tmp.join("bad.json");
    std::fs::write(
        &bad,
        read("response.json").replacen("\"pi_a\"", "\"pi_x\"", 1),
    )
    .unwrap();
    assert!(!enygma(&["export-proof", bad.to_str().unwrap()])
        .status
        .success());
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `gen-request` writes valid requests of the instance `--circuit` names (a key stem, or a
/// statement with `--k`), and refuses names the registry does not have.
#[test]
fn gen_request_names_its_instance_by_stem_or_statement_and_k() {
    let tmp = std::env::temp_dir().join(format!("enygma-cli-gen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let out = tmp.to_str().unwrap();
    let args = ["--seed", "1", "--count", "2", "--out", out];
    enygma_ok(&[&["gen-request", "--circuit", "withdraw-k3"][..], &args].concat());
    let withdraw3 = statements::by_stem("withdraw-k3").unwrap();
    let first = std::fs::read(tmp.join("withdraw-k3-0.json")).unwrap();
    for i in 0..2 {
        let body = std::fs::read(tmp.join(format!("withdraw-k3-{i}.json"))).unwrap();
        enygma_prover::prepare(withdraw3, &body).unwrap_or_else(|e| panic!("request {i}: {e}"));
    }
    // The statement and --k name the same instance: the same requests for the same seed.
    enygma_ok(
        &[
            &["gen-request", "--circuit", "withdraw", "--k", "3"][..],
            &args,
        ]
        .concat(),
    );
    assert_eq!(
        std::fs::read(tmp.join("withdraw-k3-0.json")).unwrap(),
        first
    );

    let stderr = |args: &[&str]| {
        let out = enygma(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let unknown = stderr(&["gen-request", "--circuit", "swap", "--seed", "1"]);
    assert!(unknown.contains("unknown circuit \"swap\""), "{unknown}");
    assert!(unknown.contains("transfer, deposit, withdraw"), "{unknown}");
    let no_k = stderr(&["gen-request", "--circuit", "deposit", "--seed", "1"]);
    assert!(no_k.contains("deposit needs a size k (2 to 6)"), "{no_k}");
    let contradiction = stderr(&[
        "gen-request",
        "--circuit",
        "deposit-k2",
        "--k",
        "3",
        "--seed",
        "1",
    ]);
    assert!(contradiction.contains("--k contradicts"), "{contradiction}");
    let bad_k = stderr(&["gen-request", "--k", "7", "--seed", "1"]);
    assert!(
        bad_k.contains("k value not supported: must be between 2 and 6"),
        "{bad_k}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `export-wtns` of a generated ownership-721 request: the one, then the statement's public
/// inputs, then as many private wires as the exported R1CS has. `export-zkey` of the same
/// instance: a zkey that imports against the circuit as a development key of snarkjs'
/// reduction, whose verifying key is the committed one.
#[test]
fn export_wtns_and_export_zkey_fit_the_circuit_and_the_committed_key() {
    use enygma_prover::{
        ceremony::{wtns_file, zkey},
        keys::KeyOrigin,
        qap::Reduction,
    };
    let tmp = std::env::temp_dir().join(format!("enygma-cli-wtns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let path = |name: &str| tmp.join(name).to_str().unwrap().to_string();
    let ownership = statements::by_stem("ownership-721").unwrap();

    let request = enygma_ok(&["gen-request", "--circuit", "ownership-721", "--seed", "3"]);
    std::fs::write(tmp.join("request.json"), &request).unwrap();
    enygma_ok(&[
        "export-wtns",
        "--circuit",
        "ownership-721",
        "--out",
        &path("witness.wtns"),
        &path("request.json"),
    ]);
    let witness = wtns_file::read(&std::fs::read(tmp.join("witness.wtns")).unwrap()).unwrap();
    let r1cs = enygma_prover::groth16::r1cs(ownership.circuit_for_setup()).unwrap();
    assert_eq!(
        witness.len(),
        r1cs.num_instance_variables + r1cs.num_witness_variables
    );
    assert_eq!(witness[0], enygma_verifier::Fr::from(1u64));
    let public = enygma_prover::prepare(ownership, &request)
        .unwrap()
        .public_inputs()
        .unwrap();
    assert_eq!(witness[1..r1cs.num_instance_variables], public[..]);
    // Every constraint holds for the exported wires, in the R1CS' own wire order.
    let dot = |terms: &[(enygma_verifier::Fr, usize)]| -> enygma_verifier::Fr {
        terms.iter().map(|&(c, w)| c * witness[w]).sum()
    };
    for row in 0..r1cs.num_constraints {
        let [a, b, c] = [0, 1, 2].map(|m| dot(&r1cs.matrices[m][row]));
        assert_eq!(a * b, c, "constraint {row}");
    }

    enygma_ok(&[
        "export-zkey",
        "--circuit",
        "ownership-721",
        "--out",
        &path("circuit.zkey"),
    ]);
    let bytes = std::fs::read(tmp.join("circuit.zkey")).unwrap();
    let (pk, record) = zkey::import(&bytes, &r1cs, &keys::development_delta_g1(ownership)).unwrap();
    assert_eq!(record.origin, KeyOrigin::DevelopmentSeed);
    assert_eq!(record.reduction, Reduction::Circom);
    let committed =
        keys::load_verifying_key(&keys::KeyPaths::new(&keys_dir(), ownership).verifying).unwrap();
    assert!(
        pk.vk == committed,
        "the zkey's verifying key is the committed one"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}
