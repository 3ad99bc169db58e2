//! The servers an A/B run compares: each variant's role, command and address.

use std::path::PathBuf;

use serde::Serialize;

/// What a variant stands for in the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    A,
    B,
    Reference,
    Sweep,
}

/// One server of the comparison and how it is started.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    /// Directory name and column header: the setting's name, and its round when there are
    /// several (`capped-2`).
    pub name: String,
    /// The setting's name alone, the same in every round.
    pub setting_name: String,
    /// Which round of the alternated settings this run is (from 1); none for the reference
    /// and the sweep, which run once.
    pub round: Option<usize>,
    pub role: Role,
    /// Flags this variant adds to the server command.
    pub flags: String,
    pub command: String,
    pub url: String,
    pub dir: Option<PathBuf>,
    /// (max_inflight, prove_threads) for sweep entries.
    pub setting: Option<(usize, usize)>,
}
