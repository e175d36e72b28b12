//! Where log lines go: standard error, or the file `box.cfg{log = ...}` names.
//!
//! The server's own lines (tracing) and the `log` module's go the same way, one
//! `write` per line, so lines from threads do not interleave.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The log file, once one is set; standard error until then.
static FILE: Mutex<Option<File>> = Mutex::new(None);

/// The file a `box.cfg{log = ...}` value names, relative to `work_dir`: a path,
/// or `file:` and a path, as in 2.6. `None` for the kinds oncebox does not
/// write to (`pipe:` or `|` and a command, `syslog:`); those stay on standard error.
#[must_use]
pub fn file_of(value: &str, work_dir: &Path) -> Option<PathBuf> {
    if value.starts_with('|') || value.starts_with("pipe:") || value.starts_with("syslog:") || value.is_empty() {
        return None;
    }
    let path = Path::new(value.strip_prefix("file:").unwrap_or(value));
    Some(if path.is_absolute() { path.to_path_buf() } else { work_dir.join(path) })
}

/// Sends every later line to `path` (appended to; created if missing).
///
/// # Errors
/// When the file cannot be opened; lines keep going where they went.
pub fn to_file(path: &Path) -> std::io::Result<()> {
    let file = OpenOptions::new().append(true).create(true).open(path)?;
    *FILE.lock().unwrap_or_else(PoisonError::into_inner) = Some(file);
    Ok(())
}

/// Writes `bytes` (whole lines) to the log; a line that cannot be written is
/// dropped, as Tarantool's logger drops it.
pub fn write(bytes: &[u8]) {
    let mut file = FILE.lock().unwrap_or_else(PoisonError::into_inner);
    match file.as_mut() {
        Some(f) => {
            let _ = f.write_all(bytes);
        }
        None => {
            let _ = std::io::stderr().lock().write_all(bytes);
        }
    }
}

/// A writer for the server's own (tracing) lines: each write goes to [`write`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Writer;

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_value_names_a_file_under_work_dir_or_none() {
        let work = Path::new("/w");
        assert_eq!(file_of("a.log", work), Some(PathBuf::from("/w/a.log")));
        assert_eq!(file_of("file:b.log", work), Some(PathBuf::from("/w/b.log")));
        assert_eq!(file_of("/var/log/c.log", work), Some(PathBuf::from("/var/log/c.log")));
        assert_eq!(file_of("pipe:cat", work), None);
        assert_eq!(file_of("| cat", work), None);
        assert_eq!(file_of("syslog:identity=t", work), None);
    }
}
