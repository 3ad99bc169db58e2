//! `enygma`: development keys, proofs, request pools and verifier artifacts for the Enygma
//! transfer, deposit and withdraw circuits.

mod export;

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use enygma_circuit::payment::PaymentInputs;
use enygma_prover::{keys, request, CircuitShape, Kind, ProofResponse, Prover, SUPPORTED_K};
use rand::SeedableRng;

#[derive(Parser)]
#[command(
    name = "enygma",
    version,
    about = "Groth16 prover for the Rayls Enygma transfer, deposit and withdraw circuits"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make the development proving and verifying keys of every statement and k (overwrites
    /// existing ones), with their snarkjs keys and Solidity verifiers (as `export-vk` makes them).
    Setup {
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Only create missing keys; check the existing ones against the circuit instead.
        #[arg(long)]
        keep_existing: bool,
    },
    /// Prove a request (a file, or - for standard input) and print the response JSON.
    Prove {
        input: String,
        #[arg(long, value_enum, default_value = "transfer")]
        circuit: export::CircuitArg,
        /// Anonymity-set size; by default the length of the request's `anonymity_set`.
        #[arg(long)]
        k: Option<usize>,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Verify a response (a file, or -); the statement and k are inferred from the length of
    /// `public_signal` (8k + 2 transfer, 8k + 3 deposit, 8k + 12 withdraw). Exits 0 only if valid.
    Verify {
        input: String,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Write valid, distinct requests (a pool for tests and load tests).
    GenRequest {
        #[arg(long, value_enum, default_value = "transfer")]
        circuit: export::CircuitArg,
        #[arg(long)]
        k: usize,
        #[arg(long)]
        seed: u64,
        /// The sender's index in the anonymity set; by default it varies across the pool.
        #[arg(long)]
        sender_index: Option<usize>,
        #[arg(long, default_value_t = 25)]
        amount: u64,
        #[arg(long, default_value_t = 1000)]
        balance: u64,
        /// Number of requests; with --out they go to DIR/request-{k}-{i}.json.
        #[arg(long, default_value_t = 1)]
        count: usize,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the size of every statement's circuit for every k.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Print (or write) a verifying key as a snarkjs key, a Solidity verifier or arkworks bytes.
    /// Reads only the verifying key KEYS_DIR/{circuit}-k{k}.vk.
    ExportVk {
        #[arg(long, value_enum, default_value = "transfer")]
        circuit: export::CircuitArg,
        #[arg(long)]
        k: usize,
        #[arg(long, value_enum)]
        format: export::VkFormatArg,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
        /// Solidity contract name (default Enygma{Circuit}VerifierK{k}, e.g. EnygmaTransferVerifierK6).
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
    /// Prove sample transfer requests and one generated request per statement and k with the keys
    /// in KEYS_DIR and write them as fixtures for verifier-tests/ (snarkjs and the Solidity
    /// verifier in an EVM).
    VerifierFixtures {
        /// Output directory; one subdirectory per proof.
        dir: PathBuf,
        /// A request to prove (k from its anonymity_set); repeatable.
        #[arg(long)]
        sample: Vec<PathBuf>,
        /// The k's of the generated requests, comma-separated (`--ks` alone: none).
        #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "2,3,4,5,6")]
        ks: Vec<usize>,
        /// The statements of the generated requests, comma-separated.
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "transfer,deposit,withdraw"
        )]
        circuits: Vec<export::CircuitArg>,
        #[arg(long, default_value_t = 5)]
        seed: u64,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
}

/// k of a request body: the length of its `anonymity_set`.
fn request_k(body: &[u8]) -> Option<usize> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()?
        .get("anonymity_set")?
        .as_array()
        .map(Vec::len)
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

fn load_prover(keys_dir: &Path) -> Result<Prover> {
    Prover::load_or_create(keys_dir).context("loading keys")
}

/// The statement and k whose circuits have `n` public inputs.
fn statement_of(n: usize) -> Option<(Kind, usize)> {
    Kind::ALL
        .into_iter()
        .flat_map(|kind| SUPPORTED_K.map(move |k| (kind, k)))
        .find(|(kind, k)| kind.num_public_inputs(*k) == n)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Setup {
            keys_dir,
            keep_existing,
        } => {
            eprintln!("making DEVELOPMENT keys from the fixed public seed: not for production");
            if keep_existing {
                load_prover(&keys_dir)?;
                eprintln!(
                    "keys of every statement for k=2..6 are present in {} and match the circuits",
                    keys_dir.display()
                );
                return Ok(());
            }
            for kind in Kind::ALL {
                for k in SUPPORTED_K {
                    let pk = keys::generate(kind, k)?;
                    keys::save(&keys_dir, kind, k, &pk)?;
                    export::write_committed_exports(&keys_dir, kind, k)?;
                    eprintln!(
                        "{kind} k={k}: keys, snarkjs key and Solidity verifier written to {}",
                        keys_dir.display()
                    );
                }
            }
        }
        Command::Prove {
            input,
            circuit,
            k,
            keys_dir,
        } => {
            let kind = Kind::from(circuit);
            let body = read_input(&input)?;
            let k = match k {
                Some(k) => k,
                None => request_k(&body).context("cannot infer k: pass --k")?,
            };
            // Refuse bad requests before loading any key.
            let prepared = enygma_prover::prepare(kind, k, &body)?;
            let prover = load_prover(&keys_dir)?;
            let (response, timings) = prover.prove(&prepared)?;
            eprintln!(
                "{kind} k={k}: witness {:?}, prove {:?}",
                timings.witness, timings.prove
            );
            println!("{}", serde_json::to_string_pretty(&response)?);
        }
        Command::Verify { input, keys_dir } => {
            let response: ProofResponse =
                serde_json::from_slice(&read_input(&input)?).context("not a proof response")?;
            let n = response.public_signal.len();
            let Some((kind, k)) = statement_of(n) else {
                bail!("public_signal has {n} elements: not 8k + 2, 8k + 3 or 8k + 12 for any k in 2..=6");
            };
            if !load_prover(&keys_dir)?.verify(kind, k, &response)? {
                bail!("the proof does not verify ({kind} k={k})");
            }
            eprintln!("valid ({kind} k={k})");
        }
        Command::GenRequest {
            circuit,
            k,
            seed,
            sender_index,
            amount,
            balance,
            count,
            out,
        } => {
            let kind = Kind::from(circuit);
            if !SUPPORTED_K.contains(&k) {
                bail!("k value not supported: must be between 2 and 6");
            }
            if sender_index.is_some_and(|s| s >= k) || (kind != Kind::Withdraw && amount > balance)
            {
                bail!("need sender-index < k and (but for a withdraw) amount <= balance");
            }
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            if let Some(dir) = &out {
                fs::create_dir_all(dir)?;
            }
            for i in 0..count {
                let sender = sender_index.unwrap_or(i % k);
                let inputs = PaymentInputs::generate(kind, k, sender, amount, balance, &mut rng);
                let json = serde_json::to_string_pretty(&request::to_request_json(&inputs))?;
                match &out {
                    Some(dir) => fs::write(dir.join(format!("request-{k}-{i}.json")), json)?,
                    None => println!("{json}"),
                }
            }
        }
        Command::Info { json } => {
            let info = Kind::ALL
                .into_iter()
                .flat_map(|kind| {
                    SUPPORTED_K.map(move |k| CircuitShape::build(kind, k).map(|s| s.info))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                for i in info {
                    println!(
                        "{} k={}: {} constraints, {} witness variables, {} public inputs",
                        i.circuit, i.k, i.constraints, i.witness_variables, i.public_inputs
                    );
                }
            }
        }
        Command::ExportVk {
            circuit,
            k,
            format,
            keys_dir,
            contract,
            out,
        } => {
            let bytes =
                export::export_vk(&keys_dir, circuit.into(), k, format, contract.as_deref())?;
            export::write_output(out.as_deref(), &bytes)?;
        }
        Command::ExportProof {
            input,
            format: export::ProofFormatArg::Snarkjs,
            out_dir,
        } => {
            export::export_proof(&read_input(&input)?, out_dir.as_deref())?;
        }
        Command::VerifierFixtures {
            dir,
            sample,
            ks,
            circuits,
            seed,
            keys_dir,
        } => {
            let generated_circuits = circuits.into_iter().map(Kind::from).collect();
            let opts = export::FixtureOptions {
                keys_dir,
                samples: sample,
                generated_ks: ks,
                generated_circuits,
                seed,
            };
            export::write_verifier_fixtures(&dir, &opts)?;
        }
    }
    Ok(())
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
