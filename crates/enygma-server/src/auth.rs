//! Bearer tokens: who may make the service prove and verify, and who may read `/metrics`.
//!
//! With `--auth-token-file`, every route except the probes (`/healthcheck`, `/livez`,
//! `/readyz`) and `/metrics` needs `Authorization: Bearer <token>` with a token of that file;
//! unknown paths too, so that an unauthenticated client learns nothing about the routes.
//! `/metrics` is open unless `--metrics-token-file` gives it tokens of its own. A missing or
//! wrong token gets 401 with `WWW-Authenticate` (RFC 6750) and is counted in
//! `enygma_auth_rejected_total`.
//!
//! Tokens are kept only as SHA-256 digests. A presented token is hashed and compared with
//! every digest in constant time (`subtle`), so neither the comparison's time nor an early exit
//! tells how much of a guess was right, nor its length. The `Authorization` header is removed
//! from the request here, on every route, so no later stage can log or echo it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::app::{is_probe, ApiError};
use crate::metrics::{AuthFailure, AuthScope, Metrics};

/// Shortest accepted token: 16 characters of the token alphabet carry at least 96 bits when
/// random; shorter ones are refused at start rather than guessed later.
pub const MIN_TOKEN_LEN: usize = 16;

/// The realm named in `WWW-Authenticate`.
const REALM: &str = "enygma-prover";

/// The accepted tokens of one scope, read from a file (one per line), reloadable.
pub struct TokenFile {
    path: PathBuf,
    flag: &'static str,
    digests: RwLock<Arc<Vec<[u8; 32]>>>,
}

impl TokenFile {
    /// Reads the file. `flag` names it in errors (`--auth-token-file`). The error names the
    /// file and the line, never a token.
    pub fn load(path: &Path, flag: &'static str) -> Result<Self, String> {
        let digests = read_digests(path, flag)?;
        Ok(TokenFile {
            path: path.to_owned(),
            flag,
            digests: RwLock::new(Arc::new(digests)),
        })
    }

    /// Reads the file again; on error the previous tokens stay in force. Returns how many
    /// tokens are accepted now.
    pub fn reload(&self) -> Result<usize, String> {
        let digests = read_digests(&self.path, self.flag)?;
        let n = digests.len();
        *self.digests.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(digests);
        Ok(n)
    }

    /// Whether `token` is one of the file's, in time independent of which one and of how much
    /// of it matches.
    pub fn accepts(&self, token: &[u8]) -> bool {
        let presented: [u8; 32] = Sha256::digest(token).into();
        let digests = self
            .digests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut found = Choice::from(0);
        for digest in digests.iter() {
            found |= digest.ct_eq(&presented);
        }
        found.into()
    }

    pub fn len(&self) -> usize {
        self.digests.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// RFC 6750's b64token alphabet.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

fn read_digests(path: &Path, flag: &str) -> Result<Vec<[u8; 32]>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag} {}: cannot read: {e}", path.display()))?;
    warn_if_readable_by_others(path, flag);
    let mut digests = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let token = line.trim();
        if token.is_empty() || token.starts_with('#') {
            continue;
        }
        let at = || format!("{flag} {} line {}", path.display(), i + 1);
        if !token.chars().all(is_token_char) {
            return Err(format!(
                "{}: a token may only hold the characters A-Z a-z 0-9 - . _ ~ + / =",
                at()
            ));
        }
        if token.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "{}: token shorter than {MIN_TOKEN_LEN} characters",
                at()
            ));
        }
        digests.push(Sha256::digest(token.as_bytes()).into());
    }
    if digests.is_empty() {
        return Err(format!("{flag} {}: no token in the file", path.display()));
    }
    Ok(digests)
}

fn warn_if_readable_by_others(path: &Path, flag: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(
                    file = %path.display(),
                    flag,
                    "token file is readable by group or others; chmod 600 it"
                );
            }
        }
    }
}

/// The token files of the service's scopes; `None` leaves a scope open.
#[derive(Default)]
pub struct Auth {
    pub api: Option<TokenFile>,
    pub metrics: Option<TokenFile>,
}

impl Auth {
    /// Reloads every token file (SIGHUP). Each file that fails keeps its previous tokens; the
    /// first error is returned.
    pub fn reload(&self) -> Result<(), String> {
        let mut first_error = None;
        for file in [&self.api, &self.metrics].into_iter().flatten() {
            match file.reload() {
                Ok(n) => tracing::info!(flag = file.flag, tokens = n, "token file reloaded"),
                Err(e) => {
                    tracing::error!(error = %e, "token file not reloaded; previous tokens stay in force");
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The tokens a path needs, and the scope they are counted under; `None` when open.
    fn required(&self, path: &str) -> Option<(AuthScope, &TokenFile)> {
        if path == "/metrics" {
            self.metrics.as_ref().map(|t| (AuthScope::Metrics, t))
        } else if is_probe(path) {
            None
        } else {
            self.api.as_ref().map(|t| (AuthScope::Api, t))
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header. `Err` for a header that is there but
/// is not one bearer token (several headers, another scheme, not ASCII).
fn bearer(headers: &HeaderMap) -> Option<Result<&[u8], ()>> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return Some(Err(()));
    }
    let Ok(text) = value.to_str() else {
        return Some(Err(()));
    };
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            Some(Ok(token.trim().as_bytes()))
        }
        _ => Some(Err(())),
    }
}

/// Middleware: refuses a request without a valid token for its route (401) and strips the
/// `Authorization` header from every request.
pub async fn check(
    State((auth, metrics)): State<(Arc<Auth>, Arc<Metrics>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let verdict =
        auth.required(req.uri().path())
            .and_then(|(scope, tokens)| match bearer(req.headers()) {
                None => Some((scope, AuthFailure::Missing)),
                Some(Ok(token)) if tokens.accepts(token) => None,
                Some(_) => Some((scope, AuthFailure::Invalid)),
            });
    req.headers_mut().remove(AUTHORIZATION);
    match verdict {
        None => next.run(req).await,
        Some((scope, why)) => {
            metrics.auth_rejected(scope, why);
            unauthorized(why)
        }
    }
}

fn unauthorized(why: AuthFailure) -> Response {
    let (message, challenge) = match why {
        AuthFailure::Missing => (
            "missing bearer token: send Authorization: Bearer <token>",
            format!("Bearer realm=\"{REALM}\""),
        ),
        AuthFailure::Invalid => (
            "invalid bearer token",
            format!("Bearer realm=\"{REALM}\", error=\"invalid_token\""),
        ),
    };
    let mut resp = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(name: &str, content: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("enygma-tokens-{name}-{}", std::process::id()));
        std::fs::write(&path, content).unwrap();
        path
    }

    const A: &str = "tok-aaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "tok-bbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn token_files_accept_their_tokens_only() {
        let path = file_with("ok", &format!("# rotation 2026-12\n{A}\n\n  {B}  \n"));
        let tokens = TokenFile::load(&path, "--auth-token-file").unwrap();
        assert_eq!(tokens.len(), 2);
        assert!(tokens.accepts(A.as_bytes()));
        assert!(tokens.accepts(B.as_bytes()));
        for wrong in [
            "",
            "tok-aaaaaaaaaaaaaaaaaaaaa",
            "tok-aaaaaaaaaaaaaaaaaaaaaaa",
            "# rotation 2026-12",
        ] {
            assert!(!tokens.accepts(wrong.as_bytes()), "{wrong:?}");
        }
        // Reload: a rotated file takes effect; a broken one keeps the previous tokens.
        std::fs::write(&path, format!("{B}\n")).unwrap();
        assert_eq!(tokens.reload().unwrap(), 1);
        assert!(!tokens.accepts(A.as_bytes()) && tokens.accepts(B.as_bytes()));
        std::fs::write(&path, "short\n").unwrap();
        assert!(tokens.reload().is_err());
        assert!(tokens.accepts(B.as_bytes()));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn bad_token_files_are_refused_without_quoting_a_token() {
        for (name, content, needle) in [
            ("empty", "# nothing\n\n", "no token"),
            ("short", "abc\n", "line 1: token shorter than 16"),
            (
                "space",
                &format!("{A}\nsecret token with spaces\n"),
                "line 2",
            ),
        ] {
            let path = file_with(name, content);
            let err = TokenFile::load(&path, "--auth-token-file").err().unwrap();
            assert!(err.contains(needle), "{err:?}");
            assert!(err.contains("--auth-token-file"), "{err:?}");
            assert!(!err.contains("abc") && !err.contains("secret"), "{err:?}");
            let _ = std::fs::remove_file(&path);
        }
        let err = TokenFile::load(Path::new("/nonexistent/tokens"), "--metrics-token-file")
            .err()
            .unwrap();
        assert!(
            err.contains("--metrics-token-file /nonexistent/tokens"),
            "{err:?}"
        );
    }

    #[test]
    fn bearer_header_parsing() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(bearer(&h), Some(Ok(&b"abc"[..])));
        h.insert(AUTHORIZATION, HeaderValue::from_static("bearer  abc "));
        assert_eq!(bearer(&h), Some(Ok(&b"abc"[..])));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Basic YTpi"));
        assert_eq!(bearer(&h), Some(Err(())));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer"));
        assert_eq!(bearer(&h), Some(Err(())));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        h.append(AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        assert_eq!(bearer(&h), Some(Err(())));
    }

    #[test]
    fn scopes() {
        let api = file_with("scope-api", A);
        let auth = Auth {
            api: Some(TokenFile::load(&api, "--auth-token-file").unwrap()),
            metrics: None,
        };
        for open in ["/healthcheck", "/livez", "/readyz", "/metrics"] {
            assert!(auth.required(open).is_none(), "{open}");
        }
        for closed in [
            "/generateProofTransfer-6",
            "/verifyProofDeposit-2",
            "/nope",
            "/metrics/",
        ] {
            assert_eq!(
                auth.required(closed).map(|r| r.0),
                Some(AuthScope::Api),
                "{closed}"
            );
        }
        let auth = Auth {
            api: None,
            metrics: Some(TokenFile::load(&api, "--metrics-token-file").unwrap()),
        };
        assert_eq!(
            auth.required("/metrics").map(|r| r.0),
            Some(AuthScope::Metrics)
        );
        assert!(auth.required("/generateProofTransfer-6").is_none());
        let _ = std::fs::remove_file(&api);
    }
}
