//! `box.backup.start()` and `box.backup.stop()`: a copy of the data for an
//! operator to take away, consistent as of the call.
//!
//! 2.6 lists the files of its last checkpoint and keeps them from garbage
//! collection until `stop()`. oncebox's files change under a reader (fjall
//! flushes and compacts on its own), so `start()` writes a data directory of
//! its own instead, `<data dir>/backup/`, with every row the server holds when
//! it is called (`_idempotency`'s records and the service clock included, so a
//! retry after a restore still gets its first outcome), and lists its files.
//! It is an ordinary data directory: copied whole to a new place, oncebox starts
//! on it. `stop()` deletes it. The TX thread writes it, so requests wait while
//! it is written.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::datadir::DataDir;
use super::fjall_store::FjallStore;
use super::{RowOp, WalMode};
use crate::engine::Engine;
use crate::error::{code, BoxError, BoxResult};

/// The backup directory's name in the data directory.
pub const DIR: &str = "backup";

/// The server's data directory (none without a WAL).
static DATA_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Whether a backup was started and not stopped.
static IN_PROGRESS: AtomicBool = AtomicBool::new(false);

/// Records where the server's data directory is (once, at start).
pub fn set_data_dir(root: &Path) {
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let _ = DATA_DIR.set(root);
}

/// `box.backup.start(checkpoint)`: writes the backup directory and returns its
/// files' paths, sorted. Only the latest state is there (`checkpoint` 0).
///
/// # Errors
/// `ER_BACKUP_IN_PROGRESS` before `stop()`; `ER_MISSING_SNAPSHOT` for an older
/// checkpoint, or without a data directory; `ER_SYSTEM` when it cannot be written.
pub fn start(engine: &Engine, instance_uuid: &uuid::Uuid, clock_ms: u64, checkpoint: u64) -> BoxResult<Vec<String>> {
    if IN_PROGRESS.load(Ordering::Acquire) {
        return Err(BoxError::new(code::BACKUP_IN_PROGRESS, "Backup is already in progress"));
    }
    let Some(root) = DATA_DIR.get().filter(|_| checkpoint == 0) else {
        return Err(BoxError::new(code::MISSING_SNAPSHOT, "Can't find snapshot"));
    };
    let path = root.join(DIR);
    let written = write(engine, instance_uuid, clock_ms, &path).and_then(|()| files(&path));
    match written {
        Ok(files) => {
            IN_PROGRESS.store(true, Ordering::Release);
            tracing::info!(path = %path.display(), files = files.len(), "backup written");
            Ok(files)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&path);
            Err(BoxError::new(code::SYSTEM, format!("backup to {}: {e}", path.display())))
        }
    }
}

/// `box.backup.stop()`: deletes the backup directory (nothing to do without one).
pub fn stop() {
    if !IN_PROGRESS.swap(false, Ordering::AcqRel) {
        return;
    }
    if let Some(root) = DATA_DIR.get() {
        let path = root.join(DIR);
        if let Err(e) = std::fs::remove_dir_all(&path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the backup");
        }
    }
}

/// Writes every row `engine` holds to a new data directory at `path` (replacing
/// what a backup left there), applied and synced, without a log.
fn write(engine: &Engine, instance_uuid: &uuid::Uuid, clock_ms: u64, path: &Path) -> Result<(), String> {
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(|e| e.to_string())?;
    }
    let dir = DataDir::open(path).map_err(|e| e.to_string())?;
    let store = FjallStore::open(&dir.fjall_path(), &dir.rows_path(), WalMode::Fsync).map_err(|e| e.to_string())?;
    let mut ops = crate::executor::row_ops(&engine.all_rows());
    ops.push(RowOp::Clock { ms: clock_ms });
    store.initialize(instance_uuid, ops).map_err(|e| e.to_string())?;
    store.checkpoint().map_err(|e| e.to_string())?;
    dir.write_format().map_err(|e| e.to_string())?;
    drop(store);
    drop(dir);
    // Everything is applied: the log is empty (a start makes a new one).
    let log = path.join(super::xlog::DIR);
    std::fs::remove_dir_all(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    Ok(())
}

/// The files under `path` but its lock file, sorted.
fn files(path: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let entry = entry.map_err(|e| e.to_string())?;
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if entry.path() != path.join(super::datadir::LOCK_FILE) {
                out.push(entry.path().display().to_string());
            }
        }
    }
    out.sort();
    Ok(out)
}
