//! The progress line: once a second on a terminal (rewritten in place), every 10 s otherwise.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::load::Live;

#[derive(Debug, Clone)]
struct Current {
    label: String,
    index: usize,
    total: usize,
    start: Instant,
    warmup: Duration,
    duration: Duration,
}

pub struct Progress {
    current: Arc<Mutex<Option<Current>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    tty: bool,
}

#[allow(clippy::too_many_arguments)]
pub fn line(
    label: &str,
    index: usize,
    total: usize,
    elapsed: Duration,
    warmup: Duration,
    duration: Duration,
    live: &Live,
    rss_mb: Option<f64>,
) -> String {
    let e = elapsed.as_secs_f64();
    let (stage, t, of) = if elapsed < warmup {
        ("warm-up", e, warmup.as_secs_f64())
    } else if elapsed < warmup + duration {
        ("measure", e - warmup.as_secs_f64(), duration.as_secs_f64())
    } else {
        ("drain", e - (warmup + duration).as_secs_f64(), 0.0)
    };
    let of = if of > 0.0 {
        format!("/{of:.0}s")
    } else {
        "s".into()
    };
    let rss = rss_mb.map_or(String::new(), |m| format!("  rss {m:.0} MB"));
    format!(
        "[{index}/{total} {label}] {stage} {t:.0}{of}  sent {} ok {} err {} in-flight {}  last {:.0} ms{rss}",
        live.sent.load(Ordering::Relaxed),
        live.ok.load(Ordering::Relaxed),
        live.err.load(Ordering::Relaxed),
        live.inflight.load(Ordering::Relaxed),
        live.last_latency_us.load(Ordering::Relaxed) as f64 / 1e3,
    )
}

impl Progress {
    /// `quiet` disables the line (tests, `--quiet`).
    pub fn start(live: Arc<Live>, rss_kb: Option<Arc<AtomicU64>>, quiet: bool) -> Progress {
        let current: Arc<Mutex<Option<Current>>> = Arc::new(Mutex::new(None));
        let tty = std::io::stderr().is_terminal();
        let task = (!quiet).then(|| {
            let cur = current.clone();
            tokio::spawn(async move {
                let period = if tty {
                    Duration::from_secs(1)
                } else {
                    Duration::from_secs(10)
                };
                let mut tick = tokio::time::interval(period);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(c) = cur.lock().unwrap().clone() else {
                        continue;
                    };
                    let rss = rss_kb
                        .as_ref()
                        .map(|a| a.load(Ordering::Relaxed) as f64 / 1024.0);
                    let l = line(
                        &c.label,
                        c.index,
                        c.total,
                        c.start.elapsed(),
                        c.warmup,
                        c.duration,
                        &live,
                        rss,
                    );
                    let mut err = std::io::stderr().lock();
                    if tty {
                        let _ = write!(err, "\r\x1b[2K{l}");
                    } else {
                        let _ = writeln!(err, "{l}");
                    }
                    let _ = err.flush();
                }
            })
        });
        Progress { current, task, tty }
    }

    pub fn phase(
        &self,
        label: String,
        index: usize,
        total: usize,
        warmup: Duration,
        duration: Duration,
    ) {
        *self.current.lock().unwrap() = Some(Current {
            label,
            index,
            total,
            start: Instant::now(),
            warmup,
            duration,
        });
    }

    /// Prints a finished phase's summary on its own line.
    pub fn done(&self, summary: &str) {
        *self.current.lock().unwrap() = None;
        if self.task.is_some() {
            let mut err = std::io::stderr().lock();
            if self.tty {
                let _ = write!(err, "\r\x1b[2K");
            }
            let _ = writeln!(err, "{summary}");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_stages() {
        let live = Live::default();
        live.sent.store(12, Ordering::Relaxed);
        live.ok.store(10, Ordering::Relaxed);
        live.inflight.store(2, Ordering::Relaxed);
        live.last_latency_us.store(612_400, Ordering::Relaxed);
        let (w, d) = (Duration::from_secs(5), Duration::from_secs(60));
        let l = line(
            "c=2",
            2,
            5,
            Duration::from_secs(3),
            w,
            d,
            &live,
            Some(512.4),
        );
        assert_eq!(
            l,
            "[2/5 c=2] warm-up 3/5s  sent 12 ok 10 err 0 in-flight 2  last 612 ms  rss 512 MB"
        );
        let l = line("c=2", 2, 5, Duration::from_secs(25), w, d, &live, None);
        assert!(l.contains("measure 20/60s"), "{l}");
        let l = line("c=2", 2, 5, Duration::from_secs(66), w, d, &live, None);
        assert!(l.contains("drain 1s"), "{l}");
    }
}
