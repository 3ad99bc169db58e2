//! Samples a process's resident set size (VmRSS in /proc/<pid>/status) every interval on its
//! own thread, so sampling keeps its pace whatever the load generator is doing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Reads a `kB` field (`VmRSS`, `VmHWM`, ...) of /proc/<pid>/status, in kB.
pub fn read_status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kb(&text, field)
}

pub fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RssSample {
    pub at: Instant,
    pub kb: u64,
}

impl RssSample {
    pub fn mb(&self) -> f64 {
        self.kb as f64 / 1024.0
    }
}

pub struct RssSampler {
    samples: Arc<Mutex<Vec<RssSample>>>,
    latest_kb: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl RssSampler {
    /// Starts sampling `pid` every `interval`. Samples stop (silently) when the process exits.
    pub fn start(pid: u32, interval: Duration) -> RssSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let latest_kb = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, l, st) = (samples.clone(), latest_kb.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                let start = Instant::now();
                let mut n: u32 = 0;
                while !st.load(Ordering::Relaxed) {
                    if let Some(kb) = read_status_kb(pid, "VmRSS") {
                        s.lock().unwrap().push(RssSample {
                            at: Instant::now(),
                            kb,
                        });
                        l.store(kb, Ordering::Relaxed);
                    }
                    n += 1;
                    // Sleep to the next tick of a fixed grid, so sampling does not drift.
                    let next = start + interval * n;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    }
                }
            })
            .expect("spawning the RSS sampler thread");
        RssSampler {
            samples,
            latest_kb,
            stop,
            handle: Some(handle),
        }
    }

    /// A handle for reading the latest value from elsewhere (the progress line).
    pub fn latest_handle(&self) -> Arc<AtomicU64> {
        self.latest_kb.clone()
    }

    /// Samples taken in `[from, to]`.
    pub fn between(&self, from: Instant, to: Instant) -> Vec<RssSample> {
        self.samples
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.at >= from && s.at <= to)
            .copied()
            .collect()
    }

    /// Stops the thread and returns all samples.
    pub fn stop(mut self) -> Vec<RssSample> {
        self.halt();
        std::mem::take(&mut *self.samples.lock().unwrap())
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Peak and mean of a set of samples, in MB.
pub fn peak_mean_mb(samples: &[RssSample]) -> (Option<f64>, Option<f64>) {
    if samples.is_empty() {
        return (None, None);
    }
    let peak = samples.iter().map(|s| s.kb).max().unwrap() as f64 / 1024.0;
    let mean = samples.iter().map(|s| s.kb as f64).sum::<f64>() / samples.len() as f64 / 1024.0;
    (Some(peak), Some(mean))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let text =
            "Name:\tenygma-server\nVmPeak:\t  900 kB\nVmHWM:\t  524288 kB\nVmRSS:\t  262144 kB\n";
        assert_eq!(parse_status_kb(text, "VmRSS"), Some(262_144));
        assert_eq!(parse_status_kb(text, "VmHWM"), Some(524_288));
        assert_eq!(parse_status_kb(text, "VmSwap"), None);
    }

    #[test]
    fn samples_own_process() {
        let s = RssSampler::start(std::process::id(), Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(120));
        let samples = s.stop();
        assert!(samples.len() >= 5, "{} samples", samples.len());
        assert!(samples.iter().all(|x| x.kb > 0));
        let (peak, mean) = peak_mean_mb(&samples);
        assert!(peak.unwrap() >= mean.unwrap());
        assert_eq!(peak_mean_mb(&[]), (None, None));
    }
}
