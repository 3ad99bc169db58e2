//! When an instance's tables are built and which are evicted for them: the pure, unit-tested
//! policy of the table cache.

use enygma_prover::statements::Instance;

/// Proofs of an instance before its tables are built. Why 2 and not 1: one proof is no
/// evidence of traffic (a smoke test, a client trying a route), and a build costs seconds of a
/// core and may evict the tables of an instance that does carry traffic; the second proof is the
/// first sign of repeat traffic, and waiting for it costs one proof without tables more.
pub const BUILD_AFTER_PROOFS: u64 = 2;

/// What the tables of one instance are doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableState {
    /// Not built (never, or evicted).
    Absent,
    Building,
    /// Built by the cache: evictable.
    Resident,
    /// Built at start (`--precompute`): never evicted.
    Pinned,
    /// The build failed: the instance proves without tables.
    Failed,
    /// Larger than the budget leaves once the pinned tables are counted: never built.
    TooLarge,
}

impl TableState {
    /// Whether the tables hold (or are about to hold) their bytes of the budget.
    fn holds_memory(self) -> bool {
        matches!(
            self,
            TableState::Building | TableState::Resident | TableState::Pinned
        )
    }
}

#[derive(Debug)]
struct Entry {
    instance: Instance,
    bytes: u64,
    /// Proofs since start, or since the tables were last evicted.
    proofs: u64,
    /// The policy's clock at the last proof.
    last_proved: u64,
    state: TableState,
}

/// A build the policy decided: evict these instances' tables first, then build `instance`'s.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Build {
    pub(crate) instance: Instance,
    pub(crate) bytes: u64,
    pub(crate) evict: Vec<Instance>,
}

/// Which tables to build and which to evict: LRU within a budget, pinned tables never evicted.
#[derive(Debug)]
pub(crate) struct TablePolicy {
    budget: u64,
    build_after: u64,
    clock: u64,
    entries: Vec<Entry>,
}

impl TablePolicy {
    /// A policy holding at most `budget` bytes of tables, building an instance's after
    /// `build_after` proofs (at least 1).
    pub(crate) fn new(budget: u64, build_after: u64) -> Self {
        TablePolicy {
            budget,
            build_after: build_after.max(1),
            clock: 0,
            entries: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// An instance whose tables take `bytes`, `pinned` when they were built at start. Adding
    /// an instance twice keeps the first.
    pub(crate) fn add(&mut self, instance: Instance, bytes: u64, pinned: bool) {
        if self.entry(instance).is_some() {
            return;
        }
        self.entries.push(Entry {
            instance,
            bytes,
            proofs: 0,
            last_proved: 0,
            state: if pinned {
                TableState::Pinned
            } else {
                TableState::Absent
            },
        });
    }

    fn entry(&self, instance: Instance) -> Option<&Entry> {
        self.entries.iter().find(|e| e.instance == instance)
    }

    fn entry_mut(&mut self, instance: Instance) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.instance == instance)
    }

    #[cfg(test)]
    pub(crate) fn state(&self, instance: Instance) -> Option<TableState> {
        self.entry(instance).map(|e| e.state)
    }

    /// Bytes of the tables resident, pinned and being built.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.bytes_where(TableState::holds_memory)
    }

    fn bytes_where(&self, f: impl Fn(TableState) -> bool) -> u64 {
        self.entries
            .iter()
            .filter(|e| f(e.state))
            .map(|e| e.bytes)
            .sum()
    }

    /// Records a proof of `instance` and returns the build it calls for, if any: its tables
    /// are absent, it has been proved often enough, no other build runs, and it fits the budget
    /// once the least recently proved resident tables are evicted (those are in the build's
    /// `evict`, oldest first, and count as gone from now on).
    pub(crate) fn proved(&mut self, instance: Instance) -> Option<Build> {
        self.clock += 1;
        let (clock, build_after) = (self.clock, self.build_after);
        let building = self.entries.iter().any(|e| e.state == TableState::Building);
        let pinned = self.bytes_where(|s| s == TableState::Pinned);
        let budget = self.budget;
        let entry = self.entry_mut(instance)?;
        entry.last_proved = clock;
        entry.proofs += 1;
        if entry.state != TableState::Absent || entry.proofs < build_after || building {
            return None;
        }
        let bytes = entry.bytes;
        if pinned.saturating_add(bytes) > budget {
            entry.state = TableState::TooLarge;
            return None;
        }
        let mut evict = Vec::new();
        while self.used_bytes() + bytes > budget {
            let victim = self
                .entries
                .iter_mut()
                .filter(|e| e.state == TableState::Resident)
                .min_by_key(|e| e.last_proved)
                .expect("pinned tables plus these fit the budget: something resident is over it");
            victim.state = TableState::Absent;
            victim.proofs = 0;
            evict.push(victim.instance);
        }
        self.entry_mut(instance).expect("found above").state = TableState::Building;
        Some(Build {
            instance,
            bytes,
            evict,
        })
    }

    /// The build of `instance` ended: its tables are resident, or it goes on without. Returns
    /// whether the instance is still in the policy (not retired during the build).
    pub(crate) fn built(&mut self, instance: Instance, ok: bool) -> bool {
        let Some(e) = self.entry_mut(instance) else {
            return false;
        };
        if e.state == TableState::Building {
            e.state = if ok {
                TableState::Resident
            } else {
                TableState::Failed
            };
        }
        true
    }

    /// `instance` is no longer hosted: its tables no longer count (they were dropped) and it
    /// is never built again, unless added anew. A build of it that runs on goes to waste.
    pub(crate) fn remove(&mut self, instance: Instance) {
        self.entries.retain(|e| e.instance != instance);
    }
}
