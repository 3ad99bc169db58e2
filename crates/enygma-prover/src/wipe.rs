//! Vectors derived from a request's secrets (the full assignment, the QAP vectors, their
//! scalar forms for the MSMs) are [`Wiped`]: overwritten with zeros (`zeroize`, volatile
//! writes the optimiser keeps), spare capacity included, when they are dropped, on success and
//! on every error path alike.
//!
//! Tests read the wiped memory back through [`test_log`] (compiled into tests only): each wipe
//! records its label, its length and whether the whole allocation reads zero after the wipe,
//! before it is freed.

use std::ops::{Deref, DerefMut};

use zeroize::Zeroize;

/// A vector that is zeroized when dropped. `label` names it for the test log.
pub struct Wiped<T: Zeroize> {
    label: &'static str,
    vec: Vec<T>,
}

impl<T: Zeroize> Wiped<T> {
    pub fn new(label: &'static str, vec: Vec<T>) -> Self {
        Wiped { label, vec }
    }
}

impl<T: Zeroize> Deref for Wiped<T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.vec
    }
}

impl<T: Zeroize> DerefMut for Wiped<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.vec
    }
}

impl<T: Zeroize> Drop for Wiped<T> {
    fn drop(&mut self) {
        wipe(self.label, &mut self.vec);
    }
}

/// Zeroizes `vec`'s elements and spare capacity (it is left empty, its allocation kept until it
/// is dropped).
pub fn wipe<T: Zeroize>(label: &'static str, vec: &mut Vec<T>) {
    #[cfg(test)]
    let (ptr, len, bytes) = (
        vec.as_ptr().cast::<u8>(),
        vec.len(),
        vec.capacity() * std::mem::size_of::<T>(),
    );
    vec.zeroize();
    #[cfg(test)]
    // SAFETY: the allocation is still `vec`'s (zeroize clears without shrinking) and every one
    // of its bytes was just written by zeroize, so it is initialised.
    test_log::record(label, len, unsafe {
        std::slice::from_raw_parts(ptr, bytes)
    });
    #[cfg(not(test))]
    let _ = label;
}

#[cfg(test)]
pub(crate) mod test_log {
    use std::sync::Mutex;

    /// One wipe: the buffer's label, its length before the wipe, and whether every byte of its
    /// allocation read zero afterwards.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Record {
        pub label: &'static str,
        pub len: usize,
        pub bytes: usize,
        pub all_zero: bool,
    }

    static LOG: Mutex<Vec<Record>> = Mutex::new(Vec::new());

    pub(super) fn record(label: &'static str, len: usize, memory: &[u8]) {
        let record = Record {
            label,
            len,
            bytes: memory.len(),
            all_zero: memory.iter().all(|&b| b == 0),
        };
        LOG.lock().unwrap_or_else(|e| e.into_inner()).push(record);
    }

    /// Every wipe so far (of every test thread: each record stands on its own).
    pub fn records() -> Vec<Record> {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use enygma_circuit::Fr;

    #[test]
    fn a_dropped_wiped_vector_reads_zero_before_it_is_freed() {
        let mut v = Wiped::new("wipe self-test", Vec::with_capacity(8));
        v.extend((1..=5u64).map(Fr::from));
        drop(v);
        let mine: Vec<_> = test_log::records()
            .into_iter()
            .filter(|r| r.label == "wipe self-test")
            .collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].len, 5);
        assert_eq!(
            mine[0].bytes,
            8 * std::mem::size_of::<Fr>(),
            "spare capacity too"
        );
        assert!(mine[0].all_zero);
    }
}
