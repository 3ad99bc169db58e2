//! The time a proof holds its slot, as the queue's expected wait needs it: a running estimate
//! ([`ServiceTime`]) and, for threads that follow the queue, a proof's time stated at full load
//! ([`SlotOccupancy`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long one job holds its slot, as a running estimate: seeded with a measured figure (see
/// `super::config::default_service_time`) and then moved towards every observed job time by an
/// exponentially weighted average, so that it follows the machine and the mix of statements and
/// k actually served.
#[derive(Debug)]
pub(crate) struct ServiceTime {
    nanos: AtomicU64,
}

impl ServiceTime {
    /// Weight of the newest observation: about the last ten jobs dominate the estimate, so a
    /// single slow proof does not swing it.
    const WEIGHT: f64 = 0.2;

    pub(super) fn new(initial: Duration) -> Self {
        ServiceTime {
            nanos: AtomicU64::new(duration_nanos(initial).max(1)),
        }
    }

    pub(super) fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// Replaces the estimate: the start-up calibration's measured time, which is worth more
    /// than the seed it replaces.
    pub(super) fn set(&self, took: Duration) {
        self.nanos
            .store(duration_nanos(took).max(1), Ordering::Relaxed);
    }

    pub(super) fn observe(&self, took: Duration) {
        let took = duration_nanos(took) as f64;
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                let next = old as f64 + Self::WEIGHT * (took - old as f64);
                Some((next.round() as u64).max(1))
            });
    }
}

pub(super) fn duration_nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// The time integral of the slots in use, so that a proof can tell how many proofs shared the
/// pool with it on average.
///
/// On the whole pool a proof alone takes about half the time it takes on one thread beside
/// another on two CPUs, but the queue's expected wait (position x service time / slots) needs
/// the time a proof holds its slot while every slot is busy, which is when requests queue. So
/// the time `t` of a proof on the whole pool, at an average of `c` slots in use, is entered as
/// `t x slots / c`: for a lone proof its time at full load if the threads scaled perfectly (an
/// upper estimate, since they do not quite: the safe side for shedding).
pub(super) struct SlotOccupancy {
    slots: usize,
    state: Mutex<Occupancy>,
}

struct Occupancy {
    in_use: usize,
    since: Instant,
    /// Slot-seconds in use from the start up to `since`.
    slot_seconds: f64,
}

/// A proof's start, for [`SlotOccupancy::leave`].
pub(super) struct OccupancyMark {
    at: Instant,
    slot_seconds: f64,
}

impl SlotOccupancy {
    pub(super) fn new(slots: usize) -> Self {
        SlotOccupancy {
            slots: slots.max(1),
            state: Mutex::new(Occupancy {
                in_use: 0,
                since: Instant::now(),
                slot_seconds: 0.0,
            }),
        }
    }

    /// A proof takes a slot.
    pub(super) fn enter(&self) -> OccupancyMark {
        self.enter_at(Instant::now())
    }

    /// The proof of `mark` gives its slot back: its time, stated at full load.
    pub(super) fn leave(&self, mark: OccupancyMark) -> Duration {
        self.leave_at(mark, Instant::now())
    }

    fn lock(&self) -> MutexGuard<'_, Occupancy> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter_at(&self, now: Instant) -> OccupancyMark {
        let mut st = self.lock();
        st.advance(now);
        st.in_use += 1;
        OccupancyMark {
            at: now,
            slot_seconds: st.slot_seconds,
        }
    }

    fn leave_at(&self, mark: OccupancyMark, now: Instant) -> Duration {
        let mut st = self.lock();
        st.advance(now);
        st.in_use = st.in_use.saturating_sub(1);
        let held = now.saturating_duration_since(mark.at);
        let secs = held.as_secs_f64();
        if secs <= 0.0 {
            return held;
        }
        let average_in_use =
            ((st.slot_seconds - mark.slot_seconds) / secs).clamp(1.0, self.slots as f64);
        held.mul_f64(self.slots as f64 / average_in_use)
    }
}

impl Occupancy {
    fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.since);
        self.slot_seconds += self.in_use as f64 * elapsed.as_secs_f64();
        self.since = self.since.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_pool_times_are_stated_at_full_load() {
        let s = Duration::from_secs;
        let occupancy = SlotOccupancy::new(2);
        let t0 = Instant::now();
        let alone = occupancy.enter_at(t0);
        assert_eq!(occupancy.leave_at(alone, t0 + s(1)), s(2));
        let a = occupancy.enter_at(t0 + s(2));
        let b = occupancy.enter_at(t0 + s(2));
        assert_eq!(occupancy.leave_at(a, t0 + s(4)), s(2));
        // b: 2 s beside a, then 2 s alone: 1.5 slots on average.
        let held = occupancy.leave_at(b, t0 + s(6));
        assert!(
            (held.as_secs_f64() - 4.0 * 2.0 / 1.5).abs() < 1e-6,
            "{held:?}"
        );
        // A lone proof on one slot is itself.
        let one = SlotOccupancy::new(1);
        let mark = one.enter_at(t0);
        assert_eq!(one.leave_at(mark, t0 + s(3)), s(3));
    }
}
