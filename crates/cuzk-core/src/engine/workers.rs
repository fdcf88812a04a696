//! The engine's worker threads: synthesis workers turn queued jobs'
//! partitions into witnesses (after reserving their memory), prover workers
//! (`proving.rs`) turn witnesses into partition proofs on the backend
//! (holding the SRS); the worker that proves a job's last partition
//! assembles and verifies it (here).
//!
//! Every partition step logs a timeline event (`partition` target):
//! synthesis start/end, prove start/end, assembled.

use std::cmp::Reverse;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_circuits::PartitionSource;
use cuzk_prover::srs::SectionCounts;
use cuzk_prover::{AbcAt, HostBytes, ProverBackend, WitnessSize};
use tracing::info;

use super::{end_job, Inner, PartKey, ReadyPartition, State, WorkerTask};
use crate::budget::{Claim, Reservation};
use crate::config::SynthesisPath;
use crate::job::{Job, JobStatus};
use crate::kinds::Priority;
use crate::srs_manager::SrsLease;

/// How long a worker waits for memory (or an SRS) before looking again at
/// whether its job is still wanted.
const WAIT_SLICE: Duration = Duration::from_millis(500);

/// Starts `synth` synthesis workers (the prover workers are
/// `proving::spawn`'s).
pub(super) fn spawn(inner: &Arc<Inner>, synth: usize) {
    for w in 0..synth {
        let inner = inner.clone();
        std::thread::Builder::new()
            .name(format!("cuzk-synth-{w}"))
            .spawn(move || synth_loop(&inner, w))
            .expect("spawn synthesis worker");
    }
}

/// A partition's size from its SRS: the domain is h + 1 (`constraints`),
/// aux is the L query, inputs the IC.
pub fn partition_size(c: &SectionCounts) -> WitnessSize {
    WitnessSize {
        constraints: c.h + 1,
        inputs: c.ic,
        aux: c.l,
    }
}

/// Host memory one partition of `size` needs, whichever backend proves it:
/// each part the most any backend says ([`ProverBackend::host_bytes`]).
pub fn partition_bytes(backends: &[Arc<dyn ProverBackend>], size: &WitnessSize) -> HostBytes {
    backends
        .iter()
        .map(|b| b.host_bytes(size))
        .fold(HostBytes::default(), |m, h| HostBytes {
            abc: m.abc.max(h.abc),
            rest: m.rest.max(h.rest),
        })
}

pub(super) fn catch<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("{what} panicked: {msg}"))
        }
    }
}

/// Why a job should stop, if it should.
pub(super) fn halted(inner: &Inner, job: &Job) -> Option<String> {
    if job.is_done() || job.cancel_requested() {
        return Some(String::new());
    }
    let deadline = inner.config.job_deadline;
    if !deadline.is_zero() && job.submitted.elapsed() > deadline {
        return Some(format!("deadline of {deadline:?} exceeded"));
    }
    None
}

/// What a step produced.
pub(super) enum Step<T> {
    Done(T),
    /// The job ended meanwhile (cancelled, failed elsewhere): drop the work.
    Dropped,
    /// The worker gave way to a more urgent job while waiting for memory:
    /// the partition goes back to its job, to be synthesized later.
    Returned,
    /// The device failed under the partition (a prover step only): the
    /// device goes out of service, the partition back to its job.
    Lost(String),
    /// The device ran out of memory for the partition (a prover step
    /// only): it goes back to its job to be proved again, a bounded
    /// number of times.
    ShortOfMemory(String),
    Failed(String),
}

/// Runs a worker step, turning a panic anywhere in it into a failure, so a
/// worker thread never dies and no claimed partition is forgotten.
pub(super) fn guarded<T>(what: &str, f: impl FnOnce() -> Step<T>) -> Step<T> {
    match catch(what, || Ok(f())) {
        Ok(step) => step,
        Err(e) => Step::Failed(e),
    }
}

fn synth_loop(inner: &Arc<Inner>, w: usize) {
    loop {
        let Some((job, k, build)) = next_synthesis(inner, w) else {
            return;
        };
        let t = Instant::now();
        let step = guarded("synthesis", || synthesize(inner, &job, k, build));
        inner.metrics.worker_busy("synthesis", t.elapsed());
        let mut st = inner.lock();
        st.synth_busy[w] = None;
        match step {
            Step::Done(part) if !job.is_done() => {
                info!(target: "partition", job_id = %job.id, partition = k, "queued for a prover");
                st.ready.insert((Reverse(job.priority), job.seq, k), part);
                inner.metrics.partitions("ready", st.ready.len());
                // All: a worker kept for CRITICAL work cannot take it all.
                inner.prove_cv.notify_all();
            }
            Step::Done(_) | Step::Dropped => job.run().active -= 1,
            Step::Returned => {
                let mut run = job.run();
                run.active -= 1;
                if !job.is_done() {
                    run.returned.push(k);
                    st.synth_queue
                        .insert((Reverse(job.priority), job.seq), job.clone());
                }
            }
            Step::Failed(e) | Step::Lost(e) | Step::ShortOfMemory(e) => {
                job.run().active -= 1;
                let outcome = job.outcome_now(JobStatus::Failed, Vec::new(), e, Duration::ZERO);
                end_job(&mut st, inner, &job, outcome);
            }
        }
        drop(st);
        inner.synth_cv.notify_all();
    }
}

/// Waits for the best partition to synthesize; `None` when stopping.
fn next_synthesis(inner: &Inner, w: usize) -> Option<(Arc<Job>, usize, bool)> {
    let cap = inner.queue_cap;
    let mut st = inner.lock();
    loop {
        if st.stopping {
            return None;
        }
        expire_queued(&mut st, inner);
        // CRITICAL jobs pass a full ready queue (the memory budget still
        // bounds them; workers kept for them take them at once); workers
        // kept for CRITICAL work take nothing else.
        let full = st.ready.len() >= cap;
        let critical_only = w >= inner.critical_synth_from;
        let pick = st
            .synth_queue
            .iter()
            .find(|(_, j)| {
                let takes = if j.priority == Priority::Critical {
                    true
                } else {
                    !full && !critical_only
                };
                takes && j.run().wants_synthesis()
            })
            .map(|(key, j)| (*key, j.clone()));
        let Some((key, job)) = pick else {
            // Wake now and then to expire queued jobs past their deadline.
            st = inner
                .synth_cv
                .wait_timeout(st, Duration::from_secs(1))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            continue;
        };
        let (k, build) = {
            let mut run = job.run();
            let build = run.source.is_none();
            if build {
                run.building = true;
            }
            let k = run.take_partition();
            if run.all_handed_out() {
                st.synth_queue.remove(&key);
            }
            run.active += 1;
            run.started.get_or_insert_with(Instant::now);
            (k, build)
        };
        job.mark_running();
        st.synth_busy[w] = Some(WorkerTask {
            job_id: job.id.clone(),
            kind: job.kind,
            partition: k,
        });
        return Some((job, k, build));
    }
}

fn synthesize(inner: &Arc<Inner>, job: &Arc<Job>, k: usize, build: bool) -> Step<ReadyPartition> {
    if let Some(why) = halted(inner, job) {
        return if why.is_empty() {
            Step::Dropped
        } else {
            Step::Failed(why)
        };
    }
    if build {
        let t = Instant::now();
        let built = catch("building the circuits", || match job.request() {
            Some(r) => inner.parts.system.source(&r).map_err(|e| e.to_string()),
            None => Err("the job has no request".into()),
        });
        let source = match built {
            Ok(s) => Arc::from(s),
            Err(e) => return Step::Failed(format!("cannot build the circuits: {e}")),
        };
        let n = {
            let mut run = job.run();
            if job.is_done() {
                // Ended while building (cancel, shutdown): keep nothing.
                run.building = false;
                return Step::Dropped;
            }
            let n = cuzk_circuits::PartitionSource::partitions(&*source);
            run.source = Some(source);
            run.partitions = Some(n);
            run.building = false;
            run.proofs = vec![None; n];
            run.synthesis += t.elapsed();
            n
        };
        let mut st = inner.lock();
        if job.run().all_handed_out() {
            st.synth_queue.remove(&(Reverse(job.priority), job.seq));
        }
        drop(st);
        inner.synth_cv.notify_all();
        info!(target: "partition", job_id = %job.id, kind = %job.kind, partitions = n, "partitions queued");
    }
    if let Some(why) = halted(inner, job) {
        return if why.is_empty() {
            Step::Dropped
        } else {
            Step::Failed(why)
        };
    }
    let counts = match inner.parts.srs.counts(job.proof_type) {
        Ok(c) => c,
        Err(e) => return Step::Failed(format!("cannot size the partition: {e}")),
    };
    let size = partition_size(&counts);
    let Some(source) = job.run().source.clone() else {
        return Step::Dropped;
    };
    let abc_at = abc_at(inner, &*source, &size);
    let mut bytes = partition_bytes(&inner.parts.backends, &size);
    if abc_at == AbcAt::Backend {
        // a, b and c never exist on the host.
        bytes.abc = 0;
    }
    let (srs, reservation) = match reserve_partition(inner, job, k, bytes.total()) {
        Step::Done(x) => x,
        Step::Dropped => return Step::Dropped,
        Step::Returned => return Step::Returned,
        Step::Failed(e) | Step::Lost(e) | Step::ShortOfMemory(e) => return Step::Failed(e),
    };
    info!(target: "partition", job_id = %job.id, partition = k, bytes = reservation.bytes(), "synthesis start");
    let t = Instant::now();
    let synthesized = catch("synthesis", || {
        super::synthesis::synthesize_partition(
            &inner.synthesis,
            super::synthesis::on_critical_pool(job.priority, &size),
            &inner.config,
            &inner.parts.r1cs,
            &*source,
            k,
            (size, abc_at),
        )
    });
    let witness = match synthesized {
        Ok(s) => s.witness,
        Err(e) => return Step::Failed(e),
    };
    let took = t.elapsed();
    job.run().synthesis += took;
    inner.metrics.partition_stage(job.kind, "synthesis", took);
    info!(target: "partition", job_id = %job.id, partition = k, ms = took.as_millis() as u64, "synthesis end");
    Step::Done(ReadyPartition {
        job: job.clone(),
        k,
        witness,
        reservation,
        abc_bytes: bytes.abc,
        size,
        srs,
    })
}

/// Where a partition of `source` is to have its a, b and c evaluated: by
/// the backends when every one of them does that for `size` and the
/// shape's compiled system is resident (loaded here first when it was
/// recorded before: on a small card, partitions with a, b and c from the
/// host need a higher staging tier and crowd the others, measured at
/// 24 GiB on 2026-12-05); else during synthesis (the first partition of a
/// shape never recorded records it, and reserves for a/b/c on the host in
/// case the recording fails).
fn abc_at(inner: &Inner, source: &dyn PartitionSource, size: &WitnessSize) -> AbcAt {
    let backends = &inner.parts.backends;
    let all = !backends.is_empty() && backends.iter().all(|b| b.evaluates_abc(size));
    if all
        && inner.config.synthesis == SynthesisPath::Compiled
        && inner.parts.r1cs.load_recorded(source)
    {
        AbcAt::Backend
    } else {
        AbcAt::Synthesis
    }
}

/// Takes partition `k`'s place among the memory waiters until dropped.
struct MemWaiter<'a> {
    inner: &'a Inner,
    key: PartKey,
}

impl<'a> MemWaiter<'a> {
    fn new(inner: &'a Inner, key: PartKey) -> MemWaiter<'a> {
        let mut st = inner.lock();
        st.mem_waiters.insert(key);
        *inner.mem_head.lock().unwrap_or_else(|p| p.into_inner()) = st.mem_waiters.first().copied();
        MemWaiter { inner, key }
    }

    /// Whether no more urgent partition waits for memory.
    fn first(&self) -> bool {
        *self
            .inner
            .mem_head
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            == Some(self.key)
    }
}

impl Drop for MemWaiter<'_> {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        st.mem_waiters.remove(&self.key);
        *self
            .inner
            .mem_head
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = st.mem_waiters.first().copied();
    }
}

/// Leases the job's SRS together with `bytes` for partition `k` (the SRS
/// is loaded if cold). Memory goes to waiters in priority order: only the
/// most urgent waiter may take it, and a waiter gives its partition back
/// when a more urgent job waits for a synthesis worker.
fn reserve_partition(
    inner: &Inner,
    job: &Arc<Job>,
    k: usize,
    bytes: u64,
) -> Step<(SrsLease, Reservation)> {
    let waiter = MemWaiter::new(inner, (Reverse(job.priority), job.seq, k));
    let claim = if job.priority == Priority::Critical {
        Claim::Critical
    } else {
        Claim::Normal
    };
    let ended = || job.is_done() || job.cancel_requested();
    // Stop waiting inside the budget too when a more urgent waiter arrives;
    // `stepped_aside` remembers it: by the time the call returns, that
    // waiter may be gone again, and giving way is no failure.
    let stepped_aside = std::cell::Cell::new(false);
    let step_aside = || {
        let yes = ended() || !waiter.first();
        stepped_aside.set(stepped_aside.get() || yes);
        yes
    };
    loop {
        stepped_aside.set(false);
        let more_urgent_queued = inner
            .lock()
            .synth_queue
            .range(..(Reverse(job.priority), job.seq))
            .any(|(_, j)| j.run().wants_synthesis());
        if more_urgent_queued {
            return Step::Returned;
        }
        if waiter.first() {
            match inner
                .parts
                .srs
                .lease_with(job.proof_type, bytes, claim, WAIT_SLICE, &step_aside)
            {
                Ok(Some((lease, reservation, load))) => {
                    job.run().srs_load += load;
                    return Step::Done((lease, reservation));
                }
                Ok(None) => {}
                Err(_) if ended() => return Step::Dropped,
                Err(_) if stepped_aside.get() || !waiter.first() => {}
                Err(e) => return Step::Failed(format!("memory budget: {e}")),
            }
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(why) = halted(inner, job) {
            return if why.is_empty() {
                Step::Dropped
            } else {
                Step::Failed(why)
            };
        }
    }
}

/// Fails queued jobs, not yet started, whose deadline has passed.
fn expire_queued(st: &mut State, inner: &Inner) {
    let deadline = inner.config.job_deadline;
    if deadline.is_zero() {
        return;
    }
    let expired: Vec<Arc<Job>> = st
        .synth_queue
        .values()
        .filter(|j| j.submitted.elapsed() > deadline && j.run().started.is_none())
        .cloned()
        .collect();
    for job in expired {
        let outcome = job.outcome_now(
            JobStatus::Failed,
            Vec::new(),
            format!("deadline of {deadline:?} exceeded before the job started"),
            Duration::ZERO,
        );
        end_job(st, inner, &job, outcome);
    }
}

/// Assembles the partition proofs in order, verifies, and ends the job.
pub(super) fn finish(inner: &Arc<Inner>, job: &Arc<Job>) {
    let proof: Vec<u8> = job
        .run()
        .proofs
        .iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
    info!(target: "partition", job_id = %job.id, bytes = proof.len(), "assembled");
    let t = Instant::now();
    let verified = catch("verification", || match job.request() {
        Some(r) => inner
            .parts
            .system
            .verify(&r, &proof)
            .map_err(|e| e.to_string()),
        None => Err("the job has no request".into()),
    });
    let verify = t.elapsed();
    let outcome = match verified {
        Ok(true) => job.outcome_now(JobStatus::Completed, proof, String::new(), verify),
        Ok(false) => job.outcome_now(
            JobStatus::Failed,
            Vec::new(),
            "the proof failed verification and was discarded".into(),
            verify,
        ),
        Err(e) => job.outcome_now(
            JobStatus::Failed,
            Vec::new(),
            format!("the proof could not be verified: {e}"),
            verify,
        ),
    };
    // A completed job is in the journal before anyone sees its proof, so
    // a restart never proves it again.
    if outcome.status == JobStatus::Completed && !job.is_done() {
        super::journaling::record_completed(inner, job, &outcome.proof);
    }
    let mut st = inner.lock();
    end_job(&mut st, inner, job, outcome);
}
