//! The `oncebox` executable.

use oncebox::config::{parse_args, parse_tarantool_args, Command, USAGE};

/// mimalloc for every allocation the server makes (see Cargo.toml and
/// [`oncebox::allocator`] for why).
#[global_allocator]
static ALLOCATOR: oncebox::allocator::Allocator = oncebox::allocator::Allocator;

fn main() {
    // No transparent huge pages for this process. The heap grows all the time (a
    // remembered token, a memtable entry) and mimalloc hands pages back and takes them
    // again; with THP each first touch zeroes 2 MiB: clear_page was a quarter of the TX
    // thread's samples under replace-token, and partly used huge pages inflate RSS.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    // Before any thread starts: the instance a `background = true` start runs.
    oncebox::daemon::adopt_mark();
    // Invoked as `tarantool` (a symlink), the command line is tarantool's.
    let program = std::env::args().next().unwrap_or_default();
    let as_tarantool = std::path::Path::new(&program).file_name().is_some_and(|n| n == "tarantool");
    let parsed = if as_tarantool {
        use std::io::IsTerminal;
        parse_tarantool_args(std::env::args().skip(1), std::io::stdin().is_terminal())
    } else {
        parse_args(std::env::args().skip(1))
    };
    let cmd = match parsed {
        Ok(c) => c,
        // As 2.6's getopt reports it, with EX_USAGE.
        Err(e) if as_tarantool => {
            eprintln!("{program}: {e}");
            std::process::exit(64);
        }
        Err(e) => {
            eprintln!("oncebox: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    match cmd {
        Command::Help => print!("{USAGE}"),
        Command::Version => {
            println!("Tarantool {}-0-oncebox", oncebox::protocol::REPORTED_VERSION);
            println!("oncebox {}", env!("CARGO_PKG_VERSION"));
        }
        Command::Script(run) => {
            let filter = tracing_subscriber::EnvFilter::try_new("warn,fjall=warn,lsm_tree=warn")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_ansi(false)
                .with_writer(|| oncebox::log_sink::Writer)
                .init();
            let outcome = oncebox::run_script(run);
            // As 2.6: the pid file goes when the process does.
            oncebox::pid_file::release();
            match outcome {
                Ok(code) => std::process::exit(code),
                Err(e) => {
                    eprintln!("oncebox: {e}");
                    std::process::exit(1);
                }
            }
        }
        Command::Serve(cfg) => {
            // fjall narrates recovery at info level; keep its voice down unless asked.
            let filter = tracing_subscriber::EnvFilter::try_new(format!("{},fjall=warn,lsm_tree=warn", cfg.log_level))
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
            use std::io::IsTerminal;
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(|| oncebox::log_sink::Writer)
                .init();
            if let Err(e) = oncebox::run(cfg) {
                eprintln!("oncebox: {e}");
                std::process::exit(1);
            }
        }
    }
}
