//! oncebox: a Tarantool-compatible database server that never applies a retried write twice.
//!
//! # Layout
//! - [`protocol`]: IPROTO bytes to typed requests and back; no I/O.
//! - [`server`]: sockets and connection tasks (tokio).
//! - [`executor`]: the TX thread that owns all mutable state.
//! - [`engine`]: spaces, indexes, catalogue, privileges; deterministic.
//! - [`storage`]: the seam where commits become durable.
//! - [`error`]: Tarantool-style errors.
//! - [`config`]: command-line settings.

pub mod config;
pub mod engine;
pub mod error;
pub mod executor;
pub mod protocol;
pub mod server;
pub mod storage;

use tokio::net::TcpListener;

/// Starts the TX thread and serves connections until the process is stopped.
pub fn run(config: config::Config) -> Result<(), Box<dyn std::error::Error>> {
    let instance_uuid = uuid::Uuid::new_v4();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    // The engine holds `Rc`s: it is built on, and never leaves, the TX thread.
    let admin_password = config.admin_password.clone();
    let tx_thread = std::thread::Builder::new().name("tx".into()).spawn(move || {
        let booted = engine::Engine::bootstrap(&instance_uuid).and_then(|mut engine| {
            if let Some(pw) = admin_password {
                engine.set_password(engine::access::user_id::ADMIN, pw.as_bytes())?;
            }
            engine.take_changes();
            Ok(engine)
        });
        match booted {
            Ok(engine) => {
                let _ = ready_tx.send(Ok(()));
                executor::Executor::new(engine, Box::new(storage::MemoryStorage::default())).run(rx);
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        }
    })?;
    ready_rx.recv().map_err(|_| "the TX thread did not start")??;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.net_threads)
        .thread_name("net")
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(&config.listen).await?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, "listening");
        // A machine-readable line for scripts that start oncebox on port 0.
        println!("oncebox listening on {addr}");
        let server_config = server::ServerConfig {
            instance_uuid,
            max_packet_size: config.max_packet_size,
            max_connections: config.max_connections,
        };
        tokio::select! {
            r = server::serve(listener, tx, server_config) => r,
            _ = tokio::signal::ctrl_c() => {
                tracing::info!("interrupted, shutting down");
                Ok(())
            }
        }
    })?;
    runtime.shutdown_background();
    drop(tx_thread);
    Ok(())
}

#[doc(hidden)]
pub mod fuzzing;
