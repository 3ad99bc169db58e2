//! What the enygma binaries were built from: the package version and the git commit, printed
//! by `--version`, logged by the server at start and exported as `enygma_build_info`.

/// The workspace's version (`Cargo.toml`), as in `CHANGELOG.md`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The short git commit of the build, `-dirty` when the tree had uncommitted changes, or
/// `unknown` when built outside a git checkout (see `build.rs`).
pub const COMMIT: &str = env!("ENYGMA_BUILD_COMMIT");

/// `--version`'s text after the program's name: `0.1.0 (commit 1a2b3c4d5e6f)`.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ENYGMA_BUILD_COMMIT"),
    ")"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_version_names_the_version_and_the_commit() {
        assert_eq!(LONG_VERSION, format!("{VERSION} (commit {COMMIT})"));
        assert!(!COMMIT.is_empty());
    }

    #[test]
    fn the_commit_is_a_hash_or_unknown() {
        let hash = COMMIT.strip_suffix("-dirty").unwrap_or(COMMIT);
        assert!(
            hash == "unknown" || (hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit())),
            "{COMMIT}"
        );
    }
}
