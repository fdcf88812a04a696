//! The client commands: fixtures, single, batch, status, metrics.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_core::{ProofKind, ProofRequest};
use cuzk_fixtures::Fixtures;
use cuzk_proto::v1::{
    await_proof_response::Status, AwaitProofResponse, GetMetricsRequest, GetStatusRequest,
    ProveRequest,
};
use cuzk_server::convert::submit_request;
use tokio::sync::Semaphore;

use crate::progress::{spinner, FixtureProgress};
use crate::select::Selection;

/// Makes or reuses the selected fixtures (with their parameters unless
/// `inputs_only`), showing progress.
pub fn gen_fixtures(sel: &Selection, inputs_only: bool) -> Result<Fixtures> {
    let what = if sel.synthetic { "synthetic" } else { "sealed" };
    eprintln!("{} {what} fixtures in {}", sel.size, sel.dir.display());
    if !inputs_only {
        eprintln!(
            "WARNING: Groth16 parameters made here are INSECURE (known toxic waste), for local testing only."
        );
    }
    let mut p = FixtureProgress::new();
    let f = sel.ensure(!inputs_only, &mut |e| p.on(e))?;
    if inputs_only {
        eprintln!("fixtures ready (inputs only: no parameters made)");
    } else {
        eprintln!(
            "fixtures ready (parameters in {})",
            f.params_dir().display()
        );
    }
    Ok(f)
}

/// The configuration of a throwaway in-process daemon on `fixtures`: the
/// embedded defaults, an ephemeral loopback port, no journal, the fixtures'
/// parameters, and (from 512 MiB up, where one SRS can exceed this
/// machine's memory budget) warm and paged SRS files in `<params>/../warm`.
pub fn local_daemon_config(fixtures: &Fixtures) -> Result<cuzk_server::Config> {
    let mut config = cuzk_server::Config::default();
    config.daemon.listen = "127.0.0.1:0".into();
    config.daemon.journal = false;
    let params = fixtures.params_dir();
    if fixtures.sector_size()?.bytes() >= 512 << 20 {
        let base = params.parent().unwrap_or(&params).to_path_buf();
        config.srs.warm_dir = Some(base.join("warm"));
    }
    config.params.cache_dir = Some(params);
    Ok(config)
}

/// Loads fixtures for a client command, pointing this process' parameter
/// cache at them so proofs can be verified here too.
pub fn client_fixtures(sel: &Selection) -> Result<Fixtures> {
    let f = sel.load()?;
    cuzk_core::params::init_parameter_cache(&f.params_dir())?;
    Ok(f)
}

/// The fixtures and their checked request of `kind`.
pub fn fixture_request(sel: &Selection, kind: ProofKind) -> Result<(Fixtures, ProofRequest)> {
    let f = client_fixtures(sel)?;
    let req = f
        .request(kind)?
        .validate(u64::MAX)
        .map_err(|e| anyhow::anyhow!("fixture request for {kind}: {e}"))?;
    Ok((f, req))
}

/// One proof's result, checked on the client side.
pub struct Checked {
    pub reply: AwaitProofResponse,
    pub verified: bool,
    pub note: String,
}

/// Checks a reply: completed, and the proof verifies with filecoin-proofs-api
/// against the fixtures' recorded public inputs.
pub async fn check(fixtures: &Fixtures, kind: ProofKind, reply: AwaitProofResponse) -> Checked {
    if reply.status != Status::Completed as i32 {
        let note = format!(
            "status={} error={}",
            Status::try_from(reply.status)
                .map(|s| s.as_str_name())
                .unwrap_or("?"),
            reply.error_message
        );
        return Checked {
            reply,
            verified: false,
            note,
        };
    }
    let f = fixtures.clone();
    let proof = reply.proof.clone();
    let result = tokio::task::spawn_blocking(move || f.verify(kind, &proof)).await;
    let (verified, note) = match result {
        Ok(Ok(true)) => (true, String::new()),
        Ok(Ok(false)) => (false, "client-side verification rejected the proof".into()),
        Ok(Err(e)) => (false, format!("client-side verification failed: {e:#}")),
        Err(e) => (false, format!("verification task failed: {e}")),
    };
    Checked {
        reply,
        verified,
        note,
    }
}

/// Proves one request through `Prove` and returns the checked reply.
pub async fn prove_one(
    addr: &str,
    fixtures: &Fixtures,
    kind: ProofKind,
    request_id: String,
    priority: i32,
) -> Result<Checked> {
    let mut raw = fixtures.request(kind)?;
    raw.request_id = request_id;
    raw.priority = priority;
    let mut client = crate::remote::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let reply = client
        .prove(ProveRequest {
            submit: Some(submit_request(raw)),
        })
        .await
        .with_context(|| format!("Prove({kind})"))?
        .into_inner()
        .result
        .context("Prove returned no result")?;
    Ok(check(fixtures, kind, reply).await)
}

pub fn result_line(kind: ProofKind, c: &Checked) -> String {
    let mut line = format!(
        "{:<13} total_ms={:<7} prove_ms={:<7} verify_ms={:<5} queue_ms={:<7} verified={}",
        kind.as_str(),
        c.reply.total_ms,
        c.reply.prove_ms,
        c.reply.verify_ms,
        c.reply.queue_wait_ms,
        c.verified
    );
    if !c.note.is_empty() {
        line.push_str(&format!("  ({})", c.note));
    }
    line
}

pub async fn single(
    addr: &str,
    sel: &Selection,
    kind: ProofKind,
    request_id: String,
    priority: i32,
) -> Result<()> {
    let fixtures = client_fixtures(sel)?;
    let bar = spinner(format!("proving {kind} via {addr}"));
    let c = prove_one(addr, &fixtures, kind, request_id, priority).await?;
    bar.finish_and_clear();
    println!("{}", result_line(kind, &c));
    if !c.verified {
        bail!("the {kind} proof was not verified");
    }
    Ok(())
}

pub async fn batch(
    addr: &str,
    sel: &Selection,
    kind: ProofKind,
    count: usize,
    concurrency: usize,
) -> Result<()> {
    if count == 0 || concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let fixtures = client_fixtures(sel)?;
    let bar = indicatif::ProgressBar::new(count as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    let gate = std::sync::Arc::new(Semaphore::new(concurrency));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for _ in 0..count {
        let permit = gate.clone().acquire_owned().await?;
        let (addr, fixtures, bar) = (addr.to_string(), fixtures.clone(), bar.clone());
        tasks.push(tokio::spawn(async move {
            let r = prove_one(&addr, &fixtures, kind, String::new(), 0).await;
            bar.inc(1);
            drop(permit);
            r
        }));
    }
    let mut totals = Vec::new();
    let (mut verified, mut failed, mut errors) = (0usize, 0usize, 0usize);
    for t in tasks {
        match t.await? {
            Ok(c) if c.verified => {
                verified += 1;
                totals.push(c.reply.total_ms);
            }
            Ok(c) => {
                failed += 1;
                eprintln!("not verified: {}", c.note);
            }
            Err(e) => {
                errors += 1;
                eprintln!("request failed: {e:#}");
            }
        }
    }
    bar.finish_and_clear();
    let wall = start.elapsed();
    totals.sort_unstable();
    let pct = |p: f64| -> u64 {
        if totals.is_empty() {
            0
        } else {
            totals[((totals.len() - 1) as f64 * p).round() as usize]
        }
    };
    println!(
        "kind={} count={count} concurrency={concurrency} verified={verified}/{count} failed={failed} \
         errors={errors} wall_ms={} proofs_per_min={:.2} p50_total_ms={} p99_total_ms={}",
        kind.as_str(),
        wall.as_millis(),
        verified as f64 / wall.as_secs_f64() * 60.0,
        pct(0.5),
        pct(0.99)
    );
    if verified != count {
        bail!("{} of {count} proofs were not verified", count - verified);
    }
    Ok(())
}

pub async fn status(addr: &str) -> Result<()> {
    let mut client = crate::remote::connect(addr).await?;
    let s = client.get_status(GetStatusRequest {}).await?.into_inner();
    println!(
        "uptime={}s completed={} failed={}",
        s.uptime_seconds, s.total_proofs_completed, s.total_proofs_failed
    );
    for q in &s.queues {
        println!(
            "queue {:<13} pending={} in_progress={}",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    for g in &s.gpus {
        println!(
            "gpu {} {} vram_free={} vram_total={} job={}",
            g.ordinal, g.name, g.vram_free_bytes, g.vram_total_bytes, g.current_job_id
        );
    }
    for srs in &s.loaded_srs {
        println!(
            "srs {} tier={} bytes={} refs={}",
            srs.circuit_id, srs.tier, srs.size_bytes, srs.ref_count
        );
        for d in &srs.on_devices {
            let (resident, rest) = match d.resident_sections.as_slice() {
                [] => ("none".to_string(), " (every section streams)"),
                r if r.len() >= 5 => (r.join(","), ""),
                r => (r.join(","), " (the other sections stream)"),
            };
            println!(
                "srs {} on {} bytes={} resident={resident}{rest}",
                srs.circuit_id, d.backend, d.size_bytes
            );
        }
    }
    Ok(())
}

pub async fn metrics(addr: &str) -> Result<()> {
    let mut client = crate::remote::connect(addr).await?;
    let m = client.get_metrics(GetMetricsRequest {}).await?.into_inner();
    print!("{}", m.prometheus_text);
    Ok(())
}
