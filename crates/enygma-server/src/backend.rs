//! The seam between the HTTP service and the prover.
//!
//! The server only needs three operations from a prover. Keeping them behind a small trait lets
//! the admission tests run against a deterministic fake (see `crate::tests`) while the binary
//! uses the real `enygma_prover::Prover` through [`crate::prover::RealBackend`].

use std::fmt;

pub use enygma_prover::Kind;
use std::time::Duration;

/// The circuit sizes the service proves (for every statement: transfer, deposit, withdraw).
pub const SUPPORTED_K: std::ops::RangeInclusive<usize> = 2..=6;

/// A prover as the server sees it. Every method is synchronous and may block: the server calls
/// `prepare` and `verify` on tokio's blocking pool and `prove` on a dedicated rayon pool.
pub trait ProofBackend: Send + Sync + 'static {
    /// A parsed request whose checks all passed, ready to prove.
    type Prepared: Send + Sync + 'static;

    /// Strict parse of the request body of statement `kind` and the native evaluation of every
    /// check. Cheap.
    fn prepare(&self, kind: Kind, k: usize, body: &[u8]) -> Result<Self::Prepared, BackendError>;

    /// Witness synthesis and the Groth16 proof. CPU-heavy; uses the current rayon pool.
    fn prove(&self, prepared: &Self::Prepared) -> Result<ProofOutput, BackendError>;

    /// Verifies a proof of statement `kind` given as the JSON body that its prove route answered.
    fn verify(&self, kind: Kind, k: usize, proof_json: &[u8]) -> Result<bool, BackendError>;
}

/// A finished proof: the 200 body, already serialised, and where the time went.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    pub json: Vec<u8>,
    pub witness: Duration,
    pub prove: Duration,
}

/// Why a request could not be served. Messages must be safe to return and log: they may name a
/// field or a check, never a value taken from the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// Malformed JSON, missing or mis-shaped field, non-decimal or non-canonical value: 400.
    BadRequest(String),
    /// A well-formed request that fails one of the circuit's checks: 422.
    CheckFailed(String),
    /// k outside 2..=6: 400.
    UnsupportedK(usize),
    /// Anything else: 500.
    Internal(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::BadRequest(m)
            | BackendError::CheckFailed(m)
            | BackendError::Internal(m) => f.write_str(m),
            BackendError::UnsupportedK(_) => f.write_str(UNSUPPORTED_K_MESSAGE),
        }
    }
}

impl std::error::Error for BackendError {}

/// The reference's exact message for a numeric k outside 2..=6.
pub const UNSUPPORTED_K_MESSAGE: &str = "k value not supported: must be between 2 and 6";
/// The reference's exact message for a k that is not a number.
pub const NON_NUMERIC_K_MESSAGE: &str = "Invalid k parameter: must be a number";

/// Parses the `{k}` of a route as the reference does (Go's `strconv.Atoi`, then a range check);
/// the error is the reference's 400 message.
pub fn parse_k(raw: &str) -> Result<usize, &'static str> {
    let k: i64 = raw.parse().map_err(|_| NON_NUMERIC_K_MESSAGE)?;
    usize::try_from(k)
        .ok()
        .filter(|k| SUPPORTED_K.contains(k))
        .ok_or(UNSUPPORTED_K_MESSAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_parsing_matches_the_reference() {
        assert_eq!(parse_k("2"), Ok(2));
        assert_eq!(parse_k("6"), Ok(6));
        assert_eq!(parse_k("+4"), Ok(4)); // Atoi accepts a sign
        assert_eq!(parse_k("06"), Ok(6));
        assert_eq!(parse_k("7"), Err(UNSUPPORTED_K_MESSAGE));
        assert_eq!(parse_k("1"), Err(UNSUPPORTED_K_MESSAGE));
        assert_eq!(parse_k("-3"), Err(UNSUPPORTED_K_MESSAGE));
        assert_eq!(parse_k("abc"), Err(NON_NUMERIC_K_MESSAGE));
        assert_eq!(parse_k(""), Err(NON_NUMERIC_K_MESSAGE));
        assert_eq!(parse_k("99999999999999999999"), Err(NON_NUMERIC_K_MESSAGE));
    }
}
