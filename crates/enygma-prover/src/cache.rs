//! What a prover derives from its keys and circuits, kept in files so that a restarted or newly
//! started server reads it in a fraction of a second instead of deriving it again:
//!
//! - an instance's constraint matrices (`{stem}.matrices`): a setup-mode synthesis of the
//!   circuit, 40-1,100 ms per instance on one core, most of a start;
//! - its proving key's precomputed MSM tables (`{stem}.tables`): seconds of a core per
//!   instance, tens of seconds while proofs compete for the CPU.
//!
//! Each file is bound to what it was derived from and checked whole before use:
//!
//! ```text
//! "enygma-cache\n" | kind (8 bytes) | format version (u16 LE) | binding (32 bytes)
//! | the value (ark-serialize, uncompressed) | SHA-256 of everything before it (32 bytes)
//! ```
//!
//! The binding is the SHA-256 of the proving key's file for tables, and the circuit fingerprint
//! ([`CIRCUIT_FINGERPRINT`]: the sources that decide the matrices) with the instance's stem for
//! matrices. A file bound to something else is stale, one whose digest does not match is
//! corrupt: both are reported as such and never used (the caller derives the value again and
//! replaces the file). Points are not put on the curve when read: the digest shows the bytes
//! are the ones a prover wrote for this key, which costs 0.1-0.2 s where checking every point
//! would cost seconds; the shapes are always checked, so even a file written with a valid digest
//! by someone else cannot make the prover index out of bounds. Writing goes through a temporary
//! file and a rename, so a reader never sees half a file, and two servers sharing the directory
//! at worst both write the same bytes.

use std::fs;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 13] = b"enygma-cache\n";
/// Bumped whenever the layout of a kept value changes (window widths, point encoding).
const FORMAT_VERSION: u16 = 1;

/// The SHA-256 of the sources that decide the constraint matrices (see `build.rs`).
pub const CIRCUIT_FINGERPRINT: &str = env!("ENYGMA_CIRCUIT_FINGERPRINT");

/// What a cache file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A proving key's precomputed MSM tables.
    Tables,
    /// An instance's constraint matrices.
    Matrices,
}

impl Kind {
    fn tag(self) -> &'static [u8; 8] {
        match self {
            Kind::Tables => b"tables\0\0",
            Kind::Matrices => b"matrices",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Kind::Tables => "tables",
            Kind::Matrices => "matrices",
        }
    }
}

/// What happened to a kept file, as the log says it for each kind (`None`: not logged).
#[derive(Clone, Copy)]
enum Event {
    Read,
    /// Bound to another key or build: expected after keys were replaced or after an upgrade.
    Stale,
    /// Damaged, of another format version, or unreadable.
    Unusable,
    Kept,
    /// Not written: the directory is read-only, a deployment's choice.
    ReadOnly,
    NotKept,
}

impl Kind {
    fn says(self, event: Event) -> Option<&'static str> {
        Some(match (self, event) {
            (Kind::Tables, Event::Read) => "precomputed MSM tables read from the cache",
            (Kind::Tables, Event::Stale) => "kept MSM tables are another key's: building them",
            (Kind::Tables, Event::Unusable) => "kept MSM tables not used: building them",
            (Kind::Tables, Event::Kept) => "precomputed MSM tables kept for the next start",
            (Kind::Tables, Event::ReadOnly) => {
                "precomputed MSM tables not kept: the cache directory is read-only"
            }
            (Kind::Tables, Event::NotKept) => {
                "precomputed MSM tables not kept: the next start builds them again"
            }
            (Kind::Matrices, Event::Read | Event::Kept) => return None,
            (Kind::Matrices, Event::Stale) => {
                "kept matrices are another build's: synthesizing them"
            }
            (Kind::Matrices, Event::Unusable) => "kept matrices not used: synthesizing them",
            (Kind::Matrices, Event::ReadOnly) => {
                "matrices not kept: the cache directory is read-only"
            }
            (Kind::Matrices, Event::NotKept) => {
                "matrices not kept: the next start synthesizes them again"
            }
        })
    }
}

/// [`read`], for a caller that derives the value when the file cannot be used: the value, or
/// `None` with the reason logged for `circuit` (a missing file silently, a stale one at INFO, a
/// damaged or unreadable one as a warning).
pub fn read_kept<T: CanonicalDeserialize>(
    path: &Path,
    kind: Kind,
    binding: &[u8; 32],
    circuit: &dyn std::fmt::Display,
) -> Option<T> {
    let started = std::time::Instant::now();
    let path_shown = path.display();
    match read(path, kind, binding) {
        Ok(value) => {
            if let Some(message) = kind.says(Event::Read) {
                let elapsed_ms = started.elapsed().as_millis() as u64;
                tracing::info!(circuit = %circuit, path = %path_shown, elapsed_ms, "{message}");
            }
            return Some(value);
        }
        Err(CacheError::Missing) => {}
        Err(CacheError::Stale) => {
            if let Some(message) = kind.says(Event::Stale) {
                tracing::info!(circuit = %circuit, path = %path_shown, "{message}");
            }
        }
        Err(reason) => {
            if let Some(message) = kind.says(Event::Unusable) {
                tracing::warn!(circuit = %circuit, path = %path_shown, reason = %reason, "{message}");
            }
        }
    }
    None
}

/// [`write`], for a value that was just derived: keeping it is worth a log line, not an error
/// (a read-only directory at INFO, another failure as a warning).
pub fn keep<T: CanonicalSerialize>(
    path: &Path,
    kind: Kind,
    binding: &[u8; 32],
    value: &T,
    circuit: &dyn std::fmt::Display,
) {
    let path_shown = path.display();
    match write(path, kind, binding, value) {
        Ok(()) => {
            if let Some(message) = kind.says(Event::Kept) {
                tracing::info!(circuit = %circuit, path = %path_shown, "{message}");
            }
        }
        Err(e) if is_read_only(&e) => {
            if let Some(message) = kind.says(Event::ReadOnly) {
                tracing::info!(circuit = %circuit, path = %path_shown, "{message}");
            }
        }
        Err(e) => {
            if let Some(message) = kind.says(Event::NotKept) {
                tracing::warn!(circuit = %circuit, path = %path_shown, error = %e, "{message}");
            }
        }
    }
}

/// Why a cache file was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("no cache file")]
    Missing,
    #[error("the cache file was derived from another key, circuit or version of the prover")]
    Stale,
    #[error("the cache file is corrupt: {0}")]
    Corrupt(String),
    #[error("the cache file cannot be read: {0}")]
    Io(io::Error),
}

/// The cache file of `kind` for the key stem `stem` in `dir`.
pub fn path(dir: &Path, stem: &str, kind: Kind) -> PathBuf {
    dir.join(format!("{stem}.{}", kind.extension()))
}

/// The binding of an instance's matrices: the circuit fingerprint and its key stem.
pub fn matrices_binding(stem: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(CIRCUIT_FINGERPRINT.as_bytes());
    hasher.update([0]);
    hasher.update(stem.as_bytes());
    hasher.finalize().into()
}

/// Reads the value of `kind` at `path`, if it was written for `binding` and arrived whole.
pub fn read<T: CanonicalDeserialize>(
    path: &Path,
    kind: Kind,
    binding: &[u8; 32],
) -> Result<T, CacheError> {
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CacheError::Missing),
        Err(e) => return Err(CacheError::Io(e)),
    };
    let mut reader = Hashing::new(BufReader::with_capacity(1 << 20, file));
    let corrupt = |what: &str| CacheError::Corrupt(what.to_string());
    let mut head = [0u8; MAGIC.len() + 8 + 2 + 32];
    reader
        .read_exact(&mut head)
        .map_err(|_| corrupt("shorter than its header"))?;
    let (magic, rest) = head.split_at(MAGIC.len());
    let (tag, rest) = rest.split_at(8);
    let (version, bound_to) = rest.split_at(2);
    if magic != MAGIC || tag != kind.tag() {
        return Err(corrupt("not a cache file of this kind"));
    }
    // Another version of the format is as good as derived from something else.
    if version != FORMAT_VERSION.to_le_bytes() || bound_to != binding {
        return Err(CacheError::Stale);
    }
    let value = T::deserialize_with_mode(&mut reader, Compress::No, Validate::No)
        .map_err(|e| CacheError::Corrupt(format!("the contents do not parse: {e}")))?;
    let computed = reader.hasher.finalize();
    let mut trailer = [0u8; 32];
    reader
        .inner
        .read_exact(&mut trailer)
        .map_err(|_| corrupt("its digest is missing"))?;
    if trailer[..] != computed[..] {
        return Err(corrupt("its digest does not match its contents"));
    }
    if reader.inner.read(&mut [0u8; 1]).map_err(CacheError::Io)? != 0 {
        return Err(corrupt("bytes follow its digest"));
    }
    Ok(value)
}

/// Writes `value` of `kind`, derived from `binding`, to `path` (creating its directory),
/// replacing any file there at once.
pub fn write<T: CanonicalSerialize>(
    path: &Path,
    kind: Kind,
    binding: &[u8; 32],
    value: &T,
) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let partial = path.with_extension(format!(
        "{}.{}.partial",
        kind.extension(),
        std::process::id()
    ));
    let written = (|| {
        let mut writer = Hashing::new(BufWriter::with_capacity(
            1 << 20,
            fs::File::create(&partial)?,
        ));
        writer.write_all(MAGIC)?;
        writer.write_all(kind.tag())?;
        writer.write_all(&FORMAT_VERSION.to_le_bytes())?;
        writer.write_all(binding)?;
        value
            .serialize_uncompressed(&mut writer)
            .map_err(io::Error::other)?;
        let digest = writer.hasher.finalize();
        let mut file = writer.inner;
        file.write_all(&digest)?;
        file.into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .sync_all()?;
        fs::rename(&partial, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written
}

/// Whether a write failed because the directory is not the prover's to write (a read-only
/// volume or image layer, another user's directory): a deployment's choice, not a fault.
pub fn is_read_only(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

/// A reader or writer that hashes the bytes passing through it.
struct Hashing<T> {
    inner: T,
    hasher: Sha256,
}

impl<T> Hashing<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("enygma-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_value_reads_back_only_for_its_kind_and_binding_and_whole() {
        let dir = dir("unit");
        let path = path(&dir, "transfer-k6", Kind::Tables);
        assert!(path.ends_with("transfer-k6.tables"));
        let value: Vec<u64> = (0..1000).collect();
        let binding = [7u8; 32];
        assert!(matches!(
            read::<Vec<u64>>(&path, Kind::Tables, &binding),
            Err(CacheError::Missing)
        ));
        write(&path, Kind::Tables, &binding, &value).unwrap();
        assert_eq!(
            read::<Vec<u64>>(&path, Kind::Tables, &binding).unwrap(),
            value
        );
        assert!(matches!(
            read::<Vec<u64>>(&path, Kind::Tables, &[8u8; 32]),
            Err(CacheError::Stale)
        ));
        assert!(matches!(
            read::<Vec<u64>>(&path, Kind::Matrices, &binding),
            Err(CacheError::Corrupt(_))
        ));
        let whole = fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        flipped[whole.len() / 2] ^= 1;
        let mut old_version = whole.clone();
        old_version[MAGIC.len() + 8] ^= 1;
        for (what, bytes, stale) in [
            ("a bit flipped", flipped, false),
            ("cut short", whole[..whole.len() - 1].to_vec(), false),
            ("a byte appended", [whole.as_slice(), &[0]].concat(), false),
            ("only the header", whole[..MAGIC.len() + 42].to_vec(), false),
            ("another format version", old_version, true),
        ] {
            fs::write(&path, bytes).unwrap();
            let result = read::<Vec<u64>>(&path, Kind::Tables, &binding);
            match (stale, result) {
                (true, Err(CacheError::Stale)) | (false, Err(CacheError::Corrupt(_))) => {}
                (_, other) => panic!("{what}: {other:?}"),
            }
        }
        assert!(!fs::read_dir(&dir).unwrap().any(|e| e
            .unwrap()
            .path()
            .to_string_lossy()
            .ends_with(".partial")));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn matrices_are_bound_to_the_circuit_fingerprint_and_the_instance() {
        assert_eq!(CIRCUIT_FINGERPRINT.len(), 64);
        assert_ne!(
            matrices_binding("transfer-k6"),
            matrices_binding("transfer-k5")
        );
        assert_eq!(
            matrices_binding("transfer-k6"),
            matrices_binding("transfer-k6")
        );
    }
}
