//! Precomputed MSM tables that follow the traffic: the table cache.
//!
//! Fixed-base tables make a proof take about 0.7x the time, but the tables of all 18 instances
//! take 2.6 GiB, and a server usually proves a few of them. So the server builds the tables of
//! the instances that receive proofs, in the background, within a memory budget
//! (`--table-memory`), and drops the least recently proved instance's tables when a new one
//! would not fit. An idle server holds none: its memory stays that of its keys.
//!
//! The policy ([`TablePolicy`], pure and unit-tested):
//! - an instance's tables are built once it has been proved [`BUILD_AFTER_PROOFS`] times
//!   (counted afresh after an eviction);
//! - only one build at a time; an instance proved while another builds waits for its next
//!   proof;
//! - the budget counts the tables resident, the one being built and those of `--precompute`
//!   (pinned: built at start, never evicted); an instance whose tables cannot fit even with every
//!   other evictable table gone is never built;
//! - a build that fails leaves its instance proving without tables, and is not retried.
//!
//! The builds ([`TableCache`]) run on one thread of their own, outside the prove pools, at
//! nice [`BUILD_NICE`]; a proof that starts while its instance's tables are being built proves
//! without them, and no request ever waits for a build. Evicted tables are freed as soon as the
//! proofs still using them end; then, and after each build (whose chunks of projective points
//! were allocated below the mmap threshold), the allocator's free pages go back to the kernel
//! ([`crate::malloc::release_free_memory`]).

mod cache;
mod memory;
mod policy;
#[cfg(test)]
mod tests;

pub use cache::TableCache;
pub(crate) use memory::parse_bytes;
pub use memory::{MemoryLimit, TableBudget, TableConfig};
pub use policy::BUILD_AFTER_PROOFS;
