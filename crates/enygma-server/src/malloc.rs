//! glibc malloc settings for a process that loads large keys once and then proves.
//!
//! Two glibc defaults cost memory here (measured in
//! `benches/results/2026-12-03-k6-proof-gnark-memory.md`, 15 statements loaded, 2 cores):
//! - the mmap threshold grows with every large block freed, so after the key files (up to 18 MB
//!   each) are read and parsed, later large blocks come from the heap and stay resident: a
//!   fixed 4 MiB threshold cut the loaded process from 427 to 379 MB. 4 MiB and not the
//!   128 KiB default because a proof's 1 MiB FFT vectors would then be mapped and faulted in
//!   afresh for every proof (prove p50 349 against 323 ms in one 10 s run at 128 KiB);
//! - up to 8 arenas per CPU: with proofs on fresh threads each arena keeps its own high-water
//!   mark. One arena per CPU took RSS per in-flight proof from 9.0 to 6.5 MB at 16 in flight.
//!
//! An operator's `MALLOC_MMAP_THRESHOLD_` or `MALLOC_ARENA_MAX` wins over these.

/// What [`tune`] set, for the start-up log line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    pub mmap_threshold: Option<usize>,
    pub arena_max: Option<usize>,
}

pub const MMAP_THRESHOLD: usize = 4 << 20;

/// Applies the settings the environment does not already choose. Call it first in `main`,
/// before any thread exists.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune() -> Tuning {
    let mut tuning = Tuning::default();
    let unset = |name: &str| std::env::var_os(name).is_none();
    // SAFETY: mallopt only changes allocator parameters; it is called before other threads
    // exist, as glibc advises for M_ARENA_MAX.
    unsafe {
        if unset("MALLOC_MMAP_THRESHOLD_")
            && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as i32) == 1
        {
            tuning.mmap_threshold = Some(MMAP_THRESHOLD);
        }
        let arenas = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        if unset("MALLOC_ARENA_MAX") && libc::mallopt(libc::M_ARENA_MAX, arenas as i32) == 1 {
            tuning.arena_max = Some(arenas);
        }
    }
    tuning
}

/// Hands the allocator's free memory back to the kernel (glibc's `malloc_trim(0)`, which
/// releases the free pages inside every arena, not only at their tops). Call it once the keys are
/// loaded: synthesizing each statement's constraint system in setup mode, reading the key files
/// and converting the matrices free far more than they keep, in blocks below the mmap
/// threshold, and glibc would otherwise keep those pages resident for the life of the process.
/// Returns whether memory was released.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() -> bool {
    // SAFETY: malloc_trim only returns free memory; it takes the arenas' locks itself.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() -> bool {
    false
}

/// Other allocators have their own policies: nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() -> Tuning {
    Tuning::default()
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn sets_what_the_environment_leaves_open() {
        let tuning = tune();
        let expect = |name: &str, value: usize| std::env::var_os(name).is_none().then_some(value);
        assert_eq!(
            tuning.mmap_threshold,
            expect("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD)
        );
        let cpus = std::thread::available_parallelism().unwrap().get().max(2);
        assert_eq!(tuning.arena_max, expect("MALLOC_ARENA_MAX", cpus));
    }
}
