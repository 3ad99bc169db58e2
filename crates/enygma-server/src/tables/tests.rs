use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use enygma_prover::statements::Instance;

use super::cache::*;
use super::memory::parse_bytes;
use super::memory::*;
use super::policy::*;
use crate::backend::ProofBackend;
use crate::metrics::Metrics;
use enygma_prover::statements::instance;

fn inst(stem: &str) -> Instance {
    let (name, k) = match stem.rsplit_once("-k") {
        Some((name, k)) => (name, Some(k.parse().unwrap())),
        None => (stem, None),
    };
    instance(name, k).unwrap()
}

fn policy(budget: u64, sizes: &[(&str, u64)]) -> TablePolicy {
    let mut p = TablePolicy::new(budget, 2);
    for &(stem, bytes) in sizes {
        p.add(inst(stem), bytes, false);
    }
    p
}

/// Proves `stem` and, if that calls for a build, finishes it.
fn prove_and_build(p: &mut TablePolicy, stem: &str) -> Option<Build> {
    let build = p.proved(inst(stem));
    if let Some(b) = &build {
        p.built(b.instance, true);
    }
    build
}

#[test]
fn builds_after_the_second_proof_one_at_a_time() {
    let mut p = policy(1000, &[("transfer-k6", 300), ("transfer-k2", 200)]);
    let (k6, k2) = (inst("transfer-k6"), inst("transfer-k2"));
    assert_eq!(p.proved(k6), None, "one proof is not traffic");
    assert_eq!(p.state(k6), Some(TableState::Absent));
    assert_eq!(
        p.proved(k6),
        Some(Build {
            instance: k6,
            bytes: 300,
            evict: vec![]
        })
    );
    assert_eq!(p.state(k6), Some(TableState::Building));
    assert_eq!(p.used_bytes(), 300, "a build holds its bytes of the budget");
    // k2 qualifies while k6 builds: it waits for its next proof.
    assert_eq!(p.proved(k2), None);
    assert_eq!(p.proved(k2), None);
    assert_eq!(p.proved(k6), None, "building");
    p.built(k6, true);
    assert_eq!(p.state(k6), Some(TableState::Resident));
    assert_eq!(p.proved(k2).map(|b| b.instance), Some(k2));
    p.built(k2, true);
    assert_eq!(p.used_bytes(), 500);
    assert_eq!(p.proved(k6), None, "resident");
}

/// A retired instance leaves the policy: its bytes leave the budget (pinned ones too), its
/// proofs call for no build, and a build of it that ends meanwhile says it is gone. Added again,
/// it starts afresh, unpinned.
#[test]
fn a_retired_instance_leaves_the_budget_and_is_never_built() {
    let mut p = TablePolicy::new(1000, 2);
    let (k6, k2) = (inst("transfer-k6"), inst("transfer-k2"));
    p.add(k6, 600, true);
    p.add(k2, 500, false);
    assert_eq!(p.proved(k2), None);
    assert_eq!(p.proved(k2), None, "600 pinned + 500 is over the budget");
    assert_eq!(p.state(k2), Some(TableState::TooLarge));
    p.remove(k6);
    p.remove(k2);
    assert_eq!(p.used_bytes(), 0);
    assert_eq!(p.state(k6), None);
    assert_eq!(p.proved(k6), None);
    p.add(k2, 500, false);
    assert_eq!(p.proved(k2), None);
    assert_eq!(
        p.proved(k2).map(|b| b.instance),
        Some(k2),
        "fits without the pinned"
    );
    p.remove(k2);
    assert!(!p.built(k2, true), "retired during its build");
    assert_eq!(p.used_bytes(), 0);
}

#[test]
fn evicts_the_least_recently_proved_to_stay_within_the_budget() {
    let sizes = [
        ("transfer-k2", 300),
        ("transfer-k3", 300),
        ("transfer-k4", 300),
        ("transfer-k5", 500),
    ];
    let mut p = policy(1000, &sizes);
    for stem in ["transfer-k2", "transfer-k2", "transfer-k3", "transfer-k3"] {
        prove_and_build(&mut p, stem);
    }
    prove_and_build(&mut p, "transfer-k4");
    // k2 proved again: k3 is now the least recently proved.
    prove_and_build(&mut p, "transfer-k2");
    assert_eq!(p.used_bytes(), 600);
    let b = prove_and_build(&mut p, "transfer-k4").unwrap();
    assert_eq!(b.evict, Vec::<Instance>::new(), "900 fits 1000");
    assert_eq!(p.used_bytes(), 900);
    // k5 needs 500: k3 then k2 go (least recently proved first), k4 stays.
    prove_and_build(&mut p, "transfer-k5");
    let b = prove_and_build(&mut p, "transfer-k5").unwrap();
    assert_eq!(b.evict, vec![inst("transfer-k3"), inst("transfer-k2")]);
    assert_eq!(p.state(inst("transfer-k3")), Some(TableState::Absent));
    assert_eq!(p.state(inst("transfer-k2")), Some(TableState::Absent));
    assert_eq!(p.state(inst("transfer-k4")), Some(TableState::Resident));
    assert_eq!(p.used_bytes(), 800);
    // An evicted instance counts its proofs afresh.
    assert_eq!(prove_and_build(&mut p, "transfer-k3"), None);
    let b = prove_and_build(&mut p, "transfer-k3").unwrap();
    assert_eq!(b.evict, vec![inst("transfer-k4")]);
    assert!(p.used_bytes() <= p.budget());
}

#[test]
fn the_budget_is_never_exceeded() {
    // Random-ish traffic over six instances of different sizes.
    let stems = [
        "transfer-k2",
        "transfer-k3",
        "transfer-k4",
        "transfer-k5",
        "transfer-k6",
        "ownership-721",
    ];
    let sizes: Vec<(&str, u64)> = stems
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, 100 + 70 * i as u64))
        .collect();
    let mut p = policy(600, &sizes);
    let mut x = 7u64;
    let mut builds = 0;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let stem = stems[(x >> 33) as usize % stems.len()];
        if let Some(b) = p.proved(inst(stem)) {
            builds += 1;
            assert!(p.used_bytes() <= 600, "{}", p.used_bytes());
            p.built(b.instance, true);
        }
        assert!(p.used_bytes() <= 600);
    }
    assert!(builds > 10, "{builds}");
}

#[test]
fn pinned_tables_are_never_evicted_and_count_in_the_budget() {
    let mut p = TablePolicy::new(1000, 1);
    let (k6, k2, k3, w6) = (
        inst("transfer-k6"),
        inst("transfer-k2"),
        inst("transfer-k3"),
        inst("withdraw-k6"),
    );
    p.add(k6, 600, true);
    p.add(k2, 300, false);
    p.add(k3, 300, false);
    p.add(w6, 500, false);
    assert_eq!(p.state(k6), Some(TableState::Pinned));
    assert_eq!(p.used_bytes(), 600);
    assert_eq!(p.proved(k6), None, "pinned: nothing to build");
    assert!(prove_and_build(&mut p, "transfer-k2").is_some());
    let b = prove_and_build(&mut p, "transfer-k3").unwrap();
    assert_eq!(b.evict, vec![k2], "k6 is older but pinned");
    assert_eq!(p.state(k6), Some(TableState::Pinned));
    // 600 pinned + 500 can never fit 1000: never built, nothing evicted for it.
    assert_eq!(p.proved(w6), None);
    assert_eq!(p.state(w6), Some(TableState::TooLarge));
    assert_eq!(p.state(k3), Some(TableState::Resident));
}

#[test]
fn a_failed_build_is_not_retried_and_frees_its_place() {
    let mut p = policy(1000, &[("transfer-k2", 300), ("transfer-k3", 300)]);
    let k2 = inst("transfer-k2");
    p.proved(k2);
    assert!(p.proved(k2).is_some());
    p.built(k2, false);
    assert_eq!(p.state(k2), Some(TableState::Failed));
    assert_eq!(p.used_bytes(), 0);
    for _ in 0..5 {
        assert_eq!(p.proved(k2), None);
    }
    assert!(prove_and_build(&mut p, "transfer-k3").is_none());
    assert!(prove_and_build(&mut p, "transfer-k3").is_some());
}

#[test]
fn a_zero_budget_builds_nothing() {
    let mut p = policy(0, &[("ownership-721", 30)]);
    for _ in 0..3 {
        assert_eq!(p.proved(inst("ownership-721")), None);
    }
    assert_eq!(p.state(inst("ownership-721")), Some(TableState::TooLarge));
    assert_eq!(p.proved(inst("transfer-k6")), None, "not an entry");
}

/// A prover whose tables take 100 bytes each and whose builds record where they ran.
#[derive(Default)]
struct TabledBackend {
    fail: bool,
    /// (instance, rayon threads, niceness, thread name) of each build.
    builds: Mutex<Vec<(String, usize, i32, String)>>,
    dropped: Mutex<Vec<String>>,
}

impl ProofBackend for TabledBackend {
    type Prepared = ();

    fn prepare(&self, _: Instance, _: &[u8]) -> Result<(), crate::BackendError> {
        Ok(())
    }

    fn prove(&self, _: &()) -> Result<crate::ProofOutput, crate::BackendError> {
        Err(crate::BackendError::Internal("not used here".into()))
    }

    fn verify(&self, _: Instance, _: &[u8]) -> Result<bool, crate::BackendError> {
        Ok(false)
    }

    fn table_bytes(&self, _: Instance) -> Option<usize> {
        Some(100)
    }

    fn build_tables(&self, instance: Instance) -> Result<(), crate::BackendError> {
        #[cfg(target_os = "linux")]
        let nice = current_nice();
        #[cfg(not(target_os = "linux"))]
        let nice = BUILD_NICE;
        let name = std::thread::current().name().unwrap_or("").to_owned();
        self.builds.lock().unwrap().push((
            instance.key_stem(),
            rayon::current_num_threads(),
            nice,
            name,
        ));
        if self.fail {
            return Err(crate::BackendError::Internal("out of table memory".into()));
        }
        Ok(())
    }

    fn drop_tables(&self, instance: Instance) -> usize {
        self.dropped.lock().unwrap().push(instance.key_stem());
        100
    }
}

fn wait_for(cache: &TableCache<TabledBackend>, instance: Instance, state: TableState) {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while cache.state(instance) != Some(state) {
        assert!(Instant::now() < deadline, "{:?}", cache.state(instance));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn series(text: &str, line: &str) -> Option<f64> {
    enygma_formats::prometheus::value(text, line)
}

#[test]
fn the_cache_builds_on_one_low_priority_thread_and_evicts_in_lru_order() {
    let (k2, k3, k4) = (
        inst("transfer-k2"),
        inst("transfer-k3"),
        inst("transfer-k4"),
    );
    let metrics = Arc::new(Metrics::for_instances(&[k2, k3, k4]));
    let config = TableConfig {
        budget: TableBudget::Fixed(250),
        pinned: vec![],
    };
    let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
    let backend = Arc::new(TabledBackend::default());
    cache.attach(backend.as_ref(), &[k2, k3, k4]);
    for i in [k2, k3, k4] {
        for _ in 0..BUILD_AFTER_PROOFS {
            cache.proved(&backend, i, false);
        }
        wait_for(&cache, i, TableState::Resident);
    }
    cache.proved(&backend, k3, true);
    let builds = backend.builds.lock().unwrap().clone();
    let stems: Vec<&str> = builds.iter().map(|b| b.0.as_str()).collect();
    assert_eq!(stems, ["transfer-k2", "transfer-k3", "transfer-k4"]);
    for (_, threads, nice, name) in &builds {
        assert_eq!(*threads, 1, "one thread, not a prove pool");
        assert_eq!(name, "table-build");
        if cfg!(target_os = "linux") {
            assert_eq!(*nice, BUILD_NICE);
        }
    }
    assert_eq!(*backend.dropped.lock().unwrap(), ["transfer-k2"]);
    assert_eq!(cache.state(k2), Some(TableState::Absent));
    let text = metrics.render(false, false, Default::default(), Default::default(), 0);
    let k = |k: usize, rest: &str| format!("{{statement=\"transfer\",k=\"{k}\"{rest}}}");
    assert_eq!(
        series(&text, "enygma_table_memory_budget_bytes"),
        Some(250.0)
    );
    assert_eq!(
        series(&text, &format!("enygma_table_bytes{}", k(2, ""))),
        Some(0.0)
    );
    assert_eq!(
        series(&text, &format!("enygma_table_bytes{}", k(4, ""))),
        Some(100.0)
    );
    assert_eq!(
        series(&text, &format!("enygma_table_evictions_total{}", k(2, ""))),
        Some(1.0)
    );
    assert_eq!(
        series(
            &text,
            &format!(
                "enygma_table_builds_finished_total{}",
                k(3, ",outcome=\"built\"")
            )
        ),
        Some(1.0)
    );
    assert_eq!(
        series(
            &text,
            &format!("enygma_table_proofs_total{}", k(3, ",tables=\"hit\""))
        ),
        Some(1.0)
    );
    assert_eq!(
        series(
            &text,
            &format!("enygma_table_proofs_total{}", k(3, ",tables=\"miss\""))
        ),
        Some(BUILD_AFTER_PROOFS as f64)
    );
    assert_eq!(
        series(
            &text,
            &format!("enygma_table_build_seconds_count{}", k(4, ""))
        ),
        Some(1.0)
    );
}

#[test]
fn a_failed_build_leaves_the_instance_proving_without_tables() {
    let owner = inst("ownership-721");
    let metrics = Arc::new(Metrics::for_instances(&[owner]));
    let config = TableConfig {
        budget: TableBudget::Fixed(1 << 30),
        pinned: vec![],
    };
    let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
    let backend = Arc::new(TabledBackend {
        fail: true,
        ..TabledBackend::default()
    });
    cache.attach(backend.as_ref(), &[owner]);
    for _ in 0..BUILD_AFTER_PROOFS {
        cache.proved(&backend, owner, false);
    }
    wait_for(&cache, owner, TableState::Failed);
    for _ in 0..3 {
        cache.proved(&backend, owner, false);
    }
    assert_eq!(backend.builds.lock().unwrap().len(), 1, "not retried");
    let text = metrics.render(false, false, Default::default(), Default::default(), 0);
    let labels = "statement=\"ownership-721\",k=\"none\"";
    assert_eq!(
        series(
            &text,
            &format!("enygma_table_builds_finished_total{{{labels},outcome=\"failed\"}}")
        ),
        Some(1.0)
    );
    assert_eq!(
        series(
            &text,
            &format!("enygma_table_proofs_total{{{labels},tables=\"miss\"}}")
        ),
        Some(BUILD_AFTER_PROOFS as f64 + 3.0)
    );
    assert_eq!(
        series(&text, &format!("enygma_table_bytes{{{labels}}}")),
        Some(0.0)
    );
}

#[test]
fn pinned_tables_show_from_the_start() {
    let (k6, owner) = (inst("transfer-k6"), inst("ownership-721"));
    let metrics = Arc::new(Metrics::for_instances(&[k6, owner]));
    let config = TableConfig {
        budget: TableBudget::Fixed(0),
        pinned: vec![k6],
    };
    let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
    let backend = Arc::new(TabledBackend::default());
    cache.attach(backend.as_ref(), &[k6, owner]);
    assert_eq!(cache.state(k6), Some(TableState::Pinned));
    for _ in 0..3 {
        cache.proved(&backend, owner, false);
        cache.proved(&backend, k6, true);
    }
    assert_eq!(
        cache.state(owner),
        Some(TableState::TooLarge),
        "--table-memory 0"
    );
    assert!(backend.builds.lock().unwrap().is_empty());
    let text = metrics.render(false, false, Default::default(), Default::default(), 0);
    assert_eq!(
        series(&text, "enygma_table_bytes{statement=\"transfer\",k=\"6\"}"),
        Some(100.0)
    );
}

#[test]
fn cgroup_limits_v2_v1_and_none() {
    let gib = 1u64 << 30;
    let physical = 16 * gib;
    let files = |pairs: &'static [(&'static str, &'static str)]| {
        move |p: &Path| {
            pairs
                .iter()
                .find(|(path, _)| Path::new(path) == p)
                .map(|(_, text)| text.to_string())
        }
    };
    let root = Path::new("/sys/fs/cgroup");
    // v2 in a cgroup namespace: the root's memory.max is the container's.
    let limit = cgroup_limit(
        "0::/\n",
        root,
        physical,
        files(&[("/sys/fs/cgroup/memory.max", "1073741824\n")]),
    );
    assert_eq!(limit, Some(MemoryLimit::CgroupV2(gib)));
    // v2 without one: the lowest limit on the way up; `max` is none.
    let limit = cgroup_limit(
        "0::/kubepods/pod1/c1\n",
        root,
        physical,
        files(&[
            ("/sys/fs/cgroup/kubepods/pod1/c1/memory.max", "max\n"),
            ("/sys/fs/cgroup/kubepods/pod1/memory.max", "536870912\n"),
            ("/sys/fs/cgroup/kubepods/memory.max", "4294967296\n"),
        ]),
    );
    assert_eq!(limit, Some(MemoryLimit::CgroupV2(512 << 20)));
    let limit = cgroup_limit(
        "0::/\n",
        root,
        physical,
        files(&[("/sys/fs/cgroup/memory.max", "max\n")]),
    );
    assert_eq!(limit, None);
    // v1: the memory controller's line; its "unlimited" is a huge number.
    let v1 = "4:memory:/docker/abc\n3:cpuset:/\n0::/\n";
    let limit = cgroup_limit(
        v1,
        root,
        physical,
        files(&[(
            "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
            "805306368\n",
        )]),
    );
    assert_eq!(limit, Some(MemoryLimit::CgroupV1(768 << 20)));
    let limit = cgroup_limit(
        "4:cpuacct,memory:/x\n",
        root,
        physical,
        files(&[(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "9223372036854771712\n",
        )]),
    );
    assert_eq!(limit, None);
    assert_eq!(cgroup_limit("", root, physical, |_| None), None);
}

#[test]
fn default_budget_is_half_the_limit_less_what_the_process_needs() {
    let mib = 1u64 << 20;
    // 1 GiB limit, 380 MiB loaded, 2 in flight: half the limit fits.
    assert_eq!(default_budget(1024 * mib, 380 * mib, 2), 512 * mib);
    // 512 MiB limit, same process: what is left after the keys and proofs.
    assert_eq!(
        default_budget(512 * mib, 380 * mib, 2),
        512 * mib - 380 * mib - 2 * IN_FLIGHT_RESERVE_BYTES
    );
    assert_eq!(default_budget(256 * mib, 380 * mib, 2), 0);
    assert_eq!(TableBudget::Fixed(512 * mib).to_string(), "512 MiB");
    assert_eq!(TableBudget::Fixed(0).to_string(), "0 (no automatic tables)");
    let detected = MemoryLimit::detect();
    assert!(detected.bytes() > 64 * mib, "{detected:?}");
}

#[test]
fn table_memory_sizes_parse_with_binary_and_decimal_units() {
    let parse = |s: &str| parse_bytes(s);
    assert_eq!(parse("512MiB"), Ok(512 << 20));
    assert_eq!(parse("2GiB"), Ok(2 << 30));
    assert_eq!(parse("0"), Ok(0));
    assert_eq!(parse("1000000"), Ok(1_000_000));
    assert!(parse("lots").unwrap_err().contains("--table-memory"));
}
