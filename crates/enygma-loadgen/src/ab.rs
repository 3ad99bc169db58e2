//! The A/B runner: the same schedule against the server started `--unlimited` (like the
//! reference) and with its capped defaults, optionally against the reference itself, then a
//! sweep of `--max-inflight` x `--prove-threads`; writes both reports, a side-by-side table
//! and names the best setting.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::ab_report;
use crate::ab_variant::{Role, Variant};
use crate::cli::{AbArgs, ScheduleArgs};
use crate::machine;
use crate::report::Report;
use crate::run::{self, shell_quote, Job, Target};

/// `1x2,2x1,4x1` → [(1,2),(2,1),(4,1)]; `none` → [].
pub fn parse_sweep(s: &str) -> Result<Vec<(usize, usize)>> {
    let s = s.trim();
    if s.is_empty() || s.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|x| {
            let (a, b) = x
                .trim()
                .split_once(['x', 'X'])
                .with_context(|| format!("sweep entry {x:?}: expected MAXxTHREADS"))?;
            let (a, b): (usize, usize) = (a.trim().parse()?, b.trim().parse()?);
            if a == 0 || b == 0 {
                bail!("sweep entry {x:?}: both numbers must be positive");
            }
            Ok((a, b))
        })
        .collect()
}

pub fn variants(a: &AbArgs) -> Result<Vec<Variant>> {
    let url = format!("http://{}:{}", a.bind, a.port);
    let base = format!(
        "{} --bind {} --port {} --keys-dir {}{}{}",
        a.server_cmd,
        a.bind,
        a.port,
        shell_quote(&a.keys_dir.display().to_string()),
        if a.server_args.trim().is_empty() {
            ""
        } else {
            " "
        },
        a.server_args.trim()
    );
    let mk = |name: &str, role, flags: String, setting| Variant {
        name: name.into(),
        setting_name: name.into(),
        round: None,
        role,
        command: if flags.is_empty() {
            base.clone()
        } else {
            format!("{base} {flags}")
        },
        flags,
        url: url.clone(),
        dir: None,
        setting,
    };
    let settings = if a.variants.is_empty() {
        vec![
            mk("unlimited", Role::A, "--unlimited".into(), None),
            mk("capped", Role::B, String::new(), None),
        ]
    } else {
        a.variants
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let role = if i == 0 { Role::A } else { Role::B };
                mk(&n.name, role, n.flags.clone(), None)
            })
            .collect()
    };
    let mut v = alternate(&settings, a.rounds as usize);
    if let Some(cmd) = &a.reference_cmd {
        v.push(Variant {
            name: "reference".into(),
            setting_name: "reference".into(),
            round: None,
            role: Role::Reference,
            flags: String::new(),
            command: cmd.clone(),
            url: a.reference_url.clone(),
            dir: a.reference_dir.clone(),
            setting: None,
        });
    }
    for (m, t) in parse_sweep(a.sweep())? {
        v.push(mk(
            &format!("sweep-{m}x{t}"),
            Role::Sweep,
            format!(
                "--max-inflight {m} --prove-threads {t} {}",
                a.sweep_args.trim()
            )
            .trim_end()
            .to_string(),
            Some((m, t)),
        ));
    }
    let mut names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
    names.sort_unstable();
    if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
        bail!(
            "two variants are named {:?}: each needs a directory of its own",
            twice[0]
        );
    }
    Ok(v)
}

/// The settings `rounds` times in turn (A B A B ...); with several rounds each run's name
/// carries its round.
fn alternate(settings: &[Variant], rounds: usize) -> Vec<Variant> {
    (1..=rounds)
        .flat_map(|round| {
            settings.iter().map(move |s| Variant {
                name: if rounds > 1 {
                    format!("{}-{round}", s.setting_name)
                } else {
                    s.setting_name.clone()
                },
                round: Some(round),
                ..s.clone()
            })
        })
        .collect()
}

/// `enygma_table_bytes{statement="transfer",k="6"}`: the server's bytes of precomputed tables
/// of the instance whose proving route `endpoint` is.
pub fn tables_selector(endpoint: &str) -> Result<String> {
    let instance = enygma_prover::statements::all_instances()
        .find(|i| i.prove_path() == endpoint)
        .with_context(|| {
            format!("--prime-until-tables: {endpoint} is no statement instance's proving route")
        })?;
    Ok(match instance.k() {
        Some(k) => format!(
            "enygma_table_bytes{{statement=\"{}\",k=\"{k}\"}}",
            instance.name()
        ),
        None => format!("enygma_table_bytes{{statement=\"{}\"}}", instance.name()),
    })
}

pub fn default_out_dir() -> PathBuf {
    let m = machine::detect();
    PathBuf::from("benches/results").join(format!(
        "{}-{}",
        machine::today_utc(),
        machine::slug(&m.cpu_model)
    ))
}

/// Entry point of `enygma-loadgen ab`.
pub async fn main(mut args: AbArgs, abort: Arc<AtomicBool>) -> Result<()> {
    let vars = variants(&args)?;
    if args.prime_until_tables {
        args.schedule.prime_until = Some(tables_selector(&args.schedule.endpoint)?);
    }
    let out = args.out.clone().unwrap_or_else(default_out_dir);
    // benches/run_load.sh passes the one command that reproduces it; else our own command line.
    let invoked = run::command_line();
    let cmdline = match std::env::var("ENYGMA_RUN_LOAD_CMD") {
        Ok(script) if !script.trim().is_empty() => script,
        _ => invoked.clone(),
    };
    let exe = args.server_cmd.split_whitespace().next().unwrap_or("");
    let targets = args.schedule.targets(&crate::client::HttpClient::new(
        "http://127.0.0.1",
        args.schedule.client.timeout,
    )?)?;
    eprintln!(
        "A/B into {}: {} variants, {} ({} request bodies, {} distinct)",
        out.display(),
        vars.len(),
        targets.describe(),
        targets.pool_len(),
        targets.pool_distinct()
    );
    for v in &vars {
        eprintln!("  {:<14} {}", v.name, v.command);
    }
    let per = |sweep: bool| {
        let mut sc = args.schedule.spec();
        if sweep {
            if let Some(l) = &args.sweep_levels {
                sc.levels = l.0.clone();
            }
            if !args.sweep_soak {
                sc.soak = None;
            }
        }
        crate::schedule::nominal_time(&crate::schedule::build_phases(&sc)).as_secs_f64()
    };
    let total: f64 = vars.iter().map(|v| per(v.role == Role::Sweep)).sum();
    eprintln!(
        "schedule: {:.0} s per variant ({:.0} s per sweep variant); at least {:.0} min in all, plus server start-ups",
        per(false),
        per(true),
        total / 60.0
    );
    if !Path::new(exe).exists() && !exe.contains('/') {
        eprintln!("note: {exe:?} is not a path; it must be on PATH");
    } else if !Path::new(exe).exists() {
        bail!("server binary {exe} not found: build it first (cargo build --release -p enygma-server)");
    }
    if !args.keys_dir.is_dir() {
        bail!("--keys-dir {} is not a directory", args.keys_dir.display());
    }
    if args.dry_run {
        return Ok(());
    }
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("command.txt"),
        format!("{cmdline}\n# which ran:\n{invoked}\n"),
    )?;
    let mut runs: Vec<(Variant, Report)> = Vec::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    for v in &vars {
        if abort.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let mut sched: ScheduleArgs = args.schedule.clone();
        if v.role == Role::Sweep {
            if let Some(l) = &args.sweep_levels {
                sched.levels = l.clone();
            }
            if !args.sweep_soak {
                sched.soak = None;
            }
        }
        eprintln!("\n=== {} ===", v.name);
        let result = run::execute(Job {
            url: &v.url,
            schedule: &sched,
            target: Target::Spawn {
                cmd: v.command.clone(),
                dir: v.dir.clone(),
            },
            out: &out.join(&v.name),
            label: Some(format!(
                "{} ({})",
                v.name,
                if v.flags.is_empty() {
                    "defaults"
                } else {
                    &v.flags
                }
            )),
            abort: abort.clone(),
        })
        .await;
        match result {
            Ok(report) => runs.push((v.clone(), report)),
            // Keep going: the other variants are still worth having (and a variant that cannot
            // start or dies is itself a finding); the failure is listed in ab.md.
            Err(e) => {
                eprintln!("variant {} failed: {e:#}", v.name);
                failures.push((v.name.clone(), format!("{e:#}")));
            }
        }
    }
    let levels = args.schedule.levels.0.clone();
    let md = ab_report::write(&out, &runs, &levels, &failures, &cmdline)?;
    eprintln!("\n{md}");
    eprintln!(
        "wrote {}/ab.md, ab.json, ab.svg and one directory per variant",
        out.display()
    );
    if !failures.is_empty() {
        bail!(
            "{} variant(s) failed: {}",
            failures.len(),
            failures
                .iter()
                .map(|f| f.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_commands() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "enygma-loadgen",
            "ab",
            "--requests",
            "r",
            "--server-cmd",
            "bin/srv",
            "--keys-dir",
            "my keys",
            "--port",
            "4000",
            "--sweep",
            "1x2",
            "--reference-cmd",
            "./ref",
            "--sweep-args",
            "--precompute transfer-k6",
        ])
        .unwrap();
        let crate::cli::Command::Ab(a) = cli.command else {
            panic!()
        };
        let v = variants(&a).unwrap();
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["unlimited", "capped", "reference", "sweep-1x2"]);
        assert_eq!(
            v[0].command,
            "bin/srv --bind 127.0.0.1 --port 4000 --keys-dir 'my keys' --unlimited"
        );
        assert_eq!(
            v[1].command,
            "bin/srv --bind 127.0.0.1 --port 4000 --keys-dir 'my keys'"
        );
        assert_eq!(v[2].url, "http://127.0.0.1:3003");
        assert_eq!(v[3].command, "bin/srv --bind 127.0.0.1 --port 4000 --keys-dir 'my keys' --max-inflight 1 --prove-threads 2 --precompute transfer-k6");
        assert_eq!(v[3].setting, Some((1, 2)));
    }

    #[test]
    fn named_settings_alternate_over_rounds() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "enygma-loadgen",
            "ab",
            "--requests",
            "r",
            "--server-cmd",
            "srv",
            "--variant",
            "default=",
            "--variant",
            "2x1-pre=--max-inflight 2 --prove-threads 1",
            "--rounds",
            "2",
            "--endpoint",
            "transfer-k6",
            "--prime-until-tables",
        ])
        .unwrap();
        let crate::cli::Command::Ab(a) = cli.command else {
            panic!()
        };
        // Named settings run no sweep unless asked.
        assert_eq!(a.sweep(), "none");
        let v = variants(&a).unwrap();
        let runs: Vec<(&str, &str, Option<usize>, Role)> = v
            .iter()
            .map(|v| (v.name.as_str(), v.setting_name.as_str(), v.round, v.role))
            .collect();
        assert_eq!(
            runs,
            [
                ("default-1", "default", Some(1), Role::A),
                ("2x1-pre-1", "2x1-pre", Some(1), Role::B),
                ("default-2", "default", Some(2), Role::A),
                ("2x1-pre-2", "2x1-pre", Some(2), Role::B),
            ]
        );
        assert_eq!(
            v[1].command,
            "srv --bind 127.0.0.1 --port 3003 --keys-dir keys --max-inflight 2 --prove-threads 1"
        );
        assert_eq!(
            v[0].command,
            "srv --bind 127.0.0.1 --port 3003 --keys-dir keys"
        );
        assert_eq!(
            tables_selector(&a.schedule.endpoint).unwrap(),
            "enygma_table_bytes{statement=\"transfer\",k=\"6\"}"
        );
        assert!(tables_selector("/healthcheck").is_err());
        // A name twice, or one that is no directory name, is refused.
        let twice = crate::cli::Cli::try_parse_from([
            "enygma-loadgen",
            "ab",
            "--requests",
            "r",
            "--variant",
            "a=",
            "--variant",
            "a=--unlimited",
        ])
        .unwrap();
        let crate::cli::Command::Ab(twice) = twice.command else {
            panic!()
        };
        assert!(variants(&twice).is_err());
        assert!(crate::cli::Cli::try_parse_from([
            "enygma-loadgen",
            "ab",
            "--requests",
            "r",
            "--variant",
            "a/b=",
        ])
        .is_err());
    }

    #[test]
    fn sweep_parsing() {
        assert_eq!(
            parse_sweep("1x2,2x1,4x1").unwrap(),
            vec![(1, 2), (2, 1), (4, 1)]
        );
        assert_eq!(parse_sweep("none").unwrap(), vec![]);
        assert!(parse_sweep("1x0").is_err());
        assert!(parse_sweep("3").is_err());
    }
}
