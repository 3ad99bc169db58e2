//! The hosted set read again from a `--circuits @FILE` list on reload: circuits added prove,
//! circuits retired answer 404 while their proof in flight finishes, `/readyz`, `enygma_key_info`
//! and the reload counters follow; a list file that does not parse changes nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use enygma_prover::keys::KeyRecord;
use enygma_prover::statements;

use super::{cfg, get, http, metric, post, T};
use crate::backend::{BackendError, Instance, KeyReload, LoadedKey, ProofBackend, ProofOutput};
use crate::test_support::RunningServer;
use crate::transport::Transport;
use crate::AppState;

/// A prover whose hosted set follows the reloads as the real one's does: it refuses to check a
/// request of an instance it does not host, and reports a key per hosted instance. A proof
/// sleeps its request's `ms`; `started` counts the proofs that began.
struct HostingFake {
    hosted: Mutex<Vec<Instance>>,
    started: Arc<AtomicUsize>,
}

#[derive(serde::Deserialize)]
struct SleepReq {
    tag: String,
    #[serde(default)]
    ms: u64,
}

/// A digest of its own per instance, as a key file's would be.
fn sha_of(instance: Instance) -> [u8; 32] {
    let index = statements::all_instances()
        .position(|i| i == instance)
        .unwrap();
    [index as u8 + 1; 32]
}

impl ProofBackend for HostingFake {
    type Prepared = SleepReq;

    fn prepare(&self, instance: Instance, body: &[u8]) -> Result<SleepReq, BackendError> {
        if !self.hosted.lock().unwrap().contains(&instance) {
            return Err(BackendError::NotHosted(format!(
                "circuit {instance} is not hosted here"
            )));
        }
        serde_json::from_slice(body).map_err(|_| BackendError::BadRequest("invalid JSON".into()))
    }

    fn prove(&self, req: &SleepReq) -> Result<ProofOutput, BackendError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(req.ms));
        Ok(ProofOutput {
            json: serde_json::json!({ "tag": req.tag })
                .to_string()
                .into_bytes(),
            witness: Duration::from_millis(1),
            prove: Duration::from_millis(req.ms),
            precomputed: false,
            key_sha256: None,
        })
    }

    fn verify(&self, _instance: Instance, _body: &[u8]) -> Result<bool, BackendError> {
        Ok(true)
    }

    fn keys(&self) -> Vec<LoadedKey> {
        self.hosted
            .lock()
            .unwrap()
            .iter()
            .map(|&instance| LoadedKey {
                instance,
                record: KeyRecord::DEVELOPMENT,
                sha256: sha_of(instance),
            })
            .collect()
    }

    fn reload_keys(&self, hosted: Option<&[Instance]>) -> Vec<(Instance, KeyReload)> {
        let mut now = self.hosted.lock().unwrap();
        let Some(wanted) = hosted else {
            return now.iter().map(|&i| (i, KeyReload::Unchanged)).collect();
        };
        let mut results: Vec<_> = now
            .iter()
            .filter(|i| !wanted.contains(i))
            .map(|&i| (i, KeyReload::Retired { table_bytes: 0 }))
            .collect();
        for &instance in wanted {
            let reload = if now.contains(&instance) {
                KeyReload::Unchanged
            } else {
                KeyReload::Added {
                    now: sha_of(instance),
                    record: KeyRecord::DEVELOPMENT,
                }
            };
            results.push((instance, reload));
        }
        *now = wanted.to_vec();
        results
    }
}

/// A server hosting what the list file `file` names, with the hosting fake.
struct Hosting {
    state: Arc<AppState<HostingFake>>,
    server: RunningServer,
    started: Arc<AtomicUsize>,
}

impl Hosting {
    async fn start(file: &Path) -> Hosting {
        let hosted = crate::hosting::read_list_file(file).unwrap();
        let state = Arc::new(
            AppState::<HostingFake>::new(&cfg(Some(2), 8, 10_000), 64 * 1024, hosted.clone())
                .unwrap()
                .with_hosted_file(file.to_owned()),
        );
        let started = Arc::new(AtomicUsize::new(0));
        let fake = HostingFake {
            hosted: Mutex::new(hosted),
            started: started.clone(),
        };
        let server = RunningServer::start_with_admin(
            state.clone(),
            move || Ok(fake),
            Duration::from_secs(10),
            Transport::default(),
        )
        .await;
        let deadline = Instant::now() + T;
        while get(server.addr, "/readyz").await.map(|r| r.status).ok() != Some(200) {
            assert!(Instant::now() < deadline, "not ready in time");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Hosting {
            state,
            server,
            started,
        }
    }

    async fn prove(&self, stem: &str, ms: u64) -> http::Resp {
        let path = statements::by_stem(stem).unwrap().prove_path();
        let body = serde_json::json!({ "tag": stem, "ms": ms }).to_string();
        post(self.server.addr, &path, body.as_bytes(), T)
            .await
            .unwrap()
    }

    async fn assert_proves(&self, stem: &str) {
        let r = self.prove(stem, 0).await;
        assert_eq!(
            (r.status, r.json()["tag"].as_str()),
            (200, Some(stem)),
            "{stem}: {}",
            r.body
        );
    }

    /// Its prove route and its verify route (which the fake answers without looking at the
    /// hosted set: the route's check alone) answer 404.
    async fn assert_not_hosted(&self, stem: &str) {
        let verify = statements::by_stem(stem).unwrap().verify_path();
        let verified = post(self.server.addr, &verify, b"{}", T).await.unwrap();
        for r in [self.prove(stem, 0).await, verified] {
            assert_eq!(
                (r.status, r.error()),
                (404, format!("circuit {stem} is not hosted here")),
                "{stem}"
            );
        }
    }

    /// The key stems `/readyz` on the admin listener lists.
    async fn ready_keys(&self) -> Vec<String> {
        let r = get(self.server.admin.unwrap(), "/readyz").await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let keys = r.json()["keys"].as_object().unwrap().clone();
        keys.keys().cloned().collect()
    }

    async fn metrics(&self) -> String {
        get(self.server.admin.unwrap(), "/metrics")
            .await
            .unwrap()
            .body
    }

    async fn stop(self) {
        tokio::time::timeout(T, self.server.stop())
            .await
            .expect("server did not stop");
    }
}

/// The `enygma_key_info` series of `metrics`, by the statement and k they name.
fn key_info(metrics: &str) -> Vec<String> {
    let mut named: Vec<String> = metrics
        .lines()
        .filter(|l| l.starts_with("enygma_key_info{"))
        .map(|l| {
            let label = |name: &str| {
                let start = l.find(&format!("{name}=\"")).map(|i| i + name.len() + 2)?;
                Some(l[start..].split('"').next()?.to_owned())
            };
            match label("k") {
                Some(k) if k != "none" => format!("{}-k{k}", label("statement").unwrap()),
                _ => label("statement").unwrap(),
            }
        })
        .collect();
    named.sort();
    named
}

fn reloads(metrics: &str, result: &str) -> Option<f64> {
    metric(
        metrics,
        &format!("enygma_key_reloads_total{{result=\"{result}\"}}"),
    )
}

fn list_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("enygma-hosting-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("circuits");
    std::fs::write(&file, text).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_list_file_adds_and_retires_circuits_while_serving() {
    let file = list_file("change", "# pool A\ntransfer-k2\nownership-721  # NFTs\n");
    let s = Hosting::start(&file).await;
    s.assert_proves("transfer-k2").await;
    s.assert_proves("ownership-721").await;
    s.assert_not_hosted("deposit-k2").await;
    assert_eq!(s.ready_keys().await, ["ownership-721", "transfer-k2"]);

    // A proof of the circuit about to be retired, running when the reload comes.
    let before = s.started.load(Ordering::SeqCst);
    let in_flight = {
        let path = statements::by_stem("ownership-721").unwrap().prove_path();
        let addr = s.server.addr;
        tokio::spawn(async move {
            let body = br#"{"tag":"in-flight","ms":800}"#;
            post(addr, &path, body, T).await.unwrap()
        })
    };
    let deadline = Instant::now() + T;
    while s.started.load(Ordering::SeqCst) == before {
        assert!(
            Instant::now() < deadline,
            "the proof in flight never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    std::fs::write(&file, "transfer-k2\ndeposit-k2\n").unwrap();
    crate::server::reload_keys(&s.state).await;

    s.assert_proves("deposit-k2").await;
    s.assert_proves("transfer-k2").await;
    s.assert_not_hosted("ownership-721").await;
    let r = in_flight.await.unwrap();
    assert_eq!(
        (r.status, r.json()["tag"].as_str()),
        (200, Some("in-flight")),
        "{}",
        r.body
    );

    assert_eq!(s.ready_keys().await, ["deposit-k2", "transfer-k2"]);
    let m = s.metrics().await;
    assert_eq!(key_info(&m), ["deposit-k2", "transfer-k2"], "{m}");
    assert_eq!(reloads(&m, "added"), Some(1.0));
    assert_eq!(reloads(&m, "retired"), Some(1.0));
    assert_eq!(reloads(&m, "refused"), Some(0.0));
    // The added circuit has its proof series; the retired one kept its proofs, the one that
    // finished after the reload included.
    let proofs = |labels: &str| metric(&m, &format!("enygma_prove_seconds_count{{{labels}}}"));
    assert_eq!(proofs(r#"statement="deposit",k="2""#), Some(1.0), "{m}");
    assert_eq!(
        proofs(r#"statement="ownership-721",k="none""#),
        Some(2.0),
        "{m}"
    );
    s.stop().await;
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_file_that_does_not_parse_changes_nothing() {
    let file = list_file("refused", "transfer-k2\nownership-721\n");
    let s = Hosting::start(&file).await;
    let keys = s.ready_keys().await;

    for (text, why) in [
        ("transfer-k2\ntransfer-k9\n", "an unknown circuit"),
        ("transfer-k2,\n", "an empty item"),
        ("# nothing hosted\n", "no circuit"),
    ] {
        std::fs::write(&file, text).unwrap();
        crate::server::reload_keys(&s.state).await;
        s.assert_proves("transfer-k2").await;
        s.assert_proves("ownership-721").await;
        assert_eq!(s.ready_keys().await, keys, "{why}");
    }
    std::fs::remove_file(&file).unwrap();
    crate::server::reload_keys(&s.state).await;
    s.assert_proves("ownership-721").await;

    let m = s.metrics().await;
    assert_eq!(key_info(&m), ["ownership-721", "transfer-k2"], "{m}");
    assert_eq!(reloads(&m, "refused"), Some(4.0));
    assert_eq!(reloads(&m, "added"), Some(0.0));
    assert_eq!(reloads(&m, "retired"), Some(0.0));
    s.stop().await;
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}
