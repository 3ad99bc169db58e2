//! Writes verifier test fixtures from toy keys, one directory per k:
//!
//! ```text
//! cargo run -p enygma-verifier --example make-fixtures -- DIR [--ks 2,3,4,5,6]
//! ```
//!
//! For each k, a toy circuit with 8k + 2 public inputs (the transfer circuit's count, so the
//! Solidity verifier costs the same gas) gets a deterministic development setup and one proof,
//! and `DIR/toy-k{k}/` receives:
//!
//! - `verification_key.json` (snarkjs), `Verifier.sol` (contract `ToyVerifierK{k}`),
//!   `verifying_key.hex` (arkworks, compressed);
//! - `response.json` (reference response format), `proof.json` and `public.json` (snarkjs),
//!   the latter two converted from `response.json` as `enygma export-proof` does;
//! - `meta.json`: `{"name", "k", "nPublic", "source": "toy", "contract"}`.
//!
//! The layout is written by [`enygma_verifier::fixtures::write_fixture`]; fixtures from the real
//! keys use the same function (the node tests in `verifier-tests/` read any directory of them).

#[path = "../toy/circuit.rs"]
mod toy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use enygma_verifier::fixtures::{write_fixture, Fixture};
use enygma_verifier::{verify_proof, ProofResponse};

fn make(dir: &Path, k: usize) -> Result<(), String> {
    let n_public = 8 * k + 2;
    let name = format!("toy-k{k}");
    let (pk, vk) = toy::toy_setup(n_public, 1000 + k as u64);
    let (proof, inputs) = toy::toy_prove(&pk, n_public, 2000 + k as u64);
    if verify_proof(&vk, &proof, &inputs) != Ok(true) {
        return Err(format!("{name}: the toy proof does not verify natively"));
    }
    let response = ProofResponse::from_proof(&proof, &inputs).to_json();
    let contract = format!("ToyVerifierK{k}");
    let out = write_fixture(
        dir,
        &Fixture {
            name: &name,
            k: Some(k),
            source: "toy",
            contract_name: &contract,
            vk: &vk,
            response_json: &response,
            committed: None,
        },
    )
    .map_err(|e| format!("{name}: {e}"))?;
    println!("{}: {n_public} public inputs", out.display());
    Ok(())
}

fn parse_args() -> Result<(PathBuf, Vec<usize>), String> {
    let usage = "usage: make-fixtures DIR [--ks 2,3,4,5,6]";
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let mut ks = vec![2, 3, 4, 5, 6];
    while let Some(a) = args.next() {
        if a == "--ks" {
            let list = args.next().ok_or(usage)?;
            ks = list
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad k {s:?}; {usage}"))
                })
                .collect::<Result<_, _>>()?;
            if ks.iter().any(|&k| k == 0 || k > 64) {
                return Err(format!("k must be in 1..=64; {usage}"));
            }
        } else if a.starts_with('-') || dir.is_some() {
            return Err(usage.to_string());
        } else {
            dir = Some(PathBuf::from(a));
        }
    }
    Ok((dir.ok_or(usage)?, ks))
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|(dir, ks)| ks.iter().try_for_each(|&k| make(&dir, k)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("make-fixtures: {e}");
            ExitCode::FAILURE
        }
    }
}
