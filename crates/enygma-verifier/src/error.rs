/// Everything that can go wrong while parsing or rendering verifier artifacts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not valid JSON, or JSON of the wrong shape (missing/unknown field, wrong array length,
    /// a number where a string is required, ...).
    #[error("invalid JSON: {0}")]
    Json(String),
    /// A value that is not a canonical decimal string of a field element.
    #[error("{field}: {reason}")]
    InvalidNumber {
        /// Where the value is, e.g. `pi_a[0]` or `public_signal[3]`.
        field: String,
        /// What is wrong with it (never the value).
        reason: String,
    },
    /// Coordinates that are not a point of the curve.
    #[error("{field}: point is not on the BN254 curve")]
    NotOnCurve {
        /// Where the point is, e.g. `pi_b`.
        field: String,
    },
    /// A point of the curve outside the prime-order subgroup (possible on G2 only).
    #[error("{field}: point is not in the prime-order subgroup")]
    NotInSubgroup {
        /// Where the point is.
        field: String,
    },
    /// The number of public inputs does not match the verifying key.
    #[error("wrong number of public inputs: the verifying key takes {expected}, got {got}")]
    PublicInputCount {
        /// What the key takes.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// A verifying key that cannot be used or rendered.
    #[error("invalid verifying key: {0}")]
    InvalidKey(String),
    /// A name that is not a valid Solidity identifier.
    #[error("invalid Solidity contract name {0:?}: must be an identifier")]
    InvalidContractName(String),
    /// An unknown format name.
    #[error("{0}")]
    InvalidFormat(String),
    /// arkworks (de)serialization failed.
    #[error("arkworks serialization: {0}")]
    Serialization(String),
    /// The verifier itself failed (not the same as a proof that does not verify).
    #[error("verifier error: {0}")]
    Verification(String),
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(e.to_string())
    }
}
