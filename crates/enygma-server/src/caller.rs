//! Who is asking: the caller a request is served for.
//!
//! A caller is named by its bearer token (a `NAME TOKEN` line of the token file, see
//! [`crate::auth`]) or by its client certificate (`--tls-client-names`, see
//! [`crate::client_names`]); every other request is served for the one `anonymous` caller. The
//! name goes to the access log, the request's tracing span, the per-caller metrics and the
//! fair-share admission; a token never does.

use std::fmt;
use std::sync::Arc;

/// The name every unnamed request is served under (reserved: no configured caller may use it).
pub const ANONYMOUS: &str = "anonymous";

/// Longest caller name: names are metric label values and log fields, kept short.
pub const MAX_NAME_LEN: usize = 64;

/// The caller of a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller(Arc<str>);

impl Caller {
    pub fn anonymous() -> Self {
        Caller(Arc::from(ANONYMOUS))
    }

    /// A configured caller; `name` must have passed [`check_name`].
    pub(crate) fn named(name: &str) -> Self {
        Caller(Arc::from(name))
    }

    pub fn name(&self) -> &str {
        &self.0
    }

    pub fn is_anonymous(&self) -> bool {
        &*self.0 == ANONYMOUS
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a configured caller name: 1 to 64 characters of `A-Z a-z 0-9 . _ -`, not
/// `anonymous`. The error says what is wrong without quoting the name (it could be a token
/// pasted in the wrong column).
pub fn check_name(name: &str) -> Result<Caller, String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!("a caller name has 1 to {MAX_NAME_LEN} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err("a caller name may only hold the characters A-Z a-z 0-9 . _ -".into());
    }
    if name == ANONYMOUS {
        return Err(format!(
            "`{ANONYMOUS}` is the share of unnamed callers, not a name to configure"
        ));
    }
    Ok(Caller::named(name))
}

/// The caller a client certificate names ([`crate::client_names`]), attached by the transport
/// to every request of its connection.
#[derive(Clone, Debug)]
pub struct CertificateCaller(pub Caller);

/// The address a request's connection comes from, attached by the transport: what tells
/// anonymous callers apart for the bad-request limit ([`crate::admission::abuse`]).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddress(pub std::net::SocketAddr);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(check_name("bank-a.eu_1").unwrap().name(), "bank-a.eu_1");
        assert!(!check_name("bank-a").unwrap().is_anonymous());
        assert!(Caller::anonymous().is_anonymous());
        for bad in ["", "bank a", "bank/a", "anonymous", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
