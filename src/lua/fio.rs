//! `box.internal.fio`: the file system calls behind the `fio` module (lua/fio.lua).
//!
//! Each call returns its result, or `nil`, the error's text (`strerror`'s) and its
//! errno, which the Lua module turns into 2.6's messages and `errno()`. An open
//! file is known to Lua by its descriptor, as in 2.6; the [`File`] stays here
//! until `close` (which the handle's finalizer calls too).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use mlua::{IntoLuaMulti, Lua, LuaString, MultiValue, Table, Value};

/// Reads are capped at this many bytes per call (a size taken from a huge file's
/// stat must not reserve that much at once).
const MAX_READ_BYTES: usize = 1 << 30;

/// `nil`, the error's text (strerror's) and its errno.
fn failure(lua: &Lua, e: &std::io::Error) -> mlua::Result<MultiValue> {
    (Value::Nil, super::native::strerror(e), e.raw_os_error().unwrap_or(0)).into_lua_multi(lua)
}

/// The Lua result of an I/O call: its value, or [`failure`].
fn outcome<T: IntoLuaMulti>(lua: &Lua, r: std::io::Result<T>) -> mlua::Result<MultiValue> {
    match r {
        Ok(v) => v.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

fn path_of(s: &LuaString) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&s.as_bytes()))
}

/// A path as a Lua string (its bytes as they are).
fn path_string(lua: &Lua, path: &Path) -> mlua::Result<LuaString> {
    lua.create_string(path.as_os_str().as_bytes())
}

/// A stat result as 2.6 shows it: a table of the fields (times in seconds).
fn stat_table(lua: &Lua, m: &fs::Metadata) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("dev", m.dev())?;
    t.set("inode", m.ino())?;
    t.set("mode", m.mode())?;
    t.set("nlink", m.nlink())?;
    t.set("uid", m.uid())?;
    t.set("gid", m.gid())?;
    t.set("rdev", m.rdev())?;
    t.set("size", m.size())?;
    t.set("blksize", m.blksize())?;
    t.set("blocks", m.blocks())?;
    #[allow(clippy::cast_precision_loss, reason = "seconds since 1970 fit an f64's mantissa")]
    let seconds = |s: i64, ns: i64| s as f64 + ns as f64 / 1e9;
    t.set("atime", seconds(m.atime(), m.atime_nsec()))?;
    t.set("mtime", seconds(m.mtime(), m.mtime_nsec()))?;
    t.set("ctime", seconds(m.ctime(), m.ctime_nsec()))?;
    Ok(t)
}

/// The files `fio.open` opened, by descriptor: a handle is a descriptor number
/// (2.6's `struct fio_handle`), and each call finds its file here.
#[derive(Default)]
struct OpenFiles(HashMap<i32, File>);

fn bad_descriptor() -> std::io::Error {
    std::io::Error::from_raw_os_error(rustix::io::Errno::BADF.raw_os_error())
}

/// Runs `f` on the file open under `fd`: one `fio.open` opened, or else the
/// descriptor as it is, as 2.6 takes any descriptor (a script may set a handle's
/// `fh` to 1 to write to standard output, as luatest's tests do).
fn with_file<T>(lua: &Lua, fd: i32, f: impl FnOnce(&mut File) -> std::io::Result<T>) -> std::io::Result<T> {
    if let Some(mut files) = lua.app_data_mut::<OpenFiles>() {
        if let Some(file) = files.0.get_mut(&fd) {
            return f(file);
        }
    }
    with_foreign_descriptor(fd, f)
}

/// Runs `f` on descriptor `fd`, which fio did not open, without taking it over.
#[allow(unsafe_code, reason = "a descriptor Lua names by number is used for one call; see the SAFETY note")]
fn with_foreign_descriptor<T>(fd: i32, f: impl FnOnce(&mut File) -> std::io::Result<T>) -> std::io::Result<T> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(bad_descriptor());
    }
    // One the process does not have open is refused here, not handed to `File`.
    rustix::io::fcntl_getfd(
        // SAFETY: only asks the kernel about the number; an unopened one is EBADF.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
    )?;
    // SAFETY: the descriptor is open (checked above) and stays the script's: the
    // `File` is never dropped, so the descriptor is not closed here, and it lives
    // only for this call on the TX thread, where the script runs too.
    let mut file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    f(&mut file)
}

/// Bytes a write to a pipe or socket that poll(2) reports writable takes
/// without blocking (`PIPE_BUF`).
const NONBLOCKING_CHUNK: usize = 4096;

/// Writes `data` to `file`. A regular file takes it all. A pipe, socket or
/// terminal takes what it can without blocking the TX thread; returns the bytes
/// written and whether it stopped because the descriptor would block (the Lua
/// side then waits in its fiber until it is writable, as 2.6 writes in a
/// thread of its pool while the fiber waits).
fn write_without_blocking(file: &mut File, data: &[u8]) -> std::io::Result<(usize, bool)> {
    if file.metadata()?.file_type().is_file() {
        file.write_all(data)?;
        return Ok((data.len(), false));
    }
    let fd = file.as_raw_fd();
    let mut written = 0;
    while written < data.len() {
        let ready =
            super::socket::poll_fd(fd, 2, Some(0.0)).map_err(|(code, _)| std::io::Error::from_raw_os_error(code))?;
        if ready & 2 == 0 {
            return Ok((written, true));
        }
        let end = data.len().min(written + NONBLOCKING_CHUNK);
        match file.write(&data[written..end]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((written, false))
}

/// Reads up to `size` bytes (fewer at the end of the file).
fn read_up_to(file: &mut File, size: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    file.take(size.min(MAX_READ_BYTES) as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

fn pread_up_to(file: &File, size: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; size.min(MAX_READ_BYTES)];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64)? {
            0 => break,
            n => filled += n,
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Bytes as a Lua string, or [`failure`].
fn bytes_outcome(lua: &Lua, r: std::io::Result<Vec<u8>>) -> mlua::Result<MultiValue> {
    match r {
        Ok(bytes) => lua.create_string(bytes)?.into_lua_multi(lua),
        Err(e) => failure(lua, &e),
    }
}

/// The calls on an open file, each taking its descriptor first.
fn add_file_calls(lua: &Lua, t: &Table) -> mlua::Result<()> {
    t.set(
        "read",
        lua.create_function(|lua, (fd, size): (i32, usize)| {
            bytes_outcome(lua, with_file(lua, fd, |f| read_up_to(f, size)))
        })?,
    )?;
    t.set(
        "pread",
        lua.create_function(|lua, (fd, size, offset): (i32, usize, u64)| {
            bytes_outcome(lua, with_file(lua, fd, |f| pread_up_to(f, size, offset)))
        })?,
    )?;
    t.set(
        "write",
        // write(fd, data, from): writes data from byte `from` on; returns the bytes
        // written and whether the descriptor would have blocked before the end.
        lua.create_function(|lua, (fd, data, from): (i32, LuaString, Option<usize>)| {
            let data = data.as_bytes();
            let rest = data.get(from.unwrap_or(0)..).unwrap_or(&[]);
            outcome(lua, with_file(lua, fd, |f| write_without_blocking(f, rest)))
        })?,
    )?;
    t.set(
        "pwrite",
        lua.create_function(|lua, (fd, data, offset): (i32, LuaString, u64)| {
            let data = data.as_bytes();
            outcome(lua, with_file(lua, fd, |f| f.write_all_at(&data, offset)).map(|()| data.len()))
        })?,
    )?;
    t.set(
        "lseek",
        lua.create_function(|lua, (fd, offset, whence): (i32, i64, i32)| {
            let to = match whence {
                0 => SeekFrom::Start(u64::try_from(offset).unwrap_or(u64::MAX)),
                1 => SeekFrom::Current(offset),
                _ => SeekFrom::End(offset),
            };
            outcome(lua, with_file(lua, fd, |f| f.seek(to)))
        })?,
    )?;
    t.set(
        "ftruncate",
        lua.create_function(|lua, (fd, len): (i32, u64)| {
            outcome(lua, with_file(lua, fd, |f| f.set_len(len)).map(|()| true))
        })?,
    )?;
    t.set(
        "fsync",
        lua.create_function(|lua, fd: i32| outcome(lua, with_file(lua, fd, |f| f.sync_all()).map(|()| true)))?,
    )?;
    t.set(
        "fdatasync",
        lua.create_function(|lua, fd: i32| outcome(lua, with_file(lua, fd, |f| f.sync_data()).map(|()| true)))?,
    )?;
    t.set(
        "fstat",
        lua.create_function(|lua, fd: i32| match with_file(lua, fd, |f| f.metadata()) {
            Ok(meta) => stat_table(lua, &meta)?.into_lua_multi(lua),
            Err(e) => failure(lua, &e),
        })?,
    )?;
    t.set(
        "close",
        lua.create_function(|lua, fd: i32| {
            let closed = lua.app_data_mut::<OpenFiles>().and_then(|mut files| files.0.remove(&fd));
            match closed {
                Some(file) => {
                    drop(file);
                    true.into_lua_multi(lua)
                }
                None => failure(lua, &bad_descriptor()),
            }
        })?,
    )?;
    Ok(())
}

/// Opens `path` with open(2)'s `flags` and `mode`, passed through as they are
/// (as 2.6 does: `O_CREAT` without write access creates the file).
fn open(path: &Path, flags: i32, mode: u32) -> std::io::Result<File> {
    let flags = rustix::fs::OFlags::from_bits_retain(flags.cast_unsigned()) | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::from_raw_mode(mode))?;
    Ok(File::from(fd))
}

/// A name for `fio.tempdir`: random, so that concurrent servers do not collide.
fn temp_name() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::getrandom(&mut bytes);
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    bytes.iter().map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()])).collect()
}

/// Whether glob(3) leaves `path` out of `pattern`'s matches: a wildcard does
/// not match a leading dot (the glob crate, asked to require one, drops every
/// dot entry, even under a pattern that starts with a dot).
fn hidden_from_glob(pattern: &str, path: &[u8]) -> bool {
    let components = pattern.split('/');
    let names = path.split(|b| *b == b'/');
    components.zip(names).any(|(component, name)| name.first() == Some(&b'.') && !component.starts_with('.'))
}

/// Builds the `fio` natives table.
#[allow(clippy::too_many_lines, reason = "one registration per call, each a few lines")]
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    add_file_calls(lua, &t)?;
    t.set(
        "open",
        lua.create_function(|lua, (path, flags, mode): (LuaString, i32, u32)| {
            match open(&path_of(&path), flags, mode) {
                Ok(file) => {
                    let fd = file.as_raw_fd();
                    if lua.app_data_ref::<OpenFiles>().is_none() {
                        lua.set_app_data(OpenFiles::default());
                    }
                    if let Some(mut files) = lua.app_data_mut::<OpenFiles>() {
                        files.0.insert(fd, file);
                    }
                    fd.into_lua_multi(lua)
                }
                Err(e) => failure(lua, &e),
            }
        })?,
    )?;
    for (name, follow) in [("stat", true), ("lstat", false)] {
        t.set(
            name,
            lua.create_function(move |lua, path: LuaString| {
                let p = path_of(&path);
                match if follow { fs::metadata(&p) } else { fs::symlink_metadata(&p) } {
                    Ok(meta) => stat_table(lua, &meta)?.into_lua_multi(lua),
                    Err(e) => failure(lua, &e),
                }
            })?,
        )?;
    }
    t.set(
        "mkdir",
        lua.create_function(|lua, (path, mode): (LuaString, u32)| {
            outcome(lua, fs::DirBuilder::new().mode(mode).create(path_of(&path)).map(|()| true))
        })?,
    )?;
    // The calls on one path, and on two, that answer true or the error.
    type OnePath = fn(&Path) -> std::io::Result<()>;
    let one_path: [(&str, OnePath); 2] = [("rmdir", |p| fs::remove_dir(p)), ("unlink", |p| fs::remove_file(p))];
    for (name, call) in one_path {
        t.set(
            name,
            lua.create_function(move |lua, path: LuaString| outcome(lua, call(&path_of(&path)).map(|()| true)))?,
        )?;
    }
    type TwoPaths = fn(&Path, &Path) -> std::io::Result<()>;
    let two_paths: [(&str, TwoPaths); 3] = [
        ("rename", |a, b| fs::rename(a, b)),
        ("link", |a, b| fs::hard_link(a, b)),
        ("symlink", |a, b| std::os::unix::fs::symlink(a, b)),
    ];
    for (name, call) in two_paths {
        t.set(
            name,
            lua.create_function(move |lua, (from, to): (LuaString, LuaString)| {
                outcome(lua, call(&path_of(&from), &path_of(&to)).map(|()| true))
            })?,
        )?;
    }
    t.set(
        "readlink",
        lua.create_function(|lua, path: LuaString| match fs::read_link(path_of(&path)) {
            Ok(target) => path_string(lua, &target)?.into_lua_multi(lua),
            Err(e) => failure(lua, &e),
        })?,
    )?;
    t.set(
        "chmod",
        lua.create_function(|lua, (path, mode): (LuaString, u32)| {
            outcome(lua, fs::set_permissions(path_of(&path), fs::Permissions::from_mode(mode)).map(|()| true))
        })?,
    )?;
    t.set(
        "chown",
        lua.create_function(|lua, (path, uid, gid): (LuaString, Option<u32>, Option<u32>)| {
            outcome(lua, std::os::unix::fs::chown(path_of(&path), uid, gid).map(|()| true))
        })?,
    )?;
    t.set(
        "truncate",
        lua.create_function(|lua, (path, len): (LuaString, u64)| {
            let r = OpenOptions::new().write(true).open(path_of(&path)).and_then(|f| f.set_len(len));
            outcome(lua, r.map(|()| true))
        })?,
    )?;
    t.set(
        "listdir",
        lua.create_function(|lua, path: LuaString| {
            let names = fs::read_dir(path_of(&path)).and_then(|entries| {
                entries.map(|e| e.map(|e| e.file_name().as_bytes().to_vec())).collect::<std::io::Result<Vec<_>>>()
            });
            match names {
                Ok(names) => {
                    let list = lua.create_table()?;
                    for name in names {
                        list.raw_push(lua.create_string(name)?)?;
                    }
                    list.into_lua_multi(lua)
                }
                Err(e) => failure(lua, &e),
            }
        })?,
    )?;
    t.set(
        "glob",
        lua.create_function(|lua, pattern: String| {
            let list = lua.create_table()?;
            // As glob(3): a wildcard matches neither a slash nor a leading dot; a
            // pattern that cannot be parsed matches nothing.
            let options = glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: true,
                require_literal_leading_dot: false,
            };
            let mut found: Vec<Vec<u8>> = Vec::new();
            if let Ok(paths) = glob::glob_with(&pattern, options) {
                found.extend(paths.flatten().map(|p| p.as_os_str().as_bytes().to_vec()));
            }
            found.retain(|path| !hidden_from_glob(&pattern, path));
            // glob(3) sorts the whole list (the C locale's byte order).
            found.sort();
            for path in found {
                list.raw_push(lua.create_string(path)?)?;
            }
            Ok(list)
        })?,
    )?;
    t.set(
        "tempdir",
        lua.create_function(|lua, ()| {
            let base = std::env::var_os("TMPDIR").map_or_else(|| "/tmp".into(), PathBuf::from);
            let mut last = None;
            for _ in 0..16 {
                let dir = base.join(temp_name());
                match fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => {
                        return path_string(lua, &dir)?.into_lua_multi(lua);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                    Err(e) => return failure(lua, &e),
                }
            }
            failure(lua, &last.unwrap_or_else(|| std::io::Error::other("no free name")))
        })?,
    )?;
    t.set(
        "cwd",
        lua.create_function(|lua, ()| match std::env::current_dir() {
            Ok(dir) => path_string(lua, &dir)?.into_lua_multi(lua),
            Err(e) => failure(lua, &e),
        })?,
    )?;
    t.set("chdir", lua.create_function(|_, path: LuaString| Ok(std::env::set_current_dir(path_of(&path)).is_ok()))?)?;
    t.set(
        "umask",
        lua.create_function(|_, mask: Option<u32>| {
            let new = mask.unwrap_or(0) & 0o777;
            let old = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(new));
            if mask.is_none() {
                rustix::process::umask(old);
            }
            Ok(old.bits())
        })?,
    )?;
    t.set(
        "sync",
        lua.create_function(|_, ()| {
            rustix::fs::sync();
            Ok(true)
        })?,
    )?;
    t.set(
        "utime",
        lua.create_function(|lua, (path, atime, mtime): (LuaString, f64, f64)| {
            let at = |s: f64| {
                #[allow(clippy::cast_possible_truncation, reason = "seconds and nanoseconds of a timestamp")]
                rustix::fs::Timespec { tv_sec: s.floor() as i64, tv_nsec: ((s - s.floor()) * 1e9) as _ }
            };
            let times = rustix::fs::Timestamps { last_access: at(atime), last_modification: at(mtime) };
            let r = rustix::fs::utimensat(rustix::fs::CWD, path_of(&path), &times, rustix::fs::AtFlags::empty());
            outcome(lua, r.map(|()| true).map_err(std::io::Error::from))
        })?,
    )?;
    t.set(
        "copyfile",
        lua.create_function(|lua, (from, to): (LuaString, LuaString)| {
            outcome(lua, copy_file(&path_of(&from), &path_of(&to)).map(|()| true))
        })?,
    )?;
    Ok(t)
}

/// Copies a file's contents and permissions, holes left holes: only the parts
/// with data are read and written (SEEK_DATA/SEEK_HOLE), so a sparse file (fjall
/// preallocates 64 MiB journals this way) copies in the time its data takes and
/// stays sparse. Where the file system cannot tell holes, a whole copy.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let source = File::open(from)?;
    let meta = source.metadata()?;
    let target = OpenOptions::new().write(true).create(true).truncate(true).open(to)?;
    let len = meta.len();
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < len {
        let data = match rustix::fs::seek(&source, rustix::fs::SeekFrom::Data(pos)) {
            Ok(at) => at,
            // No data after `pos`: the rest is a hole.
            Err(rustix::io::Errno::NXIO) => break,
            Err(rustix::io::Errno::INVAL) if pos == 0 => {
                drop(target);
                return fs::copy(from, to).map(|_| ());
            }
            Err(e) => return Err(e.into()),
        };
        let hole = rustix::fs::seek(&source, rustix::fs::SeekFrom::Hole(data))?.min(len);
        let mut at = data;
        while at < hole {
            let want = usize::try_from((hole - at).min(buf.len() as u64)).unwrap_or(buf.len());
            let n = source.read_at(&mut buf[..want], at)?;
            if n == 0 {
                break;
            }
            target.write_all_at(&buf[..n], at)?;
            at += n as u64;
        }
        pos = hole.max(at);
    }
    target.set_len(len)?;
    target.set_permissions(meta.permissions())
}
