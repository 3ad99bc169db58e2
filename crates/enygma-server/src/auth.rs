//! Bearer tokens: who may make the service prove and verify, and who may read `/metrics`.
//!
//! With `--auth-token-file`, every route except the probes (`/healthcheck`, `/livez`,
//! `/readyz`) and `/metrics` needs `Authorization: Bearer <token>` with a token of that file;
//! unknown paths too, so that an unauthenticated client learns nothing about the routes.
//! `/metrics` needs a token of `--metrics-token-file` when one is given; without it, `/metrics`
//! is open only while no token is configured at all: with `--auth-token-file` alone it is
//! refused on this listener (its series tell who proved what and when, which is not the
//! callers' business), and read on the admin listener instead. A missing or wrong token gets
//! 401 with `WWW-Authenticate` (RFC 6750) and is counted in `enygma_auth_rejected_total`.
//!
//! A failed authentication closes its connection (HTTP/1.1 `Connection: close`, HTTP/2
//! GOAWAY), so a guesser pays a new connection per guess and passes the connection budget each
//! time. Failures are counted per client address; past the address's allowance
//! (`--auth-failure-burst`, `crate::admission::abuse`) a failure is answered 429 with
//! `Retry-After` instead of 401, while a valid token from the same address is still served.
//! They are logged at DEBUG, and at WARN once per address and minute. While tokens are
//! required, a connection that has not authenticated is closed after a probe too: probes
//! cannot keep an unauthenticated connection (and its slot) alive.
//!
//! Tokens are kept only as SHA-256 digests. A presented token is hashed and compared with
//! every digest in constant time (`subtle`), so neither the comparison's time nor an early exit
//! tells how much of a guess was right, nor its length. The `Authorization` header is removed
//! from the request here, on every route, so no later stage can log or echo it.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::admission::abuse::AddressAllowances;
use crate::caller::{check_name, Caller, CertificateCaller, PeerAddress};
use crate::transport::{close_after_response, ConnectionSlot};

use crate::metrics::{AuthFailure, AuthScope, Metrics};
use crate::request::{is_probe, ApiError, ReqCtx};

/// Shortest accepted token: 16 characters of the token alphabet carry at least 96 bits when
/// random; shorter ones are refused at start rather than guessed later.
pub const MIN_TOKEN_LEN: usize = 16;

/// The realm named in `WWW-Authenticate`.
const REALM: &str = "enygma-prover";

/// One accepted token: its SHA-256 digest and the caller it names.
struct Entry {
    digest: [u8; 32],
    caller: Caller,
}

/// The accepted tokens of one scope, read from a file, reloadable.
///
/// One token a line: `TOKEN` (an anonymous caller, the file format before names), `NAME TOKEN`,
/// or `NAME sha256:HEX` (the token's SHA-256 digest in hex, so the file need not hold the token
/// itself). Blank lines and lines starting with `#` are skipped.
pub struct TokenFile {
    path: PathBuf,
    flag: &'static str,
    entries: RwLock<Arc<Vec<Entry>>>,
}

impl TokenFile {
    /// Reads the file. `flag` names it in errors (`--auth-token-file`). The error names the
    /// file and the line, never a token.
    pub fn load(path: &Path, flag: &'static str) -> Result<Self, String> {
        let entries = read_entries(path, flag)?;
        Ok(TokenFile {
            path: path.to_owned(),
            flag,
            entries: RwLock::new(Arc::new(entries)),
        })
    }

    /// Reads the file again; the whole file is parsed before it replaces the previous tokens,
    /// so on any error they all stay in force. Returns how many tokens are accepted now.
    ///
    /// The file's mode is checked first, as at start ([`crate::file_modes`]): a token file
    /// that others may read is refused unless `allow_shared` (`--allow-shared-secret-files`),
    /// which only warns.
    pub fn reload(&self, allow_shared: bool) -> Result<usize, String> {
        if let Err(e) =
            crate::file_modes::check(self.flag, &self.path, crate::file_modes::FileKind::Secret)
        {
            if !allow_shared {
                return Err(e);
            }
            tracing::warn!("--allow-shared-secret-files: {e}");
        }
        let entries = read_entries(&self.path, self.flag)?;
        let n = entries.len();
        *self.entries.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(entries);
        Ok(n)
    }

    /// The caller `token` names, if it is one of the file's; in time independent of which one
    /// and of how much of it matches (every digest is compared, the match is selected without
    /// a branch).
    pub fn identify(&self, token: &[u8]) -> Option<Caller> {
        let presented: [u8; 32] = Sha256::digest(token).into();
        let entries = self.current();
        let mut found = 0u32;
        for (i, entry) in entries.iter().enumerate() {
            found.conditional_assign(&(i as u32 + 1), entry.digest.ct_eq(&presented));
        }
        (found as usize)
            .checked_sub(1)
            .map(|i| entries[i].caller.clone())
    }

    /// Whether `token` is one of the file's (see [`Self::identify`]).
    pub fn accepts(&self, token: &[u8]) -> bool {
        self.identify(token).is_some()
    }

    /// The callers the file names (without `anonymous`), for the per-caller shares.
    pub fn callers(&self) -> Vec<Caller> {
        let mut names: Vec<Caller> = self
            .current()
            .iter()
            .map(|e| e.caller.clone())
            .filter(|c| !c.is_anonymous())
            .collect();
        names.sort_by(|a, b| a.name().cmp(b.name()));
        names.dedup();
        names
    }

    fn current(&self) -> Arc<Vec<Entry>> {
        self.entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn len(&self) -> usize {
        self.current().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// RFC 6750's b64token alphabet.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

/// The digest of a token column: `sha256:HEX`, or the token itself.
fn digest_of(secret: &str) -> Result<[u8; 32], String> {
    if let Some(hex_digest) = secret.strip_prefix("sha256:") {
        let mut digest = [0u8; 32];
        return hex::decode_to_slice(hex_digest, &mut digest)
            .map(|()| digest)
            .map_err(|_| "sha256: must be followed by 64 hexadecimal digits".into());
    }
    if !secret.chars().all(is_token_char) {
        return Err("a token may only hold the characters A-Z a-z 0-9 - . _ ~ + / =".into());
    }
    if secret.len() < MIN_TOKEN_LEN {
        return Err(format!("token shorter than {MIN_TOKEN_LEN} characters"));
    }
    Ok(Sha256::digest(secret.as_bytes()).into())
}

fn read_entries(path: &Path, flag: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag} {}: cannot read: {e}", path.display()))?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |what: String| format!("{flag} {} line {}: {what}", path.display(), i + 1);
        let columns: Vec<&str> = line.split_whitespace().collect();
        let (caller, secret) = match columns[..] {
            [secret] => (Caller::anonymous(), secret),
            [name, secret] => (check_name(name).map_err(at)?, secret),
            _ => return Err(at("expected TOKEN, NAME TOKEN or NAME sha256:HEX".into())),
        };
        let digest = digest_of(secret).map_err(at)?;
        if let Some(j) = entries.iter().position(|e| e.digest == digest) {
            return Err(at(format!("the same token as line {}", lines[j])));
        }
        entries.push(Entry { digest, caller });
        lines.push(i + 1);
    }
    if entries.is_empty() {
        return Err(format!("{flag} {}: no token in the file", path.display()));
    }
    Ok(entries)
}

/// The token files of the service's scopes; `None` leaves a scope open.
#[derive(Default)]
pub struct Auth {
    pub api: Option<TokenFile>,
    pub metrics: Option<TokenFile>,
}

impl Auth {
    /// Reloads every token file (SIGHUP). Each file that fails (its mode included, unless
    /// `allow_shared`) keeps its previous tokens; the first error is returned.
    pub fn reload(&self, allow_shared: bool) -> Result<(), String> {
        let mut first_error = None;
        for file in [&self.api, &self.metrics].into_iter().flatten() {
            match file.reload(allow_shared) {
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
    fn required(&self, path: &str) -> Option<(AuthScope, Accepted<'_>)> {
        if path == "/metrics" {
            match (&self.metrics, &self.api) {
                (Some(tokens), _) => Some((AuthScope::Metrics, Accepted::Tokens(tokens))),
                (None, Some(_)) => Some((AuthScope::Metrics, Accepted::Nobody)),
                (None, None) => None,
            }
        } else if is_probe(path) {
            None
        } else {
            self.api
                .as_ref()
                .map(|t| (AuthScope::Api, Accepted::Tokens(t)))
        }
    }
}

/// Who may pass a guarded route.
#[derive(Clone, Copy)]
enum Accepted<'a> {
    /// The callers of these tokens.
    Tokens(&'a TokenFile),
    /// Nobody on this listener: `/metrics` with API tokens but no metrics tokens.
    Nobody,
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

/// Middleware: refuses a request without a valid token for its route (401, or 429 past the
/// address's allowance of failures; either closes the connection), strips the `Authorization`
/// header from every request, and names the request's caller: the client certificate's name if
/// the connection has one ([`CertificateCaller`]), else the token's, else `anonymous`. The
/// caller goes into the request's extensions, its [`ReqCtx`] (the access log) and its tracing
/// span (field `caller`).
pub async fn check(
    State((auth, metrics, failures)): State<(Arc<Auth>, Arc<Metrics>, Arc<AddressAllowances>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let required = auth.required(req.uri().path());
    let verdict = match required {
        None => Ok(None),
        Some((scope, accepted)) => match (bearer(req.headers()), accepted) {
            (None, _) => Err((scope, AuthFailure::Missing)),
            (Some(Ok(token)), Accepted::Tokens(tokens)) => tokens
                .identify(token)
                .map(Some)
                .ok_or((scope, AuthFailure::Invalid)),
            (Some(_), _) => Err((scope, AuthFailure::Invalid)),
        },
    };
    req.headers_mut().remove(AUTHORIZATION);
    let version = req.version();
    let slot = req.extensions().get::<Arc<ConnectionSlot>>().cloned();
    match verdict {
        Ok(by_token) => {
            // The connection leaves the unauthenticated budget once it has shown a token, or,
            // when the API needs none, made an API request (a probe shows nothing).
            let path = req.uri().path();
            if by_token.is_some() || (auth.api.is_none() && !is_probe(path)) {
                if let Some(slot) = &slot {
                    slot.authenticated();
                }
            }
            let caller = req
                .extensions()
                .get::<CertificateCaller>()
                .map(|c| c.0.clone())
                .or(by_token)
                .unwrap_or_else(Caller::anonymous);
            tracing::Span::current().record("caller", caller.name());
            if let Some(ctx) = req.extensions().get::<ReqCtx>() {
                ctx.set_caller(caller.clone());
            }
            req.extensions_mut().insert(caller);
            let mut resp = next.run(req).await;
            // While tokens are required, probes do not keep a connection that never showed one.
            if let Some(slot) = slot.filter(|s| auth.api.is_some() && s.is_unauthenticated()) {
                metrics
                    .connections
                    .closed_unauthenticated_probe
                    .fetch_add(1, Ordering::Relaxed);
                close_after_response(&mut resp, &slot, version);
            }
            resp
        }
        Err((scope, why)) => {
            metrics.auth_rejected(scope, why);
            let peer = req.extensions().get::<PeerAddress>().map(|p| p.0);
            let counted = peer.map(|p| failures.failure(&p.ip().to_canonical(), Instant::now()));
            let peer_text = peer.map_or_else(|| "unknown".to_string(), |p| p.ip().to_string());
            if counted.is_some_and(|c| c.warn) {
                tracing::warn!(
                    peer = %peer_text,
                    scope = scope.label(),
                    reason = why.label(),
                    "authentication failed (further failures from this address this minute at DEBUG)"
                );
            } else {
                tracing::debug!(peer = %peer_text, scope = scope.label(), reason = why.label(), "authentication failed");
            }
            let nobody = matches!(required, Some((_, Accepted::Nobody)));
            let mut resp = match counted.and_then(|c| c.over) {
                Some(wait) => {
                    metrics.auth_failure_limited();
                    too_many_failures(wait)
                }
                None if nobody => metrics_closed(),
                None => unauthorized(why),
            };
            // A client that presents no or a wrong token gets no second try on this
            // connection: it cannot hold the connection open by retrying.
            if let Some(slot) = &slot {
                metrics
                    .connections
                    .closed_auth_failure
                    .fetch_add(1, Ordering::Relaxed);
                close_after_response(&mut resp, slot, version);
            }
            resp
        }
    }
}

/// A failed authentication past its address's allowance.
fn too_many_failures(wait: std::time::Duration) -> Response {
    let mut resp = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too many failed authentications from this address, retry later",
    )
    .into_response();
    resp.headers_mut().insert(
        RETRY_AFTER,
        HeaderValue::from(wait.as_secs_f64().ceil().max(1.0) as u64),
    );
    resp
}

/// `/metrics` on the API listener with API tokens but no metrics tokens: no token opens it.
fn metrics_closed() -> Response {
    let mut resp = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "/metrics needs a metrics token on this listener (--metrics-token-file); \
         it is served on the admin listener",
    )
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("Bearer realm=\"{REALM}\"")) {
        resp.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    resp
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

    /// An owner-only token file, as the server requires.
    fn file_with(name: &str, content: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("enygma-tokens-{name}-{}", std::process::id()));
        std::fs::write(&path, content).unwrap();
        set_mode(&path, 0o600);
        path
    }

    fn set_mode(path: &Path, mode: u32) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = (path, mode);
    }

    #[cfg(unix)]
    #[test]
    fn a_reload_checks_the_mode_as_the_start_does() {
        let path = file_with("mode", &format!("bank-a {A}\n"));
        let tokens = TokenFile::load(&path, "--auth-token-file").unwrap();
        std::fs::write(&path, format!("bank-b {B}\n")).unwrap();
        set_mode(&path, 0o644);
        // Readable by others: refused, the previous tokens stay in force.
        let err = tokens.reload(false).unwrap_err();
        assert!(
            err.contains("--auth-token-file") && err.contains("0644"),
            "{err}"
        );
        assert!(tokens.accepts(A.as_bytes()) && !tokens.accepts(B.as_bytes()));
        // --allow-shared-secret-files: a warning, and the new tokens.
        assert_eq!(tokens.reload(true).unwrap(), 1);
        assert!(tokens.accepts(B.as_bytes()) && !tokens.accepts(A.as_bytes()));
        let _ = std::fs::remove_file(&path);
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
        assert_eq!(tokens.reload(false).unwrap(), 1);
        assert!(!tokens.accepts(A.as_bytes()) && tokens.accepts(B.as_bytes()));
        std::fs::write(&path, "short\n").unwrap();
        assert!(tokens.reload(false).is_err());
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
    fn named_tokens_name_their_caller() {
        let digest_b = hex::encode(Sha256::digest(B.as_bytes()));
        let path = file_with(
            "named",
            &format!(
                "bank-a {A}
bank-b  sha256:{digest_b}
# legacy
tok-cccccccccccccccccccccc
"
            ),
        );
        let tokens = TokenFile::load(&path, "--auth-token-file").unwrap();
        assert_eq!(tokens.identify(A.as_bytes()).unwrap().name(), "bank-a");
        // A digest line accepts the token whose digest it is, and not the digest itself.
        assert_eq!(tokens.identify(B.as_bytes()).unwrap().name(), "bank-b");
        assert!(tokens.identify(digest_b.as_bytes()).is_none());
        assert!(tokens
            .identify(b"tok-cccccccccccccccccccccc")
            .unwrap()
            .is_anonymous());
        assert!(tokens.identify(b"tok-dddddddddddddddddddddd").is_none());
        let names: Vec<String> = tokens.callers().iter().map(|c| c.to_string()).collect();
        assert_eq!(names, ["bank-a", "bank-b"]);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_token_file_is_parsed_whole_before_it_replaces_the_tokens() {
        let path = file_with(
            "whole",
            &format!(
                "bank-a {A}
"
            ),
        );
        let tokens = TokenFile::load(&path, "--auth-token-file").unwrap();
        // The new file's first lines are good; its third is not: nothing of it takes effect.
        std::fs::write(
            &path,
            format!(
                "bank-b {B}
bank-c tok-cccccccccccccccccccc
bank d {A}
"
            ),
        )
        .unwrap();
        let err = tokens.reload(false).unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        assert_eq!(tokens.identify(A.as_bytes()).unwrap().name(), "bank-a");
        assert!(tokens.identify(B.as_bytes()).is_none());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn bad_named_lines_are_refused_without_quoting_a_token() {
        for (name, content, needle) in [
            (
                "cols",
                format!(
                    "bank-a {A} extra
"
                ),
                "line 1: expected TOKEN, NAME TOKEN",
            ),
            (
                "name",
                format!(
                    "bank/a {A}
"
                ),
                "line 1: a caller name may only",
            ),
            (
                "anon",
                format!(
                    "anonymous {A}
"
                ),
                "line 1: `anonymous`",
            ),
            (
                "hex",
                "bank-a sha256:abcd
"
                .to_string(),
                "64 hexadecimal digits",
            ),
            (
                "dup",
                format!(
                    "bank-a {A}
bank-b {A}
"
                ),
                "line 2: the same token as line 1",
            ),
        ] {
            let path = file_with(name, &content);
            let err = TokenFile::load(&path, "--auth-token-file").err().unwrap();
            assert!(err.contains(needle), "{name}: {err:?}");
            assert!(!err.contains(A), "{err:?}");
            let _ = std::fs::remove_file(&path);
        }
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
        for open in ["/healthcheck", "/livez", "/readyz"] {
            assert!(auth.required(open).is_none(), "{open}");
        }
        // API tokens without metrics tokens: no token opens /metrics here.
        assert!(matches!(
            auth.required("/metrics"),
            Some((AuthScope::Metrics, Accepted::Nobody))
        ));
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
        assert!(matches!(
            auth.required("/metrics"),
            Some((AuthScope::Metrics, Accepted::Tokens(_)))
        ));
        assert!(auth.required("/generateProofTransfer-6").is_none());
        // No token at all: /metrics stays open, as the reference's clients expect of a
        // server without access control.
        assert!(Auth::default().required("/metrics").is_none());
        let _ = std::fs::remove_file(&api);
    }
}
