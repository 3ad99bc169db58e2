//! `enygma`: development keys, proofs, request pools and verifier artifacts for the Enygma
//! statements of the registry (`enygma_prover::statements`).

mod export;

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use enygma_prover::{
    keys,
    statements::{self, Instance, RequestSpec},
    CircuitShape, ProofResponse, Prover,
};
use rand::SeedableRng;

#[derive(Parser)]
#[command(
    name = "enygma",
    version = enygma_build_info::LONG_VERSION,
    about = "Groth16 prover for the Rayls Enygma statements (`enygma info` lists them)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--circuit` and `--k`: which statement instance.
#[derive(clap::Args, Clone, Debug)]
struct CircuitArgs {
    /// A statement (`enygma info` lists them), or a key stem such as transfer-k6.
    #[arg(long, default_value = statements::DEFAULT_STATEMENT)]
    circuit: String,
    /// The size k, for a statement that has sizes (not needed with a key stem).
    #[arg(long)]
    k: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    /// Make the development proving and verifying keys of every statement instance a server
    /// hosts by default (overwrites existing ones), with their snarkjs keys and Solidity verifiers
    /// (as `export-vk` makes them).
    Setup {
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Only these instances, comma-separated: key stems (hidden-sender-transfer-k6) or
        /// statement names, as the server's --circuits. Default: every instance a server hosts
        /// when no --circuits is given (not the hidden sender's payments, which a deployment
        /// chooses instead of the reference's).
        #[arg(long, value_name = "LIST")]
        circuits: Option<String>,
        /// Only create missing keys; check the existing ones against the circuit instead.
        #[arg(long, conflicts_with = "exports_only")]
        keep_existing: bool,
        /// Only rewrite the snarkjs keys and Solidity verifiers from the verifying keys there.
        #[arg(long)]
        exports_only: bool,
        /// A single-party setup from fresh OS entropy instead of the public seed (for staging:
        /// whoever runs it could keep the toxic waste; production keys come from a ceremony,
        /// see import-zkey). Refuses to overwrite keys unless --force.
        #[arg(long, conflicts_with_all = ["keep_existing", "exports_only"])]
        random: bool,
        /// With --random: overwrite existing keys.
        #[arg(long, requires = "random")]
        force: bool,
    },
    /// Write the instance's constraint system, exactly as the prover proves it (oriented; wire 0
    /// the one, then the public inputs in the statement's order, then private wires) in iden3's
    /// binary .r1cs format, for `snarkjs groth16 setup`.
    ExportR1cs {
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Output file [default: {stem}.r1cs].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write the witness of a request (a file, or - for standard input) in iden3's binary .wtns
    /// format, in the wire order of export-r1cs (the one, the public inputs, then the private
    /// wires), for `snarkjs groth16 prove`, `snarkjs wtns check` or rapidsnark. The file holds
    /// the request's secrets. Without --k, k comes from the request as for `prove`.
    ExportWtns {
        input: String,
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Output file [default: {stem}.wtns].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write the instance's DEVELOPMENT proving key (from the public seed: anyone can forge
    /// proofs for it) as a snarkjs Groth16 zkey, for snarkjs' and rapidsnark's provers. Its H
    /// points are those snarkjs' setup makes (recomputed from the seed's toxic waste); every
    /// other point, and so the verifying key, is the development key's. Not for production, and
    /// import-zkey records it as a development key. A setup: seconds to a minute.
    ExportZkey {
        #[command(flatten)]
        circuit: CircuitArgs,
        /// Where the development verifying key is compared with the zkey's (when there).
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Output file [default: {stem}.zkey].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a snarkjs Groth16 zkey (a ceremony's final key) as the instance's proving and
    /// verifying keys, after checking that it was made for exactly this constraint system and
    /// that every point is valid. Writes KEYS_DIR/{stem}.pk, .vk and their exports; refuses to
    /// overwrite existing ones unless --force.
    ImportZkey {
        zkey: PathBuf,
        #[command(flatten)]
        circuit: CircuitArgs,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        #[arg(long)]
        force: bool,
    },
    /// Prove a request (a file, or - for standard input) and print the response JSON. Without
    /// --k, k comes from the request when the statement can tell (the length of a payment
    /// request's `anonymity_set`).
    Prove {
        input: String,
        #[command(flatten)]
        circuit: CircuitArgs,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Build the instance's fixed-base MSM tables first and prove with them, as
        /// `enygma-server --precompute` does (the same proof, faster; the tables take seconds
        /// to build and their size is logged), or read them from --cache-dir when kept there.
        #[arg(long)]
        precompute: bool,
        /// Where matrices and MSM tables are kept between runs, as the server's --cache-dir;
        /// `none`: nothing kept [default: KEYS_DIR/cache].
        #[arg(long, env = "ENYGMA_CACHE_DIR", value_name = "DIR|none")]
        cache_dir: Option<PathBuf>,
    },
    /// Derive the constraint matrices and the fixed-base MSM tables of the instances named and
    /// keep them in the cache directory, where a server (or `prove`) with the same keys and
    /// build reads them in a fraction of a second instead of deriving them: for a volume that
    /// replicas share read-only, or an image, prepared once. What is already kept for the same
    /// circuit and key is left as it is.
    Cache {
        /// Key stems or statement names, as the server's --circuits [default: every instance a
        /// server hosts by default].
        #[arg(long, value_name = "LIST")]
        circuits: Option<String>,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// [default: KEYS_DIR/cache]
        #[arg(long, env = "ENYGMA_CACHE_DIR", value_name = "DIR")]
        cache_dir: Option<PathBuf>,
        /// Only the matrices, which depend on the circuits and not on the keys (no keys are
        /// read): for an image built before its keys exist.
        #[arg(long)]
        matrices_only: bool,
    },
    /// Verify a response (a file, or -) against the verifying key of the statement instance
    /// given. Exits 0 only if valid.
    Verify {
        input: String,
        /// A statement (with --k if it has sizes) or a key stem such as transfer-k6.
        #[arg(long)]
        circuit: String,
        #[arg(long)]
        k: Option<usize>,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Write valid, distinct requests (a pool for tests and load tests).
    GenRequest {
        #[command(flatten)]
        circuit: CircuitArgs,
        #[arg(long)]
        seed: u64,
        /// The sender's index in the anonymity set (payment statements); by default it varies
        /// across the pool.
        #[arg(long)]
        sender_index: Option<usize>,
        #[arg(long, default_value_t = RequestSpec::default().amount)]
        amount: u64,
        #[arg(long, default_value_t = RequestSpec::default().balance)]
        balance: u64,
        /// Number of requests; with --out they go to DIR/{stem}-{i}.json (transfer-k6-0.json).
        #[arg(long, default_value_t = 1)]
        count: usize,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the size of the circuit of every statement instance, those hosted only when named
    /// included.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Print (or write) a verifying key as a snarkjs key, a Solidity verifier or arkworks bytes.
    /// Reads only the verifying key KEYS_DIR/{stem}.vk.
    ExportVk {
        #[command(flatten)]
        circuit: CircuitArgs,
        #[arg(long, value_enum)]
        format: export::VkFormatArg,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Solidity contract name (default the instance's, e.g. EnygmaTransferVerifierK6).
        #[arg(long)]
        contract: Option<String>,
        /// Write here instead of standard output (the bytes are the same).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Convert a proof response (a file, or -) into snarkjs's proof.json and public.json: written
    /// into --out-dir, or printed as one object {"proof": ..., "public": [...]}.
    ExportProof {
        input: String,
        #[arg(long, value_enum, default_value = "snarkjs")]
        format: export::ProofFormatArg,
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Prove sample requests and one generated request per statement instance with the keys in
    /// KEYS_DIR and write them as fixtures for verifier-tests/ (snarkjs and the Solidity
    /// verifier in an EVM).
    VerifierFixtures {
        /// Output directory; one subdirectory per proof.
        dir: PathBuf,
        /// A request to prove (of --sample-circuit; k from the request); repeatable.
        #[arg(long)]
        sample: Vec<PathBuf>,
        /// The statement of the --sample requests.
        #[arg(long, default_value = statements::DEFAULT_STATEMENT)]
        sample_circuit: String,
        /// The instances to generate a request for: statements and key stems, comma-separated,
        /// or `none` [default: every instance, those not hosted by default included].
        #[arg(long)]
        circuits: Option<String>,
        /// Only the instances of these sizes k, comma-separated; `--ks` alone: no instance with
        /// a size (statements without sizes are kept either way).
        #[arg(long, value_delimiter = ',', num_args = 0..)]
        ks: Option<Vec<usize>>,
        #[arg(long, default_value_t = 5)]
        seed: u64,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
}

/// The instance `circuit` (a statement name or a key stem) and `k` name. Without `k`, a sized
/// statement takes `size_from` (for example the request's own size).
fn instance_of(circuit: &str, k: Option<usize>, size_from: Option<usize>) -> Result<Instance> {
    if let Some(statement) = statements::by_name(circuit) {
        let k = k.or(size_from.filter(|_| statement.descriptor().sizes.is_some()));
        return Ok(Instance::new(statement, k)?);
    }
    let instance = statements::by_stem(circuit).ok_or_else(|| statements::unknown(circuit))?;
    if k.is_some_and(|k| instance.k() != Some(k)) {
        bail!("--k contradicts --circuit {circuit}");
    }
    Ok(instance)
}

/// The size a request body tells, for a statement that can tell.
fn request_size(circuit: &str, body: &[u8]) -> Option<usize> {
    let statement = statements::by_name(circuit)?;
    statement.size_of_request(&serde_json::from_slice(body).ok()?)
}

/// The request in `input` (a file, or -) for the instance `circuit` names, parsed and checked as
/// the server checks it (a sized statement without --k takes the request's own size).
fn prepared_request(input: &str, circuit: &CircuitArgs) -> Result<enygma_prover::Prepared> {
    let body = read_input(input)?;
    let instance = instance_of(
        &circuit.circuit,
        circuit.k,
        request_size(&circuit.circuit, &body),
    )?;
    Ok(enygma_prover::prepare(instance, &body)?)
}

fn read_input(input: &str) -> Result<Vec<u8>> {
    if input == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        fs::read(input).with_context(|| format!("reading {input}"))
    }
}

fn load_prover(keys_dir: &Path, instances: &[Instance]) -> Result<Prover> {
    Prover::load(keys_dir, instances, keys::MissingKeys::Create).context("loading keys")
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Setup {
            keys_dir,
            circuits,
            keep_existing,
            exports_only,
            random: true,
            force,
        } if !keep_existing && !exports_only => {
            setup_random(&keys_dir, &setup_instances(circuits.as_deref())?, force)
        }
        Command::Setup {
            keys_dir,
            circuits,
            keep_existing,
            exports_only,
            ..
        } => setup(
            &keys_dir,
            &setup_instances(circuits.as_deref())?,
            keep_existing,
            exports_only,
        ),
        Command::ExportR1cs {
            circuit: CircuitArgs { circuit, k },
            out,
        } => export_r1cs(instance_of(&circuit, k, None)?, out),
        Command::ExportWtns {
            input,
            circuit,
            out,
        } => export_wtns(&input, &circuit, out),
        Command::ExportZkey {
            circuit: CircuitArgs { circuit, k },
            keys_dir,
            out,
        } => export_zkey(instance_of(&circuit, k, None)?, &keys_dir, out),
        Command::ImportZkey {
            zkey,
            circuit: CircuitArgs { circuit, k },
            keys_dir,
            force,
        } => import_zkey(instance_of(&circuit, k, None)?, &zkey, &keys_dir, force),
        Command::Prove {
            input,
            circuit,
            keys_dir,
            precompute,
            cache_dir,
        } => {
            let cache_dir = cache_dir_or_default(cache_dir, &keys_dir);
            prove(&input, &circuit, &keys_dir, precompute, cache_dir)
        }
        Command::Cache {
            circuits,
            keys_dir,
            cache_dir,
            matrices_only,
        } => {
            let cache_dir = cache_dir.unwrap_or_else(|| keys_dir.join("cache"));
            let instances = setup_instances(circuits.as_deref())?;
            if matrices_only {
                keep_matrices(&instances, &cache_dir)
            } else {
                fill_cache(&keys_dir, &instances, cache_dir)
            }
        }
        Command::Verify {
            input,
            circuit,
            k,
            keys_dir,
        } => verify(&input, &CircuitArgs { circuit, k }, &keys_dir),
        Command::GenRequest {
            circuit,
            seed,
            sender_index,
            amount,
            balance,
            count,
            out,
        } => {
            let spec = RequestSpec {
                index: 0,
                sender: sender_index,
                amount,
                balance,
            };
            gen_request(&circuit, seed, &spec, count, out.as_deref())
        }
        Command::Info { json } => info(json),
        Command::ExportVk {
            circuit: CircuitArgs { circuit, k },
            format,
            keys_dir,
            contract,
            out,
        } => {
            let instance = instance_of(&circuit, k, None)?;
            let bytes = export::export_vk(&keys_dir, instance, format, contract.as_deref())?;
            export::write_output(out.as_deref(), &bytes)
        }
        Command::ExportProof {
            input,
            format: export::ProofFormatArg::Snarkjs,
            out_dir,
        } => export::export_proof(&read_input(&input)?, out_dir.as_deref()),
        Command::VerifierFixtures {
            dir,
            sample,
            sample_circuit,
            circuits,
            ks,
            seed,
            keys_dir,
        } => {
            let opts = export::FixtureOptions {
                keys_dir,
                samples: read_samples(sample, &sample_circuit)?,
                generated: fixture_instances(circuits.as_deref(), ks.as_deref())?,
                seed,
            };
            export::write_verifier_fixtures(&dir, &opts).map(drop)
        }
    }
}

/// The instances `enygma setup` makes keys for: `--circuits`, else every instance hosted by
/// default.
fn setup_instances(circuits: Option<&str>) -> Result<Vec<Instance>> {
    Ok(match circuits {
        Some(list) => statements::resolve_list(list)?,
        None => statements::instances().collect(),
    })
}

/// `enygma setup`: development keys of `instances` and their exports, or only the exports, or
/// only the missing keys.
fn setup(
    keys_dir: &Path,
    instances: &[Instance],
    keep_existing: bool,
    exports_only: bool,
) -> Result<()> {
    if exports_only {
        for &instance in instances {
            export::write_committed_exports(keys_dir, instance)?;
            eprintln!("{instance}: snarkjs key and Solidity verifier written");
        }
        return Ok(());
    }
    eprintln!("making DEVELOPMENT keys from the fixed public seed: not for production");
    if keep_existing {
        load_prover(keys_dir, instances)?;
        eprintln!(
            "keys of {} statement instances are present in {} and match the circuits",
            instances.len(),
            keys_dir.display()
        );
        return Ok(());
    }
    for &instance in instances {
        let pk = keys::generate(instance)?;
        keys::save(keys_dir, instance, &pk, &keys::KeyRecord::DEVELOPMENT)?;
        export::write_committed_exports(keys_dir, instance)?;
        eprintln!(
            "{instance}: keys, snarkjs key and Solidity verifier written to {}",
            keys_dir.display()
        );
    }
    Ok(())
}

/// The files of `instance` in `keys_dir` that writing its keys would replace.
fn existing_key_files(keys_dir: &Path, instance: Instance) -> Vec<PathBuf> {
    let paths = keys::KeyPaths::new(keys_dir, instance);
    let exports = export::committed_export_files(instance).map(|f| keys_dir.join(f));
    [paths.proving, paths.proving_digest, paths.verifying]
        .into_iter()
        .chain(exports)
        .filter(|p| p.exists())
        .collect()
}

/// Refuses when keys of `instance` are already in `keys_dir`, unless `force`.
fn refuse_overwrite(keys_dir: &Path, instance: Instance, force: bool) -> Result<()> {
    let existing = existing_key_files(keys_dir, instance);
    if !force && !existing.is_empty() {
        bail!(
            "{instance}: keys exist in {} ({}); pass --force to replace them",
            keys_dir.display(),
            existing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// `enygma setup --random`: single-party keys of `instances` from OS entropy.
fn setup_random(keys_dir: &Path, instances: &[Instance], force: bool) -> Result<()> {
    for &instance in instances {
        refuse_overwrite(keys_dir, instance, force)?;
    }
    eprintln!(
        "making SINGLE-PARTY keys from OS entropy: for staging; whoever runs this could keep the toxic waste"
    );
    let record = keys::KeyRecord {
        origin: keys::KeyOrigin::SingleParty,
        reduction: enygma_prover::qap::Reduction::Libsnark,
    };
    for &instance in instances {
        let pk = keys::generate_random(instance)?;
        keys::save(keys_dir, instance, &pk, &record)?;
        export::write_committed_exports(keys_dir, instance)?;
        eprintln!(
            "{instance}: single-party keys written to {}",
            keys_dir.display()
        );
    }
    Ok(())
}

/// `enygma export-r1cs`.
fn export_r1cs(instance: Instance, out: Option<PathBuf>) -> Result<()> {
    let r1cs = enygma_prover::groth16::r1cs(instance.circuit_for_setup())
        .with_context(|| format!("{instance} synthesis"))?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{}.r1cs", instance.key_stem())));
    fs::write(&out, enygma_prover::ceremony::r1cs_file::write(&r1cs))
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "{instance}: {} constraints, {} wires, {} public inputs written to {}",
        r1cs.num_constraints,
        r1cs.num_instance_variables + r1cs.num_witness_variables,
        r1cs.num_instance_variables - 1,
        out.display()
    );
    Ok(())
}

/// `enygma export-wtns`: the request is checked as `prove` checks it; no keys are read.
fn export_wtns(input: &str, circuit: &CircuitArgs, out: Option<PathBuf>) -> Result<()> {
    let prepared = prepared_request(input, circuit)?;
    let instance = prepared.instance;
    let assignment = enygma_prover::full_assignment(&prepared)?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{}.wtns", instance.key_stem())));
    let bytes = zeroize::Zeroizing::new(enygma_prover::ceremony::wtns_file::write(&assignment));
    fs::write(&out, &*bytes).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "{instance}: {} wires ({} public inputs) written to {}",
        assignment.len(),
        instance.num_public_inputs(),
        out.display()
    );
    Ok(())
}

/// `enygma export-zkey`: the development key of snarkjs' reduction, written as a zkey.
fn export_zkey(instance: Instance, keys_dir: &Path, out: Option<PathBuf>) -> Result<()> {
    use enygma_prover::qap::Reduction;
    let r1cs = enygma_prover::groth16::r1cs(instance.circuit_for_setup())
        .with_context(|| format!("{instance} synthesis"))?;
    let pk = keys::generate_with_reduction(instance, Reduction::Circom)?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{}.zkey", instance.key_stem())));
    fs::write(&out, enygma_prover::ceremony::zkey::write(&pk, &r1cs))
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "{instance}: DEVELOPMENT zkey (public seed, not for production) written to {}",
        out.display()
    );
    let vk_path = keys::KeyPaths::new(keys_dir, instance).verifying;
    if vk_path.exists() {
        if keys::load_verifying_key(&vk_path)? == pk.vk {
            eprintln!(
                "its verifying key is {}: `enygma verify` accepts its proofs",
                vk_path.display()
            );
        } else {
            eprintln!(
                "warning: {} is not the development verifying key; proofs from this zkey do not verify against it",
                vk_path.display()
            );
        }
    }
    Ok(())
}

/// `enygma import-zkey`: the zkey checked against the instance's R1CS, then written as our keys.
fn import_zkey(instance: Instance, zkey: &Path, keys_dir: &Path, force: bool) -> Result<()> {
    refuse_overwrite(keys_dir, instance, force)?;
    let bytes = fs::read(zkey).with_context(|| format!("reading {}", zkey.display()))?;
    let r1cs = enygma_prover::groth16::r1cs(instance.circuit_for_setup())
        .with_context(|| format!("{instance} synthesis"))?;
    let development_delta = keys::development_delta_g1(instance);
    let (pk, record) = enygma_prover::ceremony::zkey::import(&bytes, &r1cs, &development_delta)
        .with_context(|| format!("{} refused for {instance}", zkey.display()))?;
    keys::save(keys_dir, instance, &pk, &record)?;
    export::write_committed_exports(keys_dir, instance)?;
    eprintln!(
        "{instance}: imported ({}) into {}",
        record.origin,
        keys_dir.display()
    );
    Ok(())
}

/// `enygma prove`: the request is checked before any key is loaded.
/// `--cache-dir` as the server reads it: KEYS_DIR/cache by default, none for `none`.
fn cache_dir_or_default(cache_dir: Option<PathBuf>, keys_dir: &Path) -> Option<PathBuf> {
    match cache_dir {
        None => Some(keys_dir.join("cache")),
        Some(dir) if dir.as_os_str() == "none" => None,
        Some(dir) => Some(dir),
    }
}

/// `enygma cache --matrices-only`: the matrices of `instances` kept in `cache_dir`, each read
/// back to be sure.
fn keep_matrices(instances: &[Instance], cache_dir: &Path) -> Result<()> {
    for &instance in instances {
        CircuitShape::load_or_build(instance, Some(cache_dir))?;
        read_back_matrices(instance, cache_dir)?;
        eprintln!("{instance}: matrices kept in {}", cache_dir.display());
    }
    Ok(())
}

fn read_back_matrices(instance: Instance, cache_dir: &Path) -> Result<()> {
    use enygma_prover::{cache, groth16::R1cs, matrix::CompactMatrix};
    let stem = instance.key_stem();
    let path = cache::path(cache_dir, &stem, cache::Kind::Matrices);
    cache::read::<R1cs<CompactMatrix>>(
        &path,
        cache::Kind::Matrices,
        &cache::matrices_binding(&stem),
    )
    .with_context(|| format!("the matrices of {instance} in {}", path.display()))?;
    Ok(())
}

/// `enygma cache`: the matrices and tables of `instances` kept in `cache_dir`, one instance in
/// memory at a time (the tables of all of them take 2.6 GiB), each file read back to be sure.
fn fill_cache(keys_dir: &Path, instances: &[Instance], cache_dir: PathBuf) -> Result<()> {
    use enygma_prover::{cache, groth16::PrecomputedQueries};
    for &instance in instances {
        let prover = Prover::load_cached(
            keys_dir,
            &[instance],
            keys::MissingKeys::Create,
            Some(cache_dir.clone()),
        )
        .context("loading keys")?;
        let bytes = prover.build_tables(instance)?;
        let stem = instance.key_stem();
        let key = prover.circuit(instance).expect("loaded above").key_sha256;
        let tables = cache::path(&cache_dir, &stem, cache::Kind::Tables);
        cache::read::<PrecomputedQueries>(&tables, cache::Kind::Tables, &key)
            .with_context(|| format!("the tables of {instance} in {}", tables.display()))?;
        read_back_matrices(instance, &cache_dir)?;
        eprintln!(
            "{instance}: matrices and {:.1} MiB of tables kept in {}",
            bytes as f64 / f64::from(1 << 20),
            cache_dir.display()
        );
    }
    Ok(())
}

fn prove(
    input: &str,
    circuit: &CircuitArgs,
    keys_dir: &Path,
    precompute: bool,
    cache_dir: Option<PathBuf>,
) -> Result<()> {
    let prepared = prepared_request(input, circuit)?;
    let instance = prepared.instance;
    let mut prover =
        Prover::load_cached(keys_dir, &[instance], keys::MissingKeys::Create, cache_dir)
            .context("loading keys")?;
    if precompute {
        prover.precompute(&[instance])?;
    }
    let (response, timings) = prover.prove(&prepared)?;
    eprintln!(
        "{instance}: witness {:?}, prove {:?}",
        timings.witness, timings.prove
    );
    println!("{}", serde_json::to_string_pretty(&response)?);
    Ok(())
}

/// `enygma verify`: an error unless the proof verifies.
fn verify(input: &str, circuit: &CircuitArgs, keys_dir: &Path) -> Result<()> {
    let instance = instance_of(&circuit.circuit, circuit.k, None)?;
    let response: ProofResponse =
        serde_json::from_slice(&read_input(input)?).context("not a proof response")?;
    if !load_prover(keys_dir, &[instance])?.verify(instance, &response)? {
        bail!("the proof does not verify ({instance})");
    }
    eprintln!("valid ({instance})");
    Ok(())
}

/// `enygma gen-request`: `count` requests from one seeded generator, the spec's index counting
/// them, printed or written as `{stem}-{i}.json`.
fn gen_request(
    circuit: &CircuitArgs,
    seed: u64,
    spec: &RequestSpec,
    count: usize,
    out: Option<&Path>,
) -> Result<()> {
    let instance = instance_of(&circuit.circuit, circuit.k, None)?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    if let Some(dir) = out {
        fs::create_dir_all(dir)?;
    }
    for index in 0..count {
        let spec = RequestSpec {
            index,
            ..spec.clone()
        };
        let body = instance
            .generate(&spec, &mut rng)
            .with_context(|| format!("cannot generate a {instance} request"))?;
        let json = serde_json::to_string_pretty(&body)?;
        match out {
            Some(dir) => fs::write(dir.join(format!("{instance}-{index}.json")), json)?,
            None => println!("{json}"),
        }
    }
    Ok(())
}

/// `enygma info`: the circuit sizes of every instance, those hosted only when named included, as
/// text or JSON.
fn info(json: bool) -> Result<()> {
    let shapes = statements::all_instances()
        .map(CircuitShape::build)
        .collect::<Result<Vec<_>, _>>()?;
    if json {
        let info: Vec<_> = shapes.iter().map(|s| &s.info).collect();
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    for CircuitShape { instance, info, .. } in &shapes {
        println!(
            "{instance}: {} constraints, {} witness variables, {} public inputs, \
             precomputed MSM tables {:.1} MiB",
            info.constraints,
            info.witness_variables,
            info.public_inputs,
            info.precomputed_table_bytes as f64 / (1 << 20) as f64
        );
    }
    Ok(())
}

/// The instances `verifier-fixtures` generates a request for: `--circuits` (every instance by
/// default, the hidden sender's statements included, so that the independent verifiers check
/// every verifier a deployment may use; none for `none`), then only the sizes in `--ks`.
fn fixture_instances(circuits: Option<&str>, ks: Option<&[usize]>) -> Result<Vec<Instance>> {
    let chosen = match circuits.map(str::trim) {
        None => statements::all_instances().collect(),
        Some("none") | Some("") => Vec::new(),
        Some(list) => statements::resolve_list(list)?,
    };
    Ok(chosen
        .into_iter()
        .filter(|i| match (ks, i.k()) {
            (Some(ks), Some(k)) => ks.contains(&k),
            _ => true,
        })
        .collect())
}

/// The `--sample` requests of `verifier-fixtures`, each with its instance (k from the request).
fn read_samples(
    paths: Vec<PathBuf>,
    sample_circuit: &str,
) -> Result<Vec<(PathBuf, Instance, Vec<u8>)>> {
    paths
        .into_iter()
        .map(|path| {
            let body = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let instance = instance_of(sample_circuit, None, request_size(sample_circuit, &body))
                .with_context(|| path.display().to_string())?;
            Ok((path, instance, body))
        })
        .collect()
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::new(enygma_prover::log_filter());
    // No colour codes when stderr is a file or a pipe (CI logs).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
