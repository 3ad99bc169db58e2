//! Records `ENYGMA_CIRCUIT_FINGERPRINT`: a SHA-256 over every source file that decides the
//! constraint matrices (the circuits' crate, this crate: the statements, the orientation and the
//! compact form) and over `Cargo.lock` (the arkworks versions that synthesize them). Matrices
//! kept in a cache file carry it, so a build from other sources never reads matrices it would not
//! have synthesized itself (`enygma_prover::cache`). Coarse on purpose: any edit in those crates
//! changes it, which costs one synthesis per instance at the next start, never a wrong matrix.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let sources = [
        manifest.join("src"),
        manifest.join("../enygma-circuit/src"),
        manifest.join("../enygma-circuit/Cargo.toml"),
        manifest.join("Cargo.toml"),
        manifest.join("../../Cargo.lock"),
    ];
    let mut files = Vec::new();
    for source in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
        collect(source, &mut files);
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        let relative = file.strip_prefix(&manifest).unwrap_or(file);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update([0]);
        let bytes = fs::read(file).unwrap_or_default();
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    let fingerprint: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=ENYGMA_CIRCUIT_FINGERPRINT={fingerprint}");
}

/// Every file under `path` (or `path` itself), absent paths skipped.
fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
    } else if let Ok(entries) = fs::read_dir(path) {
        for entry in entries.flatten() {
            collect(&entry.path(), files);
        }
    }
}
