//! The statement instances this server hosts (`--circuits`), and the list file they are read
//! from again on SIGHUP (`--circuits @FILE`), so that an operator adds and retires instances
//! without a restart. The names in the list belong to the statement registry
//! (`enygma_prover::statements::resolve_list_text`); this is the server's one copy of which of
//! them it serves, what a route checks before anything else (the others answer 404).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use enygma_prover::statements::{self, Instance};

/// The instances whose routes answer now.
pub struct Hosted {
    /// In registry order. A panic while the lock was held cannot leave the list half-written
    /// (each change is a retain, or a push and a sort of instances): it is used as is.
    now: RwLock<Vec<Instance>>,
    /// `--circuits @FILE`: read again on every SIGHUP. None: the set is fixed for the process's
    /// life (SIGHUP still replaces changed keys).
    file: Option<PathBuf>,
}

impl Hosted {
    /// `list`, fixed, or read again from `file` on each reload.
    pub fn new(list: Vec<Instance>, file: Option<PathBuf>) -> Self {
        Hosted {
            now: RwLock::new(list),
            file,
        }
    }

    pub fn contains(&self, instance: Instance) -> bool {
        self.read().contains(&instance)
    }

    /// The instances hosted now, in registry order.
    pub fn list(&self) -> Vec<Instance> {
        self.read().clone()
    }

    /// The list file, if the set follows one.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Routes of `instance` answer from now on.
    pub(crate) fn add(&self, instance: Instance) {
        let mut now = self.now.write().unwrap_or_else(|e| e.into_inner());
        if !now.contains(&instance) {
            now.push(instance);
            let order = |i: &Instance| statements::all_instances().position(|j| j == *i);
            now.sort_by_key(order);
        }
    }

    /// Routes of `retired` answer 404 from now on (requests already past the check go on).
    pub(crate) fn remove(&self, retired: &[Instance]) {
        let mut now = self.now.write().unwrap_or_else(|e| e.into_inner());
        now.retain(|i| !retired.contains(i));
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Instance>> {
        self.now.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// The 404 answer of a route whose instance is not hosted (never, or retired): one wording
/// whichever step finds it.
pub(crate) fn not_hosted(instance: Instance) -> String {
    format!("circuit {instance} is not hosted here")
}

/// The instances a circuit list file names (`--circuits @FILE`): lines of key stems and
/// statement names, commas or one per line, `#` comments. The error names the file and the
/// line.
pub fn read_list_file(path: &Path) -> Result<Vec<Instance>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the circuit list file {}: {e}", path.display()))?;
    statements::resolve_list_text(&text)
        .map_err(|e| format!("the circuit list file {}: {e}", path.display()))
}
