//! File modes checked before the server starts: a secret it reads (the TLS private key, the
//! token files) must be readable by its owner only, and a proving key must not be writable by
//! everyone.
//!
//! Proving keys are public parameters (the verifying key is derived from them and published),
//! so reading one is harmless; what matters is who can replace it, since a swapped key makes
//! the server prove against parameters someone else chose. Write by others is refused; write by
//! the group is not, because a checkout under the common umask 002 (a private group per user)
//! is group-writable. Secrets are refused at any permission for others, and at any group
//! permission unless the file's group is the server's own (its effective group id, not root's)
//! and it may only read: a Kubernetes Secret volume mounted with `fsGroup` is group readable
//! (`0440`) whatever its `defaultMode`, and with `runAsGroup` equal to `fsGroup` that group is
//! the server's alone. Otherwise `chmod 600` (or `400`). The token files are checked again on
//! every reload (SIGHUP), by the same rule.
//!
//! `--allow-shared-secret-files` turns the refusals into warnings, for the setups whose
//! files cannot be made to pass.

use std::path::{Path, PathBuf};

/// What a file is to the server, and so which permissions it may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Read by the owner only: no group or other permission at all.
    Secret,
    /// Public, but not writable by others.
    ProvingKey,
}

impl FileKind {
    /// The permission bits this kind may not have.
    fn forbidden_bits(self) -> u32 {
        match self {
            FileKind::Secret => 0o077,
            FileKind::ProvingKey => 0o002,
        }
    }

    fn fix(self) -> &'static str {
        match self {
            FileKind::Secret => "chmod 600 (owner-only: a secret)",
            FileKind::ProvingKey => "chmod o-w (not everyone may replace a proving key)",
        }
    }
}

/// Checks one file's mode; the error names the file (through `flag`, where it was configured),
/// its mode and the fix. A file that cannot be read is left to its loader, which says why.
pub fn check(flag: &str, path: &Path, kind: FileKind) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(());
        };
        use std::os::unix::fs::MetadataExt;
        let mode = meta.permissions().mode() & 0o777;
        // SAFETY: getegid has no preconditions and cannot fail.
        let own_group = unsafe { libc::getegid() };
        let forbidden = match kind {
            // Read by the server's own group (not root's): the fsGroup of a Secret volume.
            FileKind::Secret if meta.gid() == own_group && own_group != 0 => 0o037,
            _ => kind.forbidden_bits(),
        };
        if mode & forbidden != 0 {
            return Err(format!(
                "{flag} {}: mode {mode:04o} lets {}; fix: {} (or start with \
                 --allow-shared-secret-files where the mode cannot be changed)",
                path.display(),
                match kind {
                    FileKind::Secret => "group or others read it",
                    FileKind::ProvingKey => "others write it",
                },
                kind.fix(),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (flag, path, kind);
    Ok(())
}

/// Checks every file of `files`: all the refusals, one a line.
pub fn check_all(files: &[(&str, PathBuf, FileKind)]) -> Result<(), String> {
    let errors: Vec<String> = files
        .iter()
        .filter_map(|(flag, path, kind)| check(flag, path, *kind).err())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn file_with_mode(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "bank-a 0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn secrets_must_be_owner_only_and_proving_keys_not_writable_by_others() {
        let dir = std::env::temp_dir().join(format!("enygma-modes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (mode, secret_ok, key_ok) in [
            (0o600, true, true),
            (0o400, true, true),
            (0o640, false, true),
            (0o644, false, true),
            (0o604, false, true),
            (0o660, false, true),
            (0o646, false, false),
            (0o666, false, false),
        ] {
            let path = file_with_mode(&dir, &format!("f{mode:o}"), mode);
            // Group read is allowed when the group is the server's own and not root's (as
            // root, a new file's group is root's: refused).
            let own_group = {
                use std::os::unix::fs::MetadataExt;
                // SAFETY: getegid has no preconditions and cannot fail.
                let egid = unsafe { libc::getegid() };
                std::fs::metadata(&path).unwrap().gid() == egid && egid != 0
            };
            let secret_ok = secret_ok || (own_group && mode & 0o037 == 0);
            let secret = check("--auth-token-file", &path, FileKind::Secret);
            assert_eq!(secret.is_ok(), secret_ok, "{mode:o}: {secret:?}");
            let key = check("--keys-dir", &path, FileKind::ProvingKey);
            assert_eq!(key.is_ok(), key_ok, "{mode:o}: {key:?}");
            if let Err(e) = secret {
                assert!(e.contains("--auth-token-file"), "{e}");
                assert!(e.contains(&path.display().to_string()), "{e}");
                assert!(
                    e.contains(&format!("{mode:04o}")) && e.contains("chmod 600"),
                    "{e}"
                );
                assert!(
                    !e.contains("0123456789abcdef"),
                    "the error quotes the file: {e}"
                );
            }
        }
        // Every refusal is reported, one a line; a missing file is its loader's to report.
        let a = file_with_mode(&dir, "a", 0o644);
        let b = file_with_mode(&dir, "b", 0o666);
        let err = check_all(&[
            ("--tls-key", a, FileKind::Secret),
            ("--keys-dir", b, FileKind::ProvingKey),
            (
                "--metrics-token-file",
                dir.join("missing"),
                FileKind::Secret,
            ),
        ])
        .unwrap_err();
        assert_eq!(err.lines().count(), 2, "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
