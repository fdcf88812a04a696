//! cuzk-lab: the measuring and comparison tools of cuzk, apart from the
//! user's client (`cuzk-bench`) and the daemon, which never link them.
//!
//! `stress` (a mixed load through gRPC, lost and duplicated jobs counted),
//! `admit-bench` (a WinningPoSt submit beside large PoRep submits),
//! `gpu-bench` (per-stage GPU timings of synthetic partitions) and
//! `gpu-stress` (several GPU workers under a VRAM limit, every proof checked
//! against the CPU backend's), `prover-bench` (bellperson's CPU prover and
//! ours side by side), `synth-bench` (the old and the compiled synthesis on
//! one partition), `witness-shape` (what a partition's MSMs get: zeros,
//! ones, others and their buckets), `check-circuits` (every constraint of every partition of
//! a fixture proof) and `srs` (SRS sizes and load times). The GPU tools need
//! `--features cuda`; they use `cuzk-cuda`'s `lab` feature (stage-by-stage
//! access, SRS tiling, the allocation-failure hook). `experiments/` holds
//! stand-alone CUDA experiments, built by hand.

mod admit_bench;
mod check_circuits;
mod gpu_bench;
mod gpu_stress;
mod peer_bench;
mod prover_bench;
mod srs_cmd;
mod stress;
mod synth_bench;
mod witness_shape;

// The client's modules, under the paths the tools use.
use cuzk_bench::{commands, remote, select};

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use cuzk_core::ProofKind;

#[derive(Parser)]
#[command(
    name = "cuzk-lab",
    version,
    about = "cuzk lab: stress rigs, GPU benches, bellperson comparisons"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// File holding the daemon's bearer token (for `stress --addr`).
    #[arg(long, global = true, env = "CUZK_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// PEM CA certificate to trust for a daemon serving TLS.
    #[arg(long, global = true, env = "CUZK_TLS_CA")]
    tls_ca: Option<PathBuf>,
}

use select::FixtureArgs;

#[derive(Subcommand)]
enum Command {
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
        backend: cuzk_cuda::BackendChoice,
        /// `gpus.vram_limit` of the in-process daemon (e.g. 16GiB); prints
        /// the partitions per GPU staging tier at the end.
        #[arg(long)]
        vram_limit: Option<bytesize::ByteSize>,
        /// `engine.gpu_workers_per_device` of the in-process daemon.
        #[arg(long)]
        gpu_workers: Option<usize>,
        /// `gpus.devices` of the in-process daemon, comma-separated
        /// (default: every device).
        #[arg(long, value_delimiter = ',')]
        devices: Vec<usize>,
        /// The in-process daemon's failure hook: this device fails every
        /// partition after its first `--fail-after` (as a lost device).
        #[arg(long)]
        fail_device: Option<usize>,
        #[arg(long, default_value_t = 0, requires = "fail_device")]
        fail_after: u64,
        /// Submit every job of a kind at one priority instead of a drawn
        /// one: `kind=level`, comma-separated (e.g.
        /// `winning-post=critical,porep=normal`).
        #[arg(long, value_delimiter = ',', value_parser = stress::parse_priority)]
        priority: Vec<(ProofKind, i32)>,
        #[command(flatten)]
        fixtures: FixtureArgs,
    },
    /// A WinningPoSt's SubmitProof alone and beside `--big` concurrent
    /// PoRep submits of `--sector-size` (synthetic C1 outputs, checked and
    /// journaled; placeholder parameters, so the jobs then fail at once),
    /// through a daemon in this process with its journal on. Ends with
    /// `admit-bench big=N big_bytes=B rounds=R connection=.. winning_alone_ms_p50=..
    /// winning_loaded_ms_p50=.. winning_loaded_ms_max=.. loaded_vs_alone=..`.
    AdmitBench {
        #[arg(long, default_value_t = 4)]
        big: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Sector size of the large PoRep requests.
        #[arg(long, default_value = "32GiB")]
        sector_size: cuzk_fixtures::SectorSize,
        /// Pads each PoRep's C1 JSON with trailing whitespace to this size
        /// (e.g. "200MB"; decoded like any JSON); unset: as made.
        #[arg(long)]
        pad_to: Option<bytesize::ByteSize>,
        /// Submit the WinningPoSt beside them over a connection of its own
        /// (default: the one connection the large requests share, as a
        /// client such as Curio uses).
        #[arg(long)]
        own_connection: bool,
        /// Send the WinningPoSt this many milliseconds after the large
        /// requests were started (while the daemon still receives them);
        /// default: once the daemon journals one of them.
        #[arg(long)]
        send_after_ms: Option<u64>,
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
    /// Synthesize one partition of the fixtures' proof of a kind (no
    /// parameters) and print what its L, A and B MSMs get: zeros, ones and
    /// others, distinct others, the commonest value's count and the fullest
    /// Pippenger bucket at the GPU driver's window (repeated values make
    /// long buckets). One line: `witness-shape kind=K sector_size=S ...`.
    WitnessShape {
        #[arg(long, value_parser = parse_kind)]
        kind: ProofKind,
        #[arg(long, default_value_t = 0)]
        partition: usize,
        /// Also write the L scalars neither 0 nor 1 here (32 bytes each,
        /// little-endian), for `gpu-bench --others-from`.
        #[arg(long)]
        dump_others: Option<PathBuf>,
        /// Also synthesize this partition and print, for L, A and B, the
        /// share of points in blocks zero in both (`witness-shape-pair`:
        /// what a pass the two share could skip).
        #[arg(long)]
        pair: Option<usize>,
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
        /// With `--workers`: these devices (comma-separated), each with
        /// that many workers, fed from one queue (default: `--device`).
        #[arg(long, value_delimiter = ',')]
        devices: Vec<usize>,
        /// `gpus.vram_limit` for the stage-by-stage runs (e.g. 16GiB): the
        /// a-only tier, and every MSM fitted to the room left.
        #[arg(long)]
        vram_limit: Option<bytesize::ByteSize>,
        /// With `--srs streamed`: these sections stay on the device
        /// (comma-separated among h, l, a, b_g1, b_g2), the rest stream.
        #[arg(long, value_delimiter = ',')]
        resident_sections: Vec<String>,
        /// The whole backend proving K partitions a call under
        /// `--vram-limit`, sharing each pass over the streamed sections
        /// (`--partitions` such groups after a warm-up); unless `--srs
        /// streamed`, then the same partitions one at a time with the SRS
        /// resident on the whole card, side by side.
        #[arg(long, value_name = "K")]
        partitions_per_pass: Option<usize>,
        /// Aux values of the synthetic witness neither 0 nor 1, in percent
        /// (a 32 GiB PoRep partition has ~1 %; see `witness-shape`).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=100))]
        others_percent: u64,
        /// Distinct G1 points the synthetic SRS is tiled from (the default
        /// stays in the card's L2 cache; 2097152 does not).
        #[arg(long, default_value_t = gpu_bench::DEFAULT_PATTERN_G1)]
        pattern_points: usize,
        /// The others take these values in turn (a `witness-shape
        /// --dump-others` file: a real partition's repeats).
        #[arg(long)]
        others_from: Option<PathBuf>,
        /// `[gpus.tuning]` lines for `--partitions-per-pass`, `;` between
        /// them (e.g. `trace_msm = true; trace_split = true`).
        #[arg(long, value_parser = gpu_bench::parse_tuning)]
        tuning: Option<cuzk_cuda::GpuTuning>,
    },
    /// Pippenger over a partition's others (a `witness-shape
    /// --dump-others` file) with the points on the device, at each
    /// `gpus.tuning.heavy_bucket_points` cap, beside as many distinct
    /// random scalars, and (`--presum R`) the others with each value met R
    /// times or more kept once; exits non-zero when a cap's sum differs
    /// from the first cap's. Needs the `cuda` feature. Ends with
    /// `others_bench_summary n=N ... sums_agree=B`.
    OthersBench {
        /// The others, 32 bytes each (little-endian).
        #[arg(long)]
        others_from: PathBuf,
        /// Caps to time, in order (0: off).
        #[arg(long, value_delimiter = ',', value_parser = gpu_bench::others::parse_cap,
              default_value = "0,64,128,256,512,1024")]
        caps: Vec<u32>,
        /// Timed runs a cap (after one warm-up).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// CUDA device.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Also the G2 MSM (B_G2's group).
        #[arg(long)]
        g2: bool,
        /// Per batch phases to stderr (`gpus.tuning.trace_msm`).
        #[arg(long)]
        trace: bool,
        /// Also the others with each value met at least this many times
        /// kept once: what Pippenger gets if their points are summed first
        /// (0: not).
        #[arg(long, default_value_t = 4)]
        presum: usize,
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
    /// Our CUDA backend and stock supraseal-c2 proving the same partition
    /// of the fixtures' proof (same `.params`, witness, r and s; proofs
    /// compared); ends with `peer-bench ... cuzk_ms=.. supraseal_ms=..
    /// ratio_vs_supraseal=.. proofs_identical=..`. Needs `--features
    /// cuda` and `cuzk-peer` built with `--features supraseal`.
    PeerBench {
        #[arg(long, value_parser = parse_kind, default_value = "porep")]
        kind: ProofKind,
        /// The partition proved.
        #[arg(long, default_value_t = 0)]
        partition: usize,
        /// Timed proofs per prover (after one untimed).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// CUDA device.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// The `cuzk-peer` binary [default: beside this one].
        #[arg(long)]
        peer: Option<PathBuf>,
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

fn parse_backend(s: &str) -> Result<cuzk_cuda::BackendChoice, String> {
    s.parse()
        .map_err(|e: cuzk_cuda::config::InvalidConfig| e.to_string())
}

fn main() -> Result<()> {
    cuzk_bench::init_logging();
    let cli = Cli::parse();
    remote::init(cli.token_file.as_deref(), cli.tls_ca.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
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
            devices,
            fail_device,
            fail_after,
            priority,
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
                devices,
                fail_device: fail_device.map(|d| (d, fail_after)),
                priorities: priority,
            }))?;
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::GpuBench {
            log_domain,
            srs,
            partitions,
            device,
            overlap,
            split01,
            workers,
            feed_threads,
            devices,
            vram_limit,
            resident_sections,
            partitions_per_pass,
            others_percent,
            pattern_points,
            others_from,
            tuning,
        } => gpu_bench::run(
            log_domain,
            gpu_bench::Opts {
                srs,
                partitions,
                device,
                devices,
                overlap,
                split01,
                feed_threads,
                vram_limit: vram_limit.map(|b| b.as_u64()),
                resident_sections,
                partitions_per_pass,
                synthetic: gpu_bench::Synthetic {
                    others_percent,
                    pattern_g1: pattern_points.max(1),
                    others_from: others_from.map(gpu_bench::read_others).transpose()?,
                },
                tuning: tuning.unwrap_or_default(),
            },
            &workers,
        ),
        Command::OthersBench {
            others_from,
            caps,
            reps,
            device,
            g2,
            trace,
            presum,
        } => {
            let ok = gpu_bench::others::run(gpu_bench::others::Opts {
                device,
                others: gpu_bench::read_others(others_from)?,
                caps,
                reps,
                g2,
                trace,
                presum,
            })?;
            if !ok {
                eprintln!("others-bench: a cap's sum differs from the first cap's");
                std::process::exit(1);
            }
            Ok(())
        }
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
        Command::PeerBench {
            kind,
            partition,
            runs,
            device,
            peer,
            fixtures,
        } => peer_bench::run(
            &fixtures.selection(),
            peer_bench::Opts {
                kind,
                partition,
                runs,
                device,
                peer,
            },
        ),
        Command::Srs {
            kind,
            checked,
            warm_dir,
            fixtures,
        } => srs_cmd::run(kind, &fixtures.selection(), checked, &warm_dir),
        Command::AdmitBench {
            big,
            rounds,
            sector_size,
            pad_to,
            own_connection,
            send_after_ms,
        } => runtime.block_on(admit_bench::run(admit_bench::Options {
            big,
            rounds,
            size: sector_size,
            pad_to: pad_to.map(|b| b.as_u64() as usize),
            own_connection,
            send_after: send_after_ms.map(std::time::Duration::from_millis),
        })),
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
        Command::WitnessShape {
            kind,
            partition,
            dump_others,
            pair,
            fixtures,
        } => witness_shape::run(
            kind,
            &fixtures.selection(),
            partition,
            dump_others.as_deref(),
            pair,
        ),
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
    }
}
