//! One proof job: its identity, partitions, lifecycle phase, outcome and
//! timings.
//!
//! A job moves Queued → Running → Done exactly once; the phase lives in a
//! `watch` channel so any number of `AwaitProof` callers can wait on it.
//! While it runs, [`JobRun`] (guarded by the engine's state lock) tracks its
//! partitions: which is next to synthesize, how many are in flight, and the
//! proofs made so far.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_circuits::PartitionSource;
use tokio::sync::watch;

use crate::kinds::{Priority, ProofKind, ProofType};
use crate::request::{ProofRequest, RequestDigest};

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// A proof was made and verified.
    Completed,
    /// No valid proof: proving failed, verification failed, the deadline
    /// passed or the daemon stopped first. The error message says which.
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
    /// Submit to the start of its first partition's synthesis.
    pub queue_wait: Duration,
    /// Loading SRS for it (zero when resident).
    pub srs_load: Duration,
    /// Building and synthesizing its circuits, summed over partitions.
    pub synthesis: Duration,
    /// The prover backend (H polynomial, MSMs, assembly), summed.
    pub compute: Duration,
    /// First synthesis start to last partition proved.
    pub prove: Duration,
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
    /// Ended by a graceful stop, or for want of a device in service, while
    /// the journal keeps it unfinished: the next start runs it again, so a
    /// waiter is told to come back (gRPC `UNAVAILABLE`), not that it
    /// failed.
    pub resumes: bool,
}

/// Where a job is in its life.
#[derive(Clone, Debug)]
pub enum JobPhase {
    Queued,
    Running,
    Done(Arc<JobOutcome>),
}

impl JobPhase {
    pub fn is_done(&self) -> bool {
        matches!(self, JobPhase::Done(_))
    }
}

/// Partition bookkeeping of a running job (under the engine's state lock).
#[derive(Default)]
pub(crate) struct JobRun {
    /// The job's circuits, once built (by the first synthesis worker).
    pub source: Option<Arc<dyn PartitionSource>>,
    /// Number of partitions, once known.
    pub partitions: Option<usize>,
    /// A worker is building the source now.
    pub building: bool,
    /// Next partition to hand to a synthesis worker.
    pub next_synth: usize,
    /// Partitions handed back by a worker that gave way to a more urgent
    /// job while waiting for memory; handed out again before `next_synth`.
    pub returned: Vec<usize>,
    /// Times each partition went back to be proved again because its
    /// device ran out of memory (partitions never retried absent).
    pub memory_retries: std::collections::BTreeMap<usize, u32>,
    /// Partitions in a worker or waiting in the ready queue.
    pub active: usize,
    /// Partition proofs, by index.
    pub proofs: Vec<Option<Vec<u8>>>,
    pub proved: usize,
    pub started: Option<Instant>,
    pub srs_load: Duration,
    pub synthesis: Duration,
    pub compute: Duration,
}

impl JobRun {
    /// Whether partitions remain to be handed to synthesis.
    pub fn wants_synthesis(&self) -> bool {
        match self.partitions {
            Some(n) => !self.returned.is_empty() || self.next_synth < n,
            None => !self.building,
        }
    }

    /// Whether every partition has been handed out (none left to give).
    pub fn all_handed_out(&self) -> bool {
        self.returned.is_empty() && self.partitions.is_some_and(|n| self.next_synth >= n)
    }

    /// The next partition to synthesize.
    pub fn take_partition(&mut self) -> usize {
        self.returned.pop().unwrap_or_else(|| {
            self.next_synth += 1;
            self.next_synth - 1
        })
    }
}

/// A finished job read back from the journal.
pub(crate) struct Restored {
    pub id: String,
    pub proof_type: ProofType,
    pub priority: Priority,
    pub digest: RequestDigest,
    pub seq: u64,
    pub submitted_unix: u64,
    pub finished_unix: u64,
    pub outcome: JobOutcome,
}

/// A job in the engine's table.
pub struct Job {
    pub id: String,
    pub kind: ProofKind,
    pub proof_type: ProofType,
    pub priority: Priority,
    /// What the job proves ([`crate::request::request_digest`]).
    pub digest: RequestDigest,
    /// Submission order; unique per engine and across restarts with a
    /// journal (the journal's key).
    pub(crate) seq: u64,
    pub(crate) submitted: Instant,
    /// Unix seconds of the submission (for the journal).
    pub(crate) submitted_unix: u64,
    /// The checked request; `None` for a finished job restored from the
    /// journal, which is never run.
    pub(crate) request: Mutex<Option<Arc<ProofRequest>>>,
    pub(crate) run: Mutex<JobRun>,
    pub(crate) cancel_requested: AtomicBool,
    pub(crate) phase: watch::Sender<JobPhase>,
    pub(crate) finished_at: Mutex<Option<Instant>>,
}

impl Job {
    pub(crate) fn new(id: String, seq: u64, request: ProofRequest) -> Job {
        Job::submitted_at(id, seq, request, crate::clock::unix_now())
    }

    /// A job submitted at `submitted_unix` (before a restart, for a job
    /// the journal brings back): its deadline and queue time count from
    /// then.
    pub(crate) fn submitted_at(
        id: String,
        seq: u64,
        request: ProofRequest,
        submitted_unix: u64,
    ) -> Job {
        let ago = Duration::from_secs(crate::clock::unix_now().saturating_sub(submitted_unix));
        let now = Instant::now();
        Job {
            id,
            kind: request.kind(),
            proof_type: request.proof_type,
            priority: request.priority,
            digest: request.digest,
            seq,
            submitted: now.checked_sub(ago).unwrap_or(now),
            submitted_unix,
            request: Mutex::new(Some(Arc::new(request))),
            run: Mutex::new(JobRun::default()),
            cancel_requested: AtomicBool::new(false),
            phase: watch::channel(JobPhase::Queued).0,
            finished_at: Mutex::new(None),
        }
    }

    /// A job that ended before a restart, as the journal recorded it.
    pub(crate) fn restored(r: Restored) -> Job {
        let ago = Duration::from_secs(crate::clock::unix_now().saturating_sub(r.finished_unix));
        let now = Instant::now();
        let finished = now.checked_sub(ago).unwrap_or(now);
        Job {
            id: r.id,
            kind: r.proof_type.kind(),
            proof_type: r.proof_type,
            priority: r.priority,
            digest: r.digest,
            seq: r.seq,
            submitted: finished,
            submitted_unix: r.submitted_unix,
            request: Mutex::new(None),
            run: Mutex::new(JobRun::default()),
            cancel_requested: AtomicBool::new(false),
            phase: watch::channel(JobPhase::Done(Arc::new(r.outcome))).0,
            finished_at: Mutex::new(Some(finished)),
        }
    }

    /// The checked request (`None` once the job has ended).
    pub(crate) fn request(&self) -> Option<Arc<ProofRequest>> {
        self.request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Lets go of what only running needs — the decoded request, the
    /// circuits built from it, the partition proofs — once the job has
    /// ended: a finished job kept for `engine.job_retention` holds its
    /// digest and outcome only.
    pub(crate) fn release_inputs(&self) {
        *self.request.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let mut run = self.run();
        run.source = None;
        run.proofs = Vec::new();
    }

    /// Whether the job still holds its decoded request (until it ends).
    pub fn holds_request(&self) -> bool {
        self.request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// The current phase.
    pub fn phase(&self) -> JobPhase {
        self.phase.borrow().clone()
    }

    pub fn is_done(&self) -> bool {
        self.phase.borrow().is_done()
    }

    /// The outcome, once done.
    pub fn outcome(&self) -> Option<Arc<JobOutcome>> {
        match &*self.phase.borrow() {
            JobPhase::Done(o) => Some(o.clone()),
            _ => None,
        }
    }

    pub(crate) fn run(&self) -> std::sync::MutexGuard<'_, JobRun> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn cancel_requested(&self) -> bool {
        self.cancel_requested.load(Ordering::SeqCst)
    }

    /// Marks the job running (first partition started).
    pub(crate) fn mark_running(&self) {
        self.phase.send_if_modified(|phase| match phase {
            JobPhase::Queued => {
                *phase = JobPhase::Running;
                true
            }
            _ => false,
        });
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
            *self.finished_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            // Circuits and partial proofs can be large: drop them now.
            let mut run = self.run();
            run.source = None;
            run.proofs.clear();
        }
        ended
    }

    /// An outcome with the timings gathered so far.
    pub(crate) fn outcome_now(
        &self,
        status: JobStatus,
        proof: Vec<u8>,
        error: String,
        verify: Duration,
    ) -> JobOutcome {
        let now = Instant::now();
        let run = self.run();
        let started = run.started.unwrap_or(now);
        JobOutcome {
            status,
            proof,
            error,
            resumes: false,
            timings: JobTimings {
                queue_wait: started - self.submitted,
                srs_load: run.srs_load,
                synthesis: run.synthesis,
                compute: run.compute,
                prove: now
                    .saturating_duration_since(started)
                    .saturating_sub(verify),
                verify,
                total: now - self.submitted,
            },
        }
    }
}
