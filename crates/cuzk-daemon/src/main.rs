//! cuzk-daemon: the persistent proving daemon.
//!
//! Reads one TOML file (`--config`; every key optional, see
//! `cuzk.example.toml`), serves `cuzk.v1.ProvingEngine`, and stops gracefully
//! on SIGINT or SIGTERM, exiting 0; a second signal during that stop exits
//! at once (1).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use cuzk_server::Config;
use cuzk_server::Daemon;
use tokio::signal::unix::{signal, SignalKind};
use tracing::{info, warn};

#[derive(Parser)]
#[command(
    name = "cuzk-daemon",
    version,
    about = "cuzk Groth16 proving daemon for Filecoin"
)]
struct Args {
    /// TOML configuration file (every key optional; without it, defaults).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Override daemon.listen (`host:port` or `unix:///path`).
    #[arg(long)]
    listen: Option<String>,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(listen) = args.listen {
        config.daemon.listen = listen;
    }
    config.validate()?;
    if args.print_config {
        print!(
            "{}",
            toml::to_string_pretty(&config).context("serialising the config")?
        );
        print!("{}", auto_sizing(&config));
        return Ok(());
    }
    init_logging(&config.daemon.log);
    cuzk_server::runtime()
        .context("starting the async runtime")?
        .block_on(run(config))
}

async fn run(config: Config) -> Result<()> {
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let daemon = Daemon::start(config).await?;
    info!(address = %daemon.client_address(), "cuzk-daemon ready");
    daemon
        .serve(async move {
            tokio::select! {
                _ = sigterm.recv() => info!("SIGTERM received"),
                _ = sigint.recv() => info!("SIGINT received"),
            }
            // A second signal during the graceful stop stops at once.
            tokio::spawn(async move {
                tokio::select! {
                    _ = sigterm.recv() => {}
                    _ = sigint.recv() => {}
                }
                warn!(
                    "second stop signal: exiting now; journaled jobs run again at the next start \
                     (daemon.journal = false: the running ones are lost)"
                );
                std::process::exit(1);
            });
        })
        .await?;
    Ok(())
}

/// What the `"auto"` worker counts of `[engine]` come to on this machine,
/// as TOML comments (the rule: `cuzk_core::sizing`).
fn auto_sizing(config: &Config) -> String {
    use cuzk_core::sizing::{choose, Machine};
    let backends = match cuzk_server::backends::from_config(&config.gpus) {
        Ok(b) => b,
        Err(e) => return format!("\n# \"auto\" engine sizing unknown: {e}\n"),
    };
    let budget = match config.memory.resolve() {
        Ok(b) => b,
        Err(e) => return format!("\n# \"auto\" engine sizing unknown: {e}\n"),
    };
    let s = choose(&Machine::of(&backends, budget));
    let e = &config.engine;
    let mut out = String::from("\n# On this machine the engine runs with (\"auto\" sized so):\n");
    for (key, set, auto) in [
        (
            "partition_workers",
            e.partition_workers,
            s.partition_workers,
        ),
        (
            "gpu_workers_per_device",
            e.gpu_workers_per_device,
            s.gpu_workers_per_device,
        ),
        (
            "synthesized_queue",
            e.synthesized_queue,
            s.synthesized_queue,
        ),
    ] {
        let from = if set == cuzk_core::config::Count::Auto {
            "auto"
        } else {
            "set"
        };
        out += &format!("#   engine.{key} = {} ({from})\n", set.or(auto));
    }
    for why in &s.why {
        out += &format!("#   {why}\n");
    }
    out
}

fn init_logging(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    tracing_subscriber::fmt().with_env_filter(filter).init();
}
