//! `stress`: a mixed load of proof requests through gRPC, and what came of it.
//!
//! N requests, their kinds drawn from a mix (every kind appears when N is at
//! least the mix size; the order is shuffled with a seed), their priorities
//! drawn among LOW, NORMAL, HIGH, CRITICAL and unset, each with its own
//! request id, at most J in flight at once (SubmitProof, then AwaitProof).
//! Every 7th job is submitted twice in a row to probe idempotency, and the
//! daemon's `cuzk_jobs_submitted_total` is compared before and after with the
//! number of request ids sent. Completed proofs are verified again here with
//! the fixtures.
//!
//! Outcomes: completed (COMPLETED), failed (FAILED, CANCELLED, TIMEOUT or
//! UNKNOWN, or a refused submit), lost (no answer: AwaitProof errored, or
//! nothing came before `--timeout-secs`), verified (completed and verified
//! on the client side). Latencies are those of completed jobs: client-side
//! submit-to-answer time and the daemon's own `total_ms`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use cuzk_core::{ProofKind, RawRequest};
use cuzk_fixtures::Fixtures;
use cuzk_proto::v1::{
    await_proof_response::Status as AwaitStatus, AwaitProofRequest, GetMetricsRequest,
    SubmitProofRequest,
};
use cuzk_server::convert::submit_request;
use cuzk_server::Daemon;
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Semaphore;
use tokio::time::{timeout_at, Instant};

use crate::commands::{check, client_fixtures, gen_fixtures};

use cuzk_server::Client;

/// Every how many jobs the request is submitted twice (idempotency probe).
const PROBE_EVERY: usize = 7;

/// Priorities drawn for the jobs: unset (the kind's default), then LOW..CRITICAL.
const PRIORITIES: [i32; 5] = [0, 1, 2, 3, 4];

/// The stress command's settings.
pub struct Options {
    pub jobs: usize,
    pub concurrency: usize,
    pub mix: Vec<ProofKind>,
    /// A running daemon; `None` starts one in this process.
    pub addr: Option<String>,
    pub seed: Option<u64>,
    pub fixtures: crate::select::Selection,
    /// After this, unanswered jobs count as lost.
    pub timeout: Duration,
    /// Print one line per job (in answer order) before the summary.
    pub verbose: bool,
    /// The in-process daemon's `gpus.backend`.
    pub backend: cuzk_cuda::BackendChoice,
    /// The in-process daemon's `gpus.vram_limit`.
    pub vram_limit: Option<bytesize::ByteSize>,
    /// The in-process daemon's `engine.gpu_workers_per_device` (None: its default).
    pub gpu_workers: Option<usize>,
    /// The in-process daemon's `gpus.devices` (empty: every device).
    pub devices: Vec<usize>,
    /// The in-process daemon's failure hook: (`gpus.tuning.fail_device`,
    /// `fail_after_partitions`).
    pub fail_device: Option<(usize, u64)>,
    /// Kinds submitted at a fixed priority (1 LOW .. 4 CRITICAL) instead
    /// of a drawn one.
    pub priorities: Vec<(ProofKind, i32)>,
}

/// One planned request.
#[derive(Clone, Debug)]
struct Plan {
    index: usize,
    kind: ProofKind,
    priority: i32,
    request_id: String,
    probe: bool,
}

#[derive(Debug)]
enum Outcome {
    Completed { verified: bool, note: String },
    Failed(String),
    Lost(String),
}

#[derive(Debug)]
struct JobResult {
    plan: Plan,
    outcome: Outcome,
    /// Client-side submit-to-answer time, when AwaitProof answered.
    latency_ms: Option<u64>,
    /// The daemon's timings, when AwaitProof answered.
    daemon_total_ms: u64,
    daemon_queue_ms: u64,
    /// Milliseconds since the start of the run at which the job was answered.
    answered_at_ms: Option<u64>,
    /// A WinningPoSt submitted while a PoRep job was submitted and unanswered.
    while_porep_queued: bool,
    /// The idempotency probe: `Some(true)` when both submits gave the same job.
    probe_same: Option<bool>,
    probe_error: Option<String>,
}

impl JobResult {
    fn new(plan: Plan, outcome: Outcome) -> JobResult {
        JobResult {
            plan,
            outcome,
            latency_ms: None,
            daemon_total_ms: 0,
            daemon_queue_ms: 0,
            answered_at_ms: None,
            while_porep_queued: false,
            probe_same: None,
            probe_error: None,
        }
    }
}

/// What every job task shares.
struct Ctx {
    fixtures: Fixtures,
    requests: HashMap<ProofKind, RawRequest>,
    /// PoRep jobs submitted (sent) and not yet answered.
    porep_pending: AtomicUsize,
    deadline: Instant,
    start: Instant,
    bar: ProgressBar,
}

/// Counts an acknowledged PoRep job as pending until dropped.
struct PendingGuard<'a>(Option<&'a AtomicUsize>);

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.0 {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Runs the stress test; `Ok(true)` when nothing was lost or duplicated and
/// every proof verified.
pub async fn run(opts: Options) -> Result<bool> {
    if opts.jobs == 0 || opts.concurrency == 0 {
        bail!("--jobs and --concurrency must be at least 1");
    }
    let mut mix = Vec::new();
    for k in &opts.mix {
        if !mix.contains(k) {
            mix.push(*k);
        }
    }
    if mix.is_empty() {
        bail!("--mix names no kind");
    }
    let seed = opts.seed.unwrap_or_else(rand::random);
    let run_id = run_id();
    let mut plans = plan(opts.jobs, &mix, seed, &run_id);
    fix_priorities(&mut plans, &opts.priorities);

    // Fixtures, and the daemon when none is given.
    let sel = opts.fixtures.clone();
    let fixtures = if opts.addr.is_some() {
        tokio::task::spawn_blocking(move || client_fixtures(&sel)).await??
    } else {
        tokio::task::spawn_blocking(move || gen_fixtures(&sel, false)).await??
    };
    let mut requests = HashMap::new();
    for k in &mix {
        requests.insert(*k, fixtures.request(*k)?);
    }
    let mut local = None;
    let mut engine = None;
    let addr = match &opts.addr {
        Some(a) => a.clone(),
        None => {
            let mut config = crate::commands::local_daemon_config(&fixtures)?;
            config.gpus.backend = opts.backend;
            config.gpus.vram_limit = opts.vram_limit;
            if let Some(w) = opts.gpu_workers {
                config.engine.gpu_workers_per_device = w.into();
            }
            config.gpus.devices = opts.devices.clone();
            if let Some((device, after)) = opts.fail_device {
                config.gpus.tuning.fail_device = Some(device);
                config.gpus.tuning.fail_after_partitions = after;
            }
            let daemon = Daemon::start(config).await?;
            engine = Some(daemon.engine().clone());
            let addr = daemon.client_address();
            eprintln!(
                "prover backends: {}",
                daemon.engine().status().backends.join(", ")
            );
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(daemon.serve(async {
                let _ = stop_rx.await;
            }));
            eprintln!(
                "daemon started in this process on {addr} (default config, fixtures' params)"
            );
            local = Some((stop_tx, server));
            addr
        }
    };
    let mix_names: Vec<_> = mix.iter().map(|k| k.as_str()).collect();
    eprintln!(
        "stress run={run_id} seed={seed} jobs={} concurrency={} mix={} addr={addr} timeout_s={}",
        opts.jobs,
        opts.concurrency,
        mix_names.join(","),
        opts.timeout.as_secs()
    );

    let report = drive(&addr, fixtures, requests, plans, &opts).await;
    if let Some(engine) = &engine {
        // The GPU staging tiers the partitions took (nothing on the CPU).
        for line in engine.metrics_text().lines() {
            if line.starts_with("cuzk_gpu_staging") || line.starts_with("cuzk_gpu_memory_waits") {
                println!("{line}");
            }
        }
        let status = engine.status();
        for (backend, why) in status.backends.iter().zip(&status.out_of_service) {
            if let Some(why) = why {
                println!("out of service: {backend}: {why}");
            }
        }
        for (backend, device) in status.backends.iter().zip(&status.devices) {
            if let Some(busy) = device.as_ref().and_then(|d| d.busy) {
                println!("device {backend} busy_s={:.1}", busy.as_secs_f64());
            }
        }
    }

    if let Some((stop_tx, server)) = local {
        let _ = stop_tx.send(());
        // Running jobs get the daemon's shutdown grace; do not wait forever.
        match tokio::time::timeout(Duration::from_secs(180), server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => eprintln!("warning: in-process daemon stopped with an error: {e}"),
            Ok(Err(e)) => eprintln!("warning: in-process daemon task failed: {e}"),
            Err(_) => eprintln!("warning: in-process daemon did not stop within 180 s"),
        }
    }
    let report = report?;
    Ok(report.print(opts.jobs, opts.verbose, opts.addr.is_some()))
}

/// A run id unique enough that request ids never meet those of earlier runs
/// still in a daemon's job table.
fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "{:08x}",
        (nanos ^ (u64::from(std::process::id()) << 32) ^ rand::random::<u64>()) as u32
    )
}

/// Kinds balanced over the mix (so each appears when `jobs >= mix.len()`),
/// shuffled; priorities drawn at random; every `PROBE_EVERY`th job probed.
fn plan(jobs: usize, mix: &[ProofKind], seed: u64, run_id: &str) -> Vec<Plan> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut kinds: Vec<ProofKind> = (0..jobs).map(|i| mix[i % mix.len()]).collect();
    kinds.shuffle(&mut rng);
    kinds
        .into_iter()
        .enumerate()
        .map(|(index, kind)| Plan {
            index,
            kind,
            priority: PRIORITIES[rng.gen_range(0..PRIORITIES.len())],
            request_id: format!("stress-{run_id}-{index}"),
            probe: index % PROBE_EVERY == 0,
        })
        .collect()
}

/// Sets the priority of every job of a kind in `fixed` (drawn ones are
/// drawn all the same, so a seed plans the same kinds either way).
fn fix_priorities(plans: &mut [Plan], fixed: &[(ProofKind, i32)]) {
    for p in plans {
        if let Some((_, level)) = fixed.iter().find(|(k, _)| *k == p.kind) {
            p.priority = *level;
        }
    }
}

/// `kind=level` (level: low, normal, high or critical) for `--priority`.
pub fn parse_priority(s: &str) -> Result<(ProofKind, i32), String> {
    let (kind, level) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: use kind=level, e.g. winning-post=critical"))?;
    let kind = ProofKind::parse(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let level = (1..=4)
        .find(|p| priority_name(*p) == level.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown priority {level:?}: use low, normal, high or critical"))?;
    Ok((kind, level))
}

fn priority_name(p: i32) -> &'static str {
    match p {
        0 => "unset",
        1 => "low",
        2 => "normal",
        3 => "high",
        4 => "critical",
        _ => "?",
    }
}

/// Sum of `cuzk_jobs_submitted_total` over every kind.
fn submitted_total(prometheus_text: &str) -> Option<u64> {
    // A fresh daemon has no sample yet: an empty family counts as zero.
    let mut sum = 0.0;
    for line in prometheus_text.lines() {
        let Some(rest) = line.strip_prefix("cuzk_jobs_submitted_total") else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        let value: f64 = rest.rsplit(' ').next()?.trim().parse().ok()?;
        sum += value;
    }
    Some(sum as u64)
}

async fn read_submitted(client: &mut Client) -> Result<u64, String> {
    let text = tokio::time::timeout(
        Duration::from_secs(30),
        client.get_metrics(GetMetricsRequest {}),
    )
    .await
    .map_err(|_| "GetMetrics did not answer within 30 s".to_string())?
    .map_err(|s| format!("GetMetrics: {:?}: {}", s.code(), s.message()))?
    .into_inner()
    .prometheus_text;
    submitted_total(&text).ok_or_else(|| "cannot parse cuzk_jobs_submitted_total".to_string())
}

struct Report {
    results: Vec<JobResult>,
    wall_ms: u64,
    /// Jobs the daemon counted as submitted during the run, when known.
    daemon_submitted: Result<u64, String>,
}

async fn drive(
    addr: &str,
    fixtures: Fixtures,
    requests: HashMap<ProofKind, RawRequest>,
    plans: Vec<Plan>,
    opts: &Options,
) -> Result<Report> {
    let mut client = tokio::time::timeout(Duration::from_secs(30), crate::remote::connect(addr))
        .await
        .with_context(|| format!("connecting to {addr}: no answer within 30 s"))?
        .with_context(|| format!("connecting to {addr}"))?;
    let before = read_submitted(&mut client).await;

    let bar = ProgressBar::new(plans.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} answered {msg}")
            .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    let start = Instant::now();
    let ctx = Arc::new(Ctx {
        fixtures,
        requests,
        porep_pending: AtomicUsize::new(0),
        deadline: start + opts.timeout,
        start,
        bar: bar.clone(),
    });
    let gate = Arc::new(Semaphore::new(opts.concurrency));
    let mut tasks = Vec::with_capacity(plans.len());
    let mut results = Vec::with_capacity(plans.len());
    for plan in plans {
        let permit = match timeout_at(ctx.deadline, gate.clone().acquire_owned()).await {
            // A permit freed by a job that gave up at the deadline comes too late.
            Ok(p) if Instant::now() < ctx.deadline => p?,
            _ => {
                ctx.bar.inc(1);
                results.push(JobResult::new(
                    plan,
                    Outcome::Lost("never submitted: the overall timeout passed first".into()),
                ));
                continue;
            }
        };
        let (ctx, client) = (ctx.clone(), client.clone());
        tasks.push((
            plan.clone(),
            tokio::spawn(async move {
                let r = run_job(&ctx, client, plan, permit).await;
                ctx.bar.inc(1);
                r
            }),
        ));
    }
    for (plan, task) in tasks {
        match task.await {
            Ok(r) => results.push(r),
            Err(e) => results.push(JobResult::new(
                plan,
                Outcome::Lost(format!("job task failed: {e}")),
            )),
        }
    }
    let wall_ms = start.elapsed().as_millis() as u64;
    bar.finish_and_clear();

    let after = read_submitted(&mut client).await;
    let daemon_submitted = match (before, after) {
        (Ok(b), Ok(a)) => Ok(a.saturating_sub(b)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    results.sort_by_key(|r| r.plan.index);
    Ok(Report {
        results,
        wall_ms,
        daemon_submitted,
    })
}

fn status_message(s: &tonic::Status) -> String {
    format!("{:?}: {}", s.code(), s.message())
}

/// Submits (twice for a probe), awaits and verifies one job. Never panics on
/// daemon errors; bounded by the overall deadline.
async fn run_job(
    ctx: &Ctx,
    mut client: Client,
    plan: Plan,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> JobResult {
    let mut raw = ctx.requests[&plan.kind].clone();
    raw.request_id = plan.request_id.clone();
    raw.priority = plan.priority;
    let msg: SubmitProofRequest = submit_request(raw);
    let kind = plan.kind;

    let while_porep_queued =
        kind == ProofKind::WinningPost && ctx.porep_pending.load(Ordering::SeqCst) > 0;
    // A PoRep counts as queued from the moment its submit is sent until it
    // is answered (or given up on).
    let pending = if kind == ProofKind::PoRep {
        ctx.porep_pending.fetch_add(1, Ordering::SeqCst);
        PendingGuard(Some(&ctx.porep_pending))
    } else {
        PendingGuard(None)
    };
    let t0 = Instant::now();
    let submitted = match timeout_at(ctx.deadline, client.submit_proof(msg.clone())).await {
        Err(_) => {
            let mut r = JobResult::new(
                plan,
                Outcome::Lost("SubmitProof not answered before the overall timeout".into()),
            );
            r.while_porep_queued = while_porep_queued;
            return r;
        }
        Ok(Err(s)) => {
            let mut r = JobResult::new(
                plan,
                Outcome::Failed(format!("SubmitProof {}", status_message(&s))),
            );
            r.while_porep_queued = while_porep_queued;
            return r;
        }
        Ok(Ok(resp)) => resp.into_inner(),
    };
    let (mut probe_same, mut probe_error) = (None, None);
    if plan.probe {
        match timeout_at(ctx.deadline, client.submit_proof(msg)).await {
            Err(_) => {
                probe_error =
                    Some("second SubmitProof not answered before the overall timeout".into())
            }
            Ok(Err(s)) => probe_error = Some(format!("second SubmitProof {}", status_message(&s))),
            Ok(Ok(again)) => probe_same = Some(again.into_inner().job_id == submitted.job_id),
        }
    }

    let waited = timeout_at(
        ctx.deadline,
        client.await_proof(AwaitProofRequest {
            job_id: submitted.job_id.clone(),
            timeout_ms: 0,
        }),
    )
    .await;
    let mut result = JobResult::new(plan, Outcome::Lost(String::new()));
    result.while_porep_queued = while_porep_queued;
    result.probe_same = probe_same;
    result.probe_error = probe_error;
    let reply = match waited {
        Err(_) => {
            result.outcome =
                Outcome::Lost("AwaitProof not answered before the overall timeout".into());
            return result;
        }
        Ok(Err(s)) => {
            result.outcome = Outcome::Lost(format!("AwaitProof {}", status_message(&s)));
            return result;
        }
        Ok(Ok(reply)) => reply.into_inner(),
    };
    result.latency_ms = Some(t0.elapsed().as_millis() as u64);
    result.answered_at_ms = Some(ctx.start.elapsed().as_millis() as u64);
    result.daemon_total_ms = reply.total_ms;
    result.daemon_queue_ms = reply.queue_wait_ms;
    // The job is answered: let the next request in while this one verifies.
    drop(pending);
    drop(permit);

    let status = AwaitStatus::try_from(reply.status).unwrap_or(AwaitStatus::Unknown);
    result.outcome = if status == AwaitStatus::Completed {
        let c = check(&ctx.fixtures, kind, reply).await;
        Outcome::Completed {
            verified: c.verified,
            note: c.note,
        }
    } else {
        Outcome::Failed(format!("{}: {}", status.as_str_name(), reply.error_message))
    };
    result
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Report {
    /// Prints the report; the last line is the summary. Returns whether the
    /// run passed.
    fn print(&self, jobs: usize, verbose: bool, remote: bool) -> bool {
        let (mut completed, mut failed, mut lost, mut verified) = (0usize, 0usize, 0usize, 0usize);
        let mut failures: BTreeMap<String, usize> = BTreeMap::new();
        let mut losses: BTreeMap<String, usize> = BTreeMap::new();
        let mut unverified: BTreeMap<String, usize> = BTreeMap::new();
        let mut probe_errors: BTreeMap<String, usize> = BTreeMap::new();
        let (mut probes, mut probe_mismatch) = (0usize, 0usize);
        for r in &self.results {
            match &r.outcome {
                Outcome::Completed { verified: v, note } => {
                    completed += 1;
                    if *v {
                        verified += 1;
                    } else {
                        *unverified.entry(note.clone()).or_default() += 1;
                    }
                }
                Outcome::Failed(m) => {
                    failed += 1;
                    *failures.entry(m.clone()).or_default() += 1;
                }
                Outcome::Lost(m) => {
                    lost += 1;
                    *losses.entry(m.clone()).or_default() += 1;
                }
            }
            if let Some(same) = r.probe_same {
                probes += 1;
                if !same {
                    probe_mismatch += 1;
                }
            }
            if let Some(e) = &r.probe_error {
                *probe_errors.entry(e.clone()).or_default() += 1;
            }
        }
        for (title, map) in [
            ("failed", &failures),
            ("lost", &losses),
            ("not verified", &unverified),
            ("idempotency probe error", &probe_errors),
        ] {
            for (msg, n) in map {
                println!("{title} x{n}: {msg}");
            }
        }

        if verbose {
            let mut answered: Vec<&JobResult> = self.results.iter().collect();
            answered.sort_by_key(|r| r.answered_at_ms.unwrap_or(u64::MAX));
            for r in answered {
                let outcome = match &r.outcome {
                    Outcome::Completed { verified, .. } => format!("completed verified={verified}"),
                    Outcome::Failed(_) => "failed".into(),
                    Outcome::Lost(_) => "lost".into(),
                };
                println!(
                    "job {:>4} {:<12} priority={:<8} answered_at_ms={:<8} latency_ms={:<8} daemon_queue_ms={:<8} \
                     daemon_total_ms={:<8} {outcome}{}",
                    r.plan.index,
                    r.plan.kind.as_str(),
                    priority_name(r.plan.priority),
                    r.answered_at_ms.map_or("-".into(), |v| v.to_string()),
                    r.latency_ms.map_or("-".into(), |v| v.to_string()),
                    r.daemon_queue_ms,
                    r.daemon_total_ms,
                    if r.while_porep_queued { " (while porep queued)" } else { "" }
                );
            }
        }

        // Duplicates: a probe that got two job ids, or more jobs on the
        // daemon than request ids sent.
        let distinct_ids = self.results.len() as u64;
        let mut duplicated = probe_mismatch as u64;
        match &self.daemon_submitted {
            Ok(n) => {
                let extra = n.saturating_sub(distinct_ids);
                duplicated += extra;
                println!(
                    "idempotency probes={probes} same_job={} daemon_jobs_submitted={n} distinct_request_ids={distinct_ids}{}",
                    probes - probe_mismatch,
                    if remote && extra > 0 {
                        " (other clients of this daemon count too)"
                    } else {
                        ""
                    }
                );
            }
            Err(e) => println!(
                "idempotency probes={probes} same_job={} daemon_jobs_submitted=unknown ({e})",
                probes - probe_mismatch
            ),
        }

        let mut kinds: Vec<ProofKind> = self.results.iter().map(|r| r.plan.kind).collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let of_kind: Vec<&JobResult> = self
                .results
                .iter()
                .filter(|r| r.plan.kind == kind)
                .collect();
            let done: Vec<&&JobResult> = of_kind
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Completed { .. }))
                .collect();
            let mut lat: Vec<u64> = done.iter().filter_map(|r| r.latency_ms).collect();
            let mut total: Vec<u64> = done.iter().map(|r| r.daemon_total_ms).collect();
            let mut queue: Vec<u64> = done.iter().map(|r| r.daemon_queue_ms).collect();
            lat.sort_unstable();
            total.sort_unstable();
            queue.sort_unstable();
            println!(
                "kind={} count={} p50_ms={} p99_ms={} daemon_p50_total_ms={} daemon_p99_total_ms={} \
                 daemon_p50_queue_ms={} completed={}",
                kind.as_str(),
                of_kind.len(),
                pct(&lat, 0.5),
                pct(&lat, 0.99),
                pct(&total, 0.5),
                pct(&total, 0.99),
                pct(&queue, 0.5),
                done.len()
            );
        }
        // WinningPoSt while PoRep waited: all of them, and those at CRITICAL
        // (drawn, or unset: the kind's default), which should jump the queue.
        for (label, critical_only) in [("", false), (" at critical", true)] {
            let mut wp: Vec<u64> = self
                .results
                .iter()
                .filter(|r| r.while_porep_queued && matches!(r.outcome, Outcome::Completed { .. }))
                .filter(|r| !critical_only || r.plan.priority == 0 || r.plan.priority == 4)
                .filter_map(|r| r.latency_ms)
                .collect();
            wp.sort_unstable();
            println!(
                "winning-post{label} while porep queued: count={} p50_ms={} p99_ms={} max_ms={}",
                wp.len(),
                pct(&wp, 0.5),
                pct(&wp, 0.99),
                wp.last().copied().unwrap_or(0)
            );
        }

        let ok = lost == 0 && duplicated == 0 && verified == jobs;
        println!(
            "stress jobs={jobs} completed={completed} failed={failed} lost={lost} duplicated={duplicated} \
             verified={verified}/{jobs} wall_ms={}",
            self.wall_ms
        );
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_the_mix_and_is_seeded() {
        let mix = ProofKind::ALL;
        let a = plan(9, &mix, 42, "x");
        let b = plan(9, &mix, 42, "x");
        for k in mix {
            assert!(a.iter().any(|p| p.kind == k));
        }
        let ids: std::collections::HashSet<_> = a.iter().map(|p| &p.request_id).collect();
        assert_eq!(ids.len(), 9);
        assert_eq!(
            a.iter().map(|p| (p.kind, p.priority)).collect::<Vec<_>>(),
            b.iter().map(|p| (p.kind, p.priority)).collect::<Vec<_>>()
        );
        assert_eq!(a.iter().filter(|p| p.probe).count(), 2);
    }

    #[test]
    fn fixed_priorities_keep_the_planned_kinds() {
        let mix = ProofKind::ALL;
        let drawn = plan(12, &mix, 5, "x");
        let mut fixed = drawn.clone();
        let winning = parse_priority("winning-post=critical").unwrap();
        fix_priorities(&mut fixed, &[winning, parse_priority("porep=LOW").unwrap()]);
        for (d, f) in drawn.iter().zip(&fixed) {
            assert_eq!(d.kind, f.kind);
            let want = match f.kind {
                ProofKind::WinningPost => 4,
                ProofKind::PoRep => 1,
                _ => d.priority,
            };
            assert_eq!(f.priority, want, "{:?}", f.kind);
        }
        assert!(parse_priority("porep").is_err());
        assert!(parse_priority("porep=urgent").is_err());
        assert!(parse_priority("nope=low").is_err());
    }

    #[test]
    fn parses_submitted_total() {
        let text = "# HELP cuzk_jobs_submitted_total Jobs accepted\n\
                    # TYPE cuzk_jobs_submitted_total counter\n\
                    cuzk_jobs_submitted_total{kind=\"porep\"} 3\n\
                    cuzk_jobs_submitted_total{kind=\"winning-post\"} 4\n\
                    cuzk_jobs_submitted_totalx 100\n";
        assert_eq!(submitted_total(text), Some(7));
        assert_eq!(submitted_total(""), Some(0));
    }

    #[test]
    fn percentiles() {
        assert_eq!(pct(&[], 0.5), 0);
        assert_eq!(pct(&[5], 0.99), 5);
        assert_eq!(pct(&[1, 2, 3, 4], 0.5), 2);
        assert_eq!(pct(&[1, 2, 3, 4], 0.99), 4);
    }
}
