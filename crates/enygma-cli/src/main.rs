//! `enygma`: development keys, proofs and request pools for the Enygma transfer circuit.

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use enygma_circuit::transfer::TransferInputs;
use enygma_prover::{keys, request, CircuitShape, ProofResponse, TransferProver, SUPPORTED_K};
use rand::SeedableRng;

#[derive(Parser)]
#[command(name = "enygma", version, about = "Groth16 prover for the Rayls Enygma transfer circuit")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make the development proving and verifying keys for every k (overwrites existing ones).
    Setup {
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Prove a transfer request (a file, or - for standard input) and print the response JSON.
    Prove {
        input: String,
        /// Anonymity-set size; by default the length of the request's `anonymity_set`.
        #[arg(long)]
        k: Option<usize>,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Verify a response (a file, or -); k is inferred from `public_signal`. Exits 0 only if valid.
    Verify {
        input: String,
        #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
        keys_dir: PathBuf,
    },
    /// Write valid, distinct transfer requests (a pool for tests and load tests).
    GenRequest {
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
    /// Print the size of every k's circuit.
    Info {
        #[arg(long)]
        json: bool,
    },
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

fn load_prover(keys_dir: &Path) -> Result<TransferProver> {
    TransferProver::load_or_create(keys_dir).context("loading keys")
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Setup { keys_dir } => {
            eprintln!("making DEVELOPMENT keys from the fixed public seed: not for production");
            for k in SUPPORTED_K {
                let pk = keys::generate(k)?;
                keys::save(&keys_dir, k, &pk)?;
                eprintln!("k={k}: keys written to {}", keys_dir.display());
            }
        }
        Command::Prove { input, k, keys_dir } => {
            let body = read_input(&input)?;
            let k = match k {
                Some(k) => k,
                None => serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("anonymity_set").and_then(|a| a.as_array()).map(Vec::len))
                    .context("cannot infer k: pass --k")?,
            };
            // Refuse bad requests before loading any key.
            let prepared = enygma_prover::prepare(k, &body)?;
            let prover = load_prover(&keys_dir)?;
            let (response, timings) = prover.prove(&prepared)?;
            eprintln!("k={k}: witness {:?}, prove {:?}", timings.witness, timings.prove);
            println!("{}", serde_json::to_string_pretty(&response)?);
        }
        Command::Verify { input, keys_dir } => {
            let response: ProofResponse = serde_json::from_slice(&read_input(&input)?).context("not a proof response")?;
            let n = response.public_signal.len();
            if n < 2 || (n - 2) % 8 != 0 || !SUPPORTED_K.contains(&((n - 2) / 8)) {
                bail!("public_signal has {n} elements: not 8k + 2 for any k in 2..=6");
            }
            let k = (n - 2) / 8;
            if !load_prover(&keys_dir)?.verify(k, &response)? {
                bail!("the proof does not verify (k={k})");
            }
            eprintln!("valid (k={k})");
        }
        Command::GenRequest { k, seed, sender_index, amount, balance, count, out } => {
            if !SUPPORTED_K.contains(&k) {
                bail!("k value not supported: must be between 2 and 6");
            }
            if sender_index.is_some_and(|s| s >= k) || amount > balance {
                bail!("need sender-index < k and amount <= balance");
            }
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            if let Some(dir) = &out {
                fs::create_dir_all(dir)?;
            }
            for i in 0..count {
                let sender = sender_index.unwrap_or(i % k);
                let inputs = TransferInputs::generate(k, sender, amount, balance, &mut rng);
                let json = serde_json::to_string_pretty(&request::to_request_json(&inputs))?;
                match &out {
                    Some(dir) => fs::write(dir.join(format!("request-{k}-{i}.json")), json)?,
                    None => println!("{json}"),
                }
            }
        }
        Command::Info { json } => {
            let info = SUPPORTED_K.map(|k| CircuitShape::build(k).map(|s| s.info)).collect::<Result<Vec<_>, _>>()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                for i in info {
                    println!("k={}: {} constraints, {} witness variables, {} public inputs", i.k, i.constraints, i.witness_variables, i.public_inputs);
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(enygma_prover::DEFAULT_LOG_FILTER));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
