//! The label sets of the series, and the closed sets their values come from.
//!
//! Every label value is a variant of a closed set, a statement instance from the registry, a
//! route template, an HTTP status or a configured name: never text taken from a request, so a
//! scrape stays small whatever clients send, and nothing secret reaches a label.

use std::fmt::Write as _;

use enygma_prover::statements::Instance;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// Encodes a closed set's values with its `label()`: the series have always had snake_case
/// values (`prove`, `per_ip`), which the derive would spell as the variants are (`Prove`).
macro_rules! encode_with_label {
    ($($set:ty),* $(,)?) => {$(
        impl EncodeLabelValue for $set {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
                encoder.write_str(self.label())
            }
        }
    )*};
}

/// A closed set of label values: the enum, its `label()` and its encoding.
macro_rules! label_values {
    ($(#[$meta:meta])* $set:ident { $($(#[$variant_meta:meta])* $variant:ident => $label:literal,)* }) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $set {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $set {
            pub fn label(self) -> &'static str {
                match self {
                    $($set::$variant => $label,)*
                }
            }
        }

        encode_with_label!($set);
    };
}

encode_with_label!(QueueKind, AuthScope, AuthFailure);

label_values! {
    /// Whether a proof had its instance's precomputed MSM tables (`tables`).
    TableUse {
        Hit => "hit",
        Miss => "miss",
    }
}

label_values! {
    /// What a reload made of an instance's changed proving key file (`result`).
    KeyReloadResult {
        /// Loaded, checked and switched to.
        Replaced => "replaced",
        /// Refused: the loaded key stays; for a circuit added to the hosted list, it is not
        /// hosted. A hosted list file that cannot be read refuses the whole reload: one count.
        Refused => "refused",
        /// A circuit added to the hosted list file (`--circuits @FILE`), its keys loaded.
        Added => "added",
        /// A circuit gone from the hosted list file, no longer hosted.
        Retired => "retired",
    }
}

label_values! {
    /// How a background build of precomputed MSM tables ended (`outcome`).
    BuildOutcome {
        Built => "built",
        /// Read from the cache directory, where an earlier run kept them for the same key.
        Read => "read",
        /// The instance proves without tables.
        Failed => "failed",
    }
}

label_values! {
    /// Why a kept answer of idempotent proving was dropped (`reason`).
    EvictionReason {
        /// It outlived `--idempotency-ttl`.
        Expired => "expired",
        /// The answers kept passed `--idempotency-memory`: the oldest went first.
        Memory => "memory",
    }
}

label_values! {
    /// Why a connection was closed right after `accept` (`reason`).
    RefusalReason {
        /// Its address held `--max-connections-per-ip` already.
        PerIp => "per_ip",
    }
}

label_values! {
    /// The connection budget a new connection waited for in the backlog (`budget`).
    WaitBudget {
        /// `--max-connections`.
        Connections => "connections",
        /// `--max-unauthenticated-connections`.
        Unauthenticated => "unauthenticated",
    }
}

label_values! {
    /// Why the service closed a connection (`reason`).
    CloseReason {
        Evicted => "evicted",
        UnauthenticatedTimeout => "unauthenticated_timeout",
        MalformedRequests => "malformed_requests",
        AuthFailure => "auth_failure",
        UnauthenticatedProbe => "unauthenticated_probe",
        ProxyHeader => "proxy_header",
        Revoked => "revoked",
    }
}

label_values! {
    /// How a reload of the TLS files ended (`result`).
    ReloadResult {
        Ok => "ok",
        Error => "error",
    }
}

/// A statement's size as a label value: the number, or `none` for a statement without sizes
/// (and, on the request counter, for a path whose k is not valid).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct K(pub Option<usize>);

impl EncodeLabelValue for K {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        match self.0 {
            Some(k) => write!(encoder, "{k}"),
            None => encoder.write_str("none"),
        }
    }
}

/// `statement="transfer",k="6"`: one hosted statement instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct InstanceLabels {
    pub statement: &'static str,
    pub k: K,
}

impl From<Instance> for InstanceLabels {
    fn from(instance: Instance) -> Self {
        InstanceLabels {
            statement: instance.name(),
            k: K(instance.k()),
        }
    }
}

/// `enygma_http_requests_total`: the route template, the k of the path and the status.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: &'static str,
    pub k: K,
    pub status: u16,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct QueueLabels {
    pub queue: QueueKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AuthLabels {
    pub scope: AuthScope,
    pub reason: AuthFailure,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KeyReloadLabels {
    pub result: KeyReloadResult,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct TableProofLabels {
    #[prometheus(flatten)]
    pub instance: InstanceLabels,
    pub tables: TableUse,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct TableBuildLabels {
    #[prometheus(flatten)]
    pub instance: InstanceLabels,
    pub outcome: BuildOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct EvictionLabels {
    pub reason: EvictionReason,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RefusalLabels {
    pub reason: RefusalReason,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct WaitLabels {
    pub budget: WaitBudget,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CloseLabels {
    pub reason: CloseReason,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReloadLabels {
    pub result: ReloadResult,
}

/// `enygma_build_info`: the version and the git commit the server was built from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: &'static str,
    pub commit: &'static str,
}

/// `enygma_key_info`: a loaded key's instance, where its toxic waste went and the QAP reduction
/// its H query is for. The origin's kind only: a ceremony's details stay in the key record.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KeyLabels {
    #[prometheus(flatten)]
    pub instance: InstanceLabels,
    pub origin: &'static str,
    pub reduction: &'static str,
    /// The SHA-256 of the proving key file, in hex as `sha256sum` prints it: which key is
    /// served, and when it was replaced.
    pub sha256: String,
}

/// The per-caller series of fair shares: a caller name from the configuration (a token's or a
/// client certificate's name, or `anonymous`), never the credential itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CallerLabels {
    pub caller: String,
}

/// The two admission queues.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    Prove = 0,
    Verify = 1,
}

impl QueueKind {
    pub const ALL: [QueueKind; 2] = [QueueKind::Prove, QueueKind::Verify];

    pub fn label(self) -> &'static str {
        match self {
            QueueKind::Prove => "prove",
            QueueKind::Verify => "verify",
        }
    }
}

/// Who was refused by the bearer-token check.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthScope {
    /// The proving and verifying routes (`--auth-token-file`).
    Api = 0,
    /// `/metrics` (`--metrics-token-file`).
    Metrics = 1,
}

impl AuthScope {
    pub fn label(self) -> &'static str {
        match self {
            AuthScope::Api => "api",
            AuthScope::Metrics => "metrics",
        }
    }
}

/// Why the bearer-token check refused a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthFailure {
    /// No `Authorization: Bearer` header.
    Missing = 0,
    /// A token that is not in the token file.
    Invalid = 1,
}

impl AuthFailure {
    pub fn label(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Invalid => "invalid",
        }
    }
}
