//! Writeback pacing for the journal under `wal_mode = 'write'`.
//!
//! In `write` mode a commit reaches the OS's page cache and is not synced. fjall
//! syncs a journal file when it moves on to the next one, holding the journal
//! lock, so every commit waited while tens of megabytes went to disk at once
//! (about 190 ms on this project's machines, 150 to 250 ms stalls a few times a
//! minute under load). Asking the kernel to start writing the journal back after
//! every megabyte, as Tarantool's xlog does with `sync_file_range`, leaves that
//! sync little to do. The request (`posix_fadvise(DONTNEED)`) starts writeback
//! without waiting for it; the journal is read back only at recovery, so dropping
//! its clean pages from the cache costs nothing.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{fadvise, Advice};

/// Bytes appended between two writeback requests.
pub const PACE_BYTES: usize = 1 << 20;

/// Starts the journal's writeback every [`PACE_BYTES`] appended.
#[derive(Debug)]
pub struct Pacer {
    dir: PathBuf,
    unpaced: usize,
    journal: Option<(PathBuf, File)>,
}

impl Pacer {
    /// A pacer for the journals fjall keeps in `dir`.
    #[must_use]
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), unpaced: 0, journal: None }
    }

    /// Notes `bytes` appended; every [`PACE_BYTES`], starts writing the journal back.
    pub fn appended(&mut self, bytes: usize) {
        self.unpaced += bytes;
        if self.unpaced < PACE_BYTES {
            return;
        }
        self.unpaced = 0;
        if let Err(e) = self.start_writeback() {
            // Only pacing is lost: durability is the journal's own.
            tracing::debug!(error = %e, "journal writeback request failed");
        }
    }

    fn start_writeback(&mut self) -> std::io::Result<()> {
        let Some(newest) = newest_journal(&self.dir)? else { return Ok(()) };
        if self.journal.as_ref().is_none_or(|(path, _)| *path != newest) {
            let file = File::open(&newest)?;
            self.journal = Some((newest, file));
        }
        if let Some((_, file)) = &self.journal {
            fadvise(file, 0, None, Advice::DontNeed)?;
        }
        Ok(())
    }
}

/// The journal fjall appends to: the highest-numbered `N.jnl` in `dir`.
fn newest_journal(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut newest: Option<(u64, PathBuf)> = None;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let number =
            path.extension().filter(|ext| *ext == "jnl").and_then(|_| path.file_stem()?.to_str()?.parse::<u64>().ok());
        if let Some(n) = number {
            if newest.as_ref().is_none_or(|(m, _)| n > *m) {
                newest = Some((n, path));
            }
        }
    }
    Ok(newest.map(|(_, path)| path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_journal_is_the_highest_numbered() {
        let dir = std::env::temp_dir().join(format!("oncebox-writeback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("keyspaces")).unwrap();
        assert_eq!(newest_journal(&dir).unwrap(), None);
        for name in ["9.jnl", "10.jnl", "lock", "version", "11.tmp"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        assert_eq!(newest_journal(&dir).unwrap(), Some(dir.join("10.jnl")));
        let mut pacer = Pacer::new(&dir);
        pacer.appended(PACE_BYTES - 1);
        assert!(pacer.journal.is_none(), "nothing asked before a megabyte");
        pacer.appended(1);
        assert_eq!(pacer.journal.as_ref().map(|(p, _)| p.clone()), Some(dir.join("10.jnl")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
