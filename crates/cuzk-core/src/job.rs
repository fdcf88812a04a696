//! One proof job: its identity, lifecycle phase, outcome and timings.
//!
//! A job moves Queued → Running → Done exactly once; the phase lives in a
//! `watch` channel so any number of `AwaitProof` callers can wait on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::kinds::{Priority, ProofKind, ProofType};
use crate::request::ProofRequest;

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// A proof was made and verified.
    Completed,
    /// No valid proof: proving failed, verification failed, or the daemon
    /// stopped first. The error message says which.
    Failed,
    /// Cancelled by a client.
    Cancelled,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }
}

/// Wall-clock time per stage of one job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTimings {
    /// Submit to start of proving.
    pub queue_wait: Duration,
    /// Inside the prover (SRS load, synthesis, compute).
    pub prove: Duration,
    /// Part of `prove`: loading the SRS (zero when resident).
    pub srs_load: Duration,
    /// Part of `prove`: building and synthesizing circuits.
    pub synthesis: Duration,
    /// Part of `prove`: the backend (H polynomial, MSMs, assembly).
    pub compute: Duration,
    /// Verifying the proof.
    pub verify: Duration,
    /// Submit to end.
    pub total: Duration,
}

/// The end state of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    pub status: JobStatus,
    /// Proof bytes; empty unless `Completed`.
    pub proof: Vec<u8>,
    /// Why the job did not complete; empty when it did.
    pub error: String,
    pub timings: JobTimings,
}

/// Where a job is in its life.
#[derive(Clone, Debug)]
pub enum JobPhase {
    Queued,
    Running { worker: usize },
    Done(Arc<JobOutcome>),
}

impl JobPhase {
    pub fn is_done(&self) -> bool {
        matches!(self, JobPhase::Done(_))
    }
}

/// A job in the engine's table.
pub struct Job {
    pub id: String,
    pub kind: ProofKind,
    pub proof_type: ProofType,
    pub priority: Priority,
    /// Submission order; unique per engine.
    pub(crate) seq: u64,
    pub(crate) submitted: Instant,
    /// The request, until a worker takes it to prove.
    pub(crate) request: Mutex<Option<ProofRequest>>,
    pub(crate) cancel_requested: AtomicBool,
    pub(crate) phase: watch::Sender<JobPhase>,
    pub(crate) started_at: Mutex<Option<Instant>>,
    pub(crate) finished_at: Mutex<Option<Instant>>,
}

impl Job {
    pub(crate) fn new(id: String, seq: u64, request: ProofRequest) -> Job {
        Job {
            id,
            kind: request.kind(),
            proof_type: request.proof_type,
            priority: request.priority,
            seq,
            submitted: Instant::now(),
            request: Mutex::new(Some(request)),
            cancel_requested: AtomicBool::new(false),
            phase: watch::channel(JobPhase::Queued).0,
            started_at: Mutex::new(None),
            finished_at: Mutex::new(None),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> JobPhase {
        self.phase.borrow().clone()
    }

    /// The outcome, once done.
    pub fn outcome(&self) -> Option<Arc<JobOutcome>> {
        match &*self.phase.borrow() {
            JobPhase::Done(o) => Some(o.clone()),
            _ => None,
        }
    }

    pub(crate) fn cancel_requested(&self) -> bool {
        self.cancel_requested.load(Ordering::SeqCst)
    }

    /// Ends the job unless it already ended; returns whether this call did.
    pub(crate) fn finish(&self, outcome: JobOutcome) -> bool {
        let outcome = Arc::new(outcome);
        let ended = self.phase.send_if_modified(|phase| {
            if phase.is_done() {
                false
            } else {
                *phase = JobPhase::Done(outcome.clone());
                true
            }
        });
        if ended {
            *self.finished_at.lock().expect("finished_at lock") = Some(Instant::now());
            // Vanilla proofs can be large: never keep them past the end.
            self.request.lock().expect("request lock").take();
        }
        ended
    }

    /// Marks the start of proving; returns the time spent queued.
    pub(crate) fn mark_started(&self, worker: usize) -> Duration {
        let now = Instant::now();
        *self.started_at.lock().expect("started_at lock") = Some(now);
        self.phase.send_if_modified(|phase| {
            if phase.is_done() {
                false
            } else {
                *phase = JobPhase::Running { worker };
                true
            }
        });
        now - self.submitted
    }

    /// An outcome with no proof, timed from submission to now.
    pub(crate) fn unfinished(&self, status: JobStatus, error: String) -> JobOutcome {
        let now = Instant::now();
        let started = self.started_at.lock().expect("started_at lock").unwrap_or(now);
        JobOutcome {
            status,
            proof: Vec::new(),
            error,
            timings: JobTimings {
                queue_wait: started - self.submitted,
                total: now - self.submitted,
                ..Default::default()
            },
        }
    }
}
