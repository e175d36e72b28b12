//! `box.cfg{pid_file}`: the process id in a file, locked while the process runs,
//! removed when it exits (as 2.6's pidfile). A file another live process holds
//! the lock on stops the start: "the daemon is already running: PID n"; one
//! left by a process that died is taken over.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The pid file this process holds, with its open (locked) file.
static HELD: Mutex<Option<(PathBuf, File)>> = Mutex::new(None);

/// Opens `path` (created if need be) and locks it, unless another process holds it.
fn lock(path: &Path) -> Result<File, String> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("failed to create pid file '{}': {e}", path.display()))?;
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        let mut held = String::new();
        let _ = file.read_to_string(&mut held);
        return Err(format!("the daemon is already running: PID {}", held.trim()));
    }
    Ok(file)
}

/// Creates (or takes over) the pid file at `path` and writes this process's id.
///
/// # Errors
/// Another live process holds it, or it cannot be written.
pub fn acquire(path: &Path) -> Result<(), String> {
    let mut file = lock(path)?;
    let pid = std::process::id().to_string();
    let written = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| file.write_all(pid.as_bytes()));
    written.map_err(|e| format!("failed to write pid file '{}': {e}", path.display()))?;
    // Removed at exit by its absolute path: the process may change directory.
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    *HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((absolute, file));
    Ok(())
}

/// Removes the pid file this process holds, if any (at exit).
pub fn release() {
    if let Some((path, file)) = HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
        let _ = std::fs::remove_file(path);
        drop(file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_pid_file_is_refused_and_a_released_one_removed() {
        let dir = std::env::temp_dir().join(format!("oncebox-pid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.pid");
        // Left by a process that died (no lock): taken over.
        std::fs::write(&path, "stale").unwrap();
        acquire(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), std::process::id().to_string());
        // Another open file description is refused the lock, and told the holder's pid.
        assert_eq!(lock(&path).err(), Some(format!("the daemon is already running: PID {}", std::process::id())));
        release();
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
