//! The `oncebox` executable.

use oncebox::config::{parse_args, Command, USAGE};

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
    let cmd = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
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
        Command::Script(path, args) => {
            let filter = tracing_subscriber::EnvFilter::try_new("warn,fjall=warn,lsm_tree=warn")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_ansi(false)
                .with_writer(|| oncebox::log_sink::Writer)
                .init();
            let outcome = oncebox::run_script(path, args);
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
