//! What a loaded instance holds in memory, per statement instance: the proving key's queries
//! as ark-groth16 holds them and as the prover does (without B's identities), how many of their
//! points are the identity, the constraint matrices in ark-relations'
//! form and in the compact form the prover keeps, and the precomputed MSM tables' size.
//!
//! `cargo run --release -p enygma-prover --example memory [-- KEYS_DIR]` (keys must exist:
//! `enygma setup --keep-existing`). Sizes are heap bytes from the containers' lengths, not RSS.

use std::path::PathBuf;

use ark_bn254::{G1Affine, G2Affine};
use ark_ec::AffineRepr;
use enygma_prover::{
    groth16::{r1cs, PrecomputedQueries, SparseProvingKey},
    keys::{load_proving_key, KeyPaths},
    matrix::{matrix_memory_bytes, CompactMatrix},
    statements,
};

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| "keys".into());
    let g1 = std::mem::size_of::<G1Affine>();
    let g2 = std::mem::size_of::<G2Affine>();
    println!("G1Affine {g1} bytes, G2Affine {g2} bytes in memory");
    println!(
        "| instance | ark key MiB | held key MiB | a / b / l identities | ark matrices MiB | terms | compact MiB | coefficients | tables MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut totals = [0usize; 5];
    for instance in statements::instances() {
        let pk = load_proving_key(&KeyPaths::new(&dir, instance))
            .expect("proving key")
            .key;
        let key = (pk.a_query.len() + pk.b_g1_query.len() + pk.h_query.len() + pk.l_query.len())
            * g1
            + pk.b_g2_query.len() * g2;
        let zeros = |q: &[G1Affine]| q.iter().filter(|p| p.is_zero()).count();
        let b2_zeros = pk.b_g2_query.iter().filter(|p| p.is_zero()).count();
        let shape = r1cs(instance.circuit_for_setup()).expect("synthesis");
        let ark: usize = shape.matrices.iter().map(matrix_memory_bytes).sum();
        let terms: usize = shape.matrices.iter().flatten().map(Vec::len).sum();
        let compact: Vec<CompactMatrix> = shape
            .matrices
            .iter()
            .map(|m| CompactMatrix::new(m).unwrap())
            .collect();
        let compact_bytes: usize = compact.iter().map(CompactMatrix::memory_bytes).sum();
        let coefficients: Vec<usize> = compact.iter().map(|m| m.num_coefficients()).collect();
        let held = SparseProvingKey::new(pk.clone()).expect("query lengths");
        let tables = PrecomputedQueries::memory_bytes_for_key(&held);
        let held = held.memory_bytes();
        for (t, v) in totals
            .iter_mut()
            .zip([key, held, ark, compact_bytes, tables])
        {
            *t += v;
        }
        println!(
            "| {instance} | {:.1} | {:.1} | {} / {} ({} G2) / {} of {} | {:.1} | {terms} | {:.1} | {:?} | {:.1} |",
            mib(key),
            mib(held),
            zeros(&pk.a_query),
            zeros(&pk.b_g1_query),
            b2_zeros,
            zeros(&pk.l_query),
            pk.a_query.len(),
            mib(ark),
            mib(compact_bytes),
            coefficients,
            mib(tables),
        );
    }
    println!(
        "| total | {:.1} | {:.1} | | {:.1} | | {:.1} | | {:.1} |",
        mib(totals[0]),
        mib(totals[1]),
        mib(totals[2]),
        mib(totals[3]),
        mib(totals[4])
    );
}
