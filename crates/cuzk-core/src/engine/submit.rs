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

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use super::Submission;
use super::{end_job, job_key, prune_finished, queue_position, Engine, State, SubmitError};
use crate::job::{Job, JobStatus};
use crate::kinds::{Priority, ProofKind};
use crate::request::digest::short_hex;
use crate::request::{request_digest, ProofRequest, RawRequest, RequestDigest, RequestError};

/// What admitting a request starts from.
enum Reserved {
    /// The same request is already a job.
    Found(Submission),
    /// A new job's sequence number, and the job it supersedes.
    Seq(u64, Option<Arc<Job>>),
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
        let result = self.submit_inner(raw);
        if let Err(e) = &result {
            let reason = match e {
                SubmitError::Request(RequestError::InvalidArgument { .. }) => "invalid_argument",
                SubmitError::Request(RequestError::FailedPrecondition(_)) => "failed_precondition",
                SubmitError::Request(RequestError::Unimplemented(_)) => "unimplemented",
                SubmitError::RequestIdConflict { .. } => "request_id_conflict",
                SubmitError::ShuttingDown => "shutting_down",
                SubmitError::QueueFull { .. } => "queue_full",
                SubmitError::Journal(_) => "journal",
                SubmitError::NoDevice(_) => "no_device",
            };
            self.inner.metrics.rejected(reason);
            warn!(request_id = %raw.request_id, error = %e, "request refused");
        }
        result
    }

    fn submit_inner(&self, raw: &RawRequest) -> Result<Submission, SubmitError> {
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
        self.admit(request, Some(raw))
    }

    /// Queues a request that is already checked (by [`RawRequest::validate`],
    /// or built directly by an embedding program or a test). Such a request
    /// has no raw form, so it is not journaled.
    pub fn enqueue(&self, request: ProofRequest) -> Result<Submission, SubmitError> {
        self.admit(request, None)
    }

    /// Admits a checked request: the id rule and the limits under the
    /// state lock, then the journal write with no lock held (a large
    /// request's fsync delays no other submit), then the job into the
    /// table. A submit of a request id being admitted waits for that
    /// admission and looks the id up again.
    fn admit(
        &self,
        request: ProofRequest,
        raw: Option<&RawRequest>,
    ) -> Result<Submission, SubmitError> {
        let (seq, superseded) = match self.reserve(&request)? {
            Reserved::Found(found) => return Ok(found),
            Reserved::Seq(seq, superseded) => (seq, superseded),
        };
        let job_id = request
            .request_id
            .clone()
            .unwrap_or_else(|| format!("job-{seq}-{:016x}", rand::random::<u64>()));
        let vanilla_bytes = request.vanilla_bytes;
        let job = Arc::new(Job::new(job_id.clone(), seq, request));
        let journaled = match (&self.inner.journal, raw) {
            (Some(j), Some(raw)) => {
                let r = j
                    .journal
                    .submitted(&super::journaling::entry(&job), raw)
                    .map_err(|e| {
                        self.inner.metrics.journal_error("submitted");
                        SubmitError::Journal(e.to_string())
                    });
                if r.is_ok() {
                    j.maybe_prune(self.inner.config.job_retention);
                }
                r
            }
            _ => Ok(()),
        };
        let mut st = self.inner.lock();
        st.admitting.remove(&job_id);
        st.admissions -= 1;
        self.inner.admit_cv.notify_all();
        journaled?;
        if !st.accepting {
            // Journaled: the next start runs it, and a resubmit then finds it.
            return Err(SubmitError::ShuttingDown);
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

    /// Applies the id rule and the limits, and on admission takes a
    /// sequence number and marks the request id as being admitted.
    fn reserve(&self, request: &ProofRequest) -> Result<Reserved, SubmitError> {
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
        let limit = self.inner.max_jobs;
        let unfinished = st.jobs.values().filter(|j| j.outcome().is_none()).count();
        if request.priority != Priority::Critical && unfinished + st.admissions >= limit {
            return Err(SubmitError::QueueFull { limit });
        }
        st.next_seq += 1;
        st.admissions += 1;
        if let Some(id) = &request.request_id {
            st.admitting.insert(id.clone());
        }
        Ok(Reserved::Seq(st.next_seq - 1, superseded))
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
