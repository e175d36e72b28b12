//! The data directory: its layout, format version and lock.
//!
//! ```text
//! <data-dir>/
//!   FORMAT          "oncebox-data <version>\n"; written once, checked at every start
//!   oncebox.lock    held (flock) while a server uses the directory
//!   fjall/          the meta database: keyspace `meta`
//!   fjall-rows/     the rows database: keyspace `rows`
//!   records/        `_idempotency`'s records: segment files (see [`super::records`])
//!   wal/            the write-ahead log: commit groups in files (see [`super::xlog`])
//! ```
//! A directory with other files but no FORMAT, or with an unknown version, is
//! refused: oncebox never starts empty on top of data it does not understand.
//! Format 1 kept `rows` in the meta database, format 2 kept the records among the
//! rows, format 3 kept the log in a keyspace `log` of the meta database; such a
//! directory is opened, its rows, records or log moved (see
//! [`super::fjall_store::FjallStore::open`]) and its FORMAT rewritten.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The on-disk format this build writes.
pub const FORMAT_VERSION: u32 = 4;
/// The oldest format this build reads (and upgrades).
pub const OLDEST_FORMAT_VERSION: u32 = 1;
const FORMAT_FILE: &str = "FORMAT";
/// The lock file's name.
pub const LOCK_FILE: &str = "oncebox.lock";
const FORMAT_MAGIC: &str = "oncebox-data";
const LOG_DIR: &str = "fjall";
const ROWS_DIR: &str = "fjall-rows";
/// `_idempotency`'s segments ([`super::records`]).
const RECORDS_DIR: &str = super::records::DIR;

/// Why a data directory cannot be used.
#[derive(Debug)]
pub enum DataDirError {
    /// Another process holds the lock.
    Locked(PathBuf),
    /// The FORMAT file names a version this build does not know.
    UnknownVersion(String),
    /// The directory holds files but is not an oncebox data directory.
    NotOncebox(PathBuf),
    /// An I/O error.
    Io(PathBuf, std::io::Error),
}

impl std::fmt::Display for DataDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Locked(p) => write!(f, "data directory {} is in use by another oncebox process", p.display()),
            Self::UnknownVersion(v) => write!(
                f,
                "data directory format '{v}' is not supported (this build reads '{FORMAT_MAGIC} {FORMAT_VERSION}')"
            ),
            Self::NotOncebox(p) => {
                write!(f, "{} is not empty and has no {FORMAT_FILE} file: not an oncebox data directory", p.display())
            }
            Self::Io(p, e) => write!(f, "data directory {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for DataDirError {}

/// An open, locked data directory.
#[derive(Debug)]
pub struct DataDir {
    root: PathBuf,
    /// Whether the directory was created by this open.
    pub is_new: bool,
    /// The format the directory was in when opened.
    pub version: u32,
    _lock: File,
}

impl DataDir {
    /// Opens (creating if needed) and locks a data directory.
    pub fn open(root: &Path) -> Result<Self, DataDirError> {
        let io = |e| DataDirError::Io(root.to_path_buf(), e);
        fs::create_dir_all(root).map_err(io)?;
        let lock =
            OpenOptions::new().create(true).truncate(false).write(true).open(root.join(LOCK_FILE)).map_err(io)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(DataDirError::Locked(root.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let format_path = root.join(FORMAT_FILE);
        let (is_new, version) = if format_path.exists() {
            let text = fs::read_to_string(&format_path).map_err(io)?;
            let text = text.trim();
            let version = text
                .strip_prefix(FORMAT_MAGIC)
                .and_then(|v| v.strip_prefix(' '))
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|v| (OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(v))
                .ok_or_else(|| DataDirError::UnknownVersion(text.to_owned()))?;
            (false, version)
        } else {
            // Only our own files from a first start that never finished (nothing
            // was served before FORMAT is written) may be here; they are redone.
            let ours = [LOCK_FILE, LOG_DIR, ROWS_DIR, RECORDS_DIR, "FORMAT.tmp"];
            let others = fs::read_dir(root)
                .map_err(io)?
                .filter_map(Result::ok)
                .any(|e| !ours.iter().any(|o| e.file_name() == *o));
            if others {
                return Err(DataDirError::NotOncebox(root.to_path_buf()));
            }
            for unfinished in [LOG_DIR, ROWS_DIR, RECORDS_DIR].map(|d| root.join(d)) {
                if unfinished.exists() {
                    fs::remove_dir_all(&unfinished).map_err(io)?;
                }
            }
            (true, FORMAT_VERSION)
        };
        Ok(Self { root: root.to_path_buf(), is_new, version, _lock: lock })
    }

    /// The directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the log database keeps its files.
    #[must_use]
    pub fn fjall_path(&self) -> PathBuf {
        self.root.join(LOG_DIR)
    }

    /// Where the rows database keeps its files.
    #[must_use]
    pub fn rows_path(&self) -> PathBuf {
        self.root.join(ROWS_DIR)
    }

    /// Whether FORMAT names an older format than this build writes (rewritten once
    /// the storage is open, and so upgraded).
    #[must_use]
    pub fn is_older_format(&self) -> bool {
        self.version < FORMAT_VERSION
    }

    /// Records the format version; called once the first commit is durable.
    pub fn write_format(&self) -> std::io::Result<()> {
        let tmp = self.root.join("FORMAT.tmp");
        let mut f = File::create(&tmp)?;
        writeln!(f, "{FORMAT_MAGIC} {FORMAT_VERSION}")?;
        f.sync_all()?;
        fs::rename(&tmp, self.root.join(FORMAT_FILE))?;
        File::open(&self.root)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("oncebox-datadir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn new_directory_then_reopen() {
        let p = tmp("new");
        let d = DataDir::open(&p).unwrap();
        assert!(d.is_new);
        d.write_format().unwrap();
        drop(d);
        let d = DataDir::open(&p).unwrap();
        assert!(!d.is_new);
        assert!(!d.is_older_format());
        drop(d);
        fs::remove_dir_all(&p).unwrap();
    }

    #[test]
    fn format_1_is_read_and_rewritten() {
        let p = tmp("format1");
        fs::create_dir_all(&p).unwrap();
        fs::write(p.join("FORMAT"), "oncebox-data 1\n").unwrap();
        let d = DataDir::open(&p).unwrap();
        assert!(!d.is_new && d.is_older_format());
        d.write_format().unwrap();
        drop(d);
        assert_eq!(fs::read_to_string(p.join("FORMAT")).unwrap(), format!("oncebox-data {FORMAT_VERSION}\n"));
        assert!(!DataDir::open(&p).unwrap().is_older_format());
        fs::remove_dir_all(&p).unwrap();
    }

    #[test]
    fn second_open_is_locked_out() {
        let p = tmp("lock");
        let _d = DataDir::open(&p).unwrap();
        assert!(matches!(DataDir::open(&p), Err(DataDirError::Locked(_))));
        fs::remove_dir_all(&p).unwrap();
    }

    #[test]
    fn unknown_version_and_foreign_directory_are_refused() {
        let p = tmp("version");
        fs::create_dir_all(&p).unwrap();
        for text in ["oncebox-data 99\n", "oncebox-data 0\n", "oncebox-data 2x\n", "oncebox-data2\n"] {
            fs::write(p.join("FORMAT"), text).unwrap();
            assert!(matches!(DataDir::open(&p), Err(DataDirError::UnknownVersion(_))), "{text}");
        }
        fs::remove_dir_all(&p).unwrap();
        let p = tmp("foreign");
        fs::create_dir_all(&p).unwrap();
        fs::write(p.join("something"), "x").unwrap();
        assert!(matches!(DataDir::open(&p), Err(DataDirError::NotOncebox(_))));
        fs::remove_dir_all(&p).unwrap();
    }
}
