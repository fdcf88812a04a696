//! Starting an engine on a journal: the jobs of the previous run come back.
//!
//! Finished jobs (within `engine.job_retention`) return to the table as they
//! ended, before the engine serves, so `AwaitProof` answers them and a
//! resubmit of a completed request returns the same proof without proving.
//! Unfinished jobs are checked again from their journaled requests and
//! queued under their old ids and sequence numbers by a thread of their
//! own, most urgent first (WinningPoSt before everything), while the
//! engine serves: status and new requests are answered at once, a submit
//! or an await of a job not yet restored waits for it, and the first job
//! is proving while the rest are still being decoded. A job whose request
//! cannot be read back, or no longer passes its checks, or whose deadline
//! (counted from its first submission) has passed, ends `Failed` with the
//! reason. The requests left by journals set aside as damaged are then
//! submitted again as new jobs (past `engine.max_queued_jobs`), and those
//! that cannot be yet stay for the next start.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::{info, warn};

use super::submit::Limit;
use super::{job_key, Engine, EngineParts, SubmitError};
use crate::config::EngineConfig;
use crate::job::{Job, JobOutcome, JobStatus, JobTimings, Restored};
use crate::journal::{Entry, EntryState, Journal, Opened};
use crate::kinds::ProofType;
use crate::request::{request_digest, RequestError};

impl Engine {
    /// Starts the engine with the journal `opened` and restores its jobs
    /// before returning (as [`Engine::start_restoring`], then
    /// [`Engine::wait_restored`]). Blocking.
    pub fn start_journaled(config: EngineConfig, parts: EngineParts, opened: Opened) -> Engine {
        let engine = Engine::start_restoring(config, parts, opened);
        engine.wait_restored();
        engine
    }

    /// Starts the engine with the journal `opened`: its finished jobs are
    /// in the table when this returns, its unfinished ones are restored by
    /// a thread of their own (most urgent first), then the set-aside
    /// payloads salvaged. Meanwhile the engine serves: new requests are
    /// admitted (the jobs still to restore count against
    /// `engine.max_queued_jobs`), while a submit or an [`Engine::await_job`]
    /// of a job still to restore waits for it. Blocking only for the
    /// finished rows (no request is decoded).
    pub fn start_restoring(config: EngineConfig, parts: EngineParts, opened: Opened) -> Engine {
        let Opened {
            journal,
            entries,
            salvage,
            ..
        } = opened;
        let engine = Engine::start_inner(config, parts, Some(journal));
        let pending = engine.restore_finished(entries);
        let e = engine.clone();
        let (p, paths) = (pending.clone(), salvage.clone());
        let spawned = std::thread::Builder::new()
            .name("cuzk-restore".into())
            .spawn(move || e.restore_pending(p, &paths));
        if let Err(err) = spawned {
            warn!("no thread to restore journaled jobs with ({err}): restoring them first");
            engine.restore_pending(pending, &salvage);
        }
        engine
    }

    /// Waits until every journaled job is restored and the set-aside
    /// payloads are salvaged ([`Engine::start_restoring`]).
    pub fn wait_restored(&self) {
        let mut st = self.inner.lock();
        while st.restoring.is_some() {
            st = self
                .inner
                .admit_cv
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Puts the finished jobs back, takes the sequence numbers past the
    /// journal's, and marks the unfinished ones as being restored (their
    /// ids as being admitted); returns them, most urgent first, then in
    /// submission order.
    fn restore_finished(&self, entries: Vec<Entry>) -> Vec<Entry> {
        let next = entries.iter().map(|e| e.seq + 1).max().unwrap_or(0);
        let (mut pending, finished): (Vec<Entry>, Vec<Entry>) = entries
            .into_iter()
            .partition(|e| e.state == EntryState::Queued);
        let restored = finished.len();
        for e in finished {
            let EntryState::Ended(status) = e.state else {
                continue;
            };
            let outcome = JobOutcome {
                status,
                proof: e.proof.clone(),
                error: e.error.clone(),
                timings: JobTimings::default(),
                resumes: false,
            };
            self.restore_ended(&e, outcome, "finished");
        }
        pending.sort_by_key(|e| (std::cmp::Reverse(e.priority), e.seq));
        let mut st = self.inner.lock();
        st.next_seq = next;
        st.restoring = Some(pending.len());
        st.admitting
            .extend(pending.iter().map(|e| e.job_id.clone()));
        drop(st);
        info!(
            restored,
            to_requeue = pending.len(),
            "finished jobs recovered from the journal; unfinished ones being restored"
        );
        pending
    }

    /// Restores the unfinished jobs, salvages the set-aside payloads, and
    /// marks the restoration done (nothing waits for it any more).
    /// (A panic in the salvage is logged; the restoration still ends.)
    fn restore_pending(&self, pending: Vec<Entry>, salvage: &[PathBuf]) {
        self.requeue_all(pending);
        if catch_unwind(AssertUnwindSafe(|| self.salvage(salvage))).is_err() {
            warn!("salvaging set-aside payloads panicked; those left stay for the next start");
        }
        self.inner.lock().restoring = None;
        self.inner.admit_cv.notify_all();
    }

    /// Queues the unfinished jobs again, one by one, until the engine
    /// stops (those left stay journaled for the next start).
    fn requeue_all(&self, pending: Vec<Entry>) {
        let total = pending.len();
        let mut requeued = 0;
        for e in pending {
            if !self.inner.lock().accepting {
                warn!(
                    left = total - requeued,
                    "stopping while restoring journaled jobs: the rest stay journaled"
                );
                return;
            }
            let id = e.job_id.clone();
            // A panic fails this job alone: its id is never left waiting.
            if catch_unwind(AssertUnwindSafe(|| self.requeue(e.clone()))).is_err() {
                self.fail_recovery(&e, "restoring it panicked (see the log)".into());
            }
            let mut st = self.inner.lock();
            st.admitting.remove(&id);
            if let Some(left) = st.restoring.as_mut() {
                *left = left.saturating_sub(1);
            }
            drop(st);
            self.inner.admit_cv.notify_all();
            requeued += 1;
        }
        info!(requeued, "unfinished jobs restored from the journal");
    }

    /// Puts back a job that ended (before the restart, or now because it
    /// cannot be recovered).
    fn restore_ended(&self, e: &Entry, outcome: JobOutcome, what: &str) {
        let Ok(proof_type) = ProofType::decode(e.kind, e.registered_proof) else {
            warn!(job_id = %e.job_id, "journal entry with an unknown proof type; skipped");
            return;
        };
        let job = Job::restored(Restored {
            id: e.job_id.clone(),
            proof_type,
            priority: e.priority,
            digest: e.digest,
            seq: e.seq,
            submitted_unix: e.submitted_unix,
            finished_unix: e.finished_unix.unwrap_or(e.submitted_unix),
            outcome,
        });
        self.inner.metrics.recovered(e.kind, what);
        self.inner
            .lock()
            .jobs
            .insert(e.job_id.clone(), Arc::new(job));
    }

    /// Queues an unfinished job again from its journaled request.
    fn requeue(&self, e: Entry) {
        let Some(j) = &self.inner.journal else {
            return;
        };
        let request = j
            .journal
            .load_request(e.seq)
            .map_err(|err| err.to_string())
            .and_then(|raw| {
                raw.validate(self.inner.config.max_vanilla_bytes.as_u64())
                    .map_err(|err| format!("it no longer passes its checks: {err}"))
            });
        let request = match request {
            Ok(r) if r.digest == e.digest => r,
            Ok(_) => {
                self.fail_recovery(&e, "its journaled request does not match its digest".into());
                return;
            }
            Err(m) => {
                self.fail_recovery(&e, m);
                return;
            }
        };
        let job = Arc::new(Job::submitted_at(
            e.job_id.clone(),
            e.seq,
            request,
            e.submitted_unix,
        ));
        // Its deadline counts from the submission before the restart.
        if let Some(why) = super::workers::halted(&self.inner, &job) {
            self.fail_recovery(&e, why);
            return;
        }
        let mut st = self.inner.lock();
        if !st.accepting {
            // Stopping: it stays journaled for the next start.
            return;
        }
        st.synth_queue.insert(job_key(&job), job.clone());
        st.jobs.insert(job.id.clone(), job.clone());
        drop(st);
        self.inner.metrics.recovered(e.kind, "requeued");
        self.inner.synth_cv.notify_all();
        info!(job_id = %e.job_id, kind = %e.kind, priority = e.priority.as_str(), "job re-queued after a restart");
    }

    /// Queues again, as new jobs of the journal, the requests left by
    /// journals set aside (their rows lost), past `engine.max_queued_jobs`
    /// as re-queued jobs are. A payload leaves its directory once it is
    /// journaled again (or its request id names a job already), when it
    /// cannot be decoded, or when it is refused for good (an invalid
    /// request, an id taken by another kind); one refused otherwise (no
    /// device, a journal error, missing parameters) stays for the next
    /// start. `paths` are oldest first: a later payload of a request id
    /// salvaged in this pass supersedes it.
    fn salvage(&self, paths: &[PathBuf]) {
        let mut ids = std::collections::HashSet::new();
        let salvaged = paths
            .iter()
            .filter(|p| self.salvage_one(p, &mut ids))
            .count();
        if !paths.is_empty() {
            info!(
                salvaged,
                payloads = paths.len(),
                "set-aside journal payloads salvaged"
            );
        }
    }

    /// Queues one salvaged payload again; returns whether it was. `ids`:
    /// the request ids salvaged so far in this pass.
    fn salvage_one(&self, path: &Path, ids: &mut std::collections::HashSet<String>) -> bool {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                warn!(payload = %path.display(), "not salvaged, kept for the next start: {e}");
                return false;
            }
        };
        let raw = match Journal::decode_payload(&bytes) {
            Ok(raw) => raw,
            Err(e) => {
                warn!(payload = %path.display(), "not salvaged, removed: not a journaled request: {e}");
                Journal::drop_salvaged(path);
                return false;
            }
        };
        let salvaged_now = ids.contains(&raw.request_id);
        if let Some(job) = self.job(&raw.request_id).filter(|_| !salvaged_now) {
            if job.digest != request_digest(&raw) {
                warn!(payload = %path.display(), job_id = %job.id, "not salvaged, removed: a newer request has its request id");
                Journal::drop_salvaged(path);
                return false;
            }
        }
        match self.submit_with(&raw, Limit::Bypass) {
            Ok(s) => {
                info!(job_id = %s.job_id, payload = %path.display(), "job salvaged from a set-aside journal");
                Journal::drop_salvaged(path);
                if !raw.request_id.is_empty() {
                    ids.insert(raw.request_id.clone());
                }
                true
            }
            Err(
                e @ (SubmitError::Request(RequestError::InvalidArgument { .. })
                | SubmitError::RequestIdConflict { .. }),
            ) => {
                warn!(payload = %path.display(), "not salvaged, removed: {e}");
                Journal::drop_salvaged(path);
                false
            }
            Err(e) => {
                warn!(payload = %path.display(), "not salvaged, kept for the next start: {e}");
                false
            }
        }
    }

    fn fail_recovery(&self, e: &Entry, why: String) {
        let error = format!("the job could not be recovered after a restart: {why}");
        warn!(job_id = %e.job_id, "{error}");
        if let Some(j) = &self.inner.journal {
            if let Err(err) = j.journal.finished(e.seq, JobStatus::Failed, &[], &error) {
                warn!(job_id = %e.job_id, "journal: {err}");
            }
        }
        let outcome = JobOutcome {
            status: JobStatus::Failed,
            proof: Vec::new(),
            error,
            timings: JobTimings::default(),
            resumes: false,
        };
        self.restore_ended(e, outcome, "failed");
    }
}
