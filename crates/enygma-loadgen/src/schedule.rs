//! What to run and when: the list of phases (closed-loop levels, soak, open-loop rates) and
//! the seeded Poisson arrival schedule used for open-loop load.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::Serialize;

/// How load is offered during one phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Load {
    /// N workers, each sending its next request as soon as the previous one answered.
    Closed { concurrency: usize },
    /// Poisson arrivals at `rate_rps` requests per second, independent of responses.
    Open { rate_rps: f64 },
}

/// Which part of the run a phase belongs to (and so where it is reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    Level,
    Soak,
    Open,
}

/// One phase: a warm-up whose requests are excluded, then the measured part. A request belongs
/// to the part in which it was (scheduled to be) sent; every request sent is awaited before the
/// phase ends, so nothing is left in flight between phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    pub kind: PhaseKind,
    pub load: Load,
    pub warmup: Duration,
    pub duration: Duration,
    /// Soak only: report the measured part in windows of this length.
    pub window: Option<Duration>,
}

impl Phase {
    pub fn label(&self) -> String {
        match (self.kind, self.load) {
            (PhaseKind::Soak, Load::Closed { concurrency }) => format!("soak c={concurrency}"),
            (_, Load::Closed { concurrency }) => format!("c={concurrency}"),
            (_, Load::Open { rate_rps }) => format!("open {rate_rps}/s"),
        }
    }
}

/// The settings that make up a schedule (shared by `run` and `ab`).
#[derive(Debug, Clone)]
pub struct ScheduleSpec {
    pub levels: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub soak: Option<usize>,
    pub soak_duration: Duration,
    pub window: Duration,
    pub open_rates: Vec<f64>,
}

/// Expands the settings into phases: each closed-loop level, then the soak, then each open rate.
pub fn build_phases(spec: &ScheduleSpec) -> Vec<Phase> {
    let mut phases = Vec::new();
    for &c in &spec.levels {
        phases.push(Phase {
            kind: PhaseKind::Level,
            load: Load::Closed { concurrency: c },
            warmup: spec.warmup,
            duration: spec.duration,
            window: None,
        });
    }
    if let Some(c) = spec.soak {
        phases.push(Phase {
            kind: PhaseKind::Soak,
            load: Load::Closed { concurrency: c },
            warmup: spec.warmup,
            duration: spec.soak_duration,
            window: Some(spec.window),
        });
    }
    for &r in &spec.open_rates {
        phases.push(Phase {
            kind: PhaseKind::Open,
            load: Load::Open { rate_rps: r },
            warmup: spec.warmup,
            duration: spec.duration,
            window: None,
        });
    }
    phases
}

/// Lower bound of a schedule's wall time (excluding draining and server start-up).
pub fn nominal_time(phases: &[Phase]) -> Duration {
    phases.iter().map(|p| p.warmup + p.duration).sum()
}

/// Scheduled send offsets (from the phase start) of a Poisson process with `rate_rps` over
/// `[0, horizon)`. Deterministic for a given seed.
pub fn poisson_schedule(rate_rps: f64, horizon: Duration, seed: u64) -> Vec<Duration> {
    assert!(
        rate_rps > 0.0 && rate_rps.is_finite(),
        "rate must be positive"
    );
    let gaps = Exp::new(rate_rps).expect("a positive, finite rate");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let end = horizon.as_secs_f64();
    let mut t = 0.0;
    let mut out = Vec::with_capacity((rate_rps * end * 1.2) as usize + 8);
    loop {
        t += gaps.sample(&mut rng);
        if t >= end {
            break;
        }
        out.push(Duration::from_secs_f64(t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_and_spread() {
        let rate = 20.0;
        let horizon = Duration::from_secs(5000);
        let s = poisson_schedule(rate, horizon, 42);
        let n = s.len() as f64;
        let expected = rate * horizon.as_secs_f64();
        // Count is Poisson(100_000): sd ≈ 316, so 1% is > 3 sd.
        assert!(
            (n - expected).abs() / expected < 0.01,
            "n = {n}, expected {expected}"
        );
        // Strictly increasing, inside the horizon.
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(*s.last().unwrap() < horizon);
        // Inter-arrival times: exponential, mean 1/rate, coefficient of variation 1.
        let gaps: Vec<f64> = std::iter::once(s[0].as_secs_f64())
            .chain(s.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()))
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((mean * rate - 1.0).abs() < 0.01, "mean gap {mean}");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
        // Memorylessness, roughly: P(gap > mean) ≈ e^-1.
        let p = gaps.iter().filter(|&&g| g > mean).count() as f64 / gaps.len() as f64;
        assert!((p - (-1f64).exp()).abs() < 0.01, "P(gap > mean) = {p}");
    }

    #[test]
    fn poisson_is_deterministic_per_seed() {
        let a = poisson_schedule(3.0, Duration::from_secs(60), 7);
        let b = poisson_schedule(3.0, Duration::from_secs(60), 7);
        let c = poisson_schedule(3.0, Duration::from_secs(60), 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn phases_in_order() {
        let spec = ScheduleSpec {
            levels: vec![1, 2],
            duration: Duration::from_secs(3),
            warmup: Duration::from_secs(1),
            soak: Some(4),
            soak_duration: Duration::from_secs(10),
            window: Duration::from_secs(5),
            open_rates: vec![0.5],
        };
        let p = build_phases(&spec);
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].load, Load::Closed { concurrency: 1 });
        assert_eq!(p[2].kind, PhaseKind::Soak);
        assert_eq!(p[2].window, Some(Duration::from_secs(5)));
        assert_eq!(p[3].load, Load::Open { rate_rps: 0.5 });
        assert_eq!(nominal_time(&p), Duration::from_secs(4 + 4 + 11 + 4));
    }
}
