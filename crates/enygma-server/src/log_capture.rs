//! Capturing what `tracing` writes on one thread, for the tests that check log lines.
//!
//! `tracing` caches each call site's interest process-wide, the first time the site runs. When
//! at most one dispatcher exists, that interest is asked of the *running thread's* default: a
//! test on another thread with no subscriber would answer "never" for, say, the access log's
//! call site, and a capturing test would then see no access line at all. A bare global
//! `Registry` (it writes nothing) is installed once before any capture, so every thread has a
//! subscriber that is interested, and a capture always makes two dispatchers (the interest is
//! then asked of each).

use std::sync::{Arc, Mutex, Once};

/// Everything the `tracing` macros write on this thread while the guard is held.
#[derive(Clone, Default)]
pub(crate) struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    /// Captures events up to DEBUG on this thread until the guard drops.
    pub(crate) fn start() -> (CapturedLog, tracing::subscriber::DefaultGuard) {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            // Another global subscriber would serve as well: the point is that there is one.
            let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
        });
        let log = CapturedLog::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(log.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        (log.clone(), tracing::subscriber::set_default(subscriber))
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The access log line (a `request` event) of the request with this id.
    pub(crate) fn access_line(&self, request_id: &str) -> String {
        self.text()
            .lines()
            .find(|l| l.contains("enygma_server::access") && l.contains(request_id))
            .unwrap_or_else(|| panic!("no access line for {request_id}"))
            .to_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> CapturedLog {
        self.clone()
    }
}
