//! Verifier artifacts on the command line: `export-vk`, `export-proof`, and `verifier-fixtures`
//! (real proofs laid out for the independent verifiers in `verifier-tests/`). The formats
//! themselves are rendered by `enygma_verifier`.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{bail, ensure, Context, Result};
use clap::ValueEnum;
use enygma_circuit::payment::PaymentInputs;
use enygma_prover::{keys, request, Kind, Prover, SUPPORTED_K};
use enygma_verifier::{
    fixtures::{write_fixture, Fixture},
    snarkjs, solidity, Bn254, VerifyingKey, VkFormat,
};
use rand::SeedableRng;

/// `--circuit`: which statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CircuitArg {
    Transfer,
    Deposit,
    Withdraw,
}

impl From<CircuitArg> for Kind {
    fn from(c: CircuitArg) -> Self {
        match c {
            CircuitArg::Transfer => Kind::Transfer,
            CircuitArg::Deposit => Kind::Deposit,
            CircuitArg::Withdraw => Kind::Withdraw,
        }
    }
}

/// `export-vk --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VkFormatArg {
    /// snarkjs `verification_key.json` (protocol groth16, curve bn128).
    Snarkjs,
    /// A self-contained Solidity verifier contract (BN254 precompiles).
    Solidity,
    /// Hex of the arkworks compressed serialization (the `.vk` file's bytes).
    Arkworks,
    /// The arkworks compressed serialization, raw bytes.
    ArkworksBin,
}

impl From<VkFormatArg> for VkFormat {
    fn from(f: VkFormatArg) -> Self {
        match f {
            VkFormatArg::Snarkjs => VkFormat::Snarkjs,
            VkFormatArg::Solidity => VkFormat::Solidity,
            VkFormatArg::Arkworks => VkFormat::Arkworks,
            VkFormatArg::ArkworksBin => VkFormat::ArkworksBin,
        }
    }
}

/// `export-proof --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProofFormatArg {
    /// snarkjs `proof.json` and `public.json`.
    Snarkjs,
}

fn check_k(k: usize) -> Result<()> {
    if !SUPPORTED_K.contains(&k) {
        bail!("k value not supported: must be between 2 and 6");
    }
    Ok(())
}

/// The committed verifying key of a statement for k, `KEYS_DIR/{statement}-k{k}.vk` (no proving
/// key needed).
pub fn load_vk(keys_dir: &Path, kind: Kind, k: usize) -> Result<VerifyingKey<Bn254>> {
    check_k(k)?;
    let path = keys::KeyPaths::new(keys_dir, kind, k).verifying;
    ensure!(
        path.exists(),
        "{} does not exist (run `enygma setup` to make development keys)",
        path.display()
    );
    let vk = keys::load_verifying_key(&path)?;
    let (n, expected) = (
        enygma_verifier::num_public_inputs(&vk),
        kind.num_public_inputs(k),
    );
    ensure!(
        n == expected,
        "{}: a key for {n} public inputs, the {kind} circuit for k={k} has {expected}",
        path.display()
    );
    Ok(vk)
}

/// A verifying key in `format`; the Solidity contract is named `contract`, by default
/// `Enygma{Statement}VerifierK{k}`.
pub fn export_vk(
    keys_dir: &Path,
    kind: Kind,
    k: usize,
    format: VkFormatArg,
    contract: Option<&str>,
) -> Result<Vec<u8>> {
    let vk = load_vk(keys_dir, kind, k)?;
    let contract = contract.map_or_else(|| solidity::contract_name(kind.name(), k), str::to_string);
    Ok(enygma_verifier::export_vk(&vk, format.into(), &contract)?)
}

/// The verifier artifacts committed beside a verifying key in `keys/`: file name and format.
pub fn committed_exports(kind: Kind, k: usize) -> [(String, VkFormatArg); 2] {
    [
        (
            format!("{kind}-k{k}.verification_key.json"),
            VkFormatArg::Snarkjs,
        ),
        (
            format!("{}.sol", solidity::contract_name(kind.name(), k)),
            VkFormatArg::Solidity,
        ),
    ]
}

/// Writes [`committed_exports`] of a statement's k into `keys_dir`, from the verifying key there.
pub fn write_committed_exports(keys_dir: &Path, kind: Kind, k: usize) -> Result<()> {
    for (file, format) in committed_exports(kind, k) {
        write_output(
            Some(&keys_dir.join(file)),
            &export_vk(keys_dir, kind, k, format, None)?,
        )?;
    }
    Ok(())
}

/// Writes `bytes` to `out`, or to standard output, unchanged.
pub fn write_output(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match out {
        Some(path) => fs::write(path, bytes).with_context(|| format!("writing {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
                // `enygma export-vk ... | head` is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => Ok(other?),
            }
        }
    }
}

/// Converts a reference-format response into snarkjs's `proof.json` and `public.json`, written
/// into `out_dir`, or printed as one JSON object `{"proof": ..., "public": [...]}`.
pub fn export_proof(response: &[u8], out_dir: Option<&Path>) -> Result<()> {
    let response = std::str::from_utf8(response).context("the response is not UTF-8")?;
    let files = snarkjs::response_to_snarkjs(response).context("not a valid proof response")?;
    match out_dir {
        Some(dir) => {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for (name, text) in [
                ("proof.json", &files.proof_json),
                ("public.json", &files.public_json),
            ] {
                let path = dir.join(name);
                fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
        }
        None => {
            // Typed, so that the proof keeps snarkjs's field order.
            #[derive(serde::Serialize)]
            struct Both {
                proof: snarkjs::SnarkjsProof,
                public: Vec<String>,
            }
            let both = Both {
                proof: serde_json::from_str(&files.proof_json)?,
                public: serde_json::from_str(&files.public_json)?,
            };
            println!("{}", serde_json::to_string_pretty(&both)?);
        }
    }
    Ok(())
}

/// What `verifier-fixtures` proves.
pub struct FixtureOptions {
    pub keys_dir: PathBuf,
    /// Request files (k from their `anonymity_set`), proved as `transfer-k{k}-sample`
    /// (for a file `transfer-k{k}.json`) or `transfer-k{k}-sample-{stem}`.
    pub samples: Vec<PathBuf>,
    /// One generated request per statement and k, proved as `{statement}-k{k}-generated`.
    pub generated_ks: Vec<usize>,
    pub generated_circuits: Vec<Kind>,
    /// Seed of the generated requests.
    pub seed: u64,
}

/// Proves every requested case with the real keys and writes one fixture directory for each
/// (see `enygma_verifier::fixtures`). Every proof is checked natively against the committed
/// verifying key, which is also the key written into the fixture.
pub fn write_verifier_fixtures(dir: &Path, opts: &FixtureOptions) -> Result<Vec<PathBuf>> {
    for &k in &opts.generated_ks {
        check_k(k)?;
    }
    let mut cases = Vec::new(); // (name, statement, k, source, request body)
    for path in &opts.samples {
        let body = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let k = crate::request_k(&body)
            .with_context(|| format!("{}: no anonymity_set", path.display()))?;
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = if stem == format!("transfer-k{k}") {
            format!("{stem}-sample")
        } else {
            format!("transfer-k{k}-sample-{stem}")
        };
        cases.push((
            name,
            Kind::Transfer,
            k,
            format!("sample request {file}, development keys keys/transfer-k{k}"),
            body,
        ));
    }
    for &kind in &opts.generated_circuits {
        for &k in &opts.generated_ks {
            let sender = k / 2;
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(opts.seed.wrapping_add(k as u64));
            let inputs = PaymentInputs::generate(kind, k, sender, 25, 1000, &mut rng);
            let body = serde_json::to_vec(&request::to_request_json(&inputs))?;
            let source = format!(
                "generated request (seed {}, sender {sender}), development keys keys/{kind}-k{k}",
                opts.seed
            );
            cases.push((format!("{kind}-k{k}-generated"), kind, k, source, body));
        }
    }
    ensure!(
        !cases.is_empty(),
        "nothing to prove: give --sample FILE or --ks"
    );

    // Refuse a bad request before loading keys.
    let prepared = cases
        .iter()
        .map(|(name, kind, k, _, body)| {
            enygma_prover::prepare(*kind, *k, body).with_context(|| name.clone())
        })
        .collect::<Result<Vec<_>>>()?;
    let prover = Prover::load_or_create(&opts.keys_dir).context("loading keys")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for ((name, kind, k, source, _), prepared) in cases.iter().zip(&prepared) {
        let vk = load_vk(&opts.keys_dir, *kind, *k)?;
        let (response, timings) = prover.prove(prepared).with_context(|| name.clone())?;
        let response_json = serde_json::to_string_pretty(&response)?;
        let pvk = enygma_verifier::PreparedVerifyingKey::from(vk.clone());
        ensure!(
            enygma_verifier::verify_response(&pvk, &response_json)?,
            "{name}: the proof does not verify against {}",
            keys::KeyPaths::new(&opts.keys_dir, *kind, *k)
                .verifying
                .display()
        );
        let contract = solidity::contract_name(kind.name(), *k);
        let fixture = Fixture {
            name,
            k: Some(*k),
            source,
            contract_name: &contract,
            vk: &vk,
            response_json: &response_json,
        };
        let out = write_fixture(dir, &fixture).with_context(|| name.clone())?;
        eprintln!("{}: {kind} k={k}, prove {:?}", out.display(), timings.prove);
        written.push(out);
    }
    Ok(written)
}
