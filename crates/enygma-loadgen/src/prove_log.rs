//! Internal prove times read from a spawned server's output, for services that send no
//! `Server-Timing` header: the reference prints one timing line per proof
//! ([`enygma_formats::reference_log`]) after proving and before answering. The spawned server's
//! standard output passes through [`ProveLog::tap`] on its way to `server.log`; each timing line
//! is stamped when it arrives, and after a phase [`ProveLog::attach`] gives each line's prove
//! time to the request it belongs to, so the reference's report has internal prove
//! percentiles per level like ours.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use enygma_formats::reference_log::parse_timing_line;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::load::Record;

/// How much later than its response a line may be stamped: the line is written before the
/// response, but the task reading it may run after the one that received the response.
pub const STAMP_SLACK: Duration = Duration::from_millis(100);

/// How much later than its line a response may arrive: the reference writes the proof (about
/// 1 KB) right after printing; anything finishing later is another request.
pub const RESPONSE_DELAY: Duration = Duration::from_secs(2);

/// One timing line: when it arrived, and the prove time it reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProveLine {
    pub at: Instant,
    pub prove: Duration,
}

/// The timing lines read so far and not yet attached to requests.
#[derive(Debug, Clone, Default)]
pub struct ProveLog {
    lines: Arc<Mutex<Vec<ProveLine>>>,
    seen: Arc<std::sync::atomic::AtomicBool>,
}

impl ProveLog {
    /// Copies `output` line by line into `log`, keeping every timing line; ends with the output.
    /// Writes are batched while more output is waiting, so a server that logs thousands of
    /// lines a second (every shed request of a retry storm) costs few system calls here.
    pub fn tap(output: impl AsyncRead + Unpin + Send + 'static, log: std::fs::File) -> Self {
        let this = ProveLog::default();
        let sink = this.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(output);
            let mut log = std::io::BufWriter::new(log);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let at = Instant::now();
                // A full disk must not stop the server: its output is still drained.
                let _ = log.write_all(&line);
                if reader.buffer().is_empty() {
                    let _ = log.flush();
                }
                if let Some(t) = parse_timing_line(&String::from_utf8_lossy(&line)) {
                    sink.push(ProveLine { at, prove: t.prove });
                }
            }
            let _ = log.flush();
        });
        this
    }

    fn push(&self, line: ProveLine) {
        self.seen.store(true, std::sync::atomic::Ordering::Relaxed);
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    /// Whether the server has printed any timing line (only the reference does).
    pub fn seen_any(&self) -> bool {
        self.seen.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes the lines read so far.
    pub fn drain(&self) -> Vec<ProveLine> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Gives each line's prove time to one successful request of `records` (times are offsets
    /// from `epoch`) and returns how many lines found none. A line goes to the request that
    /// finished first at or after it (less [`STAMP_SLACK`], and within [`RESPONSE_DELAY`]) among
    /// those in flight for the whole prove time it reports; requests finishing together swap nothing that matters, since
    /// only the distribution is reported.
    pub fn attach(lines: &[ProveLine], records: &mut [Record], epoch: Instant) -> usize {
        let mut lines: Vec<(Duration, Duration)> = lines
            .iter()
            .map(|l| (l.at.saturating_duration_since(epoch), l.prove))
            .collect();
        lines.sort_by_key(|l| l.0);
        let mut open: Vec<usize> = (0..records.len())
            .filter(|&i| records[i].status.is_ok() && records[i].timing.prove_ms.is_none())
            .collect();
        open.sort_by_key(|&i| records[i].done);
        let mut unmatched = 0;
        for (at, prove) in lines {
            let earliest_done = at.saturating_sub(STAMP_SLACK);
            let first = open.partition_point(|&i| records[i].done < earliest_done);
            let pick = open[first..]
                .iter()
                .take_while(|&&i| records[i].done <= at + RESPONSE_DELAY)
                .position(|&i| records[i].sent + prove <= at)
                .map(|p| first + p);
            match pick {
                Some(p) => {
                    let i = open.remove(p);
                    records[i].timing.prove_ms = Some(prove.as_secs_f64() * 1e3);
                }
                None => unmatched += 1,
            }
        }
        unmatched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Status;

    fn record(sent_ms: u64, done_ms: u64, ok: bool) -> Record {
        Record {
            phase: 0,
            warmup: false,
            worker: 0,
            target: 0,
            scheduled: Duration::from_millis(sent_ms),
            sent: Duration::from_millis(sent_ms),
            done: Duration::from_millis(done_ms),
            status: if ok {
                Status::Http(200)
            } else {
                Status::Http(503)
            },
            timing: Default::default(),
        }
    }

    fn line(epoch: Instant, at_ms: u64, prove_ms: u64) -> ProveLine {
        ProveLine {
            at: epoch + Duration::from_millis(at_ms),
            prove: Duration::from_millis(prove_ms),
        }
    }

    #[test]
    fn each_line_goes_to_the_request_it_timed() {
        let epoch = Instant::now();
        // Two requests in flight together, the second finishing first; one shed request.
        let mut records = vec![
            record(0, 3000, true),
            record(100, 2000, true),
            record(50, 60, false),
        ];
        let lines = [line(epoch, 2999, 2800), line(epoch, 1995, 1800)];
        assert_eq!(ProveLog::attach(&lines, &mut records, epoch), 0);
        assert_eq!(records[0].timing.prove_ms, Some(2800.0));
        assert_eq!(records[1].timing.prove_ms, Some(1800.0));
        assert_eq!(records[2].timing.prove_ms, None);
    }

    #[test]
    fn a_line_stamped_just_after_its_response_still_matches() {
        let epoch = Instant::now();
        let mut records = vec![record(0, 1000, true)];
        let lines = [line(epoch, 1040, 900)];
        assert_eq!(ProveLog::attach(&lines, &mut records, epoch), 0);
        assert_eq!(records[0].timing.prove_ms, Some(900.0));
    }

    #[test]
    fn a_prove_longer_than_any_request_matches_nothing() {
        let epoch = Instant::now();
        let mut records = vec![record(500, 1000, true), record(0, 5000, true)];
        // 900 ms of proving ending at 1000 ms: the first request was sent only at 500 ms, and
        // the second finished 4 s after the line, too late to be its response.
        let lines = [line(epoch, 1000, 900), line(epoch, 9000, 100)];
        assert_eq!(ProveLog::attach(&lines, &mut records, epoch), 2);
        assert!(records.iter().all(|r| r.timing.prove_ms.is_none()));
    }

    #[tokio::test]
    async fn the_tap_copies_the_output_and_keeps_timing_lines() {
        let dir = std::env::temp_dir().join(format!("prove-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("server.log");
        let file = std::fs::File::create(&path).unwrap();
        let output: &'static [u8] = b"Loading pre-compiled circuit for k=6...\n\
            K=6 Timing: Bind=1ms, Parse=2ms, Prove=1.5s, Serialize=0s, Total=1.503s\n\
            [GIN] 200 | POST /proof/enygma/k6\n";
        let log = ProveLog::tap(output, file);
        for _ in 0..100 {
            if log.seen_any() && std::fs::read(&path).unwrap().len() == output.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(std::fs::read(&path).unwrap(), output);
        let lines = log.drain();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].prove, Duration::from_millis(1500));
        assert!(log.drain().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
