//! Early answers over HTTP/2: the rest of the request body is read after the answer.
//!
//! A request refused before its body is read (401 without a token, 413, 503 while shedding)
//! drops its body. On HTTP/2 that ends the stream from the server's side while the client is
//! still sending, and h2 closes it with `RST_STREAM(NO_ERROR)` right after the response. RFC
//! 9113 (section 8.1) allows it, but clients do not all take it well: curl (its default h2 over
//! TLS) reports "stream error" (exit 92) instead of the status in most tries when the reset
//! reaches it before it has finished sending.
//!
//! So the body's last holder is this wrapper: when the service drops it unfinished, a task
//! reads and discards the rest (at most `--body-limit` more bytes, before the body deadline),
//! and the stream ends as a normal exchange, without a reset. A body larger than that, or
//! slower, is dropped then and reset as before: the drain costs at most what an accepted body
//! costs. HTTP/1.1 needs none of this (hyper closes or reuses the connection itself; a 401
//! closes it), so its bodies are not drained.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::Instant;

/// A request body that, dropped before its end, is drained in the background (see the module
/// documentation). `drain_bytes: None` drops it as it is.
pub struct DrainOnDrop {
    inner: Option<Incoming>,
    drain_bytes: Option<usize>,
    deadline: Instant,
}

impl DrainOnDrop {
    /// `body`, to be drained of at most `drain_bytes` before `body_timeout` from now.
    pub fn new(body: Incoming, drain_bytes: Option<usize>, body_timeout: Duration) -> Self {
        DrainOnDrop {
            inner: Some(body),
            drain_bytes,
            deadline: Instant::now() + body_timeout,
        }
    }
}

impl Body for DrainOnDrop {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.inner.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let (Some(body), Some(limit)) = (self.inner.take(), self.drain_bytes) else {
            return;
        };
        if body.is_end_stream() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(body, limit, self.deadline));
        }
    }
}

/// Reads and discards `body` until its end, `limit` bytes or `deadline`, whichever comes
/// first; then drops it.
async fn drain(mut body: Incoming, limit: usize, deadline: Instant) {
    let read_all = async {
        let mut read = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return };
            if let Some(data) = frame.data_ref() {
                read += data.len();
                if read > limit {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, read_all).await;
}
