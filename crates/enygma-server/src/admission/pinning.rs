//! `--pin-cpus`: each proving slot's rayon threads pinned to processors of their own.
//!
//! Why: on a machine with more cores than one proof uses, slots running side by side should not
//! share a physical core (two hyperthreads of one core do about 1.2 cores of MSM work, not 2),
//! and a proof's threads should not migrate between caches. The kernel's scheduler does not know
//! which threads belong to one proof; pinning tells it.
//!
//! The plan: the CPUs this process may run on (`sched_getaffinity`, so a container's or
//! `taskset`'s limits are honoured), ordered so that the hyperthreads of one physical core are
//! adjacent (sysfs `topology/physical_package_id` and `core_id`), then dealt out in order: slot
//! `s`, thread `t` gets the `(s × threads + t)`-th. A slot of 2 threads on a 2-way SMT machine
//! thus takes one whole core, and no two slots share one. More threads than allowed CPUs is
//! refused: pinning two threads to one CPU would only serialise them.

/// Which CPU each thread of each slot runs on: `plan[slot][thread]`.
pub(crate) type CpuPlan = Vec<Vec<usize>>;

/// Deals `cpus` (already in topology order) out to `slots` slots of `threads` threads each.
pub(crate) fn plan(slots: usize, threads: usize, cpus: &[usize]) -> Result<CpuPlan, String> {
    let needed = slots.saturating_mul(threads);
    if needed > cpus.len() {
        return Err(format!(
            "--pin-cpus: {slots} proving slots (--max-inflight) x {threads} threads \
             (--prove-threads) = {needed} threads, but this process may run on {} CPUs ({}); \
             lower --max-inflight or --prove-threads, or drop --pin-cpus",
            cpus.len(),
            list(cpus)
        ));
    }
    Ok(cpus[..needed]
        .chunks(threads.max(1))
        .map(<[usize]>::to_vec)
        .collect())
}

/// A CPU list in the kernel's `Cpus_allowed_list` style (`0-3,8`).
pub(crate) fn list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        parts.push(if sorted[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", sorted[i])
        });
        i += 1;
    }
    parts.join(",")
}

/// Parses a `Cpus_allowed_list` (`0-3,8`).
#[cfg(test)]
pub(crate) fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("not a CPU list: {s:?}");
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

#[cfg(target_os = "linux")]
mod os {
    use std::io;

    /// The CPUs the calling thread may run on.
    pub(crate) fn current_thread_cpus() -> io::Result<Vec<usize>> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
        // size_of::<cpu_set_t>() bytes into it, and CPU_ISSET reads within it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect())
        }
    }

    /// Restricts the calling thread to `cpu` (pid 0: the calling thread, not the process).
    pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the affinity mask's size"),
            ));
        }
        // SAFETY: as above; CPU_SET writes within the set for cpu < CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// The calling thread's kernel id, for `/proc/self/task/{tid}`.
    #[cfg(test)]
    pub(crate) fn current_thread_id() -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    /// `(physical package, core)` of `cpu` from sysfs, if the kernel exposes them.
    pub(crate) fn core_of(cpu: usize) -> Option<(u32, u32)> {
        let read = |what: &str| -> Option<u32> {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some((read("physical_package_id")?, read("core_id")?))
    }
}

#[cfg(all(test, target_os = "linux"))]
pub(crate) use os::current_thread_id;
#[cfg(target_os = "linux")]
pub(crate) use os::{current_thread_cpus, pin_current_thread};

/// The CPUs this process may run on, hyperthreads of one physical core adjacent (by package
/// and core id; CPUs whose topology sysfs does not tell go last, in number order). Call it
/// from a thread that has not been pinned (the main thread at start).
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Result<Vec<usize>, String> {
    let mut cpus = current_thread_cpus()
        .map_err(|e| format!("--pin-cpus: cannot read this process's CPU affinity: {e}"))?;
    cpus.sort_by_key(|&cpu| (os::core_of(cpu).unwrap_or((u32::MAX, u32::MAX)), cpu));
    Ok(cpus)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> Result<Vec<usize>, String> {
    Err("--pin-cpus is supported on Linux only".into())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_cpu: usize) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "--pin-cpus is supported on Linux only",
    ))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn current_thread_cpus() -> std::io::Result<Vec<usize>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "CPU affinity is read on Linux only",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_deal_cpus_out_in_order_and_refuse_oversubscription() {
        let cpus = [0, 4, 1, 5, 2, 6, 3, 7];
        assert_eq!(plan(2, 2, &cpus).unwrap(), [vec![0, 4], vec![1, 5]]);
        assert_eq!(
            plan(4, 1, &cpus).unwrap(),
            [vec![0], vec![4], vec![1], vec![5]]
        );
        assert_eq!(plan(1, 8, &cpus).unwrap(), [cpus.to_vec()]);
        let err = plan(3, 3, &cpus).unwrap_err();
        assert!(
            err.contains("3 proving slots (--max-inflight) x 3 threads (--prove-threads) = 9")
                && err.contains("8 CPUs (0-7)"),
            "{err}"
        );
        assert!(plan(1, 1, &[]).is_err());
    }

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(list(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(list(&[5, 1, 3, 2]), "1-3,5");
        assert_eq!(list(&[7]), "7");
        assert_eq!(parse_list("0-3,8\n").unwrap(), [0, 1, 2, 3, 8]);
        assert_eq!(parse_list("1").unwrap(), [1]);
        assert!(parse_list("3-1").is_err() && parse_list("x").is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_pinned_reads_back_its_cpu() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let cpu = *allowed.last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            let status =
                std::fs::read_to_string(format!("/proc/self/task/{}/status", current_thread_id()))
                    .unwrap();
            (current_thread_cpus().unwrap(), status)
        })
        .join()
        .unwrap();
        assert_eq!(seen.0, [cpu]);
        assert!(
            seen.1.contains(&format!("Cpus_allowed_list:\t{cpu}\n")),
            "{}",
            seen.1
        );
        // Pinning another thread left this one alone.
        assert_eq!(current_thread_cpus().unwrap().len(), allowed.len());
    }
}
