//! The engine's side of the job journal ([`crate::journal`]).
//!
//! A submit writes its job and request synchronously before it is
//! acknowledged ([`super::submit`]); a completed proof is written
//! synchronously before its job is published as done. Every other end of a
//! job happens under the engine's state lock, where no disk write may wait:
//! those go, in order, to a writer thread (`cuzk-journal`). Jobs ended by a
//! graceful stop are not journaled as ended, so the next start runs them.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::{error, warn};

use super::Inner;
use crate::job::{Job, JobOutcome, JobStatus};
use crate::journal::{unix_now, Entry, EntryState, Journal};
use crate::kinds::ProofType;

/// How often finished jobs past retention are dropped from the journal.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

enum Op {
    Finished {
        seq: u64,
        status: JobStatus,
        proof: Vec<u8>,
        error: String,
    },
    Prune(u64),
    Flush(SyncSender<()>),
}

/// The open journal and its writer thread.
pub(crate) struct Journaling {
    pub(crate) journal: Arc<Journal>,
    tx: Mutex<Sender<Op>>,
    last_prune: Mutex<Instant>,
}

impl Journaling {
    pub(crate) fn start(journal: Journal) -> Journaling {
        let journal = Arc::new(journal);
        let (tx, rx) = mpsc::channel();
        let writer = journal.clone();
        std::thread::Builder::new()
            .name("cuzk-journal".into())
            .spawn(move || write_loop(&writer, rx))
            .expect("spawn the journal writer");
        Journaling {
            journal,
            tx: Mutex::new(tx),
            last_prune: Mutex::new(Instant::now()),
        }
    }

    fn send(&self, op: Op) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.send(op).is_err() {
            error!("the journal writer has stopped; a job's end is not journaled");
        }
    }

    /// Queues the end of a job (called under the state lock).
    pub(crate) fn ended(&self, job: &Job, outcome: &JobOutcome) {
        self.send(Op::Finished {
            seq: job.seq,
            status: outcome.status,
            proof: outcome.proof.clone(),
            error: outcome.error.clone(),
        });
    }

    /// Queues a prune of jobs finished more than `retention` ago, at most
    /// once a minute.
    pub(crate) fn maybe_prune(&self, retention: Duration) {
        let mut last = self.last_prune.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= PRUNE_EVERY {
            *last = Instant::now();
            self.send(Op::Prune(unix_now().saturating_sub(retention.as_secs())));
        }
    }

    /// Waits until every queued write is on disk.
    pub(crate) fn flush(&self) {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Op::Flush(tx));
        let _ = rx.recv_timeout(Duration::from_secs(30));
    }
}

fn write_loop(journal: &Journal, rx: Receiver<Op>) {
    for op in rx {
        let result = match op {
            Op::Finished {
                seq,
                status,
                proof,
                error,
            } => journal.finished(seq, status, &proof, &error),
            Op::Prune(cutoff) => journal.prune(cutoff),
            Op::Flush(done) => {
                let _ = done.send(());
                Ok(())
            }
        };
        if let Err(e) = result {
            error!("job journal write failed: {e}");
        }
    }
}

/// The journal entry of a job just accepted.
pub(crate) fn entry(job: &Job) -> Entry {
    Entry {
        seq: job.seq,
        job_id: job.id.clone(),
        kind: job.kind,
        registered_proof: wire_number(job.proof_type),
        priority: job.priority,
        digest: job.digest,
        state: EntryState::Queued,
        proof: Vec::new(),
        error: String::new(),
        submitted_unix: job.submitted_unix,
        finished_unix: None,
    }
}

/// The wire number of a job's registered proof.
pub(crate) fn wire_number(t: ProofType) -> u64 {
    use crate::kinds::{post_proof_to_wire, seal_proof_to_wire, update_proof_to_wire};
    match t {
        ProofType::Seal(p) => seal_proof_to_wire(p),
        ProofType::Winning(p) | ProofType::Window(p) => post_proof_to_wire(p),
        ProofType::Update(p) => update_proof_to_wire(p),
    }
}

/// Writes a completed proof before the job is published (blocking, no
/// lock held). A failed write is logged: the proof is still returned.
pub(crate) fn record_completed(inner: &Inner, job: &Job, proof: &[u8]) {
    if let Some(j) = &inner.journal {
        if let Err(e) = j.journal.finished(job.seq, JobStatus::Completed, proof, "") {
            warn!(job_id = %job.id, "journal: the completed proof is not recorded: {e}");
            inner.metrics.journal_error("completed");
        }
    }
}
