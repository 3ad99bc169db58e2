//! The fuzzing entry point, shared by the cargo-fuzz target
//! (`fuzz/fuzz_targets/prepare.rs`) and the stable replay test (`tests/fuzz_replay.rs`), so that
//! both drive exactly the same code: [`prepare`](crate::prepare), i.e. a statement's strict
//! request parser and then its native checks, which must refuse any input with an error and
//! never panic. [`verify_input`] does the same for the verify routes' proof parser (the
//! `verify` target, replayed over its committed corpus in `tests/fuzz_replay.rs`).
//!
//! An input names its statement instance from the registry, so a statement added to
//! [`crate::statements::ALL`] is fuzzed without a new target or list:
//! - `{key stem}\n{body}` (`transfer-k6\n{...}`): the instance of that stem, as the seeds
//!   ([`seed`]) are written, so that a seed keeps its instance when the registry grows;
//! - anything else: the first byte picks an instance (modulo their number), the rest is the
//!   body, so that mutations of the stem still reach some parser.

use crate::{statements, Instance, Prepared, ProveError};

/// The instance an input is for, and its body.
pub fn split_input(data: &[u8]) -> Option<(Instance, &[u8])> {
    if let Some(newline) = data.iter().take(64).position(|&b| b == b'\n') {
        let stem = std::str::from_utf8(&data[..newline]).ok();
        if let Some(instance) = stem.and_then(statements::by_stem) {
            return Some((instance, &data[newline + 1..]));
        }
    }
    let (&selector, body) = data.split_first()?;
    let instances: Vec<Instance> = statements::instances().collect();
    Some((instances[usize::from(selector) % instances.len()], body))
}

/// Parses and checks one fuzz input; `None` for an empty one.
pub fn prepare_input(data: &[u8]) -> Option<Result<Prepared, ProveError>> {
    let (instance, body) = split_input(data)?;
    Some(crate::prepare(instance, body))
}

/// The verify route's proof parser on one fuzz input (the same `{key stem}\n{body}` framing):
/// [`crate::parse_proof_response`] (JSON, each key once, the response's shape), then the
/// key-free checks of [`crate::proof_of`] (canonical coordinates, points on the curve and in
/// the subgroup, the instance's input count); `None` for an empty input.
pub fn verify_input(data: &[u8]) -> Option<Result<(), ProveError>> {
    let (instance, body) = split_input(data)?;
    Some(
        crate::parse_proof_response(instance, body)
            .and_then(|response| crate::proof_of(instance, &response))
            .map(|_| ()),
    )
}

/// A seed input: `body` for `instance`.
pub fn seed(instance: Instance, body: &[u8]) -> Vec<u8> {
    let mut input = format!("{}\n", instance.key_stem()).into_bytes();
    input.extend_from_slice(body);
    input
}

/// The seed corpus, as (file name, input): for every instance of the registry, two valid
/// generated requests (what `enygma gen-request --seed 1` and `--seed 2` write); and every
/// reference sample (`*.json`) in `samples`, for the instance its file name names
/// (`transfer-k6.json`, `bad-deposit-k2.json`) or else for every instance of a statement
/// without sizes (the DvP samples are named after the reference's routes, not our stems).
pub fn seeds(samples: Option<&std::path::Path>) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    use rand::SeedableRng;
    let mut out = Vec::new();
    for instance in statements::instances() {
        for n in [1u64, 2] {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(n);
            let spec = statements::RequestSpec::default();
            if let Ok(body) = instance.generate(&spec, &mut rng) {
                let body = serde_json::to_vec_pretty(&body).map_err(std::io::Error::other)?;
                out.push((format!("gen-{instance}-{n}"), seed(instance, &body)));
            }
        }
    }
    let Some(dir) = samples else {
        return Ok(out);
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for path in files {
        let body = std::fs::read(&path)?;
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let named = statements::by_stem(name.strip_prefix("bad-").unwrap_or(&name));
        let instances: Vec<Instance> = match named {
            Some(instance) => vec![instance],
            None => statements::instances()
                .filter(|i| i.k().is_none())
                .collect(),
        };
        for instance in instances {
            out.push((format!("ref-{instance}-{name}"), seed(instance, &body)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_name_their_instance_by_stem_or_by_first_byte() {
        let t6 = statements::by_stem("transfer-k6").unwrap();
        let input = seed(t6, b"{}");
        assert_eq!(split_input(&input), Some((t6, &b"{}"[..])));
        let first = statements::instances().next().unwrap();
        assert_eq!(split_input(b"\x00{}"), Some((first, &b"{}"[..])));
        assert_eq!(
            split_input(b"nope\n{}").map(|(_, b)| b),
            Some(&b"ope\n{}"[..])
        );
        assert!(split_input(b"").is_none());
        assert!(matches!(
            prepare_input(&seed(t6, b"[")),
            Some(Err(ProveError::BadRequest(_)))
        ));
    }
}
