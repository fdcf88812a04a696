//! cuzk-bench: the client CLI of the cuzk daemon.
//!
//! Makes local fixtures, proves single requests and batches through a running
//! daemon, reads its status and metrics, and runs the end-to-end demo
//! (fixtures, an in-process daemon, one verified proof of each kind).

mod check_circuits;
mod commands;
mod demo;
mod gen_params;
mod gpu_bench;
mod gpu_stress;
mod progress;
mod prover_bench;
mod remote;
mod select;
mod srs_cmd;
mod stress;
mod synth_bench;

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
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
    /// Submit a mixed load (kinds, priorities, idempotency probes), J at a
    /// time, and report outcomes and latencies. Without --addr, starts a
    /// daemon in this process on the fixtures' parameters. Ends with
    /// `stress jobs=N completed=.. failed=.. lost=.. duplicated=.. verified=V/N wall_ms=..`;
    /// exits non-zero unless lost=0, duplicated=0 and verified=N.
    Stress {
        /// Requests to submit.
        #[arg(long, default_value_t = 12)]
        jobs: usize,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Comma-separated kinds to draw from: porep, snap, window-post, winning-post.
        #[arg(
            long,
            value_delimiter = ',',
            value_parser = parse_kind,
            default_value = "porep,snap,window-post,winning-post"
        )]
        mix: Vec<ProofKind>,
        /// A running daemon (it must use the fixtures' parameters) [default:
        /// start one in this process].
        #[arg(long)]
        addr: Option<String>,
        /// Seed for the kinds' order and the priorities [default: random, printed].
        #[arg(long)]
        seed: Option<u64>,
        /// Give up after this many seconds; unanswered jobs count as lost.
        #[arg(long, default_value_t = 3600)]
        timeout_secs: u64,
        /// Print one line per job, in answer order, before the summary.
        #[arg(long)]
        verbose: bool,
        /// Prover backend of the in-process daemon: auto, cpu or cuda.
        #[arg(long, value_parser = parse_backend, default_value = "auto")]
        backend: cuzk_core::config::BackendChoice,
        /// `gpus.vram_limit` of the in-process daemon (e.g. 16GiB); prints
        /// the partitions per GPU staging tier at the end.
        #[arg(long)]
        vram_limit: Option<bytesize::ByteSize>,
        /// `engine.gpu_workers_per_device` of the in-process daemon.
        #[arg(long)]
        gpu_workers: Option<usize>,
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
    /// Today's synthesis and the compiled-constraint-system path side by
    /// side on one partition (each in its own process): wall ms, CPU
    /// core-seconds, peak RSS, the one-time matrix build, and whether both
    /// give the same witness. Ends with `synth-bench kind=K sector_size=S
    /// core_s_per_partition=X baseline_core_s_per_partition=Y
    /// ratio_vs_baseline=Y/X wall_s=W peak_rss_gib=R ...`; exits non-zero
    /// when the witnesses differ.
    SynthBench {
        #[arg(long, value_parser = parse_kind)]
        kind: ProofKind,
        /// The partition benchmarked.
        #[arg(long, default_value_t = 0)]
        partition: usize,
        /// Internal: run one path (record, baseline, compiled) and print JSON.
        #[arg(long, hide = true)]
        child: Option<String>,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Synthesize every partition of the fixtures' proof of a kind and check
    /// every constraint (no parameters needed); one child process per
    /// partition. Ends with `check-circuits kind=K sector_size=SIZE
    /// partitions=N satisfied=S/N constraints_per_partition=C
    /// blank_constraints=B vanilla_verified=V`; exits non-zero unless S=N
    /// and the vanilla proofs verify.
    CheckCircuits {
        #[arg(long, value_parser = parse_kind)]
        kind: ProofKind,
        /// Partitions checked at once (each in its own process).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Only these partitions [default: all].
        #[arg(long, value_delimiter = ',')]
        partitions: Vec<usize>,
        /// Internal: check this one partition and print JSON.
        #[arg(long, hide = true)]
        partition: Option<usize>,
        #[arg(long, hide = true)]
        child: bool,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Make fixtures if needed, start a daemon in this process, prove one of
    /// each kind through gRPC and print one line per kind.
    Demo {
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Sizes and load times of a circuit's SRS: `.params` decoded, and the
    /// memory-mapped warm form.
    Srs {
        #[arg(long, value_parser = parse_kind, default_value = "porep")]
        kind: ProofKind,
        /// Also decode with the subgroup check (slow).
        #[arg(long)]
        checked: bool,
        /// Where to write the warm file.
        #[arg(long, default_value = "/tmp/cuzk-warm")]
        warm_dir: PathBuf,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Per-stage GPU timings of a synthetic partition-shaped input at domain
    /// 2^k (no circuit synthesis; SRS of valid but repeated points), SRS
    /// resident in VRAM and/or streamed from host memory. Needs the `cuda`
    /// feature. Prints `key=value` lines.
    GpuBench {
        /// Log2 of the domain: `A..B` (inclusive) or one value.
        #[arg(long, value_parser = gpu_bench::parse_range, default_value = "20")]
        log_domain: (u32, u32),
        /// SRS placement(s) to time.
        #[arg(long, value_enum, default_value = "both")]
        srs: gpu_bench::SrsMode,
        /// Partitions back to back per size and mode (the mean excludes the first).
        #[arg(long, default_value_t = 1)]
        partitions: usize,
        /// CUDA device.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Time the a/b/c upload and the H polynomial as one overlapped
        /// call (the backend's path) instead of two stages.
        #[arg(long)]
        overlap: bool,
        /// Resident L/A/B MSMs with the 0/1 split, plain, or both.
        #[arg(long, value_enum, default_value = "on")]
        split01: gpu_bench::Split01,
        /// Prove through the whole backend with these worker counts (e.g.
        /// `1,2`), SRS resident: time per partition and GPU busy share.
        #[arg(long, value_delimiter = ',')]
        workers: Vec<usize>,
        /// With `--workers`: threads copying each partition's a, b, c
        /// (0: one per core).
        #[arg(long, default_value_t = 0)]
        feed_threads: usize,
    },
    /// Several GPU workers on one device under a VRAM limit: synthetic
    /// chain partitions plus the four 2 KiB kinds, each proof compared with
    /// the CPU backend's and verified; staging tiers counted (needs
    /// `--features cuda`).
    GpuStress {
        /// Log2 of the chain partitions' domain.
        #[arg(long, default_value_t = 20)]
        log_domain: u32,
        /// Chain partitions per run.
        #[arg(long, default_value_t = 20)]
        partitions: usize,
        /// Distinct chain witnesses (reused with fresh r and s).
        #[arg(long, default_value_t = 4)]
        witnesses: usize,
        /// Worker counts, one run each (e.g. `1,2,4`).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        workers: Vec<usize>,
        /// `gpus.vram_limit` for the runs (e.g. 16GiB).
        #[arg(long)]
        vram_limit: Option<bytesize::ByteSize>,
        /// CUDA device.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Leave out the 2 KiB Filecoin partitions.
        #[arg(long)]
        no_fixtures: bool,
        #[arg(long, default_value_t = 7)]
        seed: u64,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// Time bellperson's CPU prover and ours on the same circuit, SRS, r and
    /// s; ends with `ratio_vs_bellperson=<x>`.
    ProverBench {
        #[arg(long, value_parser = parse_kind, default_value = "porep")]
        kind: ProofKind,
        /// Runs per prover; the best time counts.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Internal: run one prover and print its measurements.
        #[arg(long, value_enum, default_value = "both")]
        r#impl: prover_bench::Impl,
        /// Internal: print the measurements as one JSON line.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
}

fn parse_kind(s: &str) -> Result<ProofKind, String> {
    ProofKind::parse(s)
        .ok_or_else(|| format!("unknown kind {s:?}: use porep, snap, window-post or winning-post"))
}

fn parse_backend(s: &str) -> Result<cuzk_core::config::BackendChoice, String> {
    use cuzk_core::config::BackendChoice;
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(BackendChoice::Auto),
        "cpu" => Ok(BackendChoice::Cpu),
        "cuda" => Ok(BackendChoice::Cuda),
        _ => Err(format!("unknown backend {s:?}: use auto, cpu or cuda")),
    }
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
    init_logging();
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
        } => {
            let dir = dir.unwrap_or_else(|| cuzk_fixtures::default_params_dir(sector_size));
            let circuits = gen_params::circuits(sector_size, &kind)?;
            gen_params::run(&circuits, &dir, seed, force, compare)
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
        Command::Stress {
            jobs,
            concurrency,
            mix,
            addr,
            seed,
            timeout_secs,
            verbose,
            backend,
            vram_limit,
            gpu_workers,
            fixtures,
        } => {
            let ok = runtime.block_on(stress::run(stress::Options {
                jobs,
                concurrency,
                mix,
                addr,
                seed,
                fixtures: fixtures.selection(),
                timeout: std::time::Duration::from_secs(timeout_secs),
                verbose,
                backend,
                vram_limit,
                gpu_workers,
            }))?;
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Status { target } => runtime.block_on(commands::status(&target.addr)),
        Command::Metrics { target } => runtime.block_on(commands::metrics(&target.addr)),
        Command::GpuBench {
            log_domain,
            srs,
            partitions,
            device,
            overlap,
            split01,
            workers,
            feed_threads,
        } => gpu_bench::run(
            log_domain,
            gpu_bench::Opts {
                srs,
                partitions,
                device,
                overlap,
                split01,
                feed_threads,
            },
            &workers,
        ),
        Command::GpuStress {
            log_domain,
            partitions,
            witnesses,
            workers,
            vram_limit,
            device,
            no_fixtures,
            seed,
            fixtures,
        } => gpu_stress::run(gpu_stress::Opts {
            log_domain,
            partitions,
            witnesses,
            workers,
            vram_limit: vram_limit.map(|b| b.as_u64()),
            device,
            fixtures: (!no_fixtures).then(|| fixtures.selection().dir),
            seed,
        }),
        Command::ProverBench {
            kind,
            runs,
            r#impl,
            json,
            fixtures,
        } => {
            let sel = fixtures.selection();
            if r#impl == prover_bench::Impl::Both {
                commands::gen_fixtures(&sel, false)?;
                prover_bench::compare(kind, &sel, runs)
            } else {
                let run = prover_bench::measure(kind, &sel, r#impl)?;
                if json {
                    println!("{}", serde_json::to_string(&run)?);
                } else {
                    println!("{run:#?}");
                }
                Ok(())
            }
        }
        Command::Srs {
            kind,
            checked,
            warm_dir,
            fixtures,
        } => srs_cmd::run(kind, &fixtures.selection(), checked, &warm_dir),
        Command::SynthBench {
            kind,
            partition,
            child,
            fixtures,
        } => {
            let sel = fixtures.selection();
            match child {
                Some(path) => synth_bench::run_child(&path, kind, &sel, partition),
                None => {
                    if !synth_bench::run(kind, &sel, partition)? {
                        eprintln!("synth-bench: the two paths gave different witnesses");
                        std::process::exit(1);
                    }
                    Ok(())
                }
            }
        }
        Command::CheckCircuits {
            kind,
            jobs,
            partitions,
            partition,
            child,
            fixtures,
        } => {
            let sel = fixtures.selection();
            match (child, partition) {
                (true, Some(k)) => check_circuits::run_child(kind, &sel, k),
                (true, None) => bail!("--child needs --partition"),
                (false, _) => {
                    let only: Vec<usize> = partitions.into_iter().chain(partition).collect();
                    if !check_circuits::run(kind, &sel, jobs, &only)? {
                        std::process::exit(1);
                    }
                    Ok(())
                }
            }
        }
        Command::Demo { fixtures } => {
            let ok = runtime.block_on(demo::run(&fixtures.selection()))?;
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
