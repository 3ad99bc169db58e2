//! The public load test's claims about the gnark prover, as checks on one report, so that an
//! A/B run answers them for every service it measured instead of leaving it to the reader.
//!
//! The article (4 vCPU, 6-member anonymity set, levels 1-16 for 60 s, a 5-minute soak at 4):
//! peak 1.34-2.31 proofs/s reached at 2-4 in flight; throughput 4-10 % lower past the peak;
//! p50 0.52-0.86 s at 1 in flight and 6.7-11.8 s at 16, i.e. 11-14x; about 30 MB more RSS per
//! request in flight, linearly; soak windows within ±7 % and no memory growth.

use crate::report::{LevelReport, Report};
use crate::stats;

/// What one report says about each claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// The level with the highest throughput, and that throughput.
    pub peak: Option<(usize, f64)>,
    /// How much lower the highest level's throughput is than the peak, in % of the peak.
    pub fall_past_peak_pct: Option<f64>,
    /// p50 latency at the highest level over p50 at the lowest.
    pub latency_growth: Option<f64>,
    /// Least-squares slope of the levels' peak RSS over their concurrency (MB per request in
    /// flight) and how well a line fits it (R²).
    pub rss_per_inflight_mb: Option<f64>,
    pub rss_line_r2: Option<f64>,
    /// The soak's largest window deviation from its mean throughput (%).
    pub soak_max_dev_pct: Option<f64>,
    /// The soak's fitted RSS growth over its own duration, in % of its peak RSS.
    pub soak_rss_growth_pct: Option<f64>,
}

/// A claim's verdict, with the rule that decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails,
    /// The run has no data for it (a level or the soak missing).
    Untested,
}

impl Verdict {
    fn of(value: Option<bool>) -> Verdict {
        match value {
            Some(true) => Verdict::Holds,
            Some(false) => Verdict::Fails,
            None => Verdict::Untested,
        }
    }
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Fails => "does not hold",
            Verdict::Untested => "not tested",
        }
    }
}

/// The article's claims in order: the text shown, and the rule applied to [`Claims`].
pub const CLAIMS: [(&str, &str); 5] = [
    ("Peak reached by 2-4 in flight", "peak level in 2..=4"),
    (
        "Throughput falls 4-10 % past the peak",
        "highest level 4-10 % below the peak",
    ),
    (
        "p50 latency grows 11-14x from 1 to 16 in flight",
        "p50 ratio of the highest to the lowest level in 11..=14",
    ),
    (
        "Memory grows linearly with requests in flight (~30 MB each)",
        "peak RSS over concurrency: slope >= 5 MB per request, R² >= 0.9",
    ),
    (
        "Soak windows within ±7 %, no memory growth",
        "every window within 7 % of the mean; fitted RSS growth over the soak < 2 % of its peak",
    ),
];

impl Claims {
    pub fn of(r: &Report) -> Claims {
        let levels: Vec<&LevelReport> = r.levels.iter().collect();
        let peak = levels
            .iter()
            .max_by(|a, b| a.throughput_rps.total_cmp(&b.throughput_rps))
            .filter(|l| l.throughput_rps > 0.0)
            .map(|l| (l.concurrency, l.throughput_rps));
        let (lowest, highest) = (
            levels.iter().min_by_key(|l| l.concurrency),
            levels.iter().max_by_key(|l| l.concurrency),
        );
        let fall_past_peak_pct = match (peak, highest) {
            (Some((_, p)), Some(h)) => Some(100.0 * (p - h.throughput_rps) / p),
            _ => None,
        };
        let p50 = |l: Option<&&LevelReport>| l.and_then(|l| l.latency_ms).map(|s| s.p50);
        let latency_growth = match (p50(lowest), p50(highest)) {
            (Some(a), Some(b)) if a > 0.0 && levels.len() > 1 => Some(b / a),
            _ => None,
        };
        let rss: Vec<(f64, f64)> = levels
            .iter()
            .filter_map(|l| l.rss_peak_mb.map(|m| (l.concurrency as f64, m)))
            .collect();
        let soak = r.soak.as_ref();
        let soak_rss_growth_pct = soak.and_then(|s| {
            let hours = s.overall.duration_s / 3600.0;
            Some(100.0 * s.rss_trend_mb_per_hour? * hours / s.overall.rss_peak_mb?)
        });
        Claims {
            peak,
            fall_past_peak_pct,
            latency_growth,
            rss_per_inflight_mb: stats::slope(&rss),
            rss_line_r2: stats::r_squared(&rss),
            soak_max_dev_pct: soak.and_then(|s| s.throughput_max_dev_pct),
            soak_rss_growth_pct,
        }
    }

    /// The verdicts, in the order of [`CLAIMS`].
    pub fn verdicts(&self) -> [Verdict; 5] {
        [
            Verdict::of(self.peak.map(|(c, _)| (2..=4).contains(&c))),
            Verdict::of(self.fall_past_peak_pct.map(|f| (4.0..=10.0).contains(&f))),
            Verdict::of(self.latency_growth.map(|g| (11.0..=14.0).contains(&g))),
            Verdict::of(
                self.rss_per_inflight_mb
                    .zip(self.rss_line_r2)
                    .map(|(s, r2)| s >= 5.0 && r2 >= 0.9),
            ),
            Verdict::of(
                self.soak_max_dev_pct
                    .zip(self.soak_rss_growth_pct)
                    .map(|(d, g)| d <= 7.0 && g < 2.0),
            ),
        ]
    }

    /// The measured values behind each verdict, in the order of [`CLAIMS`].
    pub fn values(&self) -> [String; 5] {
        let f = |x: Option<f64>, unit: &str| x.map_or("–".into(), |v| format!("{v:.1}{unit}"));
        [
            self.peak
                .map_or("–".into(), |(c, t)| format!("{t:.2} proofs/s at {c}")),
            f(self.fall_past_peak_pct, " % below"),
            f(self.latency_growth, "x"),
            match (self.rss_per_inflight_mb, self.rss_line_r2) {
                (Some(s), Some(r2)) => format!("{s:.1} MB per request, R² {r2:.2}"),
                (Some(s), None) => format!("{s:.1} MB per request"),
                _ => "–".into(),
            },
            match (self.soak_max_dev_pct, self.soak_rss_growth_pct) {
                (Some(d), Some(g)) => format!("windows within {d:.1} %, RSS {g:+.1} %"),
                (Some(d), None) => format!("windows within {d:.1} %"),
                _ => "–".into(),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report shaped like the article's gnark service: peak at 2, then slower and fatter.
    fn gnark_like() -> Report {
        let mut r = crate::output::tests::sample_report();
        let base = r.levels[0].clone();
        let shape = [
            (1, 1.80, 700.0, 300.0),
            (2, 2.20, 900.0, 330.0),
            (4, 2.15, 1850.0, 390.0),
            (8, 2.10, 3800.0, 510.0),
            (16, 2.05, 8400.0, 750.0),
        ];
        r.levels = shape
            .iter()
            .map(|&(c, t, p50, rss)| {
                let mut l = base.clone();
                l.concurrency = c;
                l.throughput_rps = t;
                l.latency_ms.as_mut().unwrap().p50 = p50;
                l.rss_peak_mb = Some(rss);
                l
            })
            .collect();
        let soak = r.soak.as_mut().unwrap();
        soak.throughput_max_dev_pct = Some(3.0);
        soak.rss_trend_mb_per_hour = Some(1.0);
        soak.overall.duration_s = 300.0;
        soak.overall.rss_peak_mb = Some(400.0);
        r
    }

    #[test]
    fn the_articles_service_meets_its_claims() {
        let c = Claims::of(&gnark_like());
        assert_eq!(c.peak, Some((2, 2.20)));
        assert!((c.fall_past_peak_pct.unwrap() - 6.818).abs() < 1e-2);
        assert!((c.latency_growth.unwrap() - 12.0).abs() < 1e-9);
        assert!((c.rss_per_inflight_mb.unwrap() - 30.0).abs() < 1.0);
        assert!(c.rss_line_r2.unwrap() > 0.99);
        assert_eq!(c.verdicts(), [Verdict::Holds; 5]);
        assert_eq!(c.values()[0], "2.20 proofs/s at 2");
    }

    #[test]
    fn a_capped_service_fails_the_memory_and_latency_claims() {
        let mut r = gnark_like();
        for l in &mut r.levels {
            // Flat memory, flat throughput past 1, latency growing only with the queue.
            l.rss_peak_mb = Some(260.0 + (l.concurrency % 3) as f64);
            l.throughput_rps = if l.concurrency == 1 { 3.0 } else { 3.1 };
            l.latency_ms.as_mut().unwrap().p50 = 330.0 * l.concurrency as f64;
        }
        r.levels[4].throughput_rps = 3.2;
        let v = Claims::of(&r).verdicts();
        assert_eq!(v[0], Verdict::Fails, "peak at 16");
        assert_eq!(v[1], Verdict::Fails, "no fall past the peak");
        assert_eq!(v[2], Verdict::Fails, "16x");
        assert_eq!(v[3], Verdict::Fails, "flat memory");
        r.soak = None;
        assert_eq!(Claims::of(&r).verdicts()[4], Verdict::Untested);
    }
}
