//! Verifier artifacts on the command line: `export-vk`, `export-proof`, and `verifier-fixtures`
//! (real proofs laid out for the independent verifiers in `verifier-tests/`). The formats
//! themselves are rendered by `enygma_verifier`.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{ensure, Context, Result};
use clap::ValueEnum;
use enygma_prover::{
    keys,
    statements::{Instance, RequestSpec},
    Prover,
};
use enygma_verifier::{
    fixtures::{write_fixture, CommittedExports, Fixture},
    snarkjs, Bn254, VerifyingKey, VkFormat,
};
use rand::SeedableRng;

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

/// The committed verifying key of an instance, `KEYS_DIR/{stem}.vk` (no proving key needed).
pub fn load_vk(keys_dir: &Path, instance: Instance) -> Result<VerifyingKey<Bn254>> {
    let path = keys::KeyPaths::new(keys_dir, instance).verifying;
    ensure!(
        path.exists(),
        "{} does not exist (run `enygma setup` to make development keys)",
        path.display()
    );
    let vk = keys::load_verifying_key(&path)?;
    let (n, expected) = (
        enygma_verifier::num_public_inputs(&vk),
        instance.num_public_inputs(),
    );
    ensure!(
        n == expected,
        "{}: a key for {n} public inputs, the {instance} circuit has {expected}",
        path.display()
    );
    Ok(vk)
}

/// A verifying key in `format`; the Solidity contract is named `contract`, by default the
/// instance's contract name (`EnygmaTransferVerifierK6`).
pub fn export_vk(
    keys_dir: &Path,
    instance: Instance,
    format: VkFormatArg,
    contract: Option<&str>,
) -> Result<Vec<u8>> {
    let vk = load_vk(keys_dir, instance)?;
    let contract = contract.map_or_else(|| instance.contract_name(), str::to_string);
    Ok(enygma_verifier::export_vk(&vk, format.into(), &contract)?)
}

/// The verifier artifacts committed beside a verifying key in `keys/`: file name and format.
pub fn committed_exports(instance: Instance) -> [(String, VkFormatArg); 2] {
    [
        (
            format!("{instance}.verification_key.json"),
            VkFormatArg::Snarkjs,
        ),
        (
            format!("{}.sol", instance.contract_name()),
            VkFormatArg::Solidity,
        ),
    ]
}

/// Writes [`committed_exports`] of an instance into `keys_dir`, from the verifying key there.
/// The names of the export files [`write_committed_exports`] writes for `instance`.
pub fn committed_export_files(instance: Instance) -> [String; 2] {
    committed_exports(instance).map(|(file, _)| file)
}

pub fn write_committed_exports(keys_dir: &Path, instance: Instance) -> Result<()> {
    for (file, format) in committed_exports(instance) {
        write_output(
            Some(&keys_dir.join(file)),
            &export_vk(keys_dir, instance, format, None)?,
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
    /// Request files with their instance, proved as `{stem}-sample` (for a file `{stem}.json`)
    /// or `{stem}-sample-{file stem}`.
    pub samples: Vec<(PathBuf, Instance, Vec<u8>)>,
    /// One generated request per instance, proved as `{stem}-generated`.
    pub generated: Vec<Instance>,
    /// Seed of the generated requests.
    pub seed: u64,
}

/// One proof to make: (fixture name, instance, source note, request body).
type Case = (String, Instance, String, Vec<u8>);

/// Proves every requested case with the real keys and writes one fixture directory for each
/// (see `enygma_verifier::fixtures`). Every proof is checked natively against the committed
/// verifying key, which is also the key written into the fixture.
pub fn write_verifier_fixtures(dir: &Path, opts: &FixtureOptions) -> Result<Vec<PathBuf>> {
    let mut cases: Vec<Case> = Vec::new();
    for (path, instance, body) in &opts.samples {
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = if stem == instance.key_stem() {
            format!("{stem}-sample")
        } else {
            format!("{instance}-sample-{stem}")
        };
        cases.push((
            name,
            *instance,
            format!("sample request {file}, development keys keys/{instance}"),
            body.clone(),
        ));
    }
    for &instance in &opts.generated {
        // The seed and sender each k had before the registry, so the fixtures stay the same.
        let size = instance.k().unwrap_or(0);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(opts.seed.wrapping_add(size as u64));
        let spec = RequestSpec {
            sender: instance.k().map(|k| k / 2),
            ..RequestSpec::default()
        };
        let body = instance
            .generate(&spec, &mut rng)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("generating a {instance} request"))?;
        let source = format!(
            "generated request (seed {}), development keys keys/{instance}",
            opts.seed
        );
        cases.push((
            format!("{instance}-generated"),
            instance,
            source,
            serde_json::to_vec(&body)?,
        ));
    }
    ensure!(
        !cases.is_empty(),
        "nothing to prove: give --sample FILE or instances to generate"
    );

    // Refuse a bad request before loading keys.
    let prepared = cases
        .iter()
        .map(|(name, instance, _, body)| {
            enygma_prover::prepare(*instance, body).with_context(|| name.clone())
        })
        .collect::<Result<Vec<_>>>()?;
    let mut instances: Vec<Instance> = Vec::new();
    for (_, instance, _, _) in &cases {
        if !instances.contains(instance) {
            instances.push(*instance);
        }
    }
    let prover = Prover::load(&opts.keys_dir, &instances, keys::MissingKeys::Create)
        .context("loading keys")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for ((name, instance, source, _), prepared) in cases.iter().zip(&prepared) {
        let vk = load_vk(&opts.keys_dir, *instance)?;
        let (response, timings) = prover.prove(prepared).with_context(|| name.clone())?;
        let response_json = serde_json::to_string_pretty(&response)?;
        let pvk = enygma_verifier::PreparedVerifyingKey::from(vk.clone());
        ensure!(
            enygma_verifier::verify_response(&pvk, &response_json)?,
            "{name}: the proof does not verify against {}",
            keys::KeyPaths::new(&opts.keys_dir, *instance)
                .verifying
                .display()
        );
        let contract = instance.contract_name();
        let [(vk_file, _), (sol_file, _)] = committed_exports(*instance);
        let fixture = Fixture {
            name,
            k: instance.k(),
            source,
            contract_name: &contract,
            vk: &vk,
            response_json: &response_json,
            committed: Some(CommittedExports {
                verification_key: &vk_file,
                solidity: &sol_file,
            }),
        };
        let out = write_fixture(dir, &fixture).with_context(|| name.clone())?;
        eprintln!("{}: {instance}, prove {:?}", out.display(), timings.prove);
        written.push(out);
    }
    Ok(written)
}
