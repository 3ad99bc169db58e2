//! Writing a run's files: `report.json`, `report.md` (tables like the article's),
//! `requests.csv` (every request) and `rss.csv` (every RSS sample).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::load::Record;
use crate::report::{LevelReport, Report};
use crate::rss::RssSample;
use crate::stats::Summary;

pub fn write_json(report: &Report, dir: &Path) -> Result<()> {
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}

pub fn read_json(path: &Path) -> Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

pub fn f1(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.1}"))
}

pub fn f2(x: f64) -> String {
    format!("{x:.2}")
}

fn pick(s: &Option<Summary>, f: fn(&Summary) -> f64) -> Option<f64> {
    s.as_ref().map(f)
}

/// The p50, p90, p99 and max latency columns that the closed- and open-loop tables share.
fn latency_cells(latency_ms: &Option<Summary>) -> String {
    let columns: [fn(&Summary) -> f64; 4] = [|s| s.p50, |s| s.p90, |s| s.p99, |s| s.max];
    columns.map(|f| f1(pick(latency_ms, f))).join(" | ")
}

pub fn errors_cell(errors: &std::collections::BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        "0".into()
    } else {
        errors
            .iter()
            .map(|(k, v)| format!("{v}×{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn level_row(label: &str, l: &LevelReport) -> String {
    let i = &l.internal;
    format!(
        "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        l.completed,
        errors_cell(&l.errors),
        f2(l.throughput_rps),
        latency_cells(&l.latency_ms),
        f1(pick(&i.internal_prove_ms, |s| s.p50)),
        f1(pick(&i.internal_prove_ms, |s| s.p99)),
        f1(pick(&i.queue_wait_ms, |s| s.p50)),
        f1(pick(&i.gap_ms, |s| s.p50)),
        f1(l.rss_peak_mb),
        f1(l.rss_mean_mb),
    )
}

const LEVEL_HEADER: &str = "| Concurrency | Completed | Errors | Throughput (req/s) | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | prove p50 (ms) | prove p99 (ms) | queue p50 (ms) | gap p50 (ms) | RSS peak (MB) | RSS mean (MB) |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

pub fn render_markdown(r: &Report) -> String {
    let mut md = String::new();
    let s = &r.settings;
    let _ = writeln!(md, "# Load test: {}{}\n", s.url, s.endpoint);
    if let Some(l) = &r.label {
        let _ = writeln!(md, "Label: **{l}**\n");
    }
    let _ = writeln!(
        md,
        "- Machine: {} ({} cores, {} logical CPUs{})\n- Generated: {} by {}\n- Closed loop: levels {:?}, {} s each after {} s warm-up; request pool: {} files ({} distinct) from `{}`",
        r.machine.cpu_model,
        r.machine.cores,
        r.machine.logical_cpus,
        r.machine.mem_total_mb.map_or(String::new(), |m| format!(", {m} MB RAM")),
        r.generated_at,
        r.tool,
        s.levels,
        s.duration_s,
        s.warmup_s,
        s.request_pool_size,
        s.request_pool_distinct,
        s.requests,
    );
    let _ = writeln!(
        md,
        "- Shed answers (503/429): {}",
        if s.honor_retry_after {
            "each closed-loop worker waits the `Retry-After` before its next request"
        } else {
            "retried at once (`--ignore-retry-after`)"
        }
    );
    if let Some(cmd) = &r.server.command {
        let _ = writeln!(md, "- Server: `{cmd}`");
    }
    if let Some(pid) = r.server.pid {
        let _ = writeln!(
            md,
            "- RSS sampled from /proc/{pid}/status every {} ms; VmHWM at the end: {} MB",
            s.rss_interval_ms,
            f1(r.server.vm_hwm_mb)
        );
    }
    md.push('\n');
    if !r.levels.is_empty() {
        md.push_str("## Closed loop\n\n");
        md.push_str(LEVEL_HEADER);
        for l in &r.levels {
            md.push_str(&level_row(&l.concurrency.to_string(), l));
        }
        md.push('\n');
        let checks: Vec<String> = r
            .levels
            .iter()
            .filter_map(|l| {
                l.served_check.map(|c| {
                    format!(
                        "c={}: server {} / client {}{}",
                        l.concurrency,
                        c.server_served,
                        c.client_completed,
                        if c.matches { "" } else { " **MISMATCH**" }
                    )
                })
            })
            .collect();
        if !checks.is_empty() {
            let _ = writeln!(
                md,
                "Served-count check (warm-up included): {}.\n",
                checks.join("; ")
            );
        }
    }
    if let Some(soak) = &r.soak {
        let o = &soak.overall;
        let _ = writeln!(
            md,
            "## Soak: {} in flight for {} s, {} s windows\n",
            o.concurrency, o.duration_s, soak.window_s
        );
        md.push_str(LEVEL_HEADER);
        md.push_str(&level_row(&format!("{} (soak)", o.concurrency), o));
        md.push('\n');
        md.push_str("| Window | From (s) | To (s) | Completed | Errors | Throughput (req/s) | Δ vs mean (%) | p50 (ms) | p99 (ms) | Latency max dev. (ms) | RSS peak (MB) | RSS mean (MB) | RSS max dev. (MB) |\n|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for w in &soak.windows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                w.index,
                w.start_s,
                w.end_s,
                w.completed,
                errors_cell(&w.errors),
                f2(w.throughput_rps),
                f1(w.throughput_dev_pct),
                f1(pick(&w.latency_ms, |s| s.p50)),
                f1(pick(&w.latency_ms, |s| s.p99)),
                f1(w.latency_max_dev_ms),
                f1(w.rss_peak_mb),
                f1(w.rss_mean_mb),
                f1(w.rss_max_dev_mb),
            );
        }
        let _ = writeln!(
            md,
            "\nMean throughput {} req/s; largest window deviation {} %; largest RSS deviation from the soak mean {} MB; RSS trend (least-squares slope of every sample) {} MB/h; largest latency deviation from the mean {} ms. (Max dev. = the largest distance of one sample from the soak's mean.)\n",
            f2(soak.throughput_mean_rps),
            f1(soak.throughput_max_dev_pct),
            f1(soak.rss_max_dev_mb),
            f1(soak.rss_trend_mb_per_hour),
            f1(soak.latency_max_dev_ms)
        );
    }
    if !r.open_loop.is_empty() {
        md.push_str("## Open loop (Poisson arrivals; latency from the scheduled send time)\n\n");
        md.push_str("| Rate (req/s) | Scheduled | Completed | Errors | Throughput (req/s) | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | send lag p99 (ms) | prove p50 (ms) | queue p50 (ms) | max outstanding | RSS peak (MB) |\n|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for o in &r.open_loop {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                o.rate_rps,
                o.scheduled,
                o.completed,
                errors_cell(&o.errors),
                f2(o.throughput_rps),
                latency_cells(&o.latency_ms),
                f1(pick(&o.send_lag_ms, |s| s.p99)),
                f1(pick(&o.internal.internal_prove_ms, |s| s.p50)),
                f1(pick(&o.internal.queue_wait_ms, |s| s.p50)),
                o.max_outstanding,
                f1(o.rss_peak_mb),
            );
        }
        md.push('\n');
    }
    push_notes(&mut md, &r.notes);
    md
}

/// A report's `## Notes` section, one bullet a note (nothing without notes).
pub fn push_notes(md: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        md.push_str("## Notes\n\n");
        for n in notes {
            let _ = writeln!(md, "- {n}");
        }
        md.push('\n');
    }
}

pub fn write_markdown(report: &Report, dir: &Path) -> Result<()> {
    let path = dir.join("report.md");
    std::fs::write(&path, render_markdown(report))
        .with_context(|| format!("writing {}", path.display()))
}

fn opt(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v:.3}"))
}

/// Writes `rows` under `header` to `dir/name` as CSV (quoted where a field needs it: a label
/// may contain commas).
fn write_csv<const N: usize>(
    dir: &Path,
    name: &str,
    header: [&str; N],
    rows: impl IntoIterator<Item = [String; N]>,
) -> Result<()> {
    let path = dir.join(name);
    let write = || -> Result<()> {
        let mut out = csv::Writer::from_path(&path)?;
        out.write_record(header)?;
        for row in rows {
            out.write_record(&row)?;
        }
        out.flush()?;
        Ok(())
    };
    write().with_context(|| format!("writing {}", path.display()))
}

/// One line per request: `phase,label,warmup,worker,scheduled_s,sent_s,done_s,latency_ms,status,queue_ms,witness_ms,prove_ms,total_ms`.
pub fn write_requests_csv(records: &[(String, Record)], dir: &Path) -> Result<()> {
    let header = [
        "phase",
        "label",
        "warmup",
        "worker",
        "scheduled_s",
        "sent_s",
        "done_s",
        "latency_ms",
        "status",
        "queue_ms",
        "witness_ms",
        "prove_ms",
        "total_ms",
    ];
    let rows = records.iter().map(|(label, r)| {
        [
            r.phase.to_string(),
            label.clone(),
            r.warmup.to_string(),
            r.worker.to_string(),
            format!("{:.6}", r.scheduled.as_secs_f64()),
            format!("{:.6}", r.sent.as_secs_f64()),
            format!("{:.6}", r.done.as_secs_f64()),
            format!("{:.3}", r.latency_ms()),
            r.status.key().to_string(),
            opt(r.timing.queue_ms),
            opt(r.timing.witness_ms),
            opt(r.timing.prove_ms),
            opt(r.timing.total_ms),
        ]
    });
    write_csv(dir, "requests.csv", header, rows)
}

/// `t_s,rss_mb,phase` (phase is the label of the phase running at that time, or empty).
pub fn write_rss_csv(
    samples: &[RssSample],
    epoch: Instant,
    phases: &[(String, f64, f64)],
    dir: &Path,
) -> Result<()> {
    let rows = samples.iter().map(|s| {
        let t = s.at.saturating_duration_since(epoch).as_secs_f64();
        let label = phases
            .iter()
            .find(|(_, a, b)| t >= *a && t <= *b)
            .map_or("", |p| p.0.as_str());
        [
            format!("{t:.3}"),
            format!("{:.3}", s.mb()),
            label.to_string(),
        ]
    });
    write_csv(dir, "rss.csv", ["t_s", "rss_mb", "phase"], rows)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::report::{PhaseView, ServerInfo, Settings, SCHEMA_VERSION};
    use std::time::Duration;

    pub(crate) fn sample_report() -> Report {
        let run = crate::report::tests::sample_run();
        let epoch = Instant::now();
        let rss = crate::report::tests::sample_rss(epoch);
        let v = PhaseView::new(&run, &rss, epoch);
        Report {
            schema_version: SCHEMA_VERSION,
            tool: "enygma-loadgen test".into(),
            generated_at: "2025-01-01T00:00:00Z".into(),
            label: Some("unit".into()),
            machine: Machine {
                cpu_model: "Test CPU".into(),
                cores: 2,
                logical_cpus: 4,
                available_parallelism: 4,
                mem_total_mb: Some(1024),
                kernel: None,
            },
            settings: Settings {
                url: "http://127.0.0.1:3003".into(),
                endpoint: "/generateProofTransfer-6".into(),
                requests: "reqs".into(),
                request_pool_size: 2,
                request_pool_distinct: 2,
                levels: vec![1],
                duration_s: 2.0,
                warmup_s: 1.0,
                soak_concurrency: Some(1),
                soak_duration_s: 2.0,
                window_s: 1.0,
                open_rates_rps: vec![1.0],
                timeout_s: 300.0,
                seed: 1,
                rss_interval_ms: 100,
                server_pid: Some(1),
                spawn_server: None,
                max_outstanding: 512,
                honor_retry_after: true,
                metrics_path: Some("/metrics".into()),
                served_metric: None,
            },
            server: ServerInfo {
                pid: Some(1),
                ..Default::default()
            },
            levels: vec![v.level(1, Some(4.0))],
            soak: Some(v.soak(1, Duration::from_secs(1), &rss, epoch, None)),
            open_loop: vec![v.open(1.0, None)],
            notes: vec!["a note".into()],
        }
    }

    #[test]
    fn report_json_shape() {
        let r = sample_report();
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        for k in [
            "schema_version",
            "tool",
            "generated_at",
            "machine",
            "settings",
            "server",
            "levels",
            "soak",
            "open_loop",
            "notes",
        ] {
            assert!(v.get(k).is_some(), "missing top-level {k}");
        }
        assert_eq!(v["machine"]["cpu_model"], "Test CPU");
        assert_eq!(v["machine"]["cores"], 2);
        assert_eq!(v["settings"]["levels"], serde_json::json!([1]));
        assert_eq!(v["settings"]["duration_s"], 2.0);
        assert_eq!(v["settings"]["warmup_s"], 1.0);
        let l = &v["levels"][0];
        assert_eq!(l["concurrency"], 1);
        assert_eq!(l["completed"], 3);
        assert_eq!(l["errors"], serde_json::json!({"503": 1}));
        assert_eq!(l["throughput_rps"], 1.5);
        for p in ["p50", "p90", "p99", "max"] {
            assert!(l["latency_ms"][p].is_number(), "latency_ms.{p}");
        }
        for p in ["p50", "p99"] {
            assert!(
                l["internal_prove_ms"][p].is_number(),
                "internal_prove_ms.{p}"
            );
            assert!(l["queue_wait_ms"][p].is_number(), "queue_wait_ms.{p}");
            assert!(l["gap_ms"][p].is_number(), "gap_ms.{p}");
        }
        assert_eq!(l["rss_peak_mb"], 135.0);
        assert!(l["rss_mean_mb"].is_number());
        assert_eq!(l["timing_violations"], 0);
        assert_eq!(l["served_check"]["matches"], true);
        assert_eq!(l["warmup"]["completed"], 1);
        let soak = &v["soak"];
        assert_eq!(soak["concurrency"], 1);
        assert_eq!(soak["windows"].as_array().unwrap().len(), 2);
        for k in [
            "throughput_rps",
            "rss_peak_mb",
            "rss_max_dev_mb",
            "throughput_dev_pct",
        ] {
            assert!(soak["windows"][0].get(k).is_some(), "soak window {k}");
        }
        let o = &v["open_loop"][0];
        assert_eq!(o["rate_rps"], 1.0);
        assert!(o["latency_ms"]["p99"].is_number());
        assert!(o["send_lag_ms"]["p50"].is_number());
        // And it reads back.
        let back: Report = serde_json::from_value(v).unwrap();
        assert_eq!(back.levels[0].completed, 3);
    }

    #[test]
    fn markdown_tables() {
        let md = render_markdown(&sample_report());
        assert!(md.contains("| Concurrency | Completed | Errors | Throughput (req/s) | p50 (ms) |"));
        assert!(
            md.contains(
                "| 1 | 3 | 1×503 | 1.50 | 800.0 | 1090.0 | 1090.0 | 1090.0 | 700.0 | 1000.0 |"
            ),
            "{md}"
        );
        assert!(md.contains("## Soak: 1 in flight for 2 s, 1 s windows"));
        assert!(md.contains("## Open loop"));
        assert!(md.contains("Served-count check (warm-up included): c=1: server 4 / client 4."));
        assert!(md.contains("- a note"));
        // Every table row has as many cells as its header.
        for table in md.split("\n\n").filter(|t| t.starts_with('|')) {
            let cells: Vec<usize> = table.lines().map(|l| l.matches('|').count()).collect();
            assert!(
                cells.iter().all(|&c| c == cells[0]),
                "ragged table:\n{table}"
            );
        }
    }

    #[test]
    fn csv_files() {
        let dir = std::env::temp_dir().join(format!("loadgen-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = crate::report::tests::sample_run();
        let recs: Vec<(String, Record)> = run
            .records
            .iter()
            .map(|r| ("c=1".to_string(), *r))
            .collect();
        write_requests_csv(&recs, &dir).unwrap();
        let csv = std::fs::read_to_string(dir.join("requests.csv")).unwrap();
        assert_eq!(csv.lines().count(), 6);
        assert!(csv.lines().nth(4).unwrap().contains(",503,"));
        let epoch = Instant::now();
        let rss = [RssSample {
            at: epoch + Duration::from_millis(500),
            kb: 2048,
        }];
        write_rss_csv(&rss, epoch, &[("c=1".into(), 0.0, 1.0)], &dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("rss.csv")).unwrap(),
            "t_s,rss_mb,phase\n0.500,2.000,c=1\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
