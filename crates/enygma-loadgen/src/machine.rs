//! The machine a run happened on (CPU model, cores, memory), UTC dates without a date crate,
//! and slugs for directory names.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    /// Physical cores (distinct `physical id`/`core id` pairs), or logical CPUs if unknown.
    pub cores: usize,
    pub logical_cpus: usize,
    /// CPUs this process may run on (cgroup/affinity aware).
    pub available_parallelism: usize,
    pub mem_total_mb: Option<u64>,
    pub kernel: Option<String>,
}

/// Parses /proc/cpuinfo text: (model name, physical cores, logical CPUs).
pub fn parse_cpuinfo(text: &str) -> (String, usize, usize) {
    let mut model = None;
    let mut logical = 0;
    let mut cores = BTreeSet::new();
    let (mut phys, mut core) = (None::<String>, None::<String>);
    let mut flush = |phys: &mut Option<String>, core: &mut Option<String>| {
        if let (Some(p), Some(c)) = (phys.take(), core.take()) {
            cores.insert((p, c));
        }
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            if line.trim().is_empty() {
                flush(&mut phys, &mut core);
            }
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => logical += 1,
            "model name" | "Model" | "cpu model" if model.is_none() => model = Some(v.to_string()),
            "physical id" => phys = Some(v.to_string()),
            "core id" => core = Some(v.to_string()),
            _ => {}
        }
    }
    flush(&mut phys, &mut core);
    let logical = logical.max(1);
    let cores = if cores.is_empty() {
        logical
    } else {
        cores.len()
    };
    (
        model.unwrap_or_else(|| "unknown CPU".into()),
        cores,
        logical,
    )
}

pub fn detect() -> Machine {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (cpu_model, cores, logical_cpus) = parse_cpuinfo(&text);
    let mem_total_mb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| crate::rss::parse_status_kb(&m, "MemTotal"))
        .map(|kb| kb / 1024);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    Machine {
        cpu_model,
        cores,
        logical_cpus,
        available_parallelism: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_total_mb,
        kernel,
    }
}

/// Lower-case, `[a-z0-9-]` only, trademarks and clock speeds dropped:
/// `Intel(R) Xeon(R) Processor @ 2.20GHz` → `intel-xeon-processor`.
pub fn slug(s: &str) -> String {
    let cleaned = s
        .replace("(R)", " ")
        .replace("(r)", " ")
        .replace("(TM)", " ")
        .replace("(tm)", " ")
        .replace(" CPU ", " ");
    let cleaned = cleaned.split('@').next().unwrap_or("");
    let mut out = String::new();
    for c in cleaned.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "unknown-cpu".into()
    } else {
        out
    }
}

/// (year, month, day) of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `2025-06-01`, UTC.
pub fn today_utc() -> String {
    let (y, m, d) = civil_from_days(now_secs().div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `2025-06-01T12:34:56Z`.
pub fn now_rfc3339() -> String {
    rfc3339(now_secs())
}

pub fn rfc3339(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_counts_cores() {
        let text = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.20GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                    processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.20GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                    processor\t: 2\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.20GHz\nphysical id\t: 0\ncore id\t: 1\n\n";
        let (m, cores, logical) = parse_cpuinfo(text);
        assert_eq!(m, "Intel(R) Xeon(R) Processor @ 2.20GHz");
        assert_eq!((cores, logical), (2, 3));
        // No topology lines (some VMs): cores = logical CPUs.
        let (_, cores, logical) = parse_cpuinfo("processor: 0\nprocessor: 1\n");
        assert_eq!((cores, logical), (2, 2));
    }

    #[test]
    fn slugs() {
        assert_eq!(
            slug("Intel(R) Xeon(R) Processor @ 2.20GHz"),
            "intel-xeon-processor"
        );
        assert_eq!(
            slug("AMD EPYC 7B13 64-Core Processor"),
            "amd-epyc-7b13-64-core-processor"
        );
        assert_eq!(
            slug("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz"),
            "intel-core-i7-8700"
        );
        assert_eq!(slug("???"), "unknown-cpu");
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(today_utc().len(), 10);
    }
}
