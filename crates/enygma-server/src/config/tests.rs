use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use enygma_prover::statements::{self, Instance};

use super::args::Precompute;
use super::*;
use crate::admission::{default_queue_depth, default_service_time, ProveThreads};
use clap::{CommandFactory, Parser};

#[test]
fn clap_definition_is_valid() {
    Args::command().debug_assert();
}

#[test]
fn the_secret_files_are_the_tls_key_and_the_token_files() {
    let args = crate::test_support::args(&[]).unwrap();
    assert!(args.access.secret_files().is_empty());
    assert!(!args.access.allow_shared_secret_files);
    let args = crate::test_support::args(&[
        "--tls-cert=c.pem",
        "--tls-key=k.pem",
        "--auth-token-file=t",
        "--metrics-token-file=m",
        "--allow-shared-secret-files",
    ])
    .unwrap();
    let flags: Vec<&str> = args.access.secret_files().iter().map(|f| f.0).collect();
    assert_eq!(
        flags,
        ["--tls-key", "--auth-token-file", "--metrics-token-file"]
    );
    assert!(args.access.allow_shared_secret_files);
}

#[test]
fn every_flag_has_an_env_twin_and_help() {
    let cmd = Args::command();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        // Commands that print and exit, not settings.
        if id == "help" || id == "version" || id == "openapi" {
            continue;
        }
        assert!(
            arg.get_env().is_some(),
            "--{id} has no environment variable"
        );
        assert!(arg.get_help().is_some(), "--{id} has no help");
    }
}

#[test]
fn defaults() {
    let args = Args::try_parse_from(["enygma-server"]).unwrap();
    assert_eq!(args.bind.to_string(), "0.0.0.0");
    assert_eq!(args.port, 3003);
    assert_eq!(
        args.admin_bind,
        AdminBind(Some("127.0.0.1:9464".parse().unwrap()))
    );
    assert_eq!(args.keys_dir, PathBuf::from("keys"));
    assert_eq!(args.body_limit, 65536);
    let adm = args.admission();
    let cpus = std::thread::available_parallelism().unwrap().get();
    // A slot per CPU, threads that follow the queue.
    assert_eq!(adm.max_inflight, Some(cpus));
    assert_eq!(adm.prove_threads, ProveThreads::Adaptive(cpus));
    assert_eq!(adm.queue_timeout, Duration::from_secs(60));
    // At full load a proof has one thread: 350 ms, and ceil(60 s / 350 ms) = 172 per slot.
    assert_eq!(adm.service_time, default_service_time(1));
    // ... until a proof at start measures it on this machine.
    assert!(adm.calibrate);
    assert_eq!(adm.queue_depth, 172 * cpus);
    assert_eq!(adm.fair.as_ref().unwrap().caller_max_inflight, cpus);
    assert_eq!(args.drain_timeout(), Duration::from_secs(90));
    assert_eq!(args.log_format, LogFormat::Text);
    assert_eq!(args.hosted(), statements::instances().collect::<Vec<_>>());
    assert_eq!(args.hosted().len(), 18);
    assert!(!args.require_keys);
    let access = &args.access;
    assert!(access.tls_files().is_none());
    assert!(access.auth_token_file.is_none() && access.metrics_token_file.is_none());
    let limits = access.limits();
    assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
    assert_eq!(limits.body_read_timeout, Duration::from_secs(10));
    assert_eq!(limits.max_connections, 1024);
    assert_eq!(limits.max_header_bytes, 16384);
    assert_eq!(limits.http2_max_streams, 16);
    assert_eq!(limits.max_unauthenticated, 512);
    assert_eq!(limits.max_connections_per_ip, 128);
    assert_eq!(limits.tls_handshake_timeout, Duration::from_secs(5));
    assert_eq!(limits.max_connection_age, Duration::from_secs(600));
    assert_eq!(args.limits().early_answer_drain_bytes, args.body_limit);
    // The in-process default (tests, embedders) is the flags' default.
    assert_eq!(limits, crate::transport::Limits::default());
}

#[test]
fn the_default_queue_holds_what_the_slots_work_off_within_the_timeout() {
    let ms = Duration::from_millis;
    assert_eq!(default_queue_depth(1, ms(60_000), ms(350)), 172);
    assert_eq!(default_queue_depth(2, ms(60_000), ms(700)), 172);
    assert_eq!(default_queue_depth(1, ms(1_000), ms(100)), 10);
    assert_eq!(default_queue_depth(3, ms(1_000), ms(300)), 12);
    assert_eq!(default_service_time(1), ms(350));
    assert_eq!(default_service_time(2), ms(200));
    assert_eq!(default_service_time(64), ms(200));
    // The reference's stress test (100 identical k=6 transfers at once) fits the default
    // queue, with room for the one in flight.
    let args = Args::try_parse_from(["enygma-server", "--prove-threads", "2"]).unwrap();
    assert!(args.admission().queue_depth >= 99);
    // Explicit flags win; a longer timeout deepens the derived queue.
    let args = Args::try_parse_from([
        "enygma-server",
        "--queue-timeout",
        "2m",
        "--expected-service-time",
        "1s",
        "--max-inflight",
        "2",
        "--drain-timeout",
        "5s",
    ])
    .unwrap();
    assert_eq!(args.admission().queue_depth, 240);
    assert_eq!(args.admission().service_time, ms(1_000));
    // A stated estimate is not measured again; nor is one that nothing uses (--unlimited).
    assert!(!args.admission().calibrate);
    assert_eq!(args.drain_timeout(), ms(5_000));
    let unlimited = Args::try_parse_from(["enygma-server", "--unlimited"]).unwrap();
    assert!(!unlimited.admission().calibrate);
    let zero = Args::try_parse_from(["enygma-server", "--expected-service-time", "0s"]).unwrap();
    assert!(zero.admission().calibrate, "0 means the default");
}

#[test]
fn access_flags() {
    let args = Args::try_parse_from([
        "enygma-server",
        "--tls-cert",
        "c.pem",
        "--tls-key",
        "k.pem",
        "--tls-client-ca",
        "ca.pem",
        "--auth-token-file",
        "tokens",
        "--header-read-timeout",
        "2s",
        "--max-connections",
        "8",
    ])
    .unwrap();
    let tls = args.access.tls_files().unwrap();
    assert_eq!(tls.cert, PathBuf::from("c.pem"));
    assert_eq!(tls.client_ca, Some(PathBuf::from("ca.pem")));
    assert_eq!(args.access.limits().max_connections, 8);
    assert_eq!(
        args.access.limits().header_read_timeout,
        Duration::from_secs(2)
    );
    // A certificate without its key, or a client CA without a certificate, is refused.
    assert!(Args::try_parse_from(["enygma-server", "--tls-cert", "c.pem"]).is_err());
    assert!(Args::try_parse_from(["enygma-server", "--tls-key", "k.pem"]).is_err());
    assert!(Args::try_parse_from(["enygma-server", "--tls-client-ca", "ca.pem"]).is_err());
    assert!(Args::try_parse_from(["enygma-server", "--max-header-bytes", "4096"]).is_err());
}

#[test]
fn admin_bind_is_an_address_or_none() {
    let parse = |v: &str| Args::try_parse_from(["enygma-server", "--admin-bind", v]);
    assert_eq!(
        parse("0.0.0.0:9464").unwrap().admin_bind,
        AdminBind(Some("0.0.0.0:9464".parse().unwrap()))
    );
    assert_eq!(
        parse("[::1]:0").unwrap().admin_bind,
        AdminBind(Some("[::1]:0".parse().unwrap()))
    );
    assert_eq!(parse("none").unwrap().admin_bind, AdminBind(None));
    for bad in ["9464", "localhost:9464", "127.0.0.1", ""] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("--admin-bind") && err.contains("ADDR:PORT"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn exposure_warnings_name_what_is_missing() {
    let open = Args::try_parse_from(["enygma-server"]).unwrap().access;
    let any: IpAddr = "0.0.0.0".parse().unwrap();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let lo6: IpAddr = "::1".parse().unwrap();
    let w = open.exposure_warnings(any);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("without TLS") && w[1].contains("without bearer tokens"));
    // Each says what an attacker gets, and the flags that close it.
    assert!(w[0].contains("anyone on the network path can read the secret keys"));
    assert!(w[0].contains("--tls-cert"));
    assert!(w[1].contains("anyone who can reach the port can make the service prove"));
    assert!(w[1].contains("--auth-token-file"));
    assert!(w.iter().all(|w| w.starts_with("INSECURE: ")));
    assert!(open.exposure_warnings(lo).is_empty());
    assert!(open.exposure_warnings(lo6).is_empty());
    let hardened = Args::try_parse_from([
        "enygma-server",
        "--tls-cert",
        "c.pem",
        "--tls-key",
        "k.pem",
        "--auth-token-file",
        "t",
    ])
    .unwrap()
    .access;
    assert!(hardened.exposure_warnings(any).is_empty());
    let tls_only = Args::try_parse_from(["enygma-server", "--tls-cert", "c", "--tls-key", "k"])
        .unwrap()
        .access;
    assert_eq!(tls_only.exposure_warnings(any).len(), 1);
    let mtls = Args::try_parse_from([
        "enygma-server",
        "--tls-cert",
        "c",
        "--tls-key",
        "k",
        "--tls-client-ca",
        "ca",
    ])
    .unwrap()
    .access;
    assert!(mtls.exposure_warnings(any).is_empty());
}

#[test]
fn circuits_and_require_keys() {
    let args = Args::try_parse_from([
        "enygma-server",
        "--circuits",
        "withdraw-k2,transfer-k6",
        "--require-keys",
    ])
    .unwrap();
    let stems: Vec<String> = args.hosted().iter().map(Instance::key_stem).collect();
    assert_eq!(stems, ["transfer-k6", "withdraw-k2"]);
    assert_eq!(args.missing_keys(), enygma_prover::MissingKeys::Refuse);
    let deposit = Args::try_parse_from(["enygma-server", "--circuits", "deposit"]).unwrap();
    assert_eq!(deposit.hosted().len(), 5);
    assert_eq!(deposit.missing_keys(), enygma_prover::MissingKeys::Create);
    let ceremony = Args::try_parse_from(["enygma-server", "--require-ceremony-keys"]).unwrap();
    assert_eq!(ceremony.missing_keys(), enygma_prover::MissingKeys::Refuse);
    let err = Args::try_parse_from(["enygma-server", "--circuits", "transfer-k9"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown circuit \"transfer-k9\""), "{err}");
    assert!(
        err.contains("transfer-k6") && err.contains("withdraw"),
        "{err}"
    );
}

/// `--circuits @FILE`: the list read from the file now, the file kept for the reloads; a plain
/// list has none. A file that cannot be read or does not parse stops the start naming the flag,
/// the file and the line.
#[test]
fn circuits_from_a_list_file() {
    let dir = std::env::temp_dir().join(format!("enygma-circuits-flag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("circuits");
    std::fs::write(&file, "# pool A\nwithdraw-k2\ntransfer-k6 # hot\n").unwrap();
    let flag = format!("@{}", file.display());
    let args = Args::try_parse_from(["enygma-server", "--circuits", &flag]).unwrap();
    let stems: Vec<String> = args.hosted().iter().map(Instance::key_stem).collect();
    assert_eq!(stems, ["transfer-k6", "withdraw-k2"]);
    assert_eq!(args.hosted_file(), Some(file.clone()));
    let plain = Args::try_parse_from(["enygma-server", "--circuits", "transfer-k6"]).unwrap();
    assert_eq!(plain.hosted_file(), None);

    std::fs::write(&file, "transfer-k6\ntransfer-k9\n").unwrap();
    let err = Args::try_parse_from(["enygma-server", "--circuits", &flag])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--circuits"), "{err}");
    assert!(
        err.contains(&format!(
            "the circuit list file {}: line 2: unknown circuit \"transfer-k9\"",
            file.display()
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let err = Args::try_parse_from(["enygma-server", "--circuits", &flag])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "cannot read the circuit list file {}",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn the_cache_is_kept_beside_the_keys_unless_told_otherwise() {
    let dir = |flags: &[&str]| {
        Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
            .unwrap()
            .cache_dir()
    };
    assert_eq!(dir(&[]), Some(PathBuf::from("keys/cache")));
    assert_eq!(
        dir(&["--keys-dir", "/app/keys"]),
        Some(PathBuf::from("/app/keys/cache"))
    );
    assert_eq!(
        dir(&["--cache-dir", "/var/cache/enygma"]),
        Some(PathBuf::from("/var/cache/enygma"))
    );
    assert_eq!(dir(&["--cache-dir", "none"]), None);
}

#[test]
fn table_memory_is_a_size_or_the_default_share() {
    use crate::tables::TableBudget;
    let parse = |flags: &[&str]| {
        Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
    };
    let budget = |flags: &[&str]| parse(flags).unwrap().tables(Vec::new()).budget;
    assert_eq!(
        budget(&["--table-memory", "2GiB"]),
        TableBudget::Fixed(2 << 30)
    );
    assert_eq!(budget(&["--table-memory", "0"]), TableBudget::Fixed(0));
    assert_eq!(
        budget(&["--table-memory", "500MB"]),
        TableBudget::Fixed(500_000_000)
    );
    // The default: half the limit, with room for the slots' proofs.
    match budget(&["--max-inflight", "3"]) {
        TableBudget::Share { in_flight, .. } => assert_eq!(in_flight, 3),
        other => panic!("{other:?}"),
    }
    let err = parse(&["--table-memory", "half"]).unwrap_err().to_string();
    assert!(err.contains("--table-memory takes bytes"), "{err}");
    let pinned = statements::by_stem("transfer-k6").unwrap();
    assert_eq!(
        parse(&["--precompute", "transfer-k6"])
            .unwrap()
            .tables(vec![pinned])
            .pinned,
        vec![pinned]
    );
}

#[test]
fn precompute_names_hosted_circuits_or_is_refused() {
    let parse = |flags: &[&str]| {
        Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
    };
    let stems = |args: &Args| -> Vec<String> {
        args.precomputed()
            .unwrap()
            .iter()
            .map(Instance::key_stem)
            .collect()
    };
    let default = parse(&[]).unwrap();
    assert_eq!(default.precompute, Precompute::None);
    assert!(stems(&default).is_empty());
    assert!(!default.admission().pin_cpus);
    assert!(stems(&parse(&["--precompute", "none"]).unwrap()).is_empty());
    // `all` is every hosted circuit, in registry order.
    let all = parse(&[
        "--circuits",
        "withdraw-k2,transfer-k6",
        "--precompute",
        "all",
    ])
    .unwrap();
    assert_eq!(stems(&all), ["transfer-k6", "withdraw-k2"]);
    assert_eq!(
        parse(&["--precompute", "all"])
            .unwrap()
            .precomputed()
            .unwrap(),
        statements::instances().collect::<Vec<_>>()
    );
    let some = parse(&["--precompute", "transfer-k6, deposit-k2"]).unwrap();
    assert_eq!(stems(&some), ["transfer-k6", "deposit-k2"]);
    assert_eq!(
        stems(&parse(&["--precompute", "deposit"]).unwrap()).len(),
        5,
        "a statement name: every k"
    );
    // An unknown circuit: refused while parsing, with the valid names.
    let err = parse(&["--precompute", "transfer-k9"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown circuit \"transfer-k9\"")
            && err.contains("transfer-k6")
            && err.contains("`all`"),
        "{err}"
    );
    // A circuit this server does not host: refused at start, naming it.
    let err = parse(&["--circuits", "transfer-k6", "--precompute", "deposit-k2"])
        .unwrap()
        .precomputed()
        .unwrap_err();
    assert!(
        err.contains("deposit-k2") && err.contains("does not host"),
        "{err}"
    );
    let pinned = parse(&["--pin-cpus", "--max-inflight", "2"]).unwrap();
    assert!(pinned.admission().pin_cpus);
}

#[test]
fn either_thread_flag_gives_every_slot_a_pool_of_its_own() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let adm = |flags: &[&str]| {
        Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
            .unwrap()
            .admission()
    };
    let one = adm(&["--max-inflight", "1"]);
    assert_eq!(
        (one.max_inflight, one.prove_threads),
        (Some(1), ProveThreads::PerSlot(cpus))
    );
    assert_eq!(one.service_time, default_service_time(cpus));
    let split = adm(&["--max-inflight", "2", "--prove-threads", "1"]);
    assert_eq!(
        (split.max_inflight, split.prove_threads),
        (Some(2), ProveThreads::PerSlot(1))
    );
    assert_eq!(split.service_time, Duration::from_millis(350));
    assert_eq!(split.queue_depth, 2 * 172);
    let threads = adm(&["--prove-threads", "1"]);
    assert_eq!(
        (threads.max_inflight, threads.prove_threads),
        (Some(1), ProveThreads::PerSlot(1))
    );
    let unlimited = adm(&["--unlimited"]);
    assert_eq!(
        (unlimited.max_inflight, unlimited.prove_threads),
        (None, ProveThreads::PerSlot(cpus))
    );
}

#[test]
fn flags_and_unlimited() {
    let args = Args::try_parse_from([
        "enygma-server",
        "--max-inflight",
        "3",
        "--queue-timeout",
        "1500ms",
        "--unlimited",
        "--log-format",
        "json",
    ])
    .unwrap();
    let adm = args.admission();
    assert_eq!(adm.max_inflight, None);
    // ceil(1.5 s / service time) x 3
    let per_slot = (1.5 / adm.service_time.as_secs_f64()).ceil() as usize;
    assert_eq!(adm.queue_depth, 3 * per_slot);
    assert_eq!(adm.queue_timeout, Duration::from_millis(1500));
    assert_eq!(args.log_format, LogFormat::Json);
    assert!(Args::try_parse_from(["enygma-server", "--max-inflight", "0"]).is_err());
}

#[test]
fn idempotency_keeps_answers_ten_minutes_in_64_mib_unless_told_otherwise() {
    use crate::idempotency::IdempotencyConfig;
    let config = Config::from_args(&crate::test_support::args(&[]).unwrap()).unwrap();
    assert_eq!(
        config.idempotency,
        IdempotencyConfig {
            ttl: Duration::from_secs(600),
            memory: 64 << 20,
        }
    );
    // The in-process default (tests, embedders) is the flags' default.
    assert_eq!(config.idempotency, IdempotencyConfig::default());
    for (ttl, memory, expected) in [
        ("90s", "1GiB", (Duration::from_secs(90), 1 << 30)),
        ("1500ms", "50MB", (Duration::from_millis(1500), 50_000_000)),
        ("2m", "0", (Duration::from_secs(120), 0)),
        ("1h", "4096", (Duration::from_secs(3600), 4096)),
    ] {
        let args =
            crate::test_support::args(&["--idempotency-ttl", ttl, "--idempotency-memory", memory])
                .unwrap();
        let config = Config::from_args(&args).unwrap().idempotency;
        assert_eq!((config.ttl, config.memory), expected, "{ttl} {memory}");
    }
    for bad in [
        "--idempotency-ttl=ten minutes",
        "--idempotency-ttl=-1s",
        "--idempotency-memory=lots",
        "--idempotency-memory=-1",
    ] {
        let e = crate::test_support::args(&[bad]).unwrap_err();
        let flag = bad.split('=').next().unwrap();
        assert!(e.contains(flag), "{e}");
    }
}
