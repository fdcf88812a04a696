//! The engine: job table, the partition pipeline and its queues.
//!
//! A submitted request is checked ([`crate::request::RawRequest::validate`]) and becomes a
//! [`Job`] (keyed by its request_id when it has one, so a resubmit finds the
//! same job). From there it flows partition by partition:
//!
//! ```text
//! jobs ──▶ synthesis queue ──▶ synthesis workers ──▶ ready queue ──▶ prover workers ──▶ assemble, verify ──▶ reply
//!          (by priority)       (memory reserved)     (bounded)       (SRS leased)
//! ```
//!
//! Both queues are ordered by (priority, submission sequence[, partition]):
//! a WinningPoSt submitted behind PoRep partitions is the next one
//! synthesized and the next one proved. Synthesis of later partitions and
//! jobs runs while earlier ones are proved. Every partition's memory is
//! reserved from the [`MemoryBudget`] before synthesis and given back in two
//! steps (a/b/c when the backend has consumed them, the rest when the
//! partition is proved). Synthesis workers live in [`workers`], prover
//! workers in [`proving`].

mod journaling;
mod proving;
mod recover;
mod submit;
mod synthesis;
mod workers;

pub use workers::{partition_bytes, partition_size};

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cuzk_prover::{PartitionWitness, ProverBackend};
use tracing::{info, warn};

use crate::budget::{MemoryBudget, Reservation};
use crate::config::EngineConfig;
use crate::job::{Job, JobOutcome, JobPhase, JobStatus};
use crate::journal::Journal;
use crate::kinds::{Priority, ProofKind};
use crate::metrics::Metrics;
pub use crate::prover::ProofSystem;
use crate::r1cs_manager::{ConstraintSystemEntry, ConstraintSystems};
use crate::request::RequestError;
use crate::sizing::{self, Machine};
use crate::srs_manager::{SrsEntry, SrsLease, SrsManager};

/// The parts an engine is built from.
#[derive(Clone)]
pub struct EngineParts {
    pub system: Arc<dyn ProofSystem>,
    /// One backend per device (the CPU backend is one device); each gets
    /// `engine.gpu_workers_per_device` prover workers.
    pub backends: Vec<Arc<dyn ProverBackend>>,
    pub srs: Arc<SrsManager>,
    pub budget: Arc<MemoryBudget>,
    /// Resident compiled constraint systems (charged to `budget`).
    pub r1cs: Arc<ConstraintSystems>,
}

/// Why a submit was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The request_id is taken by a job of another kind.
    #[error(
        "request_id {request_id:?} already names a {existing} job; this request is {requested}"
    )]
    RequestIdConflict {
        request_id: String,
        existing: ProofKind,
        requested: ProofKind,
    },
    #[error("the daemon is shutting down and accepts no new jobs")]
    ShuttingDown,
    /// As many jobs as `engine.max_queued_jobs` are queued or running.
    #[error(
        "{limit} jobs are queued or running (engine.max_queued_jobs); retry when some have ended"
    )]
    QueueFull { limit: usize },
    /// The job could not be written to the journal, so it was not accepted.
    #[error("the job journal cannot record the job: {0}")]
    Journal(String),
    /// The journal's disk is down to the space kept for PoSt.
    #[error("{0}")]
    DiskFull(String),
    /// Every prover device failed and is out of service.
    #[error("no prover device is in service ({0}); restart the daemon once the devices are back")]
    NoDevice(String),
}

/// Errors of job lookups and control.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error("no job {0:?} (unknown, or finished longer ago than engine.job_retention)")]
    NotFound(String),
    #[error("job {job_id:?} has already ended ({status})")]
    AlreadyEnded {
        job_id: String,
        status: &'static str,
    },
    /// The daemon stops before the job came back from its journal.
    #[error(
        "job {0:?} is journaled and was not restored before the daemon began to stop; \
         it resumes after the restart: await it again then"
    )]
    NotRestored(String),
}

/// A job accepted (or found again) by submit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub job_id: String,
    /// Jobs not yet started that will start before this one (0 when running
    /// or done).
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
type JobKey = (Reverse<Priority>, u64);
/// Ready-queue order: as jobs, then partition index.
type PartKey = (Reverse<Priority>, u64, usize);

fn job_key(job: &Job) -> JobKey {
    (Reverse(job.priority), job.seq)
}

/// A synthesized partition waiting for a prover.
pub(crate) struct ReadyPartition {
    pub job: Arc<Job>,
    pub k: usize,
    pub witness: PartitionWitness,
    pub reservation: Reservation,
    /// Bytes of the reservation covering a/b/c and the H scratch.
    pub abc_bytes: u64,
    /// Its size, as the backends see it.
    pub size: cuzk_prover::WitnessSize,
    /// The circuit's SRS, held from synthesis to proof.
    pub srs: SrsLease,
}

/// What one worker is doing (for status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerTask {
    pub job_id: String,
    pub kind: ProofKind,
    pub partition: usize,
}

pub(crate) struct State {
    jobs: HashMap<String, Arc<Job>>,
    /// Jobs with partitions left to synthesize.
    synth_queue: BTreeMap<JobKey, Arc<Job>>,
    /// Synthesized partitions.
    ready: BTreeMap<PartKey, ReadyPartition>,
    synth_busy: Vec<Option<WorkerTask>>,
    /// Partitions whose synthesis worker waits for memory, most urgent
    /// first; only the first may take memory as it frees up.
    mem_waiters: std::collections::BTreeSet<PartKey>,
    prove_busy: Vec<Option<WorkerTask>>,
    /// Why each device (index into `parts.backends`) was taken out of
    /// service, if it was: its prover workers take no more partitions.
    out_of_service: Vec<Option<String>>,
    /// Request ids being admitted (journaled, not yet in `jobs`): a
    /// submit of the same id waits for that admission (`Inner::admit_cv`).
    admitting: std::collections::HashSet<String>,
    /// Admissions under way, with or without a request id (counted
    /// against `Inner::max_jobs`).
    admissions: usize,
    /// While journaled jobs are being restored ([`Engine::start_restoring`]):
    /// how many are left (their ids are in `admitting` until then).
    restoring: Option<usize>,
    next_seq: u64,
    accepting: bool,
    stopping: bool,
    completed: u64,
    failed: u64,
    cancelled: u64,
}

impl State {
    /// An empty table for `synth_workers` synthesis workers,
    /// `prove_workers` prover workers and `backends` devices.
    fn new(synth_workers: usize, prove_workers: usize, backends: usize) -> State {
        State {
            jobs: HashMap::new(),
            synth_queue: BTreeMap::new(),
            ready: BTreeMap::new(),
            synth_busy: vec![None; synth_workers],
            mem_waiters: Default::default(),
            prove_busy: vec![None; prove_workers],
            out_of_service: vec![None; backends],
            admitting: Default::default(),
            admissions: 0,
            restoring: None,
            next_seq: 0,
            accepting: true,
            stopping: false,
            completed: 0,
            failed: 0,
            cancelled: 0,
        }
    }
}

pub(crate) struct Inner {
    config: EngineConfig,
    parts: EngineParts,
    state: Mutex<State>,
    /// Work for synthesis workers (a job queued, ready-queue room).
    synth_cv: Condvar,
    /// Work for prover workers (a partition ready).
    prove_cv: Condvar,
    metrics: Metrics,
    started: Instant,
    /// The first of `State::mem_waiters`, readable without the state lock
    /// (a leaf lock: nothing is taken while holding it).
    mem_head: Mutex<Option<PartKey>>,
    /// The device (index into `parts.backends`) of each prover worker.
    worker_device: Vec<usize>,
    /// Which prover workers take only CRITICAL partitions.
    prover_critical: Vec<bool>,
    /// Per device: how many ready partitions of one circuit a prover
    /// worker takes at once (the backend's
    /// [`ProverBackend::partitions_per_pass`] after its last call; one
    /// until then).
    pass_hint: Vec<std::sync::atomic::AtomicUsize>,
    /// Synthesis workers from this index on take only CRITICAL jobs.
    critical_synth_from: usize,
    /// Synthesized partitions that may wait for a prover
    /// (`engine.synthesized_queue`, resolved).
    queue_cap: usize,
    /// Unfinished jobs beyond which a non-CRITICAL submit is refused
    /// (`engine.max_queued_jobs`, resolved).
    max_jobs: usize,
    /// The job journal, when the engine has one.
    journal: Option<journaling::Journaling>,
    /// An admission ended (`State::admitting`): submits of its request id
    /// look the id up again.
    admit_cv: Condvar,
    /// Synthesis threads and the witness pool.
    synthesis: synthesis::SynthesisSetup,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Per-kind queue figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    pub kind: ProofKind,
    /// Jobs not started.
    pub pending: u32,
    /// Jobs started and not ended.
    pub in_progress: u32,
}

/// A snapshot of the engine for status reports.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    /// Backend names, one per device (`cpu`, `cuda:0`, ...).
    pub backends: Vec<String>,
    /// The device (index into `backends`) of each prover worker.
    pub prover_devices: Vec<usize>,
    /// What each backend's accelerator reports (`None`: the CPU).
    pub devices: Vec<Option<cuzk_prover::DeviceInfo>>,
    /// Why each backend's device was taken out of service, if it was.
    pub out_of_service: Vec<Option<String>>,
    pub queues: Vec<QueueStatus>,
    pub synthesis_workers: Vec<Option<WorkerTask>>,
    pub prover_workers: Vec<Option<WorkerTask>>,
    /// Synthesized partitions waiting for a prover.
    pub ready_partitions: u32,
    /// Partitions whose synthesis waits for memory.
    pub waiting_for_memory: u32,
    /// Journaled jobs still to restore after a start (`None`: restored).
    pub restoring_jobs: Option<usize>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub uptime: Duration,
    pub budget_used: u64,
    pub budget_limit: u64,
    pub budget_peak: u64,
    pub srs: Vec<SrsEntry>,
    /// Resident compiled constraint systems.
    pub constraint_systems: Vec<ConstraintSystemEntry>,
}

/// The proving engine. Cheap to clone; clones share one engine.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// Starts `config.partition_workers` synthesis workers and
    /// `config.gpu_workers_per_device` prover workers on each backend, and
    /// `config.critical_workers` more of each (per backend for provers)
    /// that take only CRITICAL work; counts left at `"auto"` are sized from
    /// the machine and the backends (`sizing::choose`).
    ///
    /// # Panics
    /// If `parts.backends` is empty.
    pub fn start(config: EngineConfig, parts: EngineParts) -> Engine {
        Engine::start_inner(config, parts, None)
    }

    fn start_inner(config: EngineConfig, parts: EngineParts, journal: Option<Journal>) -> Engine {
        assert!(
            !parts.backends.is_empty(),
            "an engine needs at least one prover backend"
        );
        let sized = sizing::choose(&Machine::of(&parts.backends, parts.budget.limit()));
        let critical_synth_from = config.partition_workers.or(sized.partition_workers).max(1);
        let synth_workers = critical_synth_from + config.critical_workers;
        let per_device = config
            .gpu_workers_per_device
            .or(sized.gpu_workers_per_device)
            .max(1);
        let queue_cap = config.synthesized_queue.or(sized.synthesized_queue).max(1);
        let max_jobs = config
            .max_queued_jobs
            .or(sizing::max_queued_jobs(parts.budget.limit()))
            .max(1);
        log_sizing(&config, &sized);
        // Per device: the shared workers, then those kept for CRITICAL.
        let (worker_device, prover_critical): (Vec<usize>, Vec<bool>) = (0..parts.backends.len())
            .flat_map(|d| {
                let shared = std::iter::repeat_n((d, false), per_device);
                shared.chain(std::iter::repeat_n((d, true), config.critical_workers))
            })
            .unzip();
        let prove_workers = worker_device.len();
        let backends = parts.backends.len();
        let synthesis = synthesis::SynthesisSetup::new(&config, &parts.budget);
        let inner = Arc::new(Inner {
            synthesis,
            config,
            parts,
            state: Mutex::new(State::new(synth_workers, prove_workers, backends)),
            synth_cv: Condvar::new(),
            prove_cv: Condvar::new(),
            metrics: Metrics::new(),
            started: Instant::now(),
            mem_head: Mutex::new(None),
            worker_device,
            prover_critical,
            pass_hint: (0..backends)
                .map(|_| std::sync::atomic::AtomicUsize::new(1))
                .collect(),
            critical_synth_from,
            queue_cap,
            max_jobs,
            journal: journal.map(journaling::Journaling::start),
            admit_cv: Condvar::new(),
        });
        inner
            .metrics
            .budget(inner.parts.budget.used(), inner.parts.budget.limit());
        workers::spawn(&inner, synth_workers);
        proving::spawn(&inner, prove_workers);
        info!(
            synth_workers,
            prove_workers,
            critical_workers = inner.config.critical_workers,
            synthesized_queue = queue_cap,
            max_queued_jobs = max_jobs,
            backends = ?inner.parts.backends.iter().map(|b| b.name()).collect::<Vec<_>>(),
            budget = inner.parts.budget.limit(),
            "engine started"
        );
        Engine { inner }
    }

    /// The engine's configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// The SRS manager.
    pub fn srs(&self) -> &Arc<SrsManager> {
        &self.inner.parts.srs
    }

    /// The memory budget.
    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.inner.parts.budget
    }

    /// Looks a job up.
    pub fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        self.inner.lock().jobs.get(job_id).cloned()
    }

    /// The job `job_id`, or None while it is being admitted or may still
    /// come back from the journal (restored, or salvaged from a set-aside
    /// one: until the restoration ends, an unknown id may be one of those).
    fn job_or_coming(&self, job_id: &str) -> Result<Option<Arc<Job>>, JobError> {
        let st = self.inner.lock();
        if let Some(job) = st.jobs.get(job_id) {
            return Ok(Some(job.clone()));
        }
        if !st.admitting.contains(job_id) && st.restoring.is_none() {
            return Err(JobError::NotFound(job_id.to_string()));
        }
        if !st.accepting {
            return Err(JobError::NotRestored(job_id.to_string()));
        }
        Ok(None)
    }

    /// Waits for a job to end, or for `timeout` to pass (None: no limit).
    /// A job being admitted, or still to restore from the journal after a
    /// start, is waited for.
    pub async fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitOutcome, JobError> {
        let started = tokio::time::Instant::now();
        let job = loop {
            if let Some(job) = self.job_or_coming(job_id)? {
                break job;
            }
            if timeout.is_some_and(|t| started.elapsed() >= t) {
                return Ok(AwaitOutcome::Timeout);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let timeout = timeout.map(|t| t.saturating_sub(started.elapsed()));
        let mut rx = job.phase.subscribe();
        let wait = async {
            // The job owns the sender, and `job` is held here: the channel
            // cannot close while waiting.
            let phase = rx
                .wait_for(JobPhase::is_done)
                .await
                .expect("job sender alive");
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

    /// Cancels a job: it ends at once; queued partitions are dropped with
    /// their memory, a partition being synthesized or proved is discarded
    /// when its worker finishes it. Returns whether the job had started.
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
        job.cancel_requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let was_running = job.run().started.is_some();
        let outcome = job.outcome_now(
            JobStatus::Cancelled,
            Vec::new(),
            "cancelled".into(),
            Duration::ZERO,
        );
        end_job(&mut st, &self.inner, &job, outcome);
        drop(st);
        self.inner.synth_cv.notify_all();
        info!(job_id, was_running, "job cancelled");
        Ok(was_running)
    }

    /// A snapshot for status reports.
    pub fn status(&self) -> EngineStatus {
        let st = self.inner.lock();
        let queues = ProofKind::ALL
            .into_iter()
            .map(|kind| {
                let live = st.jobs.values().filter(|j| j.kind == kind && !j.is_done());
                let (mut pending, mut in_progress) = (0, 0);
                for j in live {
                    if j.run().started.is_some() {
                        in_progress += 1;
                    } else {
                        pending += 1;
                    }
                }
                QueueStatus {
                    kind,
                    pending,
                    in_progress,
                }
            })
            .collect();
        let budget = &self.inner.parts.budget;
        let (synthesis_workers, prover_workers) = (st.synth_busy.clone(), st.prove_busy.clone());
        let out_of_service = st.out_of_service.clone();
        let (ready_partitions, completed, failed, cancelled) =
            (st.ready.len() as u32, st.completed, st.failed, st.cancelled);
        let waiting_for_memory = st.mem_waiters.len() as u32;
        let restoring_jobs = st.restoring;
        // The SRS table may read file headers: not under the state lock.
        drop(st);
        EngineStatus {
            backends: self.inner.parts.backends.iter().map(|b| b.name()).collect(),
            prover_devices: self.inner.worker_device.clone(),
            devices: self
                .inner
                .parts
                .backends
                .iter()
                .map(|b| b.device())
                .collect(),
            out_of_service,
            queues,
            synthesis_workers,
            prover_workers,
            ready_partitions,
            waiting_for_memory,
            restoring_jobs,
            completed,
            failed,
            cancelled,
            uptime: self.inner.started.elapsed(),
            budget_used: budget.used(),
            budget_limit: budget.limit(),
            budget_peak: budget.peak(),
            srs: self.inner.parts.srs.entries(),
            constraint_systems: self.inner.parts.r1cs.entries(),
        }
    }

    /// Prometheus text exposition of the engine's metrics.
    pub fn metrics_text(&self) -> String {
        let s = self.status();
        for q in &s.queues {
            self.inner.metrics.queues(q.kind, q.pending, q.in_progress);
        }
        self.inner
            .metrics
            .partitions("ready", s.ready_partitions as usize);
        self.inner.metrics.budget(s.budget_used, s.budget_limit);
        for b in &self.inner.parts.backends {
            self.inner.metrics.backend(&b.name(), b.metrics());
        }
        self.inner.metrics.render(s.uptime)
    }

    /// Stops the engine: refuses new jobs, fails those not started, gives
    /// started ones `grace` to finish (then fails them too), and stops the
    /// workers.
    pub async fn shutdown(&self, grace: Duration) {
        let failed_queued = {
            let mut st = self.inner.lock();
            st.accepting = false;
            let unstarted: Vec<Arc<Job>> = st
                .jobs
                .values()
                .filter(|j| !j.is_done() && j.run().started.is_none())
                .cloned()
                .collect();
            for job in &unstarted {
                let outcome = self.stopped_outcome(job, "the job was never started");
                end_job_as(&mut st, &self.inner, job, outcome, Journaled::No);
            }
            unstarted.len()
        };
        // Submits waiting for an admission of their request id get the
        // shutdown error now.
        self.inner.admit_cv.notify_all();
        info!(failed_queued, "engine shutting down");
        let deadline = Instant::now() + grace;
        loop {
            let running: Vec<Arc<Job>> = {
                let st = self.inner.lock();
                st.jobs.values().filter(|j| !j.is_done()).cloned().collect()
            };
            if running.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                let mut st = self.inner.lock();
                for job in running {
                    warn!(job_id = %job.id, "job still running at the end of the shutdown grace; failing it");
                    let outcome = self.stopped_outcome(&job, "the job had not finished");
                    end_job_as(&mut st, &self.inner, &job, outcome, Journaled::No);
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.inner.lock().stopping = true;
        self.inner.synth_cv.notify_all();
        self.inner.prove_cv.notify_all();
        if let Some(j) = &self.inner.journal {
            j.flush();
        }
    }
}

impl Engine {
    /// The outcome of a job a graceful stop ends (`why`): with a journal
    /// the job stays there unfinished and the next start runs it again
    /// (`resumes`); without one it is failed for good.
    fn stopped_outcome(&self, job: &Job, why: &str) -> JobOutcome {
        let journaled = self.inner.journal.is_some();
        let error = if journaled {
            format!("daemon shutting down ({why}); the job is journaled and runs again after the restart")
        } else {
            format!("daemon shutting down ({why}); no journal keeps it, submit it again")
        };
        let mut outcome = job.outcome_now(JobStatus::Failed, Vec::new(), error, Duration::ZERO);
        outcome.resumes = journaled;
        outcome
    }
}

/// Jobs not yet started that will be started before the job keyed `key`.
fn queue_position(st: &State, key: JobKey) -> u32 {
    st.synth_queue
        .range(..key)
        .filter(|(_, j)| j.run().started.is_none())
        .count() as u32
}

/// Forgets jobs that ended more than `retention` ago.
fn prune_finished(st: &mut State, retention: Duration) {
    st.jobs.retain(
        |_, job| match *job.finished_at.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(at) => at.elapsed() < retention,
            None => true,
        },
    );
}

/// Whether a job's end goes to the journal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Journaled {
    Yes,
    /// Ended by a graceful stop, or for want of a device in service:
    /// left unfinished in the journal, so the next start runs it.
    No,
}

/// Ends a job unless it has ended already (see [`end_job_as`]).
pub(crate) fn end_job(st: &mut State, inner: &Inner, job: &Arc<Job>, outcome: JobOutcome) -> bool {
    end_job_as(st, inner, job, outcome, Journaled::Yes)
}

/// Ends a job unless it has ended already: counts the end in the totals and
/// metrics first (so whoever sees the job done sees the figures too), drops
/// its queued work and the memory it holds, queues the end for the journal,
/// then publishes the outcome. Every end goes through here, with the state
/// lock held.
pub(crate) fn end_job_as(
    st: &mut State,
    inner: &Inner,
    job: &Arc<Job>,
    outcome: JobOutcome,
    journaled: Journaled,
) -> bool {
    if job.is_done() {
        return false;
    }
    if let (Some(j), Journaled::Yes) = (&inner.journal, journaled) {
        j.ended(job, &outcome);
    }
    job.release_inputs();
    st.synth_queue.remove(&job_key(job));
    let dropped: Vec<PartKey> = st
        .ready
        .iter()
        .filter(|(_, p)| Arc::ptr_eq(&p.job, job))
        .map(|(k, _)| *k)
        .collect();
    for key in dropped {
        // The witness and its reservation go with the entry.
        st.ready.remove(&key);
        job.run().active -= 1;
    }
    match outcome.status {
        JobStatus::Completed => st.completed += 1,
        JobStatus::Failed => st.failed += 1,
        JobStatus::Cancelled => st.cancelled += 1,
    }
    // Room in the ready queue, or a job gone from ahead of others.
    inner.synth_cv.notify_all();
    inner.metrics.job_finished(job.kind, outcome.status);
    inner.metrics.job_timings(job.kind, &outcome.timings);
    match outcome.status {
        JobStatus::Completed => info!(
            job_id = %job.id,
            kind = %job.kind,
            queue_ms = outcome.timings.queue_wait.as_millis() as u64,
            synthesis_ms = outcome.timings.synthesis.as_millis() as u64,
            compute_ms = outcome.timings.compute.as_millis() as u64,
            verify_ms = outcome.timings.verify.as_millis() as u64,
            total_ms = outcome.timings.total.as_millis() as u64,
            "job completed, proof verified"
        ),
        JobStatus::Failed => {
            warn!(job_id = %job.id, kind = %job.kind, error = %outcome.error, "job failed")
        }
        JobStatus::Cancelled => info!(job_id = %job.id, "job ended: cancelled"),
    }
    job.finish(outcome)
}

/// Says at start which worker counts the engine sized itself, and why.
fn log_sizing(config: &EngineConfig, sized: &sizing::Sizing) {
    let auto = [
        config.partition_workers,
        config.gpu_workers_per_device,
        config.synthesized_queue,
    ]
    .contains(&crate::config::Count::Auto);
    if auto {
        info!(why = %sized.why.join("; "), "engine sized from the machine (engine keys left at \"auto\")");
    }
}
