//! Who offers load in a `callers` run: named callers, each with its own bearer token and its
//! own closed or open loop, from `--caller NAME:TOKEN:SCHEDULE` and from a callers file (one
//! `NAME TOKEN SCHEDULE` a line). Errors name the caller and the field, never the token.

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::schedule::Load;
use crate::token::{Secret, Token};

/// One caller: the name the server knows its token by, the token, and the load it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerSpec {
    pub name: String,
    pub token: Token,
    pub load: Load,
}

/// How a schedule is written: `closed=16`, `open=2/s`.
pub fn schedule_text(load: &Load) -> String {
    match load {
        Load::Closed { concurrency } => format!("closed={concurrency}"),
        Load::Open { rate_rps } => format!("open={rate_rps}/s"),
    }
}

/// `closed=N` (N requests in flight, back to back) or `open=R/s` (Poisson arrivals at R
/// requests per second; `open=R` too).
pub fn parse_schedule(s: &str) -> Result<Load, String> {
    let expected = "expected closed=N (N requests in flight) or open=R/s (R requests per second)";
    let (mode, value) = s
        .split_once('=')
        .ok_or_else(|| format!("SCHEDULE {s:?}: {expected}"))?;
    match mode.trim() {
        "closed" => match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Load::Closed { concurrency: n }),
            _ => Err(format!(
                "SCHEDULE {s:?}: closed=N needs a whole number of requests in flight, at least 1"
            )),
        },
        "open" => {
            let rate = value.trim();
            let rate = rate.strip_suffix("/s").unwrap_or(rate);
            match rate.trim().parse::<f64>() {
                Ok(r) if r > 0.0 && r.is_finite() => Ok(Load::Open { rate_rps: r }),
                _ => Err(format!(
                    "SCHEDULE {s:?}: open=R/s needs a rate in requests per second above 0"
                )),
            }
        }
        _ => Err(format!("SCHEDULE {s:?}: {expected}")),
    }
}

/// A caller's name as enygma-server's token file has it: 1 to 64 characters of
/// `A-Z a-z 0-9 . _ -`. `at` says where it was given.
fn check_name(name: &str, at: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        // A long value may be a token in the wrong field: it is not repeated.
        let shown = if name.len() <= 64 {
            format!(" {name:?}")
        } else {
            String::new()
        };
        bail!("{at}: NAME{shown} must be 1 to 64 characters of A-Z a-z 0-9 . _ -");
    }
    Ok(())
}

fn caller(name: &str, token: &str, schedule: &str, at: &str) -> Result<CallerSpec> {
    check_name(name, at)?;
    let who = format!("caller {name:?}");
    let load = parse_schedule(schedule).map_err(|e| anyhow::anyhow!("{who}: {e}"))?;
    let token = Token::resolve(token, &format!("{who}: TOKEN"))?;
    Ok(CallerSpec {
        name: name.to_string(),
        token,
        load,
    })
}

/// `NAME:TOKEN:SCHEDULE`, where TOKEN may be `env:VAR`. `index` (from 1) says which `--caller`
/// it is in errors that cannot trust the name.
pub fn parse_caller(arg: &str, index: usize) -> Result<CallerSpec> {
    let at = format!("--caller #{index}");
    match (arg.split_once(':'), arg.rsplit_once(':')) {
        (Some((name, _)), Some((rest, schedule))) if rest.len() > name.len() => {
            caller(name, &rest[name.len() + 1..], schedule, &at)
        }
        _ => bail!(
            "{at}: expected NAME:TOKEN:SCHEDULE, e.g. alice:env:ALICE_TOKEN:closed=16 or \
             bob:TOKEN:open=2/s"
        ),
    }
}

/// A callers file: one `NAME TOKEN SCHEDULE` a line (TOKEN may be `env:VAR`); blank lines and
/// `#` comments are skipped. `source` names the file in errors.
pub fn parse_callers_file(text: &str, source: &str) -> Result<Vec<CallerSpec>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{source}:{}", i + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, token, schedule] = fields[..] else {
            bail!(
                "{at}: expected NAME TOKEN SCHEDULE (3 fields), found {}",
                fields.len()
            );
        };
        out.push(caller(name, token, schedule, &at)?);
    }
    Ok(out)
}

/// Every caller of the run: the `--caller` values, then the callers file's lines. At least
/// one, each name once.
pub fn collect(args: &[Secret], file: Option<&Path>) -> Result<Vec<CallerSpec>> {
    let mut callers = args
        .iter()
        .enumerate()
        .map(|(i, a)| parse_caller(a.expose(), i + 1))
        .collect::<Result<Vec<_>>>()?;
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading --callers {}", path.display()))?;
        callers.extend(parse_callers_file(&text, &path.display().to_string())?);
    }
    if callers.is_empty() {
        bail!("no callers: give --caller NAME:TOKEN:SCHEDULE (repeatable) or --callers FILE");
    }
    for (i, c) in callers.iter().enumerate() {
        if callers[..i].iter().any(|d| d.name == c.name) {
            bail!("caller {:?} is given twice", c.name);
        }
    }
    Ok(callers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN_A: &str = "alicetoken0123456789";

    fn err(r: Result<CallerSpec>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn schedules() {
        assert_eq!(
            parse_schedule("closed=16"),
            Ok(Load::Closed { concurrency: 16 })
        );
        assert_eq!(parse_schedule("open=2/s"), Ok(Load::Open { rate_rps: 2.0 }));
        assert_eq!(parse_schedule("open=0.5"), Ok(Load::Open { rate_rps: 0.5 }));
        for (s, says) in [
            ("closed=0", "at least 1"),
            ("closed=1.5", "whole number"),
            ("open=0/s", "above 0"),
            ("open=inf", "above 0"),
            ("burst=3", "expected closed=N"),
            ("16", "expected closed=N"),
        ] {
            let e = parse_schedule(s).unwrap_err();
            assert!(
                e.starts_with(&format!("SCHEDULE {s:?}")) && e.contains(says),
                "{e}"
            );
        }
        for load in [
            Load::Closed { concurrency: 3 },
            Load::Open { rate_rps: 0.25 },
        ] {
            assert_eq!(parse_schedule(&schedule_text(&load)), Ok(load));
        }
    }

    #[test]
    fn caller_arguments() {
        let a = parse_caller(&format!("alice:{TOKEN_A}:closed=16"), 1).unwrap();
        assert_eq!(a.name, "alice");
        assert_eq!(a.load, Load::Closed { concurrency: 16 });
        assert_eq!(
            a.token.header().to_str().unwrap(),
            format!("Bearer {TOKEN_A}")
        );

        std::env::set_var("ENYGMA_LOADGEN_TEST_BOB", "bobtoken0123456789xyz");
        let b = parse_caller("bob:env:ENYGMA_LOADGEN_TEST_BOB:open=2/s", 2).unwrap();
        assert_eq!(
            (b.name.as_str(), b.load),
            ("bob", Load::Open { rate_rps: 2.0 })
        );
        assert_eq!(
            b.token.header().to_str().unwrap(),
            "Bearer bobtoken0123456789xyz"
        );

        // Errors name the caller (or its position) and the field, never the token.
        let e = err(parse_caller(&format!("bob:{TOKEN_A}:closed=0"), 2));
        assert!(
            e.starts_with("caller \"bob\": SCHEDULE \"closed=0\""),
            "{e}"
        );
        let e = err(parse_caller("bob:bad token!:closed=1", 2));
        assert!(e.starts_with("caller \"bob\": TOKEN: "), "{e}");
        assert!(!e.contains("bad token"), "{e}");
        let e = err(parse_caller("bob:env:ENYGMA_LOADGEN_TEST_NOPE:closed=1", 2));
        assert!(e.contains("ENYGMA_LOADGEN_TEST_NOPE is not set"), "{e}");
        let e = err(parse_caller(&format!("bo b:{TOKEN_A}:closed=1"), 3));
        assert!(e.starts_with("--caller #3: NAME \"bo b\""), "{e}");
        let e = err(parse_caller(&format!(":{TOKEN_A}:closed=1"), 3));
        assert!(e.starts_with("--caller #3: NAME \"\""), "{e}");
        for malformed in [TOKEN_A.to_string(), format!("alice:{TOKEN_A}")] {
            let e = err(parse_caller(&malformed, 4));
            assert!(
                e.starts_with("--caller #4: expected NAME:TOKEN:SCHEDULE"),
                "{e}"
            );
            assert!(!e.contains(TOKEN_A), "{e}");
        }
    }

    #[test]
    fn callers_files() {
        let text = format!(
            "# name token schedule\n\nalice {TOKEN_A} closed=16\n  bob   env:ENYGMA_LOADGEN_TEST_BOB2  open=1/s  \n"
        );
        std::env::set_var("ENYGMA_LOADGEN_TEST_BOB2", "bobtoken0123456789xyz");
        let c = parse_callers_file(&text, "callers.txt").unwrap();
        assert_eq!(
            c.iter()
                .map(|c| (c.name.as_str(), c.load))
                .collect::<Vec<_>>(),
            vec![
                ("alice", Load::Closed { concurrency: 16 }),
                ("bob", Load::Open { rate_rps: 1.0 })
            ]
        );
        let e = parse_callers_file(&format!("alice {TOKEN_A}\n"), "f")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "f:1: expected NAME TOKEN SCHEDULE (3 fields), found 2");
        let e = parse_callers_file(&format!("# x\nalice {TOKEN_A} open=-1/s\n"), "f")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("caller \"alice\": SCHEDULE \"open=-1/s\""),
            "{e}"
        );
    }

    #[test]
    fn a_run_needs_callers_with_distinct_names() {
        let arg = |s: String| Secret::from_arg(&s).unwrap();
        let two = [
            arg(format!("a:{TOKEN_A}:closed=1")),
            arg(format!("a:{TOKEN_A}:closed=2")),
        ];
        assert_eq!(
            collect(&two, None).unwrap_err().to_string(),
            "caller \"a\" is given twice"
        );
        assert!(collect(&[], None)
            .unwrap_err()
            .to_string()
            .starts_with("no callers"));
        let e = collect(&two[..1], Some(Path::new("/nonexistent/callers.txt")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--callers /nonexistent/callers.txt"), "{e}");
        assert_eq!(collect(&two[..1], None).unwrap().len(), 1);
    }
}
