//! cuzk-bench: the client CLI of the cuzk daemon.
//!
//! Makes local fixtures and insecure test parameters, proves single
//! requests and batches through a running daemon, reads its status and
//! metrics, and runs the end-to-end demo (fixtures, an in-process daemon,
//! one verified proof of each kind). Stress rigs, GPU benches and
//! bellperson comparisons are in `cuzk-lab`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use cuzk_bench::{commands, demo, gen_params, remote, select};
use cuzk_core::ProofKind;

/// Default daemon address for client commands.
const DEFAULT_ADDR: &str = "http://127.0.0.1:9820";

#[derive(Parser)]
#[command(
    name = "cuzk-bench",
    version,
    about = "cuzk client: fixtures, proofs, status, demo"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// File holding the daemon's bearer token (sent as
    /// `authorization: Bearer <token>`; see daemon.auth_token_file).
    #[arg(long, global = true, env = "CUZK_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// PEM CA certificate to trust for a daemon serving TLS; addresses are
    /// then dialled over https.
    #[arg(long, global = true, env = "CUZK_TLS_CA")]
    tls_ca: Option<PathBuf>,
}

#[derive(clap::Args, Clone)]
struct Target {
    /// Daemon address: http://host:port, host:port or unix:///path.
    #[arg(long, env = "CUZK_ADDR", default_value = DEFAULT_ADDR)]
    addr: String,
}

use select::FixtureArgs;

#[derive(Subcommand)]
enum Command {
    /// Generate local fixtures: INSECURE test parameters and the inputs of
    /// one proof of every kind (C1 output, vanilla proofs). 2 KiB: sealed
    /// sectors (or `--synthetic`); larger sizes: synthetic sectors. Reuses
    /// what exists.
    GenFixtures {
        #[command(flatten)]
        fixtures: FixtureArgs,
        /// Only the inputs, no parameters (enough for check-circuits).
        #[arg(long)]
        inputs_only: bool,
    },
    /// Generate INSECURE local Groth16 parameters (.params / .vk) for a
    /// sector size's circuits with our fast generator.
    GenParams {
        /// all, porep, snap, window-post or winning-post.
        #[arg(long, default_value = "all")]
        kind: String,
        /// 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
        #[arg(long, default_value = "2KiB")]
        sector_size: cuzk_fixtures::SectorSize,
        /// Output directory [default: the size's fixture parameter directory].
        #[arg(long)]
        dir: Option<PathBuf>,
        /// RNG seed [default: the fixtures' seed of each circuit].
        #[arg(long)]
        seed: Option<u64>,
        /// Regenerate even if complete files exist.
        #[arg(long)]
        force: bool,
        /// Also time bellperson's generator (filecoin-proofs' own) on the same
        /// circuit and print the speed-up.
        #[arg(long)]
        compare: bool,
        /// Read each circuit's matrices from the constraint system recorded
        /// for its shape under <dir>/r1cs (as the daemon and `cuzk-lab
        /// synth-bench --child record` keep it) instead of synthesizing the
        /// blank circuit twice; an error when none is there.
        #[arg(long)]
        recorded: bool,
        /// Compute the fixed-base products (nearly all the work) on this
        /// CUDA device (`--gpu` alone: device 0); the same bytes, each
        /// chunk's first, middle and last products checked on the CPU. Needs a build
        /// with `--features cuda`.
        #[arg(long, num_args = 0..=1, default_missing_value = "0")]
        gpu: Option<usize>,
    },
    /// Prove one request of a kind from the fixtures through a running daemon.
    Single {
        /// porep, snap, window-post or winning-post.
        #[arg(long, value_parser = parse_kind)]
        kind: ProofKind,
        /// Idempotency key (optional).
        #[arg(long, default_value = "")]
        request_id: String,
        /// low, normal, high or critical [default: the kind's default].
        #[arg(long, value_parser = parse_priority)]
        priority: Option<i32>,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Prove many requests of a kind, some at a time, and report throughput.
    Batch {
        #[arg(long, value_parser = parse_kind, default_value = "window-post")]
        kind: ProofKind,
        #[arg(long, default_value_t = 4)]
        count: usize,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 2)]
        concurrency: usize,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Print the daemon's status.
    Status {
        #[command(flatten)]
        target: Target,
    },
    /// Print the daemon's Prometheus metrics.
    Metrics {
        #[command(flatten)]
        target: Target,
    },
    /// Make fixtures if needed, start a daemon in this process, prove one of
    /// each kind through gRPC and print one line per kind.
    Demo {
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
}

fn parse_kind(s: &str) -> Result<ProofKind, String> {
    ProofKind::parse(s)
        .ok_or_else(|| format!("unknown kind {s:?}: use porep, snap, window-post or winning-post"))
}

fn parse_priority(s: &str) -> Result<i32, String> {
    match s.to_ascii_lowercase().as_str() {
        "low" => Ok(1),
        "normal" => Ok(2),
        "high" => Ok(3),
        "critical" => Ok(4),
        _ => Err(format!(
            "unknown priority {s:?}: use low, normal, high or critical"
        )),
    }
}

fn main() -> Result<()> {
    cuzk_bench::init_logging();
    let cli = Cli::parse();
    remote::init(cli.token_file.as_deref(), cli.tls_ca.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::GenFixtures {
            fixtures,
            inputs_only,
        } => commands::gen_fixtures(&fixtures.selection(), inputs_only).map(|_| ()),
        Command::GenParams {
            kind,
            sector_size,
            dir,
            seed,
            force,
            compare,
            recorded,
            gpu,
        } => {
            let dir = dir.unwrap_or_else(|| cuzk_fixtures::default_params_dir(sector_size));
            let circuits = gen_params::circuits(sector_size, &kind)?;
            let how = gen_params::How {
                seed,
                force,
                compare,
                recorded,
                gpu,
            };
            gen_params::run(&circuits, &dir, how)
        }
        Command::Single {
            kind,
            request_id,
            priority,
            target,
            fixtures,
        } => runtime.block_on(commands::single(
            &target.addr,
            &fixtures.selection(),
            kind,
            request_id,
            priority.unwrap_or(0),
        )),
        Command::Batch {
            kind,
            count,
            concurrency,
            target,
            fixtures,
        } => runtime.block_on(commands::batch(
            &target.addr,
            &fixtures.selection(),
            kind,
            count,
            concurrency,
        )),
        Command::Status { target } => runtime.block_on(commands::status(&target.addr)),
        Command::Metrics { target } => runtime.block_on(commands::metrics(&target.addr)),
        Command::Demo { fixtures } => {
            let ok = runtime.block_on(demo::run(&fixtures.selection()))?;
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
