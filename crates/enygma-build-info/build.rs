//! Records the git commit the binaries are built from as `ENYGMA_BUILD_COMMIT`: the short hash
//! of HEAD, with `-dirty` when the work tree has uncommitted changes, or `unknown` when git or
//! the repository is absent (a source tarball, a container build without `.git`). A build
//! without `.git` can name its commit in the environment variable of the same name
//! (`docker build --build-arg ENYGMA_BUILD_COMMIT=...`).
//!
//! The script reruns when HEAD moves (a commit, a checkout) or the index changes (staging), so
//! `-dirty` tells the state of the tree when it last ran; a clean checkout, as CI builds, is
//! exact.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ENYGMA_BUILD_COMMIT");
    let given = std::env::var("ENYGMA_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty());
    let commit = given.or_else(|| {
        git(&["rev-parse", "--short=12", "HEAD"]).map(|hash| {
            // `git status --porcelain` prints nothing for a clean tree; untracked files are not
            // part of the build's sources' state as git sees them, so they do not count.
            match git(&["status", "--porcelain", "--untracked-files=no"]) {
                Some(changes) if !changes.is_empty() => format!("{hash}-dirty"),
                _ => hash,
            }
        })
    });
    println!(
        "cargo:rustc-env=ENYGMA_BUILD_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );

    // Without any rerun-if-changed line cargo would rerun this on every change of this
    // package only, never on a commit. Watch what moves HEAD: HEAD itself (a checkout), the
    // branch's ref (a commit), packed refs, and the index (staging or committing).
    println!("cargo:rerun-if-changed=build.rs");
    for path in watched_git_files() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Runs git in the package's directory; `None` when git is missing or fails (no repository).
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8(output.stdout).ok()?.trim().to_owned())
}

/// The files whose change means another commit or tree state. A worktree has its own git
/// directory (HEAD, index) and shares refs with the main one, so both are asked of git.
fn watched_git_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        files.push(git_dir.join("HEAD"));
        files.push(git_dir.join("index"));
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        let common = Path::new(env!("CARGO_MANIFEST_DIR")).join(common);
        files.push(common.join("packed-refs"));
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            files.push(common.join(branch));
        }
    }
    // A path that does not exist would make cargo rerun the script on every build.
    files.retain(|path| path.exists());
    files
}
