//! A request body as the service holds it: a buffer of its own, overwritten with zeros when it
//! is dropped (see the README's "Secrets in memory").
//!
//! The prove handler moves the body into the parse-and-check job (`app::prepare`), which drops
//! it, so a proving request's body is wiped before the request queues, whether it was then
//! refused (400, 422, 503) or proved; a verify body when it has been verified. A body that fails to
//! arrive whole (413, 408, a broken connection) never becomes a `RequestBody`: its partial
//! frames stay in hyper's buffers.

use std::ops::Deref;

use axum::body::Bytes;
use bytes::BytesMut;
use zeroize::Zeroize;

/// A request body; wiped when dropped.
pub(crate) struct RequestBody(BytesMut);

impl RequestBody {
    /// Takes the body `axum::body::to_bytes` collected. `Bytes` is reference counted: when this
    /// is its only handle (`try_into_mut` succeeds), its own allocation becomes ours, to be
    /// wiped; when another holds it too (hyper's connection buffer, whose allocation the body
    /// may share), the bytes are copied into a buffer of our own and the original is left to
    /// its holder, which reuses or frees it unwiped.
    pub(crate) fn take(bytes: Bytes) -> Self {
        let buffer = match bytes.try_into_mut() {
            Ok(unique) => unique,
            Err(shared) => BytesMut::from(&shared[..]),
        };
        RequestBody(buffer)
    }
}

impl Deref for RequestBody {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let len = self.0.len();
        self.0[..].zeroize();
        self.0.spare_capacity_mut().zeroize();
        #[cfg(test)]
        test_log::record(len, &mut self.0);
        #[cfg(not(test))]
        let _ = len;
    }
}

/// Wiped bodies, read back after the wipe and before the memory is freed (tests only).
#[cfg(test)]
pub(crate) mod test_log {
    use std::sync::Mutex;

    use bytes::BytesMut;

    /// One wiped body: its length and whether every byte of its allocation read zero.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Record {
        pub len: usize,
        pub all_zero: bool,
    }

    static LOG: Mutex<Vec<Record>> = Mutex::new(Vec::new());

    pub(super) fn record(len: usize, buffer: &mut BytesMut) {
        let bytes_zero = buffer.iter().all(|&b| b == 0);
        // SAFETY: zeroize has just written every spare byte, so they are initialised.
        let spare_zero = buffer
            .spare_capacity_mut()
            .iter()
            .all(|b| unsafe { b.assume_init() } == 0);
        let all_zero = bytes_zero && spare_zero;
        LOG.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Record { len, all_zero });
    }

    pub fn records() -> Vec<Record> {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
