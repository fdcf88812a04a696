//! The engine: job table, priority queue and prover workers.
//!
//! A submitted request is checked ([`RawRequest::validate`]), becomes a
//! [`Job`] in the table (keyed by its request_id when it has one, so a
//! resubmit finds the same job), and waits in one queue ordered by priority,
//! then submission order. Worker threads take the best job, prove it, verify
//! the proof, and publish the outcome to everyone awaiting the job.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use crate::config::EngineConfig;
use crate::job::{Job, JobOutcome, JobPhase, JobStatus, JobTimings};
use crate::kinds::{Priority, ProofKind};
use crate::metrics::{Metrics, Stage};
use crate::prover::Prover;
use crate::request::{ProofRequest, RawRequest, RequestError};

/// Why a submit was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The request_id is taken by a job of another kind.
    #[error("request_id {request_id:?} already names a {existing} job; this request is {requested}")]
    RequestIdConflict {
        request_id: String,
        existing: ProofKind,
        requested: ProofKind,
    },
    #[error("the daemon is shutting down and accepts no new jobs")]
    ShuttingDown,
}

/// Errors of job lookups and control.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error("no job {0:?} (unknown, or finished longer ago than engine.job_retention)")]
    NotFound(String),
    #[error("job {job_id:?} has already ended ({status})")]
    AlreadyEnded { job_id: String, status: &'static str },
}

/// A job accepted (or found again) by submit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub job_id: String,
    /// Jobs ahead of this one in the queue (0 when running or done).
    pub queue_position: u32,
    /// True when the request_id named an existing job and nothing new was queued.
    pub existing: bool,
}

/// The result of waiting for a job.
#[derive(Clone, Debug)]
pub enum AwaitOutcome {
    Done(Arc<JobOutcome>),
    /// The wait timed out; the job goes on.
    Timeout,
}

/// Queue order: higher priority first, then earlier submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct QueueKey {
    priority: Reverse<Priority>,
    seq: u64,
}

impl QueueKey {
    fn of(job: &Job) -> QueueKey {
        QueueKey {
            priority: Reverse(job.priority),
            seq: job.seq,
        }
    }
}

struct State {
    jobs: HashMap<String, Arc<Job>>,
    queue: BTreeMap<QueueKey, Arc<Job>>,
    /// The job each worker is proving.
    running: Vec<Option<Arc<Job>>>,
    next_seq: u64,
    accepting: bool,
    stopping: bool,
    completed: u64,
    failed: u64,
    cancelled: u64,
}

struct Inner {
    config: EngineConfig,
    prover: Arc<dyn Prover>,
    state: Mutex<State>,
    work: Condvar,
    metrics: Metrics,
    started: Instant,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the table half-updated
        // in a way later users would misread, so poisoning is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Per-kind queue figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    pub kind: ProofKind,
    pub pending: u32,
    pub in_progress: u32,
}

/// A snapshot of the engine for status reports.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    pub prover: String,
    pub queues: Vec<QueueStatus>,
    /// Per worker: the job id and kind it is proving.
    pub workers: Vec<Option<(String, ProofKind)>>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub uptime: Duration,
    /// Resident SRS of the prover.
    pub srs: Vec<crate::srs_cache::SrsEntry>,
}

/// The proving engine. Cheap to clone; clones share one engine.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// Starts `config.workers` worker threads proving with `prover`.
    pub fn start(config: EngineConfig, prover: Arc<dyn Prover>) -> Engine {
        let workers = config.workers.max(1);
        let inner = Arc::new(Inner {
            config,
            prover,
            state: Mutex::new(State {
                jobs: HashMap::new(),
                queue: BTreeMap::new(),
                running: vec![None; workers],
                next_seq: 0,
                accepting: true,
                stopping: false,
                completed: 0,
                failed: 0,
                cancelled: 0,
            }),
            work: Condvar::new(),
            metrics: Metrics::new(),
            started: Instant::now(),
        });
        for w in 0..workers {
            let inner = inner.clone();
            // Workers run until shutdown; they are not joined because a
            // prover call cannot be interrupted.
            std::thread::Builder::new()
                .name(format!("cuzk-worker-{w}"))
                .spawn(move || worker_loop(inner, w))
                .expect("spawn worker thread");
        }
        info!(workers, prover = %inner.prover.name(), "engine started");
        Engine { inner }
    }

    /// The engine's configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Checks and queues a request. Blocking: decoding a large vanilla proof
    /// takes a while, so async callers should run it off the reactor.
    ///
    /// A request_id already in the table returns that job (unless it failed
    /// or was cancelled, in which case the request is proved afresh).
    pub fn submit(&self, raw: &RawRequest) -> Result<Submission, SubmitError> {
        let result = self.submit_inner(raw);
        if let Err(e) = &result {
            let reason = match e {
                SubmitError::Request(RequestError::InvalidArgument { .. }) => "invalid_argument",
                SubmitError::Request(RequestError::FailedPrecondition(_)) => "failed_precondition",
                SubmitError::Request(RequestError::Unimplemented(_)) => "unimplemented",
                SubmitError::RequestIdConflict { .. } => "request_id_conflict",
                SubmitError::ShuttingDown => "shutting_down",
            };
            self.inner.metrics.rejected(reason);
            warn!(request_id = %raw.request_id, error = %e, "request refused");
        }
        result
    }

    fn submit_inner(&self, raw: &RawRequest) -> Result<Submission, SubmitError> {
        if !raw.request_id.is_empty() {
            let kind = raw.kind()?;
            let st = self.inner.lock();
            if !st.accepting {
                return Err(SubmitError::ShuttingDown);
            }
            if let Some(found) = existing_job(&st, &raw.request_id, kind)? {
                return Ok(found);
            }
        }
        let request = raw.validate(self.inner.config.max_vanilla_bytes.as_u64())?;
        self.enqueue(request)
    }

    /// Queues a request that is already checked (by [`RawRequest::validate`],
    /// or built directly by an embedding program or a test).
    pub fn enqueue(&self, request: ProofRequest) -> Result<Submission, SubmitError> {
        let kind = request.kind();
        let mut st = self.inner.lock();
        if !st.accepting {
            return Err(SubmitError::ShuttingDown);
        }
        prune_finished(&mut st, self.inner.config.job_retention);
        if let Some(id) = &request.request_id {
            // Another submit of the same id may have won the race meanwhile.
            if let Some(found) = existing_job(&st, id, kind)? {
                return Ok(found);
            }
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        let job_id = request
            .request_id
            .clone()
            .unwrap_or_else(|| format!("job-{seq}-{:016x}", rand::random::<u64>()));
        let vanilla_bytes = request.vanilla_bytes;
        let job = Arc::new(Job::new(job_id.clone(), seq, request));
        let key = QueueKey::of(&job);
        let queue_position = st.queue.range(..key).count() as u32;
        st.queue.insert(key, job.clone());
        st.jobs.insert(job_id.clone(), job.clone());
        // Gauges move under the state lock, in step with the queue.
        self.inner.metrics.job_submitted(kind);
        drop(st);
        self.inner.work.notify_one();
        info!(
            job_id = %job_id,
            kind = %kind,
            proof = %job.proof_type,
            priority = job.priority.as_str(),
            vanilla_bytes,
            queue_position,
            "job queued"
        );
        Ok(Submission {
            job_id,
            queue_position,
            existing: false,
        })
    }

    /// Looks a job up.
    pub fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        self.inner.lock().jobs.get(job_id).cloned()
    }

    /// Waits for a job to end, or for `timeout` to pass (None: no limit).
    pub async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitOutcome, JobError> {
        let job = self
            .job(job_id)
            .ok_or_else(|| JobError::NotFound(job_id.to_string()))?;
        let mut rx = job.phase.subscribe();
        let wait = async {
            // The job owns the sender, and `job` is held here: the channel
            // cannot close while waiting.
            let phase = rx.wait_for(JobPhase::is_done).await.expect("job sender alive");
            match &*phase {
                JobPhase::Done(outcome) => outcome.clone(),
                _ => unreachable!("wait_for returned a phase that is not done"),
            }
        };
        Ok(match timeout {
            None => AwaitOutcome::Done(wait.await),
            Some(t) => match tokio::time::timeout(t, wait).await {
                Ok(outcome) => AwaitOutcome::Done(outcome),
                Err(_) => AwaitOutcome::Timeout,
            },
        })
    }

    /// Cancels a job. A queued job ends at once; a running job ends as
    /// cancelled when its prover returns (its proof is discarded). Returns
    /// whether the job was running.
    pub fn cancel(&self, job_id: &str) -> Result<bool, JobError> {
        let mut st = self.inner.lock();
        let job = st
            .jobs
            .get(job_id)
            .cloned()
            .ok_or_else(|| JobError::NotFound(job_id.to_string()))?;
        if let Some(outcome) = job.outcome() {
            return Err(JobError::AlreadyEnded {
                job_id: job_id.to_string(),
                status: outcome.status.as_str(),
            });
        }
        if st.queue.remove(&QueueKey::of(&job)).is_some() {
            self.inner.metrics.job_left_queue(job.kind);
            let outcome = job.unfinished(JobStatus::Cancelled, "cancelled while queued".into());
            end_job(&mut st, &self.inner.metrics, &job, outcome);
            info!(job_id, "queued job cancelled");
            Ok(false)
        } else {
            job.cancel_requested.store(true, Ordering::SeqCst);
            info!(job_id, "running job will be cancelled when its prover returns");
            Ok(true)
        }
    }

    /// A snapshot for status reports.
    pub fn status(&self) -> EngineStatus {
        let st = self.inner.lock();
        let queues = ProofKind::ALL
            .into_iter()
            .map(|kind| QueueStatus {
                kind,
                pending: st.queue.values().filter(|j| j.kind == kind).count() as u32,
                in_progress: st
                    .running
                    .iter()
                    .flatten()
                    .filter(|j| j.kind == kind)
                    .count() as u32,
            })
            .collect();
        EngineStatus {
            prover: self.inner.prover.name(),
            queues,
            workers: st
                .running
                .iter()
                .map(|j| j.as_ref().map(|j| (j.id.clone(), j.kind)))
                .collect(),
            completed: st.completed,
            failed: st.failed,
            cancelled: st.cancelled,
            uptime: self.inner.started.elapsed(),
            srs: self.inner.prover.srs_entries(),
        }
    }

    /// Prometheus text exposition of the engine's metrics.
    pub fn metrics_text(&self) -> String {
        self.inner.metrics.render(self.inner.started.elapsed())
    }

    /// Stops the engine: refuses new jobs, fails queued ones, gives running
    /// ones `grace` to finish (then fails them too), and stops the workers.
    pub async fn shutdown(&self, grace: Duration) {
        let failed_queued = {
            let mut st = self.inner.lock();
            st.accepting = false;
            let queued: Vec<_> = std::mem::take(&mut st.queue).into_values().collect();
            for job in &queued {
                self.inner.metrics.job_left_queue(job.kind);
                let outcome = job.unfinished(
                    JobStatus::Failed,
                    "daemon shutting down; the job was never started".into(),
                );
                end_job(&mut st, &self.inner.metrics, job, outcome);
            }
            queued.len()
        };
        info!(failed_queued, "engine shutting down");

        let deadline = Instant::now() + grace;
        loop {
            let running: Vec<Arc<Job>> = self.inner.lock().running.iter().flatten().cloned().collect();
            if running.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                let mut st = self.inner.lock();
                for job in running {
                    warn!(job_id = %job.id, "job still running at the end of the shutdown grace; failing it");
                    let outcome = job.unfinished(
                        JobStatus::Failed,
                        "daemon stopped before the job finished".into(),
                    );
                    end_job(&mut st, &self.inner.metrics, &job, outcome);
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.inner.lock().stopping = true;
        self.inner.work.notify_all();
    }
}

/// The live job a request_id names, as a submission; `None` when there is
/// none or it failed / was cancelled (then the request is proved again).
fn existing_job(
    st: &State,
    request_id: &str,
    kind: ProofKind,
) -> Result<Option<Submission>, SubmitError> {
    let Some(job) = st.jobs.get(request_id) else {
        return Ok(None);
    };
    if let Some(outcome) = job.outcome() {
        if outcome.status != JobStatus::Completed {
            return Ok(None);
        }
    }
    if job.kind != kind {
        return Err(SubmitError::RequestIdConflict {
            request_id: request_id.to_string(),
            existing: job.kind,
            requested: kind,
        });
    }
    let queue_position = st.queue.range(..QueueKey::of(job)).count() as u32;
    Ok(Some(Submission {
        job_id: job.id.clone(),
        queue_position,
        existing: true,
    }))
}

/// Ends a job unless it has ended already, counting the end in the totals
/// and metrics first, so whoever sees the job done sees the figures too.
/// Every end goes through here, with the state lock held.
fn end_job(st: &mut State, metrics: &Metrics, job: &Job, outcome: JobOutcome) -> bool {
    if job.phase().is_done() {
        return false;
    }
    match outcome.status {
        JobStatus::Completed => st.completed += 1,
        JobStatus::Failed => st.failed += 1,
        JobStatus::Cancelled => st.cancelled += 1,
    }
    metrics.job_finished(job.kind, outcome.status);
    job.finish(outcome)
}

/// Forgets jobs that ended more than `retention` ago.
fn prune_finished(st: &mut State, retention: Duration) {
    st.jobs.retain(|_, job| {
        match *job.finished_at.lock().expect("finished_at lock") {
            Some(at) => at.elapsed() < retention,
            None => true,
        }
    });
}

fn worker_loop(inner: Arc<Inner>, worker: usize) {
    loop {
        let job = {
            let mut st = inner.lock();
            loop {
                if st.stopping {
                    return;
                }
                if let Some((_, job)) = st.queue.pop_first() {
                    st.running[worker] = Some(job.clone());
                    inner.metrics.job_left_queue(job.kind);
                    inner.metrics.job_started(job.kind);
                    break job;
                }
                st = inner.work.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        };
        let outcome = run_job(&inner, &job, worker);

        let status = outcome.status;
        let timings = outcome.timings;
        let error_text = outcome.error.clone();
        {
            // Counters and metrics change with the outcome, under the state
            // lock, so nobody who sees the job done sees stale figures.
            let mut st = inner.lock();
            st.running[worker] = None;
            inner.metrics.job_stopped_running(job.kind);
            if !job.phase().is_done() {
                for (stage, d) in [
                    (Stage::QueueWait, timings.queue_wait),
                    (Stage::SrsLoad, timings.srs_load),
                    (Stage::Synthesis, timings.synthesis),
                    (Stage::Compute, timings.compute),
                    (Stage::Prove, timings.prove),
                    (Stage::Verify, timings.verify),
                    (Stage::Total, timings.total),
                ] {
                    inner.metrics.stage(job.kind, stage, d);
                }
            }
            end_job(&mut st, &inner.metrics, &job, outcome);
        }
        match status {
            JobStatus::Completed => info!(
                job_id = %job.id,
                kind = %job.kind,
                queue_ms = timings.queue_wait.as_millis() as u64,
                prove_ms = timings.prove.as_millis() as u64,
                verify_ms = timings.verify.as_millis() as u64,
                total_ms = timings.total.as_millis() as u64,
                "job completed, proof verified"
            ),
            JobStatus::Failed => error!(job_id = %job.id, kind = %job.kind, error = %error_text, "job failed"),
            JobStatus::Cancelled => info!(job_id = %job.id, "job cancelled"),
        }
    }
}

/// Proves and verifies one job; never panics.
fn run_job(inner: &Inner, job: &Job, worker: usize) -> JobOutcome {
    let queue_wait = job.mark_started(worker);
    info!(job_id = %job.id, kind = %job.kind, worker, queue_ms = queue_wait.as_millis() as u64, "proving");
    let Some(request) = job.request.lock().expect("request lock").take() else {
        return job.unfinished(JobStatus::Failed, "internal error: job has no request".into());
    };

    let t_prove = Instant::now();
    let proved = catch_panic(|| inner.prover.prove(&request));
    let prove = t_prove.elapsed();

    let mut timings = JobTimings {
        queue_wait,
        prove,
        ..Default::default()
    };
    if let Ok(out) = &proved {
        timings.srs_load = out.srs_load;
        timings.synthesis = out.synthesis;
        timings.compute = out.compute;
    }
    let finish = |status, proof, error: String, mut timings: JobTimings| {
        timings.total = job.submitted.elapsed();
        JobOutcome {
            status,
            proof,
            error,
            timings,
        }
    };
    if job.cancel_requested() {
        return finish(JobStatus::Cancelled, Vec::new(), "cancelled while running".into(), timings);
    }
    let proof = match proved {
        Ok(out) => out.proof,
        Err(e) => return finish(JobStatus::Failed, Vec::new(), format!("proving failed: {e}"), timings),
    };

    let t_verify = Instant::now();
    let verified = catch_panic(|| inner.prover.verify(&request, &proof));
    timings.verify = t_verify.elapsed();
    if job.cancel_requested() {
        return finish(JobStatus::Cancelled, Vec::new(), "cancelled while running".into(), timings);
    }
    match verified {
        Ok(true) => finish(JobStatus::Completed, proof, String::new(), timings),
        Ok(false) => finish(
            JobStatus::Failed,
            Vec::new(),
            "the proof failed verification and was discarded".into(),
            timings,
        ),
        Err(e) => finish(
            JobStatus::Failed,
            Vec::new(),
            format!("the proof could not be verified: {e}"),
            timings,
        ),
    }
}

/// Runs `f`, turning a panic into an error so one bad job cannot take a
/// worker (or the daemon) down.
fn catch_panic<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("prover panicked: {msg}"))
        }
    }
}
