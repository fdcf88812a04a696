//! `cuzk-lab admit-bench`: how long a WinningPoSt's `SubmitProof` takes
//! while large PoRep submits are being received, checked and journaled,
//! side by side with the same submit alone, through a daemon started in
//! this process with its journal on (the journal write of a request
//! happens outside any lock another submit waits for).
//!
//! The large requests are synthetic PoRep C1 outputs of `--sector-size`
//! (made locally, inputs only; `--pad-to` pads their JSON with trailing
//! whitespace, which every decoder reads like the rest); the WinningPoSt is
//! the 2 KiB fixtures' (made by `cuzk-bench gen-fixtures`). Their parameter
//! files are empty placeholders in a private parameter directory — the
//! submit checks only that they exist — so the jobs are accepted and
//! journaled and then fail when the engine reads their parameters: only
//! admission is measured. The daemon runs on a runtime of its own, as
//! cuzk-daemon does; the large requests are sent over one connection from
//! a runtime with a thread each (their encoding never holds up the
//! WinningPoSt's task), and the WinningPoSt over the same connection (or
//! `--own-connection`, opened before the first round) once the daemon
//! journals one of them, or `--send-after-ms` after they start. A round
//! counts only if a large submit was still in flight when the WinningPoSt
//! returned. Ends with `admit-bench big=N big_bytes=B sector_size=S
//! rounds=R beside=K connection=shared|own sent=at_journal|after_Nms
//! winning_alone_ms_p50=.. winning_loaded_ms_p50=.. winning_loaded_ms_max=..
//! loaded_vs_alone=..`.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_core::{ProofKind, RawRequest};
use cuzk_fixtures::{SectorSize, SyntheticSpec};
use cuzk_server::convert::submit_request;
use cuzk_server::{Client, Daemon};

/// What to measure.
pub struct Options {
    pub big: usize,
    pub rounds: usize,
    pub size: SectorSize,
    /// Pad each C1 JSON with trailing whitespace to this many bytes.
    pub pad_to: Option<usize>,
    /// Submit the WinningPoSt beside the large requests over a connection
    /// of its own, not the one they share.
    pub own_connection: bool,
    /// Send the WinningPoSt this long after the large requests were
    /// started (while they are still being received) instead of once the
    /// daemon journals one of them.
    pub send_after: Option<Duration>,
}

pub async fn run(opts: Options) -> Result<()> {
    if opts.big == 0 || opts.rounds == 0 {
        bail!("--big and --rounds must be at least 1");
    }
    let work = tempfile::tempdir()?;
    let params = work.path().join("params");
    std::fs::create_dir_all(&params)?;
    let size = opts.size;
    let (small, porep) = tokio::task::spawn_blocking(move || -> Result<_> {
        // Loaded, not made: making them would fix this process' parameter
        // cache on their directory.
        let small = cuzk_fixtures::load(&cuzk_fixtures::default_dir())?;
        let spec = SyntheticSpec {
            with_params: false,
            ..SyntheticSpec::new(size)
        };
        let big = cuzk_fixtures::ensure_synthetic(&spec, &mut |_| {})?;
        Ok((small, big.request(ProofKind::PoRep)?))
    })
    .await??;
    // This process' parameter cache is the private one.
    cuzk_core::params::init_parameter_cache(&params)?;
    link_params(&small.params_dir(), &params)?;
    placeholder_params(&porep)?;
    let winning = small.request(ProofKind::WinningPost)?;
    let mut porep = porep;
    if let Some(n) = opts.pad_to {
        if n < porep.vanilla_proof.len() {
            bail!(
                "--pad-to {n} is below the C1's {} bytes",
                porep.vanilla_proof.len()
            );
        }
        porep.vanilla_proof.resize(n, b' ');
    }

    let mut config = crate::commands::local_daemon_config(&small)?;
    config.params.cache_dir = Some(params.clone());
    config.daemon.journal = true;
    config.daemon.state_dir = Some(work.path().join("state"));
    // Every round's requests are admitted, however far the engine is
    // behind in failing them.
    config.engine.max_queued_jobs = (opts.rounds * (opts.big + 1) + 8).into();
    // The daemon on a runtime of its own, as cuzk-daemon runs it: this
    // process' client (encoding the large requests) does not share its
    // worker threads.
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let server = std::thread::spawn(move || -> Result<()> {
        let rt = cuzk_server::runtime()?;
        rt.block_on(async {
            let daemon = Daemon::start(config).await?;
            let _ = addr_tx.send(daemon.client_address());
            daemon
                .serve(async {
                    let _ = stop_rx.await;
                })
                .await?;
            Ok(())
        })
    });
    let addr = addr_rx.await.context("the daemon did not start")?;
    // The large requests are sent from a runtime with a thread each, as a
    // client with a thread per request in flight (Go's scheduler) sends
    // them: their encoding does not hold up the WinningPoSt's task, which
    // runs on this runtime.
    let senders = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.big + 1)
        .enable_all()
        .build()?;
    let shared = {
        let addr = addr.clone();
        senders
            .spawn(async move { cuzk_server::connect(&addr).await })
            .await??
    };
    // The WinningPoSt's client: the shared connection, or one of its own
    // opened now (not while the large requests are on their way).
    let mut winning_client = match opts.own_connection {
        true => cuzk_server::connect(&addr).await?,
        false => shared.clone(),
    };
    let payloads = work.path().join("state").join("payloads");

    let big_bytes = porep.vanilla_proof.len();
    eprintln!(
        "admit-bench: {} PoRep submits of {} ({big_bytes} bytes of C1 each) beside one WinningPoSt, {} rounds",
        opts.big, opts.size, opts.rounds
    );
    let mut alone = Vec::new();
    let mut loaded = Vec::new();
    for round in 0..opts.rounds {
        alone.push(timed_submit(&mut winning_client, &winning, &format!("alone-{round}")).await?);
        let before = files_in(&payloads);
        let mut bigs = Vec::new();
        for i in 0..opts.big {
            let mut c = shared.clone();
            let mut r = porep.clone();
            r.request_id = format!("big-{round}-{i}");
            bigs.push(
                senders.spawn(async move { c.submit_proof(submit_request(r)).await.map(|_| ()) }),
            );
        }
        // Sent once the daemon is journaling one of them: they have been
        // received, digested and decoded (or are being), and are being
        // admitted beside it.
        match opts.send_after {
            Some(d) => tokio::time::sleep(d).await,
            None => wait_for_new_file(&payloads, &before, &bigs).await?,
        }
        let ms = timed_submit(&mut winning_client, &winning, &format!("loaded-{round}")).await?;
        let pending = bigs.iter().filter(|b| !b.is_finished()).count();
        for b in bigs {
            b.await?.context("a large PoRep submit")?;
        }
        eprintln!(
            "round {round}: WinningPoSt alone {:.1} ms, beside {} PoRep submits ({pending} still in flight when it returned) {ms:.1} ms",
            alone[round], opts.big
        );
        // A round the large submits had all ended before the WinningPoSt
        // did measures nothing beside them.
        if pending > 0 {
            loaded.push(ms);
        }
    }
    senders.shutdown_background();
    if loaded.is_empty() {
        bail!("in no round was a large submit still in flight when the WinningPoSt returned");
    }
    let _ = stop_tx.send(());
    tokio::task::spawn_blocking(move || server.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the daemon thread panicked"))??;
    let p50 = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    let max = loaded.iter().copied().fold(0.0, f64::max);
    println!(
        "admit-bench big={} big_bytes={big_bytes} sector_size={} rounds={} beside={} connection={} sent={} winning_alone_ms_p50={:.1} \
         winning_loaded_ms_p50={:.1} winning_loaded_ms_max={max:.1} loaded_vs_alone={:.2}",
        opts.big,
        opts.size,
        opts.rounds,
        loaded.len(),
        if opts.own_connection { "own" } else { "shared" },
        match opts.send_after {
            Some(d) => format!("after_{}ms", d.as_millis()),
            None => "at_journal".into(),
        },
        p50(&alone),
        p50(&loaded),
        p50(&loaded) / p50(&alone).max(0.001)
    );
    Ok(())
}

/// Submits `r` under `id`; milliseconds until `SubmitProof` answered.
async fn timed_submit(client: &mut Client, r: &RawRequest, id: &str) -> Result<f64> {
    let mut r = r.clone();
    r.request_id = id.to_string();
    let t = Instant::now();
    client
        .submit_proof(submit_request(r))
        .await
        .with_context(|| format!("submit {id}"))?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The names of the files in `dir` (none when it does not exist yet).
fn files_in(dir: &Path) -> HashSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Waits until `dir` holds a file not in `before` (a payload being
/// written: `<seq>.tmp`, then `<seq>.req`); an error if every large submit
/// ends first or a minute passes.
async fn wait_for_new_file(
    dir: &Path,
    before: &HashSet<std::ffi::OsString>,
    bigs: &[tokio::task::JoinHandle<Result<(), tonic::Status>>],
) -> Result<()> {
    let t = Instant::now();
    while files_in(dir).is_subset(before) {
        if bigs.iter().all(|b| b.is_finished()) {
            bail!("the large submits ended before the daemon journaled one (a failed submit?)");
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("no large submit reached the journal in a minute");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Links every file of the fixtures' parameter directory into `to`.
fn link_params(from: &Path, to: &Path) -> Result<()> {
    for f in std::fs::read_dir(from)?.flatten() {
        std::os::unix::fs::symlink(f.path(), to.join(f.file_name()))?;
    }
    Ok(())
}

/// Empty parameter files for the PoRep request's proof type, in this
/// process' parameter cache: the submit finds them, the engine cannot read
/// them.
fn placeholder_params(porep: &RawRequest) -> Result<()> {
    let proof_type = cuzk_core::kinds::ProofType::decode(ProofKind::PoRep, porep.registered_proof)
        .map_err(|e| anyhow::anyhow!("{}", e.0))?;
    let files = cuzk_core::params::param_files(proof_type).map_err(|e| anyhow::anyhow!(e.0))?;
    for p in [files.params, files.vk] {
        std::fs::File::create(&p).with_context(|| p.display().to_string())?;
    }
    Ok(())
}
