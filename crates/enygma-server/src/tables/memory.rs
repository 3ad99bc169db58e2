//! How much memory the tables may take: `--table-memory`, or a share of the memory limit the
//! process finds (cgroup v2, cgroup v1, physical memory).

use std::path::{Path, PathBuf};

use enygma_prover::statements::Instance;

/// The default budget's share of the memory limit: half. The other half holds the keys and
/// matrices (240-380 MB for all 18 instances) and the proofs in flight (about 20 MB each with
/// tables), and the default is further capped to what the loaded process leaves of the limit
/// ([`default_budget`]).
pub(crate) const DEFAULT_SHARE_PERCENT: u64 = 50;

/// Memory kept for each proof in flight when the default budget is derived: 20.3 MB measured
/// per request in flight with tables (Intel Xeon, 2026-12-05), rounded up.
pub(crate) const IN_FLIGHT_RESERVE_BYTES: u64 = 24 << 20;

/// Where the default budget comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// cgroup v2 `memory.max` (the lowest on the way to the root).
    CgroupV2(u64),
    /// cgroup v1 `memory.limit_in_bytes`.
    CgroupV1(u64),
    /// No cgroup limit: the physical memory.
    Physical(u64),
}

impl MemoryLimit {
    pub fn bytes(self) -> u64 {
        match self {
            MemoryLimit::CgroupV2(b) | MemoryLimit::CgroupV1(b) | MemoryLimit::Physical(b) => b,
        }
    }

    pub fn source(self) -> &'static str {
        match self {
            MemoryLimit::CgroupV2(_) => "cgroup v2 memory.max",
            MemoryLimit::CgroupV1(_) => "cgroup v1 memory.limit_in_bytes",
            MemoryLimit::Physical(_) => "physical memory",
        }
    }

    /// This process's: the cgroup's limit when there is one below the physical memory, else
    /// the physical memory.
    pub fn detect() -> MemoryLimit {
        let physical = physical_memory();
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        cgroup_limit(&proc_cgroup, Path::new("/sys/fs/cgroup"), physical, |p| {
            std::fs::read_to_string(p).ok()
        })
        .unwrap_or(MemoryLimit::Physical(physical))
    }
}

/// The memory limit of the cgroup `proc_self_cgroup` (the text of `/proc/self/cgroup`) names,
/// under the cgroup file system at `root`, reading files with `read`. The v2 line (`0::PATH`)
/// wins over a v1 `memory` controller line; each tries PATH and its parents up to the root (a
/// limit anywhere above applies too; with a cgroup namespace PATH is `/` and the root's files
/// are the container's) and keeps the lowest. `max`, and v1's "unlimited" (a value at or above
/// `physical`), are no limit.
pub(crate) fn cgroup_limit(
    proc_self_cgroup: &str,
    root: &Path,
    physical: u64,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<MemoryLimit> {
    let lowest = |dir: PathBuf, path: &str, file: &str| {
        let mut limits = Vec::new();
        let mut p = Path::new(path.trim_start_matches('/'));
        loop {
            if let Some(text) = read(&dir.join(p).join(file)) {
                if let Ok(bytes) = text.trim().parse::<u64>() {
                    limits.push(bytes);
                }
            }
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
        limits.into_iter().filter(|&b| b < physical).min()
    };
    let mut v1 = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            if let Some(b) = lowest(root.to_path_buf(), path, "memory.max") {
                return Some(MemoryLimit::CgroupV2(b));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = lowest(root.join("memory"), path, "memory.limit_in_bytes")
                .map(MemoryLimit::CgroupV1);
        }
    }
    v1
}

fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system parameters.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(page.max(0) as u64)
}

/// The default `--table-memory`: [`DEFAULT_SHARE_PERCENT`] of `limit`, and never more than
/// what the loaded process (`loaded_rss`, keys and matrices) and `in_flight` proofs of
/// [`IN_FLIGHT_RESERVE_BYTES`] each leave of it.
pub(crate) fn default_budget(limit: u64, loaded_rss: u64, in_flight: u64) -> u64 {
    let share = (u128::from(limit) * u128::from(DEFAULT_SHARE_PERCENT) / 100) as u64;
    let reserve = loaded_rss.saturating_add(in_flight.saturating_mul(IN_FLIGHT_RESERVE_BYTES));
    share.min(limit.saturating_sub(reserve))
}

/// This process's resident memory (`/proc/self/statm`), if readable.
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system parameter.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(0) as u64)
}

/// How much memory the automatic tables may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableBudget {
    /// `--table-memory BYTES` (0: no automatic tables).
    Fixed(u64),
    /// The default: a share of `limit`, less what the loaded keys and `in_flight` proofs need
    /// ([`default_budget`]), resolved once the keys are loaded.
    Share { limit: MemoryLimit, in_flight: u64 },
}

impl std::fmt::Display for TableBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TableBudget::Fixed(0) => write!(f, "0 (no automatic tables)"),
            TableBudget::Fixed(bytes) => write!(f, "{} MiB", mib(bytes)),
            TableBudget::Share { limit, in_flight } => write!(
                f,
                "{DEFAULT_SHARE_PERCENT} % of the {} ({} MiB), less the loaded keys and {in_flight} proofs in flight",
                limit.source(),
                mib(limit.bytes())
            ),
        }
    }
}

/// What the cache is configured with.
#[derive(Clone, Debug)]
pub struct TableConfig {
    pub budget: TableBudget,
    /// `--precompute`: built at start, never evicted.
    pub pinned: Vec<Instance>,
}

impl Default for TableConfig {
    /// No automatic tables, none pinned.
    fn default() -> Self {
        TableConfig {
            budget: TableBudget::Fixed(0),
            pinned: Vec::new(),
        }
    }
}

/// Parses `--table-memory`: a number of bytes with an optional unit (`bytesize`'s: KiB, MiB,
/// GiB are 1024-based, KB, MB, GB 1000-based).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| {
            format!("--table-memory takes bytes, e.g. 0, 536870912, 512MiB or 2GiB; got {s:?}")
        })
}

/// Bytes in MiB with one decimal, for the log.
pub(super) fn mib(bytes: u64) -> f64 {
    (bytes as f64 / (1 << 20) as f64 * 10.0).round() / 10.0
}
