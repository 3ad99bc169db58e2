//! The pool of request bodies: every `*.json` file of `--requests DIR` (sorted by name), or a
//! single file. Workers take bodies round-robin from one shared cursor.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};
use hyper::body::Bytes;

pub struct Pool {
    bodies: Vec<Bytes>,
    files: Vec<PathBuf>,
    next: AtomicUsize,
}

impl Pool {
    pub fn load(path: &Path) -> Result<Pool> {
        let mut files = Vec::new();
        if path.is_dir() {
            for e in
                std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))?
            {
                let p = e?.path();
                if p.is_file() && p.extension().is_some_and(|x| x == "json") {
                    files.push(p);
                }
            }
            files.sort();
        } else if path.is_file() {
            files.push(path.to_path_buf());
        } else {
            bail!("--requests {}: no such file or directory", path.display());
        }
        if files.is_empty() {
            bail!("--requests {}: no *.json request files", path.display());
        }
        let mut bodies = Vec::with_capacity(files.len());
        for f in &files {
            let b = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            serde_json::from_slice::<serde_json::Value>(&b)
                .with_context(|| format!("{} is not JSON", f.display()))?;
            bodies.push(Bytes::from(b));
        }
        Ok(Pool {
            bodies,
            files,
            next: AtomicUsize::new(0),
        })
    }

    pub fn from_bodies(bodies: Vec<Bytes>) -> Pool {
        assert!(!bodies.is_empty());
        Pool {
            bodies,
            files: Vec::new(),
            next: AtomicUsize::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    /// Number of distinct bodies (identical copies count once).
    pub fn distinct(&self) -> usize {
        let mut v: Vec<&Bytes> = self.bodies.iter().collect();
        v.sort();
        v.dedup();
        v.len()
    }

    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The next body, round-robin across all workers.
    pub fn next(&self) -> Bytes {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.bodies.len();
        self.bodies[i].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_and_distinct() {
        let p = Pool::from_bodies(vec![Bytes::from("a"), Bytes::from("b"), Bytes::from("a")]);
        let got: Vec<Bytes> = (0..4).map(|_| p.next()).collect();
        assert_eq!(got, vec!["a", "b", "a", "a"]);
        assert_eq!(p.len(), 3);
        assert_eq!(p.distinct(), 2);
    }

    #[test]
    fn loads_a_directory_sorted() {
        let dir = std::env::temp_dir().join(format!("loadgen-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.json"), "{\"x\":2}").unwrap();
        std::fs::write(dir.join("a.json"), "{\"x\":1}").unwrap();
        std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
        let p = Pool::load(&dir).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p.next(), "{\"x\":1}");
        std::fs::write(dir.join("c.json"), "not json").unwrap();
        assert!(Pool::load(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
