//! What the load is made of: one route with the request pool of `--requests`, or a weighted
//! mix of statement instances (`--mix transfer-k6=8,join-split-enygma=1`), each with a pool of
//! requests its own generator makes (`enygma_prover::statements`, as `enygma gen-request`
//! does), so that one run offers every statement the server queues together.
//!
//! The mix is deterministic: requests follow a smooth weighted round robin over the
//! instances (with weights 8 and 1, one join-split after every eight transfers, interleaved),
//! shared by every worker, so two runs with the same flags send the same sequence of routes.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};
use enygma_prover::statements::{self, Instance, RequestSpec};
use hyper::body::Bytes;
use hyper::Uri;
use rand::SeedableRng;

use crate::client::HttpClient;
use crate::pool::Pool;

/// One item of `--mix`: an instance and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixItem {
    pub stem: String,
    pub weight: u32,
}

/// The value of `--mix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<MixItem>);

/// Parses `transfer-k6=8,join-split-enygma=1` (a bare stem weighs 1). Every stem must be a
/// registry instance's, once.
pub fn parse_mix(s: &str) -> Result<Mix, String> {
    let mut items: Vec<MixItem> = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty item in --mix {s:?}"));
        }
        let (stem, weight) = match item.split_once('=') {
            Some((stem, w)) => (
                stem.trim(),
                w.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or_else(|| {
                        format!("--mix {item:?}: the weight must be a whole number > 0")
                    })?,
            ),
            None => (item, 1),
        };
        if statements::by_stem(stem).is_none() {
            let stems = statements::key_stems();
            return Err(format!(
                "--mix {stem:?} is not a key stem ({})",
                stems.join(", ")
            ));
        }
        if items.iter().any(|i| i.stem == stem) {
            return Err(format!("--mix names {stem} twice"));
        }
        items.push(MixItem {
            stem: stem.to_string(),
            weight,
        });
    }
    Ok(Mix(items))
}

/// One route of the load, with its request pool.
pub struct Target {
    /// The key stem (`transfer-k6`), or the path for a route that names no instance.
    pub label: String,
    pub path: String,
    pub uri: Uri,
    pub pool: Pool,
    pub weight: u32,
}

/// Every route of the load and the order in which requests visit them.
pub struct Targets {
    pub targets: Vec<Target>,
    /// Indices into `targets`, one cycle of the weighted round robin.
    cycle: Vec<usize>,
    next: AtomicUsize,
}

impl Targets {
    /// One route: `path` with the bodies of `requests`.
    pub fn single(client: &HttpClient, path: &str, requests: &Path) -> Result<Self> {
        let label = statements::match_path(path)
            .and_then(|m| m.instance().ok())
            .map_or_else(|| path.to_string(), |i| i.key_stem());
        let target = Target {
            label,
            path: path.to_string(),
            uri: client.uri(path)?,
            pool: Pool::load(requests)?,
            weight: 1,
        };
        Ok(Self::new(vec![target]))
    }

    /// A weighted mix, each instance with `pool_size` generated requests (seeded by `seed`).
    pub fn mix(
        client: &HttpClient,
        items: &[MixItem],
        pool_size: usize,
        seed: u64,
    ) -> Result<Self> {
        if pool_size == 0 {
            bail!("--mix-pool must be at least 1");
        }
        let targets = items
            .iter()
            .map(|item| {
                let instance = statements::by_stem(&item.stem)
                    .with_context(|| format!("{} is not a key stem", item.stem))?;
                let path = instance.prove_path();
                Ok(Target {
                    label: item.stem.clone(),
                    uri: client.uri(&path)?,
                    path,
                    pool: Pool::from_bodies(generate_pool(instance, pool_size, seed)?),
                    weight: item.weight,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::new(targets))
    }

    fn new(targets: Vec<Target>) -> Self {
        let cycle = smooth_round_robin(&targets.iter().map(|t| t.weight).collect::<Vec<_>>());
        Self {
            targets,
            cycle,
            next: AtomicUsize::new(0),
        }
    }

    /// The next request: its target's index, route and body.
    pub fn next(&self) -> (usize, &Uri, Bytes) {
        let i = self.cycle[self.next.fetch_add(1, Ordering::Relaxed) % self.cycle.len()];
        let t = &self.targets[i];
        (i, &t.uri, t.pool.next())
    }

    pub fn is_mix(&self) -> bool {
        self.targets.len() > 1
    }

    pub fn pool_len(&self) -> usize {
        self.targets.iter().map(|t| t.pool.len()).sum()
    }

    pub fn pool_distinct(&self) -> usize {
        self.targets.iter().map(|t| t.pool.distinct()).sum()
    }

    /// `transfer-k6=8,join-split-enygma=1`, or the single route's path.
    pub fn describe(&self) -> String {
        if self.is_mix() {
            self.targets
                .iter()
                .map(|t| format!("{}={}", t.label, t.weight))
                .collect::<Vec<_>>()
                .join(",")
        } else {
            self.targets[0].path.clone()
        }
    }
}

/// `pool_size` valid, distinct requests of `instance`, as `enygma gen-request --seed SEED
/// --count N` writes them (the instance's own generator, default hints).
pub fn generate_pool(instance: Instance, pool_size: usize, seed: u64) -> Result<Vec<Bytes>> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..pool_size)
        .map(|index| {
            let spec = RequestSpec {
                index,
                ..RequestSpec::default()
            };
            let body = instance
                .generate(&spec, &mut rng)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("generating a {instance} request"))?;
            Ok(Bytes::from(serde_json::to_vec(&body)?))
        })
        .collect()
}

/// One cycle of the smooth weighted round robin: `weights[i]` slots for `i`, spread out
/// (8, 1 gives the 1 in the middle of the 8 rather than after them).
fn smooth_round_robin(weights: &[u32]) -> Vec<usize> {
    let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
    let mut current = vec![0i64; weights.len()];
    (0..total)
        .map(|_| {
            for (c, &w) in current.iter_mut().zip(weights) {
                *c += i64::from(w);
            }
            let best = (0..weights.len())
                .max_by_key(|&i| (current[i], std::cmp::Reverse(i)))
                .expect("at least one target");
            current[best] -= total;
            best
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_parse_with_weights_and_refuse_unknown_stems() {
        assert_eq!(
            parse_mix("transfer-k6=8, join-split-enygma").unwrap().0,
            [
                MixItem {
                    stem: "transfer-k6".into(),
                    weight: 8
                },
                MixItem {
                    stem: "join-split-enygma".into(),
                    weight: 1
                }
            ]
        );
        assert!(parse_mix("transfer-k9=1")
            .unwrap_err()
            .contains("transfer-k6"));
        assert!(parse_mix("transfer-k6=0").is_err());
        assert!(parse_mix("transfer-k6=x").is_err());
        assert!(parse_mix("transfer-k6,transfer-k6=2").is_err());
        assert!(parse_mix("transfer-k6,").is_err());
        // A statement name is not an instance (it would be every size at once).
        assert!(parse_mix("transfer=1").is_err());
    }

    #[test]
    fn the_round_robin_follows_the_weights_and_spreads_them() {
        let cycle = smooth_round_robin(&[8, 1]);
        assert_eq!(cycle.len(), 9);
        assert_eq!(cycle.iter().filter(|&&i| i == 1).count(), 1);
        assert_ne!(cycle[8], 1, "the light target is not left to the end");
        let cycle = smooth_round_robin(&[2, 1, 1]);
        assert_eq!(cycle, [0, 1, 2, 0]);
        assert_eq!(smooth_round_robin(&[3]), [0, 0, 0]);
    }

    #[test]
    fn a_mix_draws_from_every_instances_generated_pool() {
        let client =
            HttpClient::new("http://127.0.0.1:1", std::time::Duration::from_secs(1)).unwrap();
        let items = parse_mix("transfer-k2=2,ownership-721=1").unwrap().0;
        let t = Targets::mix(&client, &items, 3, 7).unwrap();
        assert!(t.is_mix());
        assert_eq!((t.pool_len(), t.pool_distinct()), (6, 6));
        assert_eq!(t.describe(), "transfer-k2=2,ownership-721=1");
        let sent: Vec<(usize, String)> = (0..6)
            .map(|_| {
                let (i, uri, body) = t.next();
                // Every body is a valid request of its route's instance.
                let instance = statements::by_stem(&t.targets[i].label).unwrap();
                enygma_prover::prepare(instance, &body).unwrap();
                (i, uri.path().to_string())
            })
            .collect();
        let paths: Vec<&str> = sent.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/generateProofTransfer-2",
                "/ownership-721",
                "/generateProofTransfer-2",
                "/generateProofTransfer-2",
                "/ownership-721",
                "/generateProofTransfer-2"
            ]
        );
    }
}
