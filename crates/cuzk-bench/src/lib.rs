//! cuzk-bench: the user's client of the cuzk daemon, as a library for its
//! binary and for cuzk-lab (which reuses the fixture selection, the
//! connection options and the in-process daemon set-up).
//!
//! [`select`] resolves the fixture flags, [`commands`] makes fixtures and
//! talks to a daemon (single, batch, status, metrics), [`demo`] is the
//! end-to-end demo, [`gen_params`] the fast insecure parameter generator's
//! command (its fixed-base products on a GPU with [`gpu_products`]), [`remote`] holds `--token-file` / `--tls-ca`, [`progress`] the
//! progress bars, [`init_logging`] the tools' log set-up.

pub mod commands;
pub mod demo;
pub mod gen_params;
pub mod gpu_products;
pub mod progress;
pub mod remote;
pub mod select;

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`): the client's
/// and cuzk-lab's set-up (the daemon logs as its config says).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
