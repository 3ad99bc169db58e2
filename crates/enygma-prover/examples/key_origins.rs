//! Proof time of one instance with two sets of keys, interleaved: development keys (libsnark's
//! QAP reduction) against keys imported from a snarkjs ceremony (snarkjs' reduction: the H query
//! on the odd points of the doubled domain, one transform fewer). Same requests, same thread
//! pool, one proof of each kind in turn so that drift of the machine hits both alike.
//!
//! `cargo run --release -p enygma-prover --features bench --example key_origins -- STEM
//! DEV_KEYS_DIR CEREMONY_KEYS_DIR ROUNDS THREADS REQUEST...` (`benches/ceremony_keys.sh` makes
//! the ceremony keys and runs this). Prints each kind's median and 90th percentile of the whole
//! proof (witness synthesis, witness map, MSMs, self-check) and the median of its witness map
//! and MSM part alone.

use std::path::PathBuf;
use std::time::Duration;

use enygma_prover::{prepare, statements, MissingKeys, Prover};

fn percentile(mut v: Vec<Duration>, p: f64) -> f64 {
    v.sort();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 6 {
        eprintln!(
            "usage: key_origins STEM DEV_KEYS_DIR CEREMONY_KEYS_DIR ROUNDS THREADS REQUEST..."
        );
        std::process::exit(2);
    }
    let instance = statements::by_stem(&args[0]).expect("a key stem of the registry");
    let dirs = [PathBuf::from(&args[1]), PathBuf::from(&args[2])];
    let rounds: usize = args[3].parse().expect("ROUNDS: a number");
    let threads: usize = args[4].parse().expect("THREADS: a number");
    let requests: Vec<_> = args[5..]
        .iter()
        .map(|path| {
            let body = std::fs::read(path).expect("a request file");
            prepare(instance, &body).expect("a valid request")
        })
        .collect();
    let provers: Vec<Prover> = dirs
        .iter()
        .map(|dir| Prover::load(dir, &[instance], MissingKeys::Refuse).expect("keys"))
        .collect();
    let labels: Vec<String> = provers
        .iter()
        .map(|p| {
            let record = &p.circuit(instance).expect("loaded").record;
            format!("{} ({})", record.origin, record.reduction.name())
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    // One proof of each kind to warm caches and the allocator, not counted.
    for prover in &provers {
        pool.install(|| prover.prove(&requests[0]))
            .expect("a proof");
    }
    let mut total = [Vec::new(), Vec::new()];
    let mut map_and_msm = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        let request = &requests[round % requests.len()];
        // Alternate which kind goes first, so neither always follows the other.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for kind in order {
            let started = std::time::Instant::now();
            let (_, timings) = pool
                .install(|| provers[kind].prove(request))
                .expect("a proof that passes its self-check");
            total[kind].push(started.elapsed());
            map_and_msm[kind].push(timings.prove);
        }
    }
    println!(
        "{} on {threads} thread(s), {rounds} proofs per key kind, interleaved",
        instance.key_stem()
    );
    println!("| keys | median ms | p90 ms | witness map + MSMs + self-check, median ms |");
    println!("|---|---:|---:|---:|");
    for kind in 0..2 {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} |",
            labels[kind],
            percentile(total[kind].clone(), 0.5),
            percentile(total[kind].clone(), 0.9),
            percentile(map_and_msm[kind].clone(), 0.5),
        );
    }
    println!(
        "ceremony / development, median: {:.3}",
        percentile(total[1].clone(), 0.5) / percentile(total[0].clone(), 0.5)
    );
}
