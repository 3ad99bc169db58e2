//! The A/B runner's own outputs: the best sweep setting, the side-by-side `ab.md`, `ab.svg`
//! and `ab.json`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::ab_rounds::{self, SettingLevel};
use crate::ab_variant::{Role, Variant};
use crate::chart::{self, Panel, Series};
use crate::claims::{Claims, Verdict, CLAIMS};
use crate::machine;
use crate::output::{errors_cell, f1, f2};
use crate::report::{LevelReport, Report};

/// The best sweep setting: highest peak throughput; among settings within 5 % of it, the
/// fewest errors, then the lowest p99 at the highest level, then the lowest peak RSS.
pub fn pick_best<'a>(cands: &[(&'a Variant, &'a Report)]) -> Option<(&'a Variant, String)> {
    let peak = |r: &Report| {
        r.levels
            .iter()
            .map(|l| l.throughput_rps)
            .fold(0.0, f64::max)
    };
    let errors = |r: &Report| {
        r.levels
            .iter()
            .map(|l| l.errors.values().sum::<u64>())
            .sum::<u64>()
    };
    let top_p99 = |r: &Report| {
        r.levels
            .last()
            .and_then(|l| l.latency_ms)
            .map_or(f64::INFINITY, |s| s.p99)
    };
    let rss = |r: &Report| {
        r.levels
            .iter()
            .filter_map(|l| l.rss_peak_mb)
            .fold(0.0, f64::max)
    };
    let best_peak = cands.iter().map(|(_, r)| peak(r)).fold(0.0, f64::max);
    if best_peak <= 0.0 {
        return None;
    }
    let mut close: Vec<&(&Variant, &Report)> = cands
        .iter()
        .filter(|(_, r)| peak(r) >= 0.95 * best_peak)
        .collect();
    close.sort_by(|(_, x), (_, y)| {
        errors(x)
            .cmp(&errors(y))
            .then(top_p99(x).total_cmp(&top_p99(y)))
            .then(rss(x).total_cmp(&rss(y)))
            .then(peak(y).total_cmp(&peak(x)))
    });
    let (v, r) = close.first()?;
    let why = format!(
        "peak throughput {:.3} req/s (best of all settings {:.3}; settings within 5 % of it were ranked by \
         errors, then p99 at the highest level, then peak RSS): {} errors, p99 {} ms at c={}, peak RSS {} MB",
        peak(r),
        best_peak,
        errors(r),
        f1(Some(top_p99(r)).filter(|x| x.is_finite())),
        r.levels.last().map_or(0, |l| l.concurrency),
        f1(Some(rss(r))),
    );
    Some((*v, why))
}

fn level(r: &Report, c: usize) -> Option<&LevelReport> {
    r.levels.iter().find(|l| l.concurrency == c)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// The side-by-side markdown (`ab.md`): the setup, the variants level by level, their soaks,
/// and the sweep with its best setting.
pub fn render_ab(
    runs: &[(Variant, Report)],
    levels: &[usize],
    best: Option<(&Variant, String)>,
    cmdline: &str,
) -> String {
    let mut md = String::new();
    let Some((_, first)) = runs.first() else {
        return md;
    };
    let main: Vec<&(Variant, Report)> =
        runs.iter().filter(|(v, _)| v.role != Role::Sweep).collect();
    let sweep: Vec<&(Variant, Report)> =
        runs.iter().filter(|(v, _)| v.role == Role::Sweep).collect();
    write_setup(&mut md, runs, first, levels, cmdline);
    write_side_by_side(&mut md, &main, levels);
    md.push_str(&ab_rounds::render(&ab_rounds::combine(runs, levels)));
    write_internal(&mut md, &main, levels);
    write_claims(&mut md, &main);
    write_soaks(&mut md, &main);
    write_sweep(&mut md, &sweep, best);
    md.push_str(
        "\nCharts: `ab.svg` (all variants), and each variant's `chart.svg` and `rss.svg`.\n",
    );
    md
}

/// When the variants' reports were written: the first (at the end of the first variant's run)
/// and, for several variants, the last, so that the span of the whole A/B shows.
fn report_times(runs: &[(Variant, Report)]) -> String {
    match (runs.first(), runs.last()) {
        (Some((_, first)), Some((_, last))) if runs.len() > 1 => {
            format!(
                "{} (first variant) to {} (last)",
                first.generated_at, last.generated_at
            )
        }
        (Some((_, only)), _) => only.generated_at.clone(),
        _ => String::new(),
    }
}

/// The settings compared: `--unlimited` against the capped defaults, or the named ones.
fn title(runs: &[(Variant, Report)]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (v, _) in runs.iter().filter(|(v, _)| v.round.is_some()) {
        if !names.contains(&v.setting_name.as_str()) {
            names.push(&v.setting_name);
        }
    }
    if names == ["unlimited", "capped"] {
        "enygma-server `--unlimited` vs capped defaults".to_string()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(" vs ")
    }
}

/// The machine, the schedule, how to reproduce the run, and the variants' commands.
fn write_setup(
    md: &mut String,
    runs: &[(Variant, Report)],
    first: &Report,
    levels: &[usize],
    cmdline: &str,
) {
    let m = &first.machine;
    let s = &first.settings;
    let _ = writeln!(md, "# A/B load test: {}\n", title(runs));
    let _ = writeln!(
        md,
        "- Machine: {} ({} cores, {} logical CPUs{})\n- Reports written: {}\n- Endpoint: `{}`, {} request bodies ({} distinct)\n- Schedule: levels {:?}, {} s each after a {} s warm-up{}{}",
        m.cpu_model,
        m.cores,
        m.logical_cpus,
        m.mem_total_mb.map_or(String::new(), |x| format!(", {x} MB RAM")),
        report_times(runs),
        s.endpoint,
        s.request_pool_size,
        s.request_pool_distinct,
        levels,
        s.duration_s,
        s.warmup_s,
        s.soak_concurrency.map_or(String::new(), |c| format!("; soak at {c} for {} s in {} s windows", s.soak_duration_s, s.window_s)),
        if s.open_rates_rps.is_empty() { String::new() } else { format!("; open loop at {:?} req/s", s.open_rates_rps) },
    );
    if s.duration_s < 60.0 {
        let _ = writeln!(
            md,
            "- **Shortened levels**: {} s per level instead of the article's 60 s.",
            s.duration_s
        );
    }
    let _ = writeln!(md, "- Reproduce: `{cmdline}`\n");
    md.push_str("| Variant | Server command | Report |\n|---|---|---|\n");
    for (v, _) in runs {
        let _ = writeln!(
            md,
            "| {} | `{}` | [{}/report.md]({}/report.md) |",
            v.name, v.command, v.name, v.name
        );
    }
    md.push('\n');
}

/// One row per concurrency level: each variant's throughput, p50, p99 and peak RSS, the
/// errors, and the capped variant's ratios to the unlimited one (and to the reference).
fn write_side_by_side(md: &mut String, main: &[&(Variant, Report)], levels: &[usize]) {
    let has_ref = main.iter().any(|(v, _)| v.role == Role::Reference);
    md.push_str("## Side by side\n\n");
    let _ = writeln!(md, "{}", side_by_side_header(main, has_ref));
    for &c in levels {
        let _ = writeln!(md, "{}", side_by_side_row(main, c, has_ref));
    }
    md.push('\n');
}

/// One right-aligned column per metric and variant, metric by metric: `p50 (ms) capped`.
fn metric_columns(header: &mut String, align: &mut String, metrics: &[&str], names: &[&str]) {
    for metric in metrics {
        for n in names {
            let _ = write!(header, " {metric} {n} |");
            align.push_str("---:|");
        }
    }
}

/// The side-by-side table's header and alignment rows.
fn side_by_side_header(main: &[&(Variant, Report)], has_ref: bool) -> String {
    let names: Vec<&str> = main.iter().map(|(v, _)| v.name.as_str()).collect();
    let mut header = String::from("| Concurrency |");
    let mut align = String::from("|---:|");
    metric_columns(
        &mut header,
        &mut align,
        &[
            "Throughput (req/s)",
            "p50 (ms)",
            "p99 (ms)",
            "Peak RSS (MB)",
        ],
        &names,
    );
    header.push_str(" Errors |");
    align.push_str("---|");
    let name = |role: Role| {
        main.iter()
            .find(|(v, _)| v.role == role)
            .map_or("–", |(v, _)| v.name.as_str())
    };
    let (a, b) = (name(Role::A), name(Role::B));
    let _ = write!(header, " Throughput {b}/{a} | p99 {b}/{a} |");
    align.push_str("---:|---:|");
    if has_ref {
        let _ = write!(
            header,
            " Throughput {b}/reference | p99 {b}/reference | Peak RSS {b}/reference |"
        );
        align.push_str("---:|---:|---:|");
    }
    format!("{header}\n{align}")
}

/// The side-by-side row of concurrency `c`.
fn side_by_side_row(main: &[&(Variant, Report)], c: usize, has_ref: bool) -> String {
    let of = |role: Role| {
        main.iter()
            .find(|(v, _)| v.role == role)
            .and_then(|(_, r)| level(r, c))
    };
    let mut row = format!("| {c} |");
    type Measure = fn(&LevelReport) -> Option<f64>;
    let throughput: Measure = |l| Some(l.throughput_rps);
    let p50: Measure = |l| l.latency_ms.map(|s| s.p50);
    let p99: Measure = |l| l.latency_ms.map(|s| s.p99);
    let rss_peak: Measure = |l| l.rss_peak_mb;
    for (k, f) in [throughput, p50, p99, rss_peak].iter().enumerate() {
        for (_, r) in main {
            let v = level(r, c).and_then(f);
            let _ = write!(
                row,
                " {} |",
                if k == 0 {
                    v.map_or("–".into(), f2)
                } else {
                    f1(v)
                }
            );
        }
    }
    let errs: Vec<String> = main
        .iter()
        .filter_map(|(v, r)| {
            level(r, c)
                .filter(|l| !l.errors.is_empty())
                .map(|l| format!("{}: {}", v.name, errors_cell(&l.errors)))
        })
        .collect();
    let _ = write!(
        row,
        " {} |",
        if errs.is_empty() {
            "0".into()
        } else {
            errs.join("; ")
        }
    );
    // B (capped) relative to another variant, in one measure.
    let capped = of(Role::B);
    let capped_over = |other: Option<&LevelReport>, measure: Measure| {
        ratio(capped.and_then(measure), other.and_then(measure))
    };
    let unlimited = of(Role::A);
    let _ = write!(
        row,
        " {} | {} |",
        capped_over(unlimited, throughput),
        capped_over(unlimited, p99)
    );
    if has_ref {
        let reference = of(Role::Reference);
        let _ = write!(
            row,
            " {} | {} | {} |",
            capped_over(reference, throughput),
            capped_over(reference, p99),
            capped_over(reference, rss_peak),
        );
    }
    row
}

/// Where each variant's time goes, level by level: its internal prove time (Server-Timing, or
/// the reference's timing line) against the latency the client saw. A service that admits
/// everything keeps prove/latency near 1.0 while both grow (nothing waits, everything slows
/// down); a capped one keeps the prove time flat and lets the queue wait grow instead.
fn write_internal(md: &mut String, main: &[&(Variant, Report)], levels: &[usize]) {
    let has_prove = main.iter().any(|(_, r)| {
        r.levels
            .iter()
            .any(|l| l.internal.internal_prove_ms.is_some())
    });
    if !has_prove {
        return;
    }
    md.push_str(
        "## Internal prove time against external latency

",
    );
    let mut header = String::from("| Concurrency |");
    let mut align = String::from("|---:|");
    let names: Vec<&str> = main.iter().map(|(v, _)| v.name.as_str()).collect();
    metric_columns(
        &mut header,
        &mut align,
        &[
            "prove p50 (ms)",
            "prove p99 (ms)",
            "queue p50 (ms)",
            "prove p50 / latency p50",
        ],
        &names,
    );
    let _ = writeln!(md, "{header}\n{align}");
    for &c in levels {
        let mut row = format!("| {c} |");
        let cells: [fn(&LevelReport) -> String; 4] = [
            |l| f1(l.internal.internal_prove_ms.map(|s| s.p50)),
            |l| f1(l.internal.internal_prove_ms.map(|s| s.p99)),
            |l| f1(l.internal.queue_wait_ms.map(|s| s.p50)),
            |l| {
                ratio(
                    l.internal.internal_prove_ms.map(|s| s.p50),
                    l.latency_ms.map(|s| s.p50),
                )
            },
        ];
        for f in cells {
            for (_, r) in main {
                let _ = write!(row, " {} |", level(r, c).map_or("–".into(), f));
            }
        }
        let _ = writeln!(md, "{row}");
    }
    md.push('\n');
}

/// The public load test's claims, each checked on each service of the run ([`claims`]).
fn write_claims(md: &mut String, main: &[&(Variant, Report)]) {
    md.push_str("## The article's claims, tested\n\n| Claim | Rule |");
    let mut align = String::from("|---|---|");
    for (v, _) in main {
        let _ = write!(md, " {} |", v.name);
        align.push_str("---|");
    }
    let _ = writeln!(md, "\n{align}");
    let per_variant: Vec<(Vec<String>, Vec<Verdict>)> = main
        .iter()
        .map(|(_, r)| {
            let c = Claims::of(r);
            (c.values().to_vec(), c.verdicts().to_vec())
        })
        .collect();
    for (i, (claim, rule)) in CLAIMS.iter().enumerate() {
        let _ = write!(md, "| {claim} | {rule} |");
        for (values, verdicts) in &per_variant {
            let _ = write!(md, " {}: **{}** |", values[i], verdicts[i].word());
        }
        md.push('\n');
    }
    md.push('\n');
}

/// The soak line of each variant that soaked.
fn write_soaks(md: &mut String, main: &[&(Variant, Report)]) {
    for (v, r) in main {
        if let Some(sk) = &r.soak {
            let _ = writeln!(
                md,
                "Soak ({}): {:.3} req/s mean, largest window deviation {} %, peak RSS {} MB, largest RSS deviation {} MB.",
                v.name,
                sk.throughput_mean_rps,
                f1(sk.throughput_max_dev_pct),
                f1(sk.overall.rss_peak_mb),
                f1(sk.rss_max_dev_mb)
            );
        }
    }
}

/// The `--max-inflight` x `--prove-threads` sweep: one row per setting, then the best one.
fn write_sweep(md: &mut String, sweep: &[&(Variant, Report)], best: Option<(&Variant, String)>) {
    if sweep.is_empty() {
        return;
    }
    md.push_str("\n## Sweep: `--max-inflight` x `--prove-threads`\n\n");
    let slevels: Vec<usize> = sweep[0].1.levels.iter().map(|l| l.concurrency).collect();
    let mut h = String::from("| Setting |");
    let mut al = String::from("|---|");
    for c in &slevels {
        let _ = write!(h, " c={c} req/s | c={c} p99 (ms) |");
        al.push_str("---:|---:|");
    }
    h.push_str(" Peak RSS (MB) | Errors |");
    al.push_str("---:|---|");
    let _ = writeln!(md, "{h}\n{al}");
    for (v, r) in sweep {
        let mut row = format!("| `{}` |", v.flags);
        for &c in &slevels {
            let l = level(r, c);
            let _ = write!(
                row,
                " {} | {} |",
                l.map_or("–".into(), |l| f2(l.throughput_rps)),
                f1(l.and_then(|l| l.latency_ms.map(|s| s.p99)))
            );
        }
        let peak = r
            .levels
            .iter()
            .filter_map(|l| l.rss_peak_mb)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        let errs: u64 = r
            .levels
            .iter()
            .map(|l| l.errors.values().sum::<u64>())
            .sum();
        let _ = writeln!(row, " {} | {} |", f1(peak), errs);
        md.push_str(&row);
    }
    match best {
        Some((v, why)) => {
            let _ = writeln!(
                md,
                "\n**Best setting: `{}`**: {why}. It should become the server's default.",
                v.flags
            );
        }
        None => md.push_str("\nNo sweep setting completed any request; no best setting.\n"),
    }
}

fn draw_ab(runs: &[(Variant, Report)], levels: &[usize], path: &Path) -> Result<()> {
    let cats: Vec<String> = levels.iter().map(|c| c.to_string()).collect();
    let same: Vec<&(Variant, Report)> = runs
        .iter()
        .filter(|(_, r)| r.levels.iter().map(|l| l.concurrency).collect::<Vec<_>>() == levels)
        .collect();
    let series = |f: fn(&LevelReport) -> Option<f64>| -> Vec<Series> {
        same.iter()
            .map(|(v, r)| Series {
                name: v.name.clone(),
                values: r.levels.iter().map(f).collect(),
            })
            .collect()
    };
    let panels = vec![
        Panel {
            title: "Throughput".into(),
            y_label: "req/s".into(),
            series: series(|l| Some(l.throughput_rps)),
        },
        Panel {
            title: "p50 latency".into(),
            y_label: "ms".into(),
            series: series(|l| l.latency_ms.map(|s| s.p50)),
        },
        Panel {
            title: "p99 latency".into(),
            y_label: "ms".into(),
            series: series(|l| l.latency_ms.map(|s| s.p99)),
        },
        Panel {
            title: "Peak server RSS".into(),
            y_label: "MB".into(),
            series: series(|l| l.rss_peak_mb),
        },
    ];
    let title = format!(
        "A/B on {}",
        runs.first()
            .map_or(String::new(), |(_, r)| r.machine.cpu_model.clone())
    );
    chart::draw_panels(
        path,
        &title,
        "concurrency (requests in flight)",
        &cats,
        &panels,
    )
}

#[derive(Serialize)]
struct AbSummary<'a> {
    generated_at: String,
    command: &'a str,
    machine: &'a machine::Machine,
    variants: Vec<AbVariantSummary<'a>>,
    /// Each setting level by level across the alternated rounds (with several).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rounds: Vec<SettingLevel>,
    best: Option<AbBest<'a>>,
}

#[derive(Serialize)]
struct AbVariantSummary<'a> {
    name: &'a str,
    role: Role,
    command: &'a str,
    report: String,
    levels: Vec<AbLevel>,
}

#[derive(Serialize)]
struct AbLevel {
    concurrency: usize,
    completed: u64,
    errors: u64,
    throughput_rps: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    rss_peak_mb: Option<f64>,
}

#[derive(Serialize)]
struct AbBest<'a> {
    name: &'a str,
    flags: &'a str,
    max_inflight: Option<usize>,
    prove_threads: Option<usize>,
    reason: String,
}

/// Writes `ab.md`, `ab.svg` and `ab.json` into `out`; returns the markdown.
pub fn write(
    out: &Path,
    runs: &[(Variant, Report)],
    levels: &[usize],
    failures: &[(String, String)],
    cmdline: &str,
) -> Result<String> {
    let sweep: Vec<(&Variant, &Report)> = runs
        .iter()
        .filter(|(v, _)| v.role == Role::Sweep)
        .map(|(v, r)| (v, r))
        .collect();
    let best = pick_best(&sweep);
    let mut md = render_ab(runs, levels, best.clone(), cmdline);
    if !failures.is_empty() {
        md.push_str("\n## Failed variants\n\n");
        for (n, e) in failures {
            let _ = writeln!(md, "- {n}: {}", e.replace('\n', " "));
        }
    }
    std::fs::write(out.join("ab.md"), &md)?;
    if !levels.is_empty() {
        draw_ab(runs, levels, &out.join("ab.svg"))?;
    }
    let summary = AbSummary {
        generated_at: machine::now_rfc3339(),
        command: cmdline,
        machine: &runs
            .first()
            .map(|(_, r)| r.machine.clone())
            .unwrap_or_else(machine::detect),
        variants: runs
            .iter()
            .map(|(v, r)| AbVariantSummary {
                name: &v.name,
                role: v.role,
                command: &v.command,
                report: format!("{}/report.json", v.name),
                levels: r
                    .levels
                    .iter()
                    .map(|l| AbLevel {
                        concurrency: l.concurrency,
                        completed: l.completed,
                        errors: l.errors.values().sum(),
                        throughput_rps: l.throughput_rps,
                        p50_ms: l.latency_ms.map(|s| s.p50),
                        p99_ms: l.latency_ms.map(|s| s.p99),
                        rss_peak_mb: l.rss_peak_mb,
                    })
                    .collect(),
            })
            .collect(),
        rounds: ab_rounds::combine(runs, levels),
        best: best.as_ref().map(|(v, why)| AbBest {
            name: &v.name,
            flags: &v.flags,
            max_inflight: v.setting.map(|s| s.0),
            prove_threads: v.setting.map(|s| s.1),
            reason: why.clone(),
        }),
    };
    std::fs::write(
        out.join("ab.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(name: &str, role: Role, setting: Option<(usize, usize)>) -> Variant {
        Variant {
            name: name.into(),
            setting_name: name.into(),
            round: (role == Role::A || role == Role::B).then_some(1),
            role,
            flags: setting.map_or(String::new(), |(m, t)| {
                format!("--max-inflight {m} --prove-threads {t}")
            }),
            command: format!("srv {name}"),
            url: "http://127.0.0.1:1".into(),
            dir: None,
            setting,
        }
    }

    fn report(tput: &[f64], p99: f64, rss: f64, errors: u64) -> Report {
        let mut r = crate::output::tests::sample_report();
        let base = r.levels[0].clone();
        r.levels = tput
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let mut l = base.clone();
                l.concurrency = 1 << i;
                l.throughput_rps = t;
                l.latency_ms.as_mut().unwrap().p99 = p99;
                l.rss_peak_mb = Some(rss);
                l.errors = if errors > 0 {
                    [("503".to_string(), errors)].into()
                } else {
                    Default::default()
                };
                l
            })
            .collect();
        r
    }

    #[test]
    fn best_setting_ranking() {
        let (a, b, c) = (
            variant("sweep-1x2", Role::Sweep, Some((1, 2))),
            variant("sweep-2x1", Role::Sweep, Some((2, 1))),
            variant("sweep-4x1", Role::Sweep, Some((4, 1))),
        );
        // 4x1 has the top throughput but 2x1 is within 5 % with a far better p99.
        let (ra, rb, rc) = (
            report(&[1.0, 1.2], 900.0, 300.0, 0),
            report(&[1.0, 1.95], 1200.0, 500.0, 0),
            report(&[1.0, 2.0], 2400.0, 800.0, 0),
        );
        let (best, why) = pick_best(&[(&a, &ra), (&b, &rb), (&c, &rc)]).unwrap();
        assert_eq!(best.name, "sweep-2x1");
        assert!(why.contains("peak throughput 1.950"), "{why}");
        // Errors rank before latency among the close ones.
        let rb_err = report(&[1.0, 1.95], 1200.0, 500.0, 3);
        assert_eq!(
            pick_best(&[(&a, &ra), (&b, &rb_err), (&c, &rc)])
                .unwrap()
                .0
                .name,
            "sweep-4x1"
        );
        // Nothing completed: no best.
        let zero = report(&[0.0], 1.0, 1.0, 0);
        assert!(pick_best(&[(&a, &zero)]).is_none());
        assert!(pick_best(&[]).is_none());
    }

    #[test]
    fn side_by_side_table() {
        let mut runs = vec![
            (
                variant("unlimited", Role::A, None),
                report(&[1.0, 1.5], 2000.0, 900.0, 0),
            ),
            (
                variant("capped", Role::B, None),
                report(&[1.0, 1.8], 1000.0, 400.0, 0),
            ),
            (
                variant("reference", Role::Reference, None),
                report(&[0.5, 0.6], 4000.0, 1800.0, 2),
            ),
            (
                variant("sweep-2x1", Role::Sweep, Some((2, 1))),
                report(&[1.0, 1.8], 1000.0, 400.0, 0),
            ),
        ];
        // The last variant ends later: the setup gives the span from the first report to it.
        runs[3].1.generated_at = "2025-01-01T00:40:00Z".into();
        let sweep: Vec<(&Variant, &Report)> = runs
            .iter()
            .filter(|(v, _)| v.role == Role::Sweep)
            .map(|(v, r)| (v, r))
            .collect();
        let md = render_ab(&runs, &[1, 2], pick_best(&sweep), "enygma-loadgen ab");
        assert!(
            md.contains(
                "- Reports written: 2025-01-01T00:00:00Z (first variant) to 2025-01-01T00:40:00Z (last)\n"
            ),
            "{md}"
        );
        let one = render_ab(&runs[..1], &[1, 2], None, "enygma-loadgen ab");
        assert!(
            one.contains("- Reports written: 2025-01-01T00:00:00Z\n"),
            "{one}"
        );
        assert!(md.contains("| Concurrency | Throughput (req/s) unlimited | Throughput (req/s) capped | Throughput (req/s) reference |"), "{md}");
        assert!(md.contains("| 2 | 1.50 | 1.80 | 0.60 | 800.0 | 800.0 | 800.0 | 2000.0 | 1000.0 | 4000.0 | 900.0 | 400.0 | 1800.0 | reference: 2×503 | 1.20× | 0.50× | 3.00× | 0.25× | 0.22× |"), "{md}");
        assert!(md.contains("**Best setting: `--max-inflight 2 --prove-threads 1`**"));
        // The sample level's prove p50 is 700 ms against a latency p50 of 800 ms.
        assert!(
            md.contains(
                "| prove p50 (ms) unlimited | prove p50 (ms) capped | prove p50 (ms) reference |"
            ),
            "{md}"
        );
        assert!(md.contains("| 0.88× | 0.88× | 0.88× |"), "{md}");
        assert!(
            md.contains("| Peak reached by 2-4 in flight | peak level in 2..=4 | 1.50 proofs/s at 2: **holds** |"),
            "{md}"
        );
        assert!(md.contains("- Reproduce: `enygma-loadgen ab`"));
        for table in md.split("\n\n").filter(|t| t.starts_with('|')) {
            let cells: Vec<usize> = table.lines().map(|l| l.matches('|').count()).collect();
            assert!(
                cells.iter().all(|&c| c == cells[0]),
                "ragged table:\n{table}"
            );
        }
    }
}
