//! Writes the fuzz seed corpus (`enygma_prover::fuzzing::seeds`) into a directory:
//! `cargo run -p enygma-prover --example fuzz_seeds -- OUT_DIR [SAMPLES_DIR]`. Run by
//! `scripts/fuzz.sh`; the corpus is not committed.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(
        args.next()
            .expect("usage: fuzz_seeds OUT_DIR [SAMPLES_DIR]"),
    );
    let samples = args.next().map(PathBuf::from);
    std::fs::create_dir_all(&out)?;
    let seeds = enygma_prover::fuzzing::seeds(samples.as_deref())?;
    for (name, input) in &seeds {
        std::fs::write(out.join(name), input)?;
    }
    println!("{} seeds in {}", seeds.len(), out.display());
    Ok(())
}
