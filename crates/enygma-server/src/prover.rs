//! The real prover behind the [`ProofBackend`] seam: a thin adapter over
//! `enygma_prover::Prover` for the statement instances this server hosts.

use std::path::{Path, PathBuf};

use enygma_prover::{
    keys,
    statements::{self, Instance, RequestSpec},
    MissingKeys, Prepared, Prover,
};
use rand::SeedableRng;

use crate::backend::{BackendError, KeyReload, LoadedKey, ProofBackend, ProofOutput};
use crate::file_modes::FileKind;

/// `Prover` as a [`ProofBackend`], with what a reload of its keys needs: where they are,
/// whether a missing key of an added instance is created or refused (`--require-keys`),
/// whether only ceremony keys may be served (`--require-ceremony-keys`), and whether a key file
/// others may write is refused or warned about (`--allow-shared-secret-files`), as at start.
pub struct RealBackend {
    prover: Prover,
    keys_dir: PathBuf,
    missing: MissingKeys,
    require_ceremony_keys: bool,
    allow_shared_files: bool,
}

impl RealBackend {
    /// Loads the keys of the `hosted` instances, creating missing ones as development keys or
    /// refusing to (`--require-keys`), as `missing` says, then builds the MSM tables of the
    /// `precomputed` ones (`--precompute`, each a hosted instance); matrices and tables are read
    /// from `cache_dir` where kept (`--cache-dir`). Slow: seconds, and about 15 s of one core
    /// per precomputed k=6 instance whose tables are not kept.
    /// `missing`, `require_ceremony_keys` and `allow_shared_files` are what a later reload of
    /// the keys ([`ProofBackend::reload_keys`]) asks of an added instance's key, and the last
    /// two of a replaced one, as `--require-keys`, `--require-ceremony-keys` and the file mode
    /// check (`--allow-shared-secret-files`) asked of every key before the start.
    pub fn load(
        keys_dir: &Path,
        hosted: &[Instance],
        missing: MissingKeys,
        cache_dir: Option<PathBuf>,
        precomputed: &[Instance],
        require_ceremony_keys: bool,
        allow_shared_files: bool,
    ) -> Result<Self, String> {
        let mut prover = Prover::load_cached(keys_dir, hosted, missing, cache_dir)
            .map_err(|e| format!("keys in {}: {e}", keys_dir.display()))?;
        prover
            .precompute(precomputed)
            .map_err(|e| format!("--precompute: {e}"))?;
        Ok(RealBackend {
            prover,
            keys_dir: keys_dir.to_owned(),
            missing,
            require_ceremony_keys,
            allow_shared_files,
        })
    }
}

/// Why the keys of `hosted` in `keys_dir` are not all ceremony keys (what
/// `--require-ceremony-keys` checks before the server listens, from the files' records only):
/// one line per instance whose proving key is missing, unreadable or of another origin.
pub fn non_ceremony_keys(keys_dir: &Path, hosted: &[Instance]) -> Vec<String> {
    hosted
        .iter()
        .filter_map(|&instance| {
            let path = keys::KeyPaths::new(keys_dir, instance).proving;
            match keys::read_record(&path) {
                Ok(record) if record.origin.is_ceremony() => None,
                Ok(record) => Some(format!(
                    "{instance}: {} has {} keys",
                    path.display(),
                    record.origin.kind()
                )),
                Err(e) => Some(format!("{instance}: {e}")),
            }
        })
        .collect()
}

/// The proving keys of `hosted` that are not in `keys_dir` (what `--require-keys` checks before
/// the server listens).
pub fn missing_proving_keys(keys_dir: &Path, hosted: &[Instance]) -> Vec<PathBuf> {
    hosted
        .iter()
        .map(|&i| keys::KeyPaths::new(keys_dir, i).proving)
        .filter(|p| !p.exists())
        .collect()
}

impl ProofBackend for RealBackend {
    type Prepared = Prepared;

    fn prepare(&self, instance: Instance, body: &[u8]) -> Result<Prepared, BackendError> {
        Ok(self.prover.prepare(instance, body)?)
    }

    fn prove(&self, prepared: &Prepared) -> Result<ProofOutput, BackendError> {
        let (response, timings) = self.prover.prove(prepared)?;
        let json = serde_json::to_vec(&response)
            .map_err(|_| BackendError::Internal("cannot serialise the proof".into()))?;
        Ok(ProofOutput {
            json,
            witness: timings.witness,
            prove: timings.prove,
            precomputed: timings.precomputed,
            key_sha256: Some(timings.key_sha256),
        })
    }

    fn verify(&self, instance: Instance, proof_json: &[u8]) -> Result<bool, BackendError> {
        let response = enygma_prover::parse_proof_response(instance, proof_json)?;
        Ok(self.prover.verify(instance, &response)?)
    }

    /// A generated request of transfer-k6 when hosted (the statement the default estimate and
    /// most payment traffic are), else of the hosted instance with the most constraints: a
    /// server of small statements is measured on its largest, the safe side for shedding.
    fn calibration_request(&self) -> Option<(Instance, Prepared)> {
        let instance = statements::by_stem("transfer-k6")
            .filter(|&i| self.prover.circuit(i).is_some())
            .or_else(|| {
                self.prover.instances().max_by_key(|&i| {
                    self.prover
                        .circuit(i)
                        .map_or(0, |c| c.shape.info.constraints)
                })
            })?;
        // A fixed seed: the same request on every start, so starts measure the same work.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x656e_7967_6d61);
        let body = instance
            .generate(&RequestSpec::default(), &mut rng)
            .ok()?
            .to_string();
        let prepared = self.prover.prepare(instance, body.as_bytes()).ok()?;
        Some((instance, prepared))
    }

    fn keys(&self) -> Vec<LoadedKey> {
        self.prover
            .instances()
            .filter_map(|instance| {
                self.prover.circuit(instance).map(|keys| LoadedKey {
                    instance,
                    record: keys.record.clone(),
                    sha256: keys.key_sha256,
                })
            })
            .collect()
    }

    fn reload_keys(&self, hosted: Option<&[Instance]>) -> Vec<(Instance, KeyReload)> {
        let require_ceremony = self.require_ceremony_keys;
        let accept = |instance: Instance, record: &keys::KeyRecord| {
            if require_ceremony && !record.origin.is_ceremony() {
                return Err(format!(
                    "{instance}: {} keys, and --require-ceremony-keys serves ceremony keys only",
                    record.origin.kind()
                ));
            }
            // The start's check of who may replace a proving key (`check_file_modes`).
            let key = keys::KeyPaths::new(&self.keys_dir, instance).proving;
            match crate::file_modes::check("--keys-dir", &key, FileKind::ProvingKey) {
                Err(why) if !self.allow_shared_files => Err(why),
                Err(why) => {
                    tracing::warn!("--allow-shared-secret-files: {why}");
                    Ok(())
                }
                Ok(()) => Ok(()),
            }
        };
        match hosted {
            None => self.prover.reload_keys(&self.keys_dir, accept),
            Some(hosted) => self
                .prover
                .reload_hosted(&self.keys_dir, hosted, self.missing, accept),
        }
    }

    fn table_bytes(&self, instance: Instance) -> Option<usize> {
        self.prover
            .circuit(instance)
            .map(|keys| keys.precomputed_table_bytes())
    }

    fn read_kept_tables(&self, instance: Instance) -> bool {
        self.prover.read_kept_tables(instance).is_some()
    }

    fn build_tables(&self, instance: Instance) -> Result<(), BackendError> {
        // The table cache has just tried the kept file (`read_kept_tables`).
        self.prover.build_fresh_tables(instance)?;
        Ok(())
    }

    fn drop_tables(&self, instance: Instance) -> usize {
        self.prover.drop_tables(instance)
    }
}

#[cfg(all(test, unix))]
mod reload_tests {
    //! A reload of the real prover adds an instance under the start's checks of its key file.
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// ownership-721 added to a server hosting nothing else: its key file writable by others is
    /// refused (as at start), warned about with `--allow-shared-secret-files`; fixed, it is
    /// added; a reload without a list leaves the set as it is, one with an empty list retires it.
    #[test]
    fn an_added_key_is_checked_as_at_start() {
        let owner = statements::by_stem("ownership-721").unwrap();
        let dir = std::env::temp_dir().join(format!("enygma-real-reload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let pk = keys::generate(owner).unwrap();
        keys::save(&dir, owner, &pk, &keys::KeyRecord::DEVELOPMENT).unwrap();
        let key = keys::KeyPaths::new(&dir, owner).proving;
        let chmod = |mode| std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode));
        chmod(0o666).unwrap();
        let load = |allow_shared| {
            RealBackend::load(
                &dir,
                &[],
                MissingKeys::Refuse,
                None,
                &[],
                false,
                allow_shared,
            )
            .unwrap()
        };
        let strict = load(false);
        match &strict.reload_keys(Some(&[owner]))[..] {
            [(i, KeyReload::Refused(why))] if *i == owner => {
                assert!(why.contains("others write it"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(strict.keys().is_empty());
        let shared = load(true);
        assert!(matches!(
            &shared.reload_keys(Some(&[owner]))[..],
            [(_, KeyReload::Added { .. })]
        ));
        chmod(0o644).unwrap();
        assert!(matches!(
            &strict.reload_keys(Some(&[owner]))[..],
            [(_, KeyReload::Added { .. })]
        ));
        assert!(matches!(
            &strict.reload_keys(None)[..],
            [(_, KeyReload::Unchanged)]
        ));
        assert!(matches!(
            &strict.reload_keys(Some(&[]))[..],
            [(_, KeyReload::Retired { .. })]
        ));
        assert!(strict.keys().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod tests {
    //! The adapter's error mapping on the reference's samples, through the prover's key-free
    //! `prepare` (the full HTTP round trip with real proofs is in `tests/acceptance.rs`).
    use super::*;
    use std::path::PathBuf;

    fn sample(name: &str) -> Option<Vec<u8>> {
        let dir = std::env::var_os("ENYGMA_REFERENCE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference")
            });
        std::fs::read(dir.join("requests").join(name)).ok()
    }

    fn prepare(k: usize, body: &[u8]) -> Result<(), BackendError> {
        let instance = enygma_prover::statements::instance("transfer", Some(k)).unwrap();
        enygma_prover::prepare(instance, body)?;
        Ok(())
    }

    fn with(body: &[u8], field: &str, value: &str) -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
        v[field] = value.into();
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn samples_map_to_the_right_status_class_without_values() {
        let (Some(k6), Some(k2), Some(bad6), Some(bad2)) = (
            sample("transfer-k6.json"),
            sample("transfer-k2.json"),
            sample("bad-transfer-k6.json"),
            sample("bad-transfer-k2.json"),
        ) else {
            panic!("reference samples not found: set ENYGMA_REFERENCE_DIR");
        };
        assert_eq!(prepare(6, &k6), Ok(()));
        assert_eq!(prepare(2, &k2), Ok(()));
        let secret = serde_json::from_slice::<serde_json::Value>(&k6).unwrap()["secret_key"]
            .as_str()
            .unwrap()
            .to_owned();

        let cases: Vec<(usize, Vec<u8>, &str)> = vec![
            (6, bad6, "hashed_shared_secrets[0]"),
            (2, k6.clone(), ""), // arrays of 6 for k=2
            (6, with(&k6, "block_number", "0x1f"), "block_number"), // not decimal
            (6, with(&k6, "sender_tx_value", "007"), "sender_tx_value"), // non-canonical
            (
                6,
                with(&k6, "secret_key", &format!("{secret}x")),
                "secret_key",
            ),
        ];
        for (k, body, field) in cases {
            match prepare(k, &body) {
                Err(BackendError::BadRequest(m)) => {
                    assert!(m.contains(field), "{m:?} does not name {field}");
                    assert!(!m.contains(&secret), "message leaks the secret key");
                }
                other => panic!("k={k} {field}: expected 400, got {other:?}"),
            }
        }
        match prepare(2, &bad2) {
            Err(BackendError::CheckFailed(m)) => assert!(m.contains("check"), "{m:?}"),
            other => panic!("bad-transfer-k2: expected 422, got {other:?}"),
        }
    }
}
