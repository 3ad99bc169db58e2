use std::fmt;

/// Everything that can go wrong while parsing or rendering verifier artifacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Not valid JSON, or JSON of the wrong shape (missing/unknown field, wrong array length,
    /// a number where a string is required, ...).
    Json(String),
    /// A value that is not a canonical decimal string of a field element.
    InvalidNumber {
        /// Where the value is, e.g. `pi_a[0]` or `public_signal[3]`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Coordinates that are not a point of the curve.
    NotOnCurve {
        /// Where the point is, e.g. `pi_b`.
        field: String,
    },
    /// A point of the curve outside the prime-order subgroup (possible on G2 only).
    NotInSubgroup {
        /// Where the point is.
        field: String,
    },
    /// The number of public inputs does not match the verifying key.
    PublicInputCount {
        /// What the key takes.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// A verifying key that cannot be used or rendered.
    InvalidKey(String),
    /// A name that is not a valid Solidity identifier.
    InvalidContractName(String),
    /// An unknown format name.
    InvalidFormat(String),
    /// arkworks (de)serialization failed.
    Serialization(String),
    /// The verifier itself failed (not the same as a proof that does not verify).
    Verification(String),
    /// Reading or writing a file failed.
    Io(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Json(m) => write!(f, "invalid JSON: {m}"),
            Error::InvalidNumber { field, reason } => write!(f, "{field}: {reason}"),
            Error::NotOnCurve { field } => write!(f, "{field}: point is not on the BN254 curve"),
            Error::NotInSubgroup { field } => {
                write!(f, "{field}: point is not in the prime-order subgroup")
            }
            Error::PublicInputCount { expected, got } => write!(
                f,
                "wrong number of public inputs: the verifying key takes {expected}, got {got}"
            ),
            Error::InvalidKey(m) => write!(f, "invalid verifying key: {m}"),
            Error::InvalidContractName(n) => {
                write!(
                    f,
                    "invalid Solidity contract name {n:?}: must be an identifier"
                )
            }
            Error::InvalidFormat(m) => write!(f, "{m}"),
            Error::Serialization(m) => write!(f, "arkworks serialization: {m}"),
            Error::Verification(m) => write!(f, "verifier error: {m}"),
            Error::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(e.to_string())
    }
}
