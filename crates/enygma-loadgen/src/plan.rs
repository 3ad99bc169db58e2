//! Capacity planning: how many machines a daily volume needs within its operating window,
//! given the throughput one machine sustains (from a load test report).

use std::fmt::Write as _;

use anyhow::{bail, Result};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub name: String,
    pub daily_volume: u64,
    /// Human description of the window (`06:00-18:00`, `22 h`).
    pub window: String,
    pub window_hours: f64,
}

/// The UK's CHAPS: 210,483 payments a day, settled 06:00-18:00.
pub fn chaps() -> Workload {
    Workload {
        name: "CHAPS".into(),
        daily_volume: 210_483,
        window: "06:00-18:00".into(),
        window_hours: 12.0,
    }
}

/// The US Fedwire Funds Service: 869,187 payments a day over a 22-hour operating day.
pub fn fedwire() -> Workload {
    Workload {
        name: "Fedwire".into(),
        daily_volume: 869_187,
        window: "22 h".into(),
        window_hours: 22.0,
    }
}

/// `06:00-18:00` → 12.0; a window past midnight (`21:00-19:00`) wraps (22.0).
pub fn parse_window(s: &str) -> Result<f64> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| anyhow::anyhow!("window {s:?}: expected HH:MM-HH:MM"))?;
    let mins = |t: &str| -> Result<u32> {
        let (h, m) = t.trim().split_once(':').unwrap_or((t.trim(), "0"));
        let (h, m): (u32, u32) = (h.parse()?, m.parse()?);
        if h > 24 || m > 59 || (h == 24 && m > 0) {
            bail!("bad time {t:?}");
        }
        Ok(h * 60 + m)
    };
    let (a, b) = (mins(a)?, mins(b)?);
    let d = if b > a { b - a } else { b + 24 * 60 - a };
    Ok(d as f64 / 60.0)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRow {
    pub workload: Workload,
    /// Daily volume spread evenly over the window.
    pub average_rps: f64,
    pub peak_factor: Option<f64>,
    /// The rate sized for: average × peak factor.
    pub design_rps: f64,
    pub throughput_per_machine_rps: f64,
    /// ⌈design rate / per-machine throughput⌉, at least 1.
    pub machines: u64,
    /// Design rate / (machines × per-machine throughput).
    pub utilization: f64,
}

pub fn plan(w: &Workload, throughput_rps: f64, peak_factor: Option<f64>) -> Result<PlanRow> {
    if !(throughput_rps > 0.0 && throughput_rps.is_finite()) {
        bail!("--throughput must be a positive number of proofs per second per machine");
    }
    if let Some(f) = peak_factor {
        if !(f >= 1.0 && f.is_finite()) {
            bail!("--peak-factor must be >= 1 (peak rate / average rate)");
        }
    }
    if !(w.window_hours > 0.0 && w.window_hours <= 24.0) {
        bail!("operating window must be between 0 and 24 hours");
    }
    let average_rps = w.daily_volume as f64 / (w.window_hours * 3600.0);
    let design_rps = average_rps * peak_factor.unwrap_or(1.0);
    // Tolerate float noise so that an exact fit does not round up to one more machine.
    let machines = ((design_rps / throughput_rps) - 1e-9).ceil().max(1.0) as u64;
    let utilization = design_rps / (machines as f64 * throughput_rps);
    Ok(PlanRow {
        workload: w.clone(),
        average_rps,
        peak_factor,
        design_rps,
        throughput_per_machine_rps: throughput_rps,
        machines,
        utilization,
    })
}

pub fn caveat(peak_factor: Option<f64>) -> String {
    match peak_factor {
        None => "First-order estimate: it assumes the daily volume arrives evenly over the operating \
                 window and ignores intraday peaks (pass --peak-factor F, the peak rate divided by the \
                 average rate, to size for them). It also leaves out redundancy (N+1), retries, \
                 growth and any headroom for latency targets."
            .into(),
        Some(f) => format!(
            "First-order estimate, sized for a peak of {f} × the average rate (--peak-factor {f}). It \
             still leaves out bursts above that peak, redundancy (N+1), retries, growth and any \
             headroom for latency targets."
        ),
    }
}

pub fn render(rows: &[PlanRow], source: &str) -> String {
    let mut s = String::new();
    let (tput, f) = rows.first().map_or((0.0, None), |r| {
        (r.throughput_per_machine_rps, r.peak_factor)
    });
    let _ = writeln!(
        s,
        "Capacity plan at {tput:.3} proofs/s per machine ({source})\n"
    );
    let _ = writeln!(
        s,
        "| Workload | Daily volume | Window | Average rate (req/s) | Peak factor | Design rate (req/s) | Machines | Utilisation |"
    );
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {} | {:.3} | {} | {:.0} % |",
            r.workload.name,
            group_thousands(r.workload.daily_volume),
            if r.workload.window.ends_with(" h") {
                r.workload.window.clone()
            } else {
                format!("{} ({} h)", r.workload.window, r.workload.window_hours)
            },
            r.average_rps,
            r.peak_factor.map_or("none".into(), |f| f.to_string()),
            r.design_rps,
            r.machines,
            r.utilization * 100.0
        );
    }
    let _ = writeln!(s, "\n{}", caveat(f));
    s
}

#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the MSRV is 1.85
pub fn group_thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Entry point of `enygma-loadgen plan`.
pub fn main(args: &crate::cli::PlanArgs) -> Result<()> {
    let (throughput, source) = match (args.throughput, &args.from_report) {
        (Some(x), _) => (x, "given with --throughput".to_string()),
        (None, Some(path)) => {
            let r = crate::output::read_json(path)?;
            let best = r
                .levels
                .iter()
                .max_by(|a, b| a.throughput_rps.total_cmp(&b.throughput_rps))
                .ok_or_else(|| anyhow::anyhow!("{} has no closed-loop levels", path.display()))?;
            (
                best.throughput_rps,
                format!(
                    "best level of {}: {} in flight on {}",
                    path.display(),
                    best.concurrency,
                    r.machine.cpu_model
                ),
            )
        }
        (None, None) => bail!("give --throughput X or --from-report report.json"),
    };
    let mut workloads = vec![chaps(), fedwire()];
    if let Some(daily) = args.daily {
        let (window, hours) = match (&args.window, args.hours) {
            (Some(w), _) => (w.clone(), parse_window(w)?),
            (None, Some(h)) => (format!("{h} h"), h),
            (None, None) => bail!("--daily needs --window HH:MM-HH:MM or --hours H"),
        };
        workloads.push(Workload {
            name: args.name.clone(),
            daily_volume: daily,
            window,
            window_hours: hours,
        });
    }
    let rows = workloads
        .iter()
        .map(|w| plan(w, throughput, args.peak_factor))
        .collect::<Result<Vec<_>>>()?;
    if args.json {
        let v = serde_json::json!({
            "throughput_per_machine_rps": throughput,
            "source": source,
            "peak_factor": args.peak_factor,
            "rows": rows,
            "caveat": caveat(args.peak_factor),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&rows, &source));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaps_and_fedwire_rates() {
        let c = plan(&chaps(), 1.0, None).unwrap();
        assert!((c.average_rps - 210_483.0 / 43_200.0).abs() < 1e-12);
        assert!((c.average_rps - 4.8723).abs() < 1e-4);
        assert_eq!(c.machines, 5);
        let f = plan(&fedwire(), 1.0, None).unwrap();
        assert!((f.average_rps - 869_187.0 / 79_200.0).abs() < 1e-12);
        assert!((f.average_rps - 10.9746).abs() < 1e-4);
        assert_eq!(f.machines, 11);
    }

    #[test]
    fn machines_round_up_and_peak_factor_scales() {
        // 4.872 req/s at 1.6/s per machine: 3.05 → 4 machines.
        let c = plan(&chaps(), 1.6, None).unwrap();
        assert_eq!(c.machines, 4);
        assert!((c.utilization - c.average_rps / 6.4).abs() < 1e-12);
        let p = plan(&chaps(), 1.6, Some(3.0)).unwrap();
        assert!((p.design_rps - 3.0 * c.average_rps).abs() < 1e-12);
        assert_eq!(p.machines, 10); // 14.617 / 1.6 = 9.14
                                    // Exact fit: 43,200 a day over 12 h is 1/s: one machine at 1/s, not two.
        let w = Workload {
            name: "x".into(),
            daily_volume: 43_200,
            window: "12 h".into(),
            window_hours: 12.0,
        };
        assert_eq!(plan(&w, 1.0, None).unwrap().machines, 1);
        assert_eq!(plan(&w, 1000.0, None).unwrap().machines, 1);
        assert!(plan(&w, 0.0, None).is_err());
        assert!(plan(&w, 1.0, Some(0.5)).is_err());
    }

    #[test]
    fn windows_and_text() {
        assert_eq!(parse_window("06:00-18:00").unwrap(), 12.0);
        assert_eq!(parse_window("21:00-19:00").unwrap(), 22.0);
        assert_eq!(parse_window("9-17:30").unwrap(), 8.5);
        assert!(parse_window("25:00-01:00").is_err());
        assert_eq!(group_thousands(869_187), "869,187");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(12), "12");
        let txt = render(&[plan(&chaps(), 1.6, None).unwrap()], "given");
        assert!(txt.contains("| CHAPS | 210,483 | 06:00-18:00 (12 h) | 4.872 | none | 4.872 | 4 |"));
        assert!(txt.contains("First-order estimate"));
        assert!(txt.contains("ignores intraday peaks"));
        assert!(caveat(Some(2.0)).contains("peak of 2"));
    }
}
