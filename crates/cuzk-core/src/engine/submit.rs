//! Accepting jobs: the request id and digest rule, journaling before the
//! acknowledgement, and queueing.
//!
//! A request id names one request digest at a time:
//! - same id, same digest: the job already there (one proof), unless it
//!   failed or was cancelled, in which case the request is proved afresh;
//! - same id, another digest: the newest request wins. A finished job under
//!   the id is replaced; an unfinished one is cancelled (its waiters get
//!   `Cancelled` with a message naming the superseding request) and the
//!   new job queued. Logged, and counted in `cuzk_requests_superseded_total`;
//! - an id held by a job of another kind is refused (`RequestIdConflict`).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tracing::{info, warn};

use super::Submission;
use super::{end_job, job_key, prune_finished, queue_position, Engine, State, SubmitError};
use crate::job::{Job, JobStatus};
use crate::journal::JournalError;
use crate::kinds::{Priority, ProofKind};
use crate::request::digest::short_hex;
use crate::request::{request_digest, ProofRequest, RawRequest, RequestDigest, RequestError};

/// Whether a submit counts against `engine.max_queued_jobs`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    Apply,
    /// A request accepted before (salvaged from a set-aside journal), as
    /// jobs re-queued from the journal are.
    Bypass,
}

/// What admitting a request starts from.
enum Reserved<'a> {
    /// The same request is already a job.
    Found(Submission),
    /// A new job's sequence number, the job it supersedes, and the
    /// admission under way.
    Seq(u64, Option<Arc<Job>>, Admission<'a>),
}

/// An admission under way: its request id in `State::admitting` and one
/// in `State::admissions`. [`Admission::end`] undoes both under the state
/// lock the caller holds; dropped before that (a panic, an early return)
/// it takes the state lock and undoes them itself. Either way the
/// submits waiting on `admit_cv` wake. Never drop one holding the state
/// lock.
struct Admission<'a> {
    state: &'a Mutex<State>,
    admit_cv: &'a Condvar,
    id: Option<String>,
    open: bool,
}

impl<'a> Admission<'a> {
    /// Counts an admission of `id` in `st` (the state behind `state`).
    fn begin(
        st: &mut State,
        state: &'a Mutex<State>,
        admit_cv: &'a Condvar,
        id: Option<String>,
    ) -> Admission<'a> {
        st.admissions += 1;
        if let Some(id) = &id {
            st.admitting.insert(id.clone());
        }
        Admission {
            state,
            admit_cv,
            id,
            open: true,
        }
    }

    /// Ends the admission, with the state lock held.
    fn end(mut self, st: &mut State) {
        self.undo(st);
    }

    fn undo(&mut self, st: &mut State) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        if let Some(id) = &self.id {
            st.admitting.remove(id);
        }
        st.admissions -= 1;
        self.admit_cv.notify_all();
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if self.open {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            self.undo(&mut st);
        }
    }
}

/// What a request id names in the table.
enum Lookup {
    /// Nothing live or completed: queue a new job.
    Free,
    /// The same request: that job.
    Same(Submission),
    /// Another request under the id: supersede it.
    Other(Arc<Job>),
}

fn lookup(
    st: &State,
    request_id: &str,
    kind: ProofKind,
    digest: &RequestDigest,
) -> Result<Lookup, SubmitError> {
    let Some(job) = st.jobs.get(request_id) else {
        return Ok(Lookup::Free);
    };
    if let Some(outcome) = job.outcome() {
        if outcome.status != JobStatus::Completed {
            return Ok(Lookup::Free);
        }
    }
    if job.kind != kind {
        return Err(SubmitError::RequestIdConflict {
            request_id: request_id.to_string(),
            existing: job.kind,
            requested: kind,
        });
    }
    if job.digest != *digest {
        return Ok(Lookup::Other(job.clone()));
    }
    let queue_position = if job.run().started.is_some() {
        0
    } else {
        queue_position(st, job_key(job))
    };
    Ok(Lookup::Same(Submission {
        job_id: job.id.clone(),
        queue_position,
        existing: true,
    }))
}

impl Engine {
    /// Checks and queues a request. Blocking: decoding a large vanilla proof
    /// (and, with a journal, writing it) takes a while, so async callers
    /// should run it off the reactor.
    ///
    /// A request id already in the table follows the rule of this module.
    /// With a journal, the job and its request are on disk when this
    /// returns `Ok`.
    pub fn submit(&self, raw: &RawRequest) -> Result<Submission, SubmitError> {
        self.submit_with(raw, Limit::Apply)
    }

    /// [`Engine::submit`], counted against `engine.max_queued_jobs` or not.
    pub(super) fn submit_with(
        &self,
        raw: &RawRequest,
        limit: Limit,
    ) -> Result<Submission, SubmitError> {
        let result = self.submit_inner(raw, limit);
        if let Err(e) = &result {
            let reason = match e {
                SubmitError::Request(RequestError::InvalidArgument { .. }) => "invalid_argument",
                SubmitError::Request(RequestError::FailedPrecondition(_)) => "failed_precondition",
                SubmitError::Request(RequestError::Unimplemented(_)) => "unimplemented",
                SubmitError::RequestIdConflict { .. } => "request_id_conflict",
                SubmitError::ShuttingDown => "shutting_down",
                SubmitError::QueueFull { .. } => "queue_full",
                SubmitError::Journal(_) => "journal",
                SubmitError::DiskFull(_) => "disk_full",
                SubmitError::NoDevice(_) => "no_device",
            };
            self.inner.metrics.rejected(reason);
            warn!(request_id = %raw.request_id, error = %e, "request refused");
        }
        result
    }

    fn submit_inner(&self, raw: &RawRequest, limit: Limit) -> Result<Submission, SubmitError> {
        if !raw.request_id.is_empty() {
            // A resubmit of the same request needs no decoding.
            let kind = raw.kind()?;
            let digest = request_digest(raw);
            let st = self.inner.lock();
            if !st.accepting {
                return Err(SubmitError::ShuttingDown);
            }
            if let Lookup::Same(found) = lookup(&st, &raw.request_id, kind, &digest)? {
                return Ok(found);
            }
        }
        let request = raw.validate(self.inner.config.max_vanilla_bytes.as_u64())?;
        self.admit(request, Some(raw), limit)
    }

    /// Queues a request that is already checked (by [`RawRequest::validate`],
    /// or built directly by an embedding program or a test). Such a request
    /// has no raw form, so it is not journaled.
    pub fn enqueue(&self, request: ProofRequest) -> Result<Submission, SubmitError> {
        self.admit(request, None, Limit::Apply)
    }

    /// Admits a checked request: the id rule and the limits under the
    /// state lock, then the journal write with no lock held (a large
    /// request's fsync delays no other submit), then the job into the
    /// table — unless the engine began to stop or lost its last device
    /// meanwhile (the job then stays journaled for the restart). A submit
    /// of a request id being admitted waits for that admission and looks
    /// the id up again.
    fn admit(
        &self,
        request: ProofRequest,
        raw: Option<&RawRequest>,
        limit: Limit,
    ) -> Result<Submission, SubmitError> {
        let (seq, superseded, admission) = match self.reserve(&request, limit)? {
            Reserved::Found(found) => return Ok(found),
            Reserved::Seq(seq, superseded, admission) => (seq, superseded, admission),
        };
        let job_id = request
            .request_id
            .clone()
            .unwrap_or_else(|| format!("job-{seq}-{:016x}", rand::random::<u64>()));
        let vanilla_bytes = request.vanilla_bytes;
        let job = Arc::new(Job::new(job_id.clone(), seq, request));
        let journaled = self.journal_submitted(&job, raw);
        let mut st = self.inner.lock();
        admission.end(&mut st);
        let journaled = journaled?;
        if !st.accepting {
            // Journaled: the next start runs it, and a resubmit then finds it.
            return Err(SubmitError::ShuttingDown);
        }
        // The last device may have gone while the journal was written.
        if let Some(why) = super::proving::no_device_in_service(&st, &self.inner) {
            return Err(SubmitError::NoDevice(no_device(why, journaled)));
        }
        if let Some(old) = superseded {
            self.supersede(&mut st, &old, &job);
        }
        let key = job_key(&job);
        let queue_position = queue_position(&st, key);
        st.synth_queue.insert(key, job.clone());
        st.jobs.insert(job_id.clone(), job.clone());
        self.inner.metrics.job_submitted(job.kind);
        drop(st);
        self.inner.synth_cv.notify_all();
        info!(
            job_id = %job_id,
            kind = %job.kind,
            proof = %job.proof_type,
            priority = job.priority.as_str(),
            digest = %short_hex(&job.digest),
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

    /// Writes a new job and its request to the journal, when there is one
    /// and the request has a raw form (blocking; no lock held). Returns
    /// whether it was written.
    fn journal_submitted(&self, job: &Job, raw: Option<&RawRequest>) -> Result<bool, SubmitError> {
        let (Some(j), Some(raw)) = (&self.inner.journal, raw) else {
            return Ok(false);
        };
        j.journal
            .submitted(&super::journaling::entry(job), raw)
            .map_err(|e| match e {
                JournalError::DiskFull { .. } => SubmitError::DiskFull(e.to_string()),
                e => {
                    self.inner.metrics.journal_error("submitted");
                    SubmitError::Journal(e.to_string())
                }
            })?;
        j.maybe_prune(self.inner.config.job_retention);
        Ok(true)
    }

    /// Applies the id rule and the limits (`limit`: `engine.max_queued_jobs`
    /// or not), and on admission takes a sequence number and marks the
    /// request id as being admitted.
    fn reserve(&self, request: &ProofRequest, limit: Limit) -> Result<Reserved<'_>, SubmitError> {
        let kind = request.kind();
        let mut st = self.inner.lock();
        loop {
            if !st.accepting {
                return Err(SubmitError::ShuttingDown);
            }
            match &request.request_id {
                Some(id) if st.admitting.contains(id) => {
                    st = self
                        .inner
                        .admit_cv
                        .wait(st)
                        .unwrap_or_else(|p| p.into_inner());
                }
                _ => break,
            }
        }
        if let Some(why) = super::proving::no_device_in_service(&st, &self.inner) {
            return Err(SubmitError::NoDevice(why));
        }
        prune_finished(&mut st, self.inner.config.job_retention);
        let mut superseded = None;
        if let Some(id) = &request.request_id {
            match lookup(&st, id, kind, &request.digest)? {
                Lookup::Same(found) => return Ok(Reserved::Found(found)),
                Lookup::Other(old) => superseded = Some(old),
                Lookup::Free => {}
            }
        }
        // A CRITICAL job (WinningPoSt) is small and cannot wait.
        let max = self.inner.max_jobs;
        let unfinished = st.jobs.values().filter(|j| j.outcome().is_none()).count();
        let limited = limit == Limit::Apply && request.priority != Priority::Critical;
        // The jobs still to restore from the journal count already.
        let coming = st.restoring.unwrap_or(0);
        if limited && unfinished + st.admissions + coming >= max {
            return Err(SubmitError::QueueFull { limit: max });
        }
        st.next_seq += 1;
        let (state, cv) = (&self.inner.state, &self.inner.admit_cv);
        let admission = Admission::begin(&mut st, state, cv, request.request_id.clone());
        Ok(Reserved::Seq(st.next_seq - 1, superseded, admission))
    }

    /// Ends (if unfinished) the job a newer request replaces.
    fn supersede(&self, st: &mut State, old: &Arc<Job>, new: &Job) {
        let state = if old.is_done() {
            "finished"
        } else {
            "unfinished"
        };
        warn!(
            job_id = %new.id,
            kind = %new.kind,
            old_digest = %short_hex(&old.digest),
            new_digest = %short_hex(&new.digest),
            old_job = state,
            "request id reused with another payload: the newest request wins"
        );
        self.inner.metrics.superseded(new.kind, state);
        if old.is_done() {
            return;
        }
        old.cancel_requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let outcome = old.outcome_now(
            JobStatus::Cancelled,
            Vec::new(),
            format!(
                "superseded by a newer request with request_id {:?} and another payload \
                 (digest {}, this job's was {}); await the request id again for its proof",
                new.id,
                short_hex(&new.digest),
                short_hex(&old.digest)
            ),
            Duration::ZERO,
        );
        end_job(st, &self.inner, old, outcome);
    }
}

/// Why a job admitted with no device in service is refused: a journaled
/// one stays unfinished in the journal, as the jobs failed for want of a
/// device do, and the restart that brings a device back runs it.
fn no_device(why: String, journaled: bool) -> String {
    if journaled {
        format!("{why}; the job is journaled and runs after the restart")
    } else {
        why
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use super::*;

    #[test]
    fn an_admission_undone_by_a_panic_frees_its_id_and_wakes_its_waiters() {
        let state = Mutex::new(State::new(1, 1, 1));
        let cv = Condvar::new();
        let begin = |id: &str| {
            let mut st = state.lock().unwrap();
            Admission::begin(&mut st, &state, &cv, Some(id.into()))
        };
        // Ended under the lock: counted once.
        let ended = begin("x");
        let admission = begin("a");
        ended.end(&mut state.lock().unwrap());
        std::thread::scope(|scope| {
            // A submit of the same id waits for the admission.
            let waiter = scope.spawn(|| {
                let st = state.lock().unwrap();
                let (st, waited) = cv
                    .wait_timeout_while(st, Duration::from_secs(20), |st| {
                        st.admitting.contains("a")
                    })
                    .unwrap();
                assert!(!waited.timed_out(), "the waiter was never woken");
                st.admissions
            });
            let panicked = catch_unwind(AssertUnwindSafe(move || {
                let _held = admission;
                panic!("scripted panic in an admission");
            }));
            assert!(panicked.is_err());
            assert_eq!(waiter.join().unwrap(), 0);
        });
        let st = state.lock().unwrap();
        assert!(st.admitting.is_empty(), "{:?}", st.admitting);
        assert_eq!(st.admissions, 0);
    }
}
