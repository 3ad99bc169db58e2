//! Where request checks run: the parse and native checks of a proving request
//! ([`crate::backend::ProofBackend::prepare`], tens of milliseconds at most) on a pool of their
//! own, sized by the CPUs, with a small queue in front of it.
//!
//! Not on the async runtime's threads, which must stay free to answer probes and accept
//! connections; not on tokio's blocking pool either, which grows to 512 threads: a flood of
//! requests, valid or not, would run that many checks at once and take the CPU from the
//! proofs. A request that finds the pool busy and its queue full is refused at once (503 with
//! `Retry-After`), before any of its checks run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::oneshot;

/// The pool is busy and its queue full.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// A job ended without an answer (it panicked).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Lost;

/// A fixed pool of threads for request checks, with a bounded queue.
pub(crate) struct CheckPool {
    pool: rayon::ThreadPool,
    /// Jobs running or queued.
    pending: Arc<AtomicUsize>,
    /// Most jobs running or queued: the threads plus the queue.
    capacity: usize,
}

impl CheckPool {
    /// `threads` threads (at least 1) and `queue_depth` jobs waiting for one.
    pub(crate) fn new(threads: usize, queue_depth: usize) -> Result<Self, String> {
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("enygma-check-{i}"))
            // A panicking check loses its answer ([`Lost`], a 500), not the process (rayon's
            // default for a panic in `spawn` is to abort).
            .panic_handler(|_| {})
            .build()
            .map_err(|e| format!("request check pool: {e}"))?;
        Ok(CheckPool {
            pool,
            pending: Arc::new(AtomicUsize::new(0)),
            capacity: threads + queue_depth,
        })
    }

    /// Runs `job` on the pool, or refuses at once when the pool and its queue are full.
    pub(crate) async fn run<T, F>(&self, job: F) -> Result<Result<T, Lost>, Full>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let taken = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.capacity).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(Full);
        }
        let release = Release(self.pending.clone());
        let (tx, rx) = oneshot::channel();
        self.pool.spawn(move || {
            // The place is given back before the answer (on a panic too, as the unwind leaves
            // this block before it drops `tx`), so that a caller that got its answer finds it free.
            let answer = {
                let _release = release;
                job()
            };
            let _ = tx.send(answer);
        });
        Ok(rx.await.map_err(|_| Lost))
    }

    /// Jobs running or queued now.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }
}

/// Gives a job's place back when the job ends, however it ends (a panic included).
struct Release(Arc<AtomicUsize>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_on_its_threads_and_refuses_past_threads_plus_queue() {
        let pool = Arc::new(CheckPool::new(1, 1).unwrap());
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
        let held = |rx: Arc<std::sync::Mutex<mpsc::Receiver<()>>>| {
            move || {
                let _ = rx.lock().unwrap().recv_timeout(Duration::from_secs(20));
                std::thread::current().name().unwrap_or("").to_owned()
            }
        };
        // One job runs, one waits: the third is refused before it runs.
        let p = pool.clone();
        let first = tokio::spawn({
            let job = held(release_rx.clone());
            async move { p.run(job).await }
        });
        let p = pool.clone();
        let second = tokio::spawn({
            let job = held(release_rx.clone());
            async move { p.run(job).await }
        });
        while pool.pending() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(pool.run(|| ()).await.err(), Some(Full));
        release_tx.send(()).unwrap();
        release_tx.send(()).unwrap();
        for job in [first, second] {
            let thread = job.await.unwrap().unwrap().unwrap();
            assert!(thread.starts_with("enygma-check-"), "{thread}");
        }
        // Places come back, after a panic too.
        assert_eq!(pool.run(|| panic!("a check panicked")).await, Ok(Err(Lost)));
        assert_eq!(pool.pending(), 0);
        assert_eq!(pool.run(|| 7).await, Ok(Ok(7)));
    }
}
