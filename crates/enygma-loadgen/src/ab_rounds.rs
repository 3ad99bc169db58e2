//! The A/B runner's rounds: the settings run alternated (A B A B ...), so that each sees the
//! same drift of the machine (on a shared 2 vCPU guest the same setting measured minutes apart
//! moves by 10-20 %), then combined level by level: each setting's median over its rounds, the
//! least and the most, and the ratio of its median to the first setting's.

use std::fmt::Write as _;

use serde::Serialize;

use crate::ab_variant::Variant;
use crate::output::f2;
use crate::report::{LevelReport, Report};

/// One measure of one setting over its rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Rounds that had the measure.
    pub rounds: usize,
}

impl Spread {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            rounds: n,
        })
    }

    /// `1.23 (1.20–1.30)`: the median, then the least and the most.
    fn cell(self, digits: usize) -> String {
        format!(
            "{:.digits$} ({:.digits$}–{:.digits$})",
            self.median, self.min, self.max
        )
    }
}

/// One setting at one level, over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingLevel {
    pub setting: String,
    pub concurrency: usize,
    pub throughput_rps: Option<Spread>,
    pub p50_ms: Option<Spread>,
    /// The server's own prove time (Server-Timing).
    pub internal_prove_p50_ms: Option<Spread>,
    /// Median throughput over the first setting's median at this level.
    pub throughput_ratio: Option<f64>,
    /// Median p50 over the first setting's median at this level.
    pub p50_ratio: Option<f64>,
}

/// The settings run in rounds, in the order they first ran (the first is the baseline).
fn settings(runs: &[(Variant, Report)]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for (v, _) in runs.iter().filter(|(v, _)| v.round.is_some()) {
        if !names.contains(&v.setting_name.as_str()) {
            names.push(&v.setting_name);
        }
    }
    names
}

/// Each setting's figures at each level across its rounds; empty unless some setting ran more
/// than one round.
pub fn combine(runs: &[(Variant, Report)], levels: &[usize]) -> Vec<SettingLevel> {
    if !runs.iter().any(|(v, _)| v.round.is_some_and(|r| r > 1)) {
        return Vec::new();
    }
    let settings = settings(runs);
    let mut out = Vec::new();
    for &c in levels {
        let spread = |setting: &str, measure: fn(&LevelReport) -> Option<f64>| {
            Spread::of(
                runs.iter()
                    .filter(|(v, _)| v.round.is_some() && v.setting_name == setting)
                    .filter_map(|(_, r)| r.levels.iter().find(|l| l.concurrency == c))
                    .filter_map(measure),
            )
        };
        let throughput = |l: &LevelReport| Some(l.throughput_rps);
        let p50 = |l: &LevelReport| l.latency_ms.map(|s| s.p50);
        let prove = |l: &LevelReport| l.internal.internal_prove_ms.map(|s| s.p50);
        let baseline = settings
            .first()
            .map(|s| (spread(s, throughput), spread(s, p50)));
        let over = |a: Option<Spread>, b: Option<Spread>| match (a, b) {
            (Some(a), Some(b)) if b.median > 0.0 => Some(a.median / b.median),
            _ => None,
        };
        for setting in &settings {
            let (t, p) = (spread(setting, throughput), spread(setting, p50));
            let (base_t, base_p) = baseline.unwrap_or((None, None));
            out.push(SettingLevel {
                setting: setting.to_string(),
                concurrency: c,
                throughput_rps: t,
                p50_ms: p,
                internal_prove_p50_ms: spread(setting, prove),
                throughput_ratio: over(t, base_t),
                p50_ratio: over(p, base_p),
            });
        }
    }
    out
}

/// The `## Across rounds` section of `ab.md`, or nothing for a single round.
pub fn render(combined: &[SettingLevel]) -> String {
    let mut md = String::new();
    let Some(baseline) = combined.first() else {
        return md;
    };
    let _ = writeln!(
        md,
        "## Across rounds\n\nEach setting's median over its rounds, the least and the most in \
         brackets; the ratios are of medians, to `{}`.\n",
        baseline.setting
    );
    md.push_str(
        "| Concurrency | Setting | Rounds | Throughput (req/s) | p50 (ms) | prove p50 (ms) | Throughput ratio | p50 ratio |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let cell = |s: Option<Spread>, digits| s.map_or("–".into(), |s| s.cell(digits));
    let times = |r: Option<f64>| r.map_or("–".into(), |r| format!("{}×", f2(r)));
    for l in combined {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            l.concurrency,
            l.setting,
            l.throughput_rps.map_or(0, |s| s.rounds),
            cell(l.throughput_rps, 2),
            cell(l.p50_ms, 1),
            cell(l.internal_prove_p50_ms, 1),
            times(l.throughput_ratio),
            times(l.p50_ratio),
        );
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ab_variant::Role;

    fn run(
        setting: &str,
        round: usize,
        role: Role,
        throughput: f64,
        p50: f64,
    ) -> (Variant, Report) {
        let mut r = crate::output::tests::sample_report();
        r.levels.truncate(1);
        let l = &mut r.levels[0];
        l.concurrency = 8;
        l.throughput_rps = throughput;
        l.latency_ms.as_mut().unwrap().p50 = p50;
        let v = Variant {
            name: format!("{setting}-{round}"),
            setting_name: setting.into(),
            round: Some(round),
            role,
            flags: String::new(),
            command: format!("srv {setting}"),
            url: "http://127.0.0.1:1".into(),
            dir: None,
            setting: None,
        };
        (v, r)
    }

    #[test]
    fn spread_is_the_median_least_and_most() {
        let odd = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (odd.median, odd.min, odd.max, odd.rounds),
            (2.0, 1.0, 3.0, 3)
        );
        let even = Spread::of([4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((even.median, even.min, even.max), (2.5, 1.0, 4.0));
        assert_eq!(Spread::of([f64::NAN]), None);
        assert_eq!(Spread::of([]), None);
    }

    #[test]
    fn rounds_combine_per_setting_with_ratios_to_the_first() {
        // Alternated A B A B A B; B is faster in every round but the machine drifts.
        let runs = vec![
            run("default", 1, Role::A, 1.0, 800.0),
            run("2x1-pre", 1, Role::B, 1.3, 600.0),
            run("default", 2, Role::A, 0.8, 1000.0),
            run("2x1-pre", 2, Role::B, 1.0, 900.0),
            run("default", 3, Role::A, 0.9, 900.0),
            run("2x1-pre", 3, Role::B, 1.2, 700.0),
        ];
        let combined = combine(&runs, &[8]);
        assert_eq!(combined.len(), 2);
        let (a, b) = (&combined[0], &combined[1]);
        assert_eq!(a.setting, "default");
        assert_eq!(a.throughput_rps.unwrap().median, 0.9);
        assert_eq!(a.throughput_ratio, Some(1.0));
        let bt = b.throughput_rps.unwrap();
        assert_eq!((bt.median, bt.min, bt.max, bt.rounds), (1.2, 1.0, 1.3, 3));
        assert!((b.throughput_ratio.unwrap() - 1.2 / 0.9).abs() < 1e-12);
        assert!((b.p50_ratio.unwrap() - 700.0 / 900.0).abs() < 1e-12);
        let md = render(&combined);
        assert!(md.contains("ratios are of medians, to `default`"), "{md}");
        assert!(
            md.contains("| 8 | 2x1-pre | 3 | 1.20 (1.00–1.30) | 700.0 (600.0–900.0) |"),
            "{md}"
        );
        assert!(md.contains(" | 1.33× | 0.78× |"), "{md}");
        // One round: nothing to combine.
        assert!(combine(&runs[..2], &[8]).is_empty());
        assert_eq!(render(&[]), "");
    }
}
