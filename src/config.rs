//! Command-line settings, each with a default that just works.

use std::path::PathBuf;

use crate::protocol::frame::DEFAULT_MAX_PACKET_SIZE;
use crate::storage::WalMode;

/// Server settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (`host:port`; a bare port means 127.0.0.1).
    pub listen: String,
    /// Largest accepted packet, in bytes.
    pub max_packet_size: u64,
    /// Most connections served at once.
    pub max_connections: usize,
    /// Network worker threads.
    pub net_threads: usize,
    /// tracing filter (`info`, `debug`, ...).
    pub log_level: String,
    /// Password to set for `admin` at start (`box.schema.user.passwd('admin', ...)`).
    pub admin_password: Option<String>,
    /// Where data is kept.
    pub data_dir: PathBuf,
    /// Durability of acknowledged writes.
    pub wal_mode: WalMode,
    /// The `idempotency_*` settings.
    pub idempotency: crate::idempotency::Settings,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3301".into(),
            max_packet_size: DEFAULT_MAX_PACKET_SIZE,
            max_connections: 10_000,
            net_threads: 1,
            log_level: "info".into(),
            admin_password: None,
            data_dir: PathBuf::from("oncebox_data"),
            wal_mode: WalMode::Write,
            idempotency: crate::idempotency::Settings::default(),
        }
    }
}

impl Config {
    /// The settings as `box.cfg` shows them (name, value as text).
    #[must_use]
    pub fn box_cfg_values(&self) -> Vec<(String, String)> {
        let mode = match self.idempotency.mode {
            crate::idempotency::Mode::Persistent => "persistent",
            crate::idempotency::Mode::Manual => "manual",
            crate::idempotency::Mode::Off => "off",
        };
        [
            ("listen", self.listen.clone()),
            ("wal_mode", self.wal_mode.name().to_owned()),
            ("checkpoint_wal_threshold", crate::storage::wal::checkpoint_threshold().to_string()),
            ("memtx_memory", crate::engine::memory::QUOTA.load(std::sync::atomic::Ordering::Relaxed).to_string()),
            ("work_dir", self.data_dir.display().to_string()),
            ("log_level", "5".to_owned()),
            ("idempotency_mode", mode.to_owned()),
            ("idempotency_lifetime", self.idempotency.lifetime_s.to_string()),
            ("idempotency_max_count", self.idempotency.max_count.to_string()),
            ("idempotency_max_size", self.idempotency.max_size.to_string()),
            ("idempotency_max_token_size", self.idempotency.max_token_size.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// Usage text for `--help`.
pub const USAGE: &str = "\
usage: oncebox [options]
       oncebox script.lua [args]   (also as `tarantool script.lua` through a symlink)

  --listen ADDR            host:port or port to serve IPROTO on (default 127.0.0.1:3301)
  --max-packet-size BYTES  largest request accepted (default 67108864)
  --max-connections N      most connections served at once (default 10000)
  --net-threads N          network threads (default 1)
  --log-level LEVEL        error, warn, info, debug, trace (default info)
  --admin-password PW      set the password of user 'admin' (remote admin login)
  --data-dir DIR           where data is kept (default ./oncebox_data)
  --wal-mode MODE          none (nothing logged; box.snapshot() saves the state),
                           write (default; survives kill -9), fsync (survives power loss)
  --checkpoint-wal-threshold BYTES  logged bytes of row changes after which the
                           log is applied to the rows in the background (default 16777216)
  --memtx-memory BYTES     the memory the spaces' tuples and indexes may take; a
                           write past it fails with OutOfMemory (default 268435456)
  --idempotency-mode M     persistent (default), manual, off
  --idempotency-lifetime S seconds of service time a token is remembered (default 3600)
  --idempotency-max-count N    most remembered tokens (default 1000000)
  --idempotency-max-size BYTES most bytes of stored replies (default 268435456)
  --idempotency-max-token-size BYTES  longest accepted token (default 256)
  -V, --version            print the version
  -h, --help               print this help
";

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Serve with this configuration.
    Serve(Config),
    /// Print the version.
    Version,
    /// Print usage.
    Help,
    /// Run Lua as the `tarantool` executable does (`oncebox app.lua args...`).
    Script(ScriptRun),
}

/// What a `tarantool [options] [script [args]]` command line runs, in order: the
/// `-l` and `-e` steps, the script, then the interactive console if asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptRun {
    /// Where the script comes from.
    pub source: ScriptSource,
    /// The script's arguments (`arg[1]`...).
    pub args: Vec<String>,
    /// `-l NAME` and `-e EXPR`, in command-line order.
    pub before: Vec<Before>,
    /// `-i`, or no script on a terminal: the console after the rest.
    pub interactive: bool,
}

/// A script's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    /// A file.
    File(PathBuf),
    /// Standard input: named `-`, or no script when standard input is not a terminal.
    Stdin {
        /// Named `-` on the command line (`arg[0]` is then `-`).
        named: bool,
    },
    /// None: only the `-l`/`-e` steps and the console.
    Nothing,
}

/// A step before the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// `-l NAME`: `NAME = require('NAME')`.
    Require(String),
    /// `-e EXPR`: the Lua chunk, run.
    Eval(String),
}

impl ScriptRun {
    /// A script file with its arguments, nothing before or after.
    #[must_use]
    pub fn file(path: PathBuf, args: Vec<String>) -> Self {
        Self { source: ScriptSource::File(path), args, before: Vec::new(), interactive: false }
    }
}

/// Parses a command line as the `tarantool` executable reads it (without the
/// program name); `stdin_is_terminal` decides what no script means. Errors are
/// worded as 2.6's getopt words them.
pub fn parse_tarantool_args(
    args: impl IntoIterator<Item = String>,
    stdin_is_terminal: bool,
) -> Result<Command, String> {
    let mut it = args.into_iter();
    let mut before = Vec::new();
    let mut interactive = false;
    let mut source = ScriptSource::Nothing;
    while let Some(arg) = it.next() {
        let mut value = |opt: char| it.next().ok_or_else(|| format!("option requires an argument -- '{opt}'"));
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-v" | "-V" | "--version" => return Ok(Command::Version),
            "-e" => before.push(Before::Eval(value('e')?)),
            "-l" => before.push(Before::Require(value('l')?)),
            "-i" => interactive = true,
            "-" => {
                source = ScriptSource::Stdin { named: true };
                break;
            }
            "--" => {
                if let Some(script) = it.next() {
                    source = ScriptSource::File(PathBuf::from(script));
                }
                break;
            }
            long if long.starts_with("--") => return Err(format!("unrecognized option '{long}'")),
            short if short.starts_with('-') => {
                return Err(format!("invalid option -- '{}'", short.chars().nth(1).unwrap_or('-')));
            }
            script => {
                source = ScriptSource::File(PathBuf::from(script));
                break;
            }
        }
    }
    // No script: standard input is one unless it is a terminal, where the console
    // starts (after it, with `-i`, as in 2.6).
    if source == ScriptSource::Nothing {
        if stdin_is_terminal {
            interactive = true;
        } else {
            source = ScriptSource::Stdin { named: false };
        }
    }
    Ok(Command::Script(ScriptRun { source, args: it.collect(), before, interactive }))
}

/// Parses command-line arguments (without the program name).
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut cfg = Config::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value =
            |what: &str| inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{what} needs a value"));
        match name.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "-v" | "--version" => return Ok(Command::Version),
            "--listen" => cfg.listen = normalize_listen(&value("--listen")?),
            "--max-packet-size" => cfg.max_packet_size = number(&value("--max-packet-size")?)?,
            "--max-connections" => cfg.max_connections = number(&value("--max-connections")?)?,
            "--net-threads" => cfg.net_threads = number::<usize>(&value("--net-threads")?)?.max(1),
            "--log-level" => cfg.log_level = value("--log-level")?,
            "--admin-password" => cfg.admin_password = Some(value("--admin-password")?),
            "--data-dir" => cfg.data_dir = PathBuf::from(value("--data-dir")?),
            "--idempotency-mode" => {
                let v = value("--idempotency-mode")?;
                cfg.idempotency.mode = crate::idempotency::Mode::parse(&v)
                    .ok_or_else(|| format!("unknown idempotency mode '{v}' (persistent, manual, off)"))?;
            }
            "--idempotency-lifetime" => cfg.idempotency.lifetime_s = number(&value("--idempotency-lifetime")?)?,
            "--idempotency-max-count" => cfg.idempotency.max_count = number(&value("--idempotency-max-count")?)?,
            "--idempotency-max-size" => cfg.idempotency.max_size = number(&value("--idempotency-max-size")?)?,
            "--idempotency-max-token-size" => {
                cfg.idempotency.max_token_size = number(&value("--idempotency-max-token-size")?)?;
            }
            "--memtx-memory" => crate::engine::memory::QUOTA
                .store(number(&value("--memtx-memory")?)?, std::sync::atomic::Ordering::Relaxed),
            "--checkpoint-wal-threshold" => {
                crate::storage::wal::set_checkpoint_threshold(number(&value("--checkpoint-wal-threshold")?)?)
            }
            "--wal-mode" => {
                let v = value("--wal-mode")?;
                cfg.wal_mode =
                    WalMode::parse(&v).ok_or_else(|| format!("unknown wal mode '{v}' (none, write, fsync)"))?;
            }
            other if !other.starts_with('-') => {
                // The first positional argument is a script; the rest are its arguments.
                return Ok(Command::Script(ScriptRun::file(PathBuf::from(other), it.collect())));
            }
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    Ok(Command::Serve(cfg))
}

fn number<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("'{s}' is not a number"))
}

/// Turns a bare port into a loopback address, as `box.cfg{listen = 3301}` does,
/// and `unix/:/path` into the socket's path (any address with a '/' is one).
#[must_use]
pub fn normalize_listen(s: &str) -> String {
    // A listen URI may carry `login:password@` (vshard gives its replicas' URIs
    // so): a server listens on the address and ignores the credentials, as 2.6.
    let s = s.rsplit_once('@').map_or(s, |(_, address)| address);
    if let Some(path) = s.strip_prefix("unix/:") {
        path.to_owned()
    } else if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        format!("127.0.0.1:{s}")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_listen_forms() {
        let Ok(Command::Serve(c)) = parse_args(["--listen".into(), "3302".into()]) else { panic!() };
        assert_eq!(c.listen, "127.0.0.1:3302");
        let Ok(Command::Serve(c)) = parse_args(["--listen=0.0.0.0:1".into()]) else { panic!() };
        assert_eq!(c.listen, "0.0.0.0:1");
        assert!(parse_args(["--bogus".into()]).is_err());
        assert_eq!(normalize_listen("unix/:/run/app.sock"), "/run/app.sock");
        assert_eq!(normalize_listen("unix/:./app.sock"), "./app.sock");
        assert_eq!(normalize_listen("storage:secret@127.0.0.1:3301"), "127.0.0.1:3301");
        assert_eq!(normalize_listen("admin:pw@unix/:/run/app.sock"), "/run/app.sock");
    }

    fn tarantool(args: &[&str], tty: bool) -> Result<Command, String> {
        parse_tarantool_args(args.iter().map(|s| (*s).to_owned()), tty)
    }

    #[test]
    fn reads_tarantools_command_line() {
        let Ok(Command::Script(run)) = tarantool(&["-l", "json", "-e", "x = 1", "app.lua", "a", "-e"], false) else {
            panic!()
        };
        assert_eq!(run.source, ScriptSource::File("app.lua".into()));
        assert_eq!(run.args, ["a", "-e"]);
        assert_eq!(run.before, [Before::Require("json".into()), Before::Eval("x = 1".into())]);
        assert!(!run.interactive);
        // No script: the console on a terminal, standard input otherwise.
        let Ok(Command::Script(run)) = tarantool(&[], true) else { panic!() };
        assert!(run.interactive && run.source == ScriptSource::Nothing);
        let Ok(Command::Script(run)) = tarantool(&["-e", "print(1)"], false) else { panic!() };
        assert!(!run.interactive && run.source == ScriptSource::Stdin { named: false });
        let Ok(Command::Script(run)) = tarantool(&["-i"], false) else { panic!() };
        assert!(run.interactive && run.source == ScriptSource::Stdin { named: false });
        let Ok(Command::Script(run)) = tarantool(&["-", "x"], true) else { panic!() };
        assert!(run.source == ScriptSource::Stdin { named: true } && run.args == ["x"]);
        assert_eq!(tarantool(&["--bogus"], true).unwrap_err(), "unrecognized option '--bogus'");
        assert_eq!(tarantool(&["-x"], true).unwrap_err(), "invalid option -- 'x'");
        assert_eq!(tarantool(&["-e"], true).unwrap_err(), "option requires an argument -- 'e'");
    }
}
