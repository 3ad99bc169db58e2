//! Bearer tokens: where they come from (`--token`, `--token-file`, a caller's `TOKEN` field,
//! each possibly `env:VAR`), and keeping them out of everything the load generator prints or
//! writes. A token is a credential of the server under test: it is sent in `Authorization`
//! and nowhere else, so it never reaches a report, `command.txt`, a progress line or an error.

use std::fmt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use hyper::header::HeaderValue;

/// A command-line value that may hold a token. It is parsed by our own code after clap, so a
/// malformed value never appears in clap's "invalid value '...'" message, and its `Debug` shows
/// nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Clap's value parser: takes anything, checks nothing (see the type's comment).
    pub fn from_arg(s: &str) -> Result<Secret, String> {
        Ok(Secret(s.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A bearer token ready to send. `Debug` shows nothing of it, and it has no `Display` or
/// `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The prefix of a token given as the name of an environment variable that holds it.
pub const ENV_PREFIX: &str = "env:";

impl Token {
    /// A token as written on the command line or in a callers file: the token itself, or
    /// `env:VAR` for the value of the environment variable `VAR`. `what` names the value in
    /// errors (`--token`, `caller "alice": the token`); an error never quotes the token.
    pub fn resolve(value: &str, what: &str) -> Result<Token> {
        match value.strip_prefix(ENV_PREFIX) {
            Some(var) => {
                if var.is_empty() {
                    bail!("{what}: `env:` needs the name of an environment variable");
                }
                let v = std::env::var(var).map_err(|e| match e {
                    std::env::VarError::NotPresent => {
                        anyhow::anyhow!("{what}: the environment variable {var} is not set")
                    }
                    std::env::VarError::NotUnicode(_) => {
                        anyhow::anyhow!("{what}: the environment variable {var} is not UTF-8")
                    }
                })?;
                Token::new(v.trim(), &format!("{what} (from {var})"))
            }
            None => Token::new(value, what),
        }
    }

    /// The first line of `path` that is neither blank nor a `#` comment.
    pub fn from_file(path: &Path) -> Result<Token> {
        let what = format!("--token-file {}", path.display());
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .with_context(|| format!("{what}: no token in the file"))?;
        Token::new(line, &what)
    }

    /// Checks the token's characters: RFC 6750's `b64token` (`A-Za-z0-9-._~+/` then `=`s),
    /// which is also what enygma-server accepts.
    fn new(value: &str, what: &str) -> Result<Token> {
        if value.is_empty() {
            bail!("{what}: the token is empty");
        }
        let body = value.trim_end_matches('=');
        if body.is_empty()
            || !body
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~+/".contains(c))
        {
            bail!(
                "{what}: the token has characters a bearer token cannot have \
                 (allowed: A-Z a-z 0-9 - . _ ~ + / and = at the end)"
            );
        }
        Ok(Token(value.to_string()))
    }

    /// The `Authorization` header's value, marked sensitive (hyper leaves it out of its own
    /// debug output).
    pub fn header(&self) -> HeaderValue {
        let mut v = HeaderValue::from_str(&format!("Bearer {}", self.0))
            .expect("checked characters make a valid header value");
        v.set_sensitive(true);
        v
    }
}

/// `--token` / `--token-file`: one bearer token for every request of a run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TokenArgs {
    /// Bearer token sent with every request (`Authorization: Bearer ...`), or `env:VAR` to take
    /// it from the environment variable VAR (so it is not on the command line). Never printed
    /// nor written to any output file.
    #[arg(long, value_name = "TOKEN|env:VAR", value_parser = Secret::from_arg, conflicts_with = "token_file")]
    pub token: Option<Secret>,
    /// A file holding the bearer token (its first line that is not blank or a `#` comment).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
}

impl TokenArgs {
    pub fn resolve(&self) -> Result<Option<Token>> {
        match (&self.token, &self.token_file) {
            (Some(t), _) => Token::resolve(t.expose(), "--token").map(Some),
            (None, Some(path)) => Token::from_file(path).map(Some),
            (None, None) => Ok(None),
        }
    }
}

/// The load generator's own command line with every token replaced by `***`: the value of
/// `--token` (unless it is `env:VAR`, which names no secret) and the `TOKEN` field of each
/// `--caller NAME:TOKEN:SCHEDULE`. For `command.txt` and reports.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<&'static str> = None;
    for arg in args {
        if let Some(flag) = pending.take() {
            out.push(redact_value(flag, &arg));
            continue;
        }
        let redacted = ["--token", "--caller"].into_iter().find_map(|flag| {
            if arg == flag {
                pending = Some(flag);
                Some(arg.clone())
            } else {
                arg.strip_prefix(flag)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(|value| format!("{flag}={}", redact_value(flag, value)))
            }
        });
        out.push(redacted.unwrap_or(arg));
    }
    out
}

fn redact_value(flag: &str, value: &str) -> String {
    let hide = |token: &str| {
        if token.starts_with(ENV_PREFIX) {
            token.to_string()
        } else {
            "***".to_string()
        }
    };
    if flag == "--token" {
        return hide(value);
    }
    // NAME:TOKEN:SCHEDULE, where TOKEN may itself be `env:VAR`.
    match (value.split_once(':'), value.rsplit_once(':')) {
        (Some((name, _)), Some((rest, schedule))) if rest.len() > name.len() => {
            format!("{name}:{}:{schedule}", hide(&rest[name.len() + 1..]))
        }
        _ => "***".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tokens_are_checked_and_never_quoted() {
        assert!(Token::resolve("abcDEF0123456789-._~+/==", "--token").is_ok());
        for bad in ["", "has space", "quote\"d", "=abc", "semi;colon"] {
            let err = Token::resolve(bad, "--token").unwrap_err().to_string();
            assert!(err.starts_with("--token: "), "{err}");
            if !bad.is_empty() {
                assert!(!err.contains(bad), "the error quotes the token: {err}");
            }
        }
        let t = Token::resolve("s3cretvalue0123456789", "x").unwrap();
        assert!(!format!("{t:?}").contains("s3cret"));
        assert!(!format!("{:?}", Secret::from_arg("s3cret").unwrap()).contains("s3cret"));
        assert!(t.header().is_sensitive());
        assert_eq!(t.header().to_str().unwrap(), "Bearer s3cretvalue0123456789");
    }

    #[test]
    fn tokens_from_the_environment_and_files() {
        std::env::set_var("ENYGMA_LOADGEN_TEST_TOKEN_OK", "fromenv0123456789abc\n");
        let t = Token::resolve("env:ENYGMA_LOADGEN_TEST_TOKEN_OK", "--token").unwrap();
        assert_eq!(t, Token("fromenv0123456789abc".into()));
        let err = Token::resolve("env:ENYGMA_LOADGEN_TEST_TOKEN_UNSET", "caller \"b\": TOKEN")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "caller \"b\": TOKEN: the environment variable ENYGMA_LOADGEN_TEST_TOKEN_UNSET is not set"
        );
        assert!(Token::resolve("env:", "--token").is_err());

        let dir = std::env::temp_dir().join(format!("loadgen-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "# the gateway's token\n\n  fromfile0123456789abc  \n").unwrap();
        assert_eq!(
            Token::from_file(&f).unwrap(),
            Token("fromfile0123456789abc".into())
        );
        std::fs::write(&f, "# nothing here\n").unwrap();
        assert!(Token::from_file(&f)
            .unwrap_err()
            .to_string()
            .contains("no token"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn command_lines_lose_their_tokens() {
        let args = strings(&[
            "enygma-loadgen",
            "callers",
            "--token",
            "topsecret0123456789",
            "--caller",
            "alice:alicesecret0123456:closed=16",
            "--caller=bob:env:BOB_TOKEN:open=2/s",
            "--caller=carol:carolsecret012345:closed=1",
            "--token=env:GW",
            "--token=othersecret0123456",
            "--callers",
            "callers.txt",
        ]);
        let joined = redact_args(args).join(" ");
        assert_eq!(
            joined,
            "enygma-loadgen callers --token *** --caller alice:***:closed=16 \
             --caller=bob:env:BOB_TOKEN:open=2/s --caller=carol:***:closed=1 --token=env:GW \
             --token=*** --callers callers.txt"
        );
        // A malformed --caller is hidden whole: it might be all token.
        assert_eq!(
            redact_args(strings(&["--caller", "justatoken"])),
            strings(&["--caller", "***"])
        );
    }
}
