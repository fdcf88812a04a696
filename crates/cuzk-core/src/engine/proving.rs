//! The prover workers: each takes the most urgent ready partition (a
//! worker kept for CRITICAL work takes nothing else) and proves it on its
//! device's backend, with the SRS on the device when the SRS manager's
//! device tier has it there. Where the backend says partitions of one
//! circuit share passes over the SRS it streams from host memory
//! ([`ProverBackend::partitions_per_pass`]), the worker takes up to that
//! many ready partitions of the circuit at once, never waiting for more and
//! never with a CRITICAL one. A device that fails goes out of service and
//! its partitions go to the others.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_prover::{ProverBackend, ProverError};
use ff::Field;
use tracing::{error, info, warn};

use super::workers::{catch, finish, halted, Step};
use super::{end_job, end_job_as, Inner, Journaled, PartKey, ReadyPartition, State, WorkerTask};
use crate::job::{Job, JobStatus};
use crate::kinds::Priority;

/// Starts `prove` prover workers.
pub(super) fn spawn(inner: &Arc<Inner>, prove: usize) {
    for w in 0..prove {
        let inner = inner.clone();
        std::thread::Builder::new()
            .name(format!("cuzk-prove-{w}"))
            .spawn(move || prove_loop(&inner, w))
            .expect("spawn prover worker");
    }
}

fn prove_loop(inner: &Arc<Inner>, w: usize) {
    loop {
        let slot = inner.worker_device[w];
        let parts = {
            let mut st = inner.lock();
            loop {
                if st.stopping {
                    return;
                }
                let in_service = st.out_of_service[slot].is_none();
                if !in_service {
                    // Out of service: this worker takes nothing more.
                } else if let Some(part) = take_ready(&mut st, inner.prover_critical[w]) {
                    st.prove_busy[w] = Some(WorkerTask {
                        job_id: part.job.id.clone(),
                        kind: part.job.kind,
                        partition: part.k,
                    });
                    let group = inner.pass_hint[slot].load(Ordering::Relaxed);
                    let parts = with_companions(&mut st, part, group);
                    inner.metrics.partitions("ready", st.ready.len());
                    break parts;
                }
                st = inner.prove_cv.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        };
        // The ready queue has room again.
        inner.synth_cv.notify_all();
        let t = Instant::now();
        let backend = &inner.parts.backends[slot];
        let taken: Vec<(Arc<Job>, usize)> = parts.iter().map(|p| (p.job.clone(), p.k)).collect();
        let steps = match catch("proving", || {
            Ok(prove(inner, slot, backend.as_ref(), parts))
        }) {
            Ok(steps) => steps,
            Err(e) => all_failed(taken.len(), e),
        };
        inner.metrics.worker_busy("prove", t.elapsed());
        let mut st = inner.lock();
        st.prove_busy[w] = None;
        for ((job, k), step) in taken.into_iter().zip(steps) {
            st = settle(st, inner, slot, (&job, k), step);
        }
    }
}

/// Records what proving partition `k` of `job` came to.
fn settle<'a>(
    mut st: std::sync::MutexGuard<'a, State>,
    inner: &'a Arc<Inner>,
    slot: usize,
    (job, k): (&Arc<Job>, usize),
    step: Step<Vec<u8>>,
) -> std::sync::MutexGuard<'a, State> {
    job.run().active -= 1;
    match step {
        Step::Done(proof) if !job.is_done() => {
            let complete = {
                let mut run = job.run();
                run.proofs[k] = Some(proof);
                run.proved += 1;
                run.partitions == Some(run.proved)
            };
            if complete {
                drop(st);
                finish(inner, job);
                st = inner.lock();
            }
        }
        Step::Done(_) | Step::Dropped | Step::Returned => {}
        Step::Lost(why) => device_lost(&mut st, inner, slot, (job, k), why),
        Step::ShortOfMemory(why) if st.out_of_service[slot].is_none() => {
            if let Err(e) = prove_again(&mut st, inner, (job, k), why) {
                let outcome = job.outcome_now(JobStatus::Failed, Vec::new(), e, Duration::ZERO);
                end_job(&mut st, inner, job, outcome);
            }
        }
        Step::ShortOfMemory(why) => device_lost(&mut st, inner, slot, (job, k), why),
        // Whatever a partition on a device already out of service ends
        // with, it is proved again elsewhere.
        Step::Failed(e) if st.out_of_service[slot].is_some() => {
            device_lost(&mut st, inner, slot, (job, k), e)
        }
        Step::Failed(e) => {
            let outcome = job.outcome_now(JobStatus::Failed, Vec::new(), e, Duration::ZERO);
            end_job(&mut st, inner, job, outcome);
        }
    }
    st
}

/// Times a partition goes back to be proved again after its device ran
/// out of memory, before its job fails saying so.
pub(super) const MEMORY_RETRIES: u32 = 3;

/// Partition `k` of `job` goes back to its job to be synthesized and proved
/// again (its device ran out of memory: `why`); an error once it has done
/// so [`MEMORY_RETRIES`] times.
fn prove_again(
    st: &mut State,
    inner: &Inner,
    (job, k): (&Arc<Job>, usize),
    why: String,
) -> Result<(), String> {
    if job.is_done() {
        return Ok(());
    }
    let mut run = job.run();
    let tries = run.memory_retries.entry(k).or_insert(0);
    if *tries >= MEMORY_RETRIES {
        return Err(format!("{why} (proved again {MEMORY_RETRIES} times)"));
    }
    *tries += 1;
    warn!(
        job_id = %job.id,
        partition = k,
        retry = *tries,
        of = MEMORY_RETRIES,
        "the device ran out of memory for a partition; it is proved again: {why}"
    );
    run.returned.push(k);
    drop(run);
    inner.metrics.memory_retry(job.kind);
    st.synth_queue
        .insert((Reverse(job.priority), job.seq), job.clone());
    inner.synth_cv.notify_all();
    Ok(())
}

/// `first` and up to `group − 1` more ready partitions of its circuit
/// that share passes with it: none when it is CRITICAL, and no CRITICAL
/// one joins (those go alone, at once).
fn with_companions(st: &mut State, first: ReadyPartition, group: usize) -> Vec<ReadyPartition> {
    if group <= 1 || first.job.priority == Priority::Critical {
        return vec![first];
    }
    let circuit = first.srs.circuit_id().to_string();
    let keys: Vec<PartKey> = st
        .ready
        .iter()
        .filter(|(key, p)| key.0 .0 != Priority::Critical && p.srs.circuit_id() == circuit)
        .map(|(key, _)| *key)
        .take(group - 1)
        .collect();
    let mut parts = vec![first];
    parts.extend(keys.iter().filter_map(|key| st.ready.remove(key)));
    parts
}

/// Device `slot` failed under partition `k` of `job`: the device goes out
/// of service (its workers take nothing more), the partition back to its
/// job to be synthesized again and proved on another device. With no
/// device left in service, every job ends failed, saying why; a journal
/// keeps such jobs unfinished (their waiters hear `resumes`), so the
/// restart that brings a device back proves them.
fn device_lost(
    st: &mut State,
    inner: &Inner,
    slot: usize,
    (job, k): (&Arc<Job>, usize),
    why: String,
) {
    let name = inner.parts.backends[slot].name();
    if st.out_of_service[slot].is_none() {
        error!(
            device = %name,
            job_id = %job.id,
            partition = k,
            "device out of service, its partitions go to the other devices: {why}"
        );
        inner.metrics.device_out_of_service(&name);
        st.out_of_service[slot] = Some(why);
    }
    if !job.is_done() {
        job.run().returned.push(k);
        st.synth_queue
            .insert((Reverse(job.priority), job.seq), job.clone());
        inner.synth_cv.notify_all();
    }
    if let Some(why) = no_device_in_service(st, inner) {
        // Jobs with every partition proved are being verified: they end
        // as their proofs say.
        let needs_prover = |j: &Arc<Job>| {
            let run = j.run();
            !j.is_done() && run.partitions != Some(run.proved)
        };
        let jobs: Vec<Arc<Job>> = st
            .jobs
            .values()
            .filter(|j| needs_prover(j))
            .cloned()
            .collect();
        // A journal keeps them unfinished: the restart the operator makes
        // to bring a device back runs them again.
        let journaled = inner.journal.is_some();
        let error = if journaled {
            format!(
                "no prover device is in service: {why}; the job stays in the journal and runs \
                 again after the restart"
            )
        } else {
            format!("no prover device is in service: {why}")
        };
        for j in jobs {
            let mut outcome =
                j.outcome_now(JobStatus::Failed, Vec::new(), error.clone(), Duration::ZERO);
            outcome.resumes = journaled;
            end_job_as(st, inner, &j, outcome, Journaled::No);
        }
    }
}

/// Why no device can prove, when every one is out of service: each
/// device's name and reason.
pub(super) fn no_device_in_service(st: &State, inner: &Inner) -> Option<String> {
    let mut why = Vec::new();
    for (slot, out) in st.out_of_service.iter().enumerate() {
        why.push(format!(
            "{}: {}",
            inner.parts.backends[slot].name(),
            out.as_ref()?
        ));
    }
    Some(why.join("; "))
}

/// The most urgent ready partition, if this worker may take it (a worker
/// kept for CRITICAL work takes nothing else).
fn take_ready(st: &mut State, critical_only: bool) -> Option<ReadyPartition> {
    let key = *st.ready.first_key_value()?.0;
    if critical_only && key.0 .0 != Priority::Critical {
        return None;
    }
    st.ready.remove(&key)
}

/// Proves partitions of one circuit together on the backend of device
/// `slot` (one, or a group sharing passes), with the SRS on its device
/// when the SRS manager's device tier has (or makes) it there; one step
/// for each, in order.
fn prove(
    inner: &Arc<Inner>,
    slot: usize,
    backend: &dyn ProverBackend,
    parts: Vec<ReadyPartition>,
) -> Vec<Step<Vec<u8>>> {
    // Partitions whose job ended meanwhile are not proved.
    let mut steps: Vec<Option<Step<Vec<u8>>>> = Vec::with_capacity(parts.len());
    let mut live = Vec::with_capacity(parts.len());
    for part in parts {
        match halted(inner, &part.job) {
            Some(why) if why.is_empty() => steps.push(Some(Step::Dropped)),
            Some(why) => steps.push(Some(Step::Failed(why))),
            None => {
                steps.push(None);
                live.push(part);
            }
        }
    }
    // A panic here is caught by the worker's loop; the backend call's own
    // is caught in `prove_live`.
    let mut proved = if live.is_empty() {
        Vec::new()
    } else {
        prove_live(inner, slot, backend, live)
    }
    .into_iter();
    steps
        .into_iter()
        .map(|s| s.unwrap_or_else(|| proved.next().unwrap_or(Step::Failed("no result".into()))))
        .collect()
}

fn prove_live(
    inner: &Arc<Inner>,
    slot: usize,
    backend: &dyn ProverBackend,
    live: Vec<ReadyPartition>,
) -> Vec<Step<Vec<u8>>> {
    let n = live.len();
    let mut rng = rand::rngs::OsRng;
    let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let mut taken = Vec::with_capacity(n);
    let mut witnesses = Vec::with_capacity(n);
    let mut reservations = Vec::with_capacity(n);
    let mut leases = Vec::with_capacity(n);
    let size = live[0].size;
    for p in live {
        let mut w = p.witness;
        // A CRITICAL partition goes first on a device other partitions share.
        w.urgent = p.job.priority == Priority::Critical;
        witnesses.push(w);
        reservations.push((p.reservation, p.abc_bytes));
        leases.push(p.srs);
        taken.push((p.job, p.k));
    }
    let device = match inner.parts.srs.on_device(&leases[0], slot, backend, &size) {
        Ok(d) => d,
        Err(e) => {
            let why = format!("partition {}: {e}", taken[0].1);
            return all_failed(n, why);
        }
    };
    let srs = match device.srs() {
        Some(d) => leases[0].data().as_srs_ref().on_device(d),
        None => leases[0].data().as_srs_ref(),
    };
    for (job, k) in &taken {
        info!(target: "partition", job_id = %job.id, partition = k, group = n, "prove start");
    }
    let t = Instant::now();
    let proved = catch("the prover backend", || {
        Ok(backend.prove_with(&mut witnesses, &srs, &r, &s, &mut |i| {
            if let Some((res, abc)) = reservations.get_mut(i) {
                res.release(*abc);
            }
        }))
    });
    let took = t.elapsed();
    // Whether the next partitions on this device share passes.
    inner.pass_hint[slot].store(backend.partitions_per_pass(device.srs()), Ordering::Relaxed);
    // The device copy's use, the rest of the reservations and the SRS
    // leases go back here, then the witnesses' vectors to the pool
    // (charged again if there is room).
    drop(device);
    drop(reservations);
    drop(leases);
    for w in witnesses {
        w.recycle();
    }
    inner
        .metrics
        .budget(inner.parts.budget.used(), inner.parts.budget.limit());
    // SRS bytes the backend copied from host memory for these partitions
    // (a GPU streaming the sections it does not keep), per partition.
    let streamed = match &proved {
        Ok(Ok((_, stats))) => stats.streamed_bytes / n as u64,
        _ => 0,
    };
    if let Ok(Ok((_, st))) = &proved {
        // Where the group's time went, by stage (wall time in this worker,
        // waits for the device lock and for device memory included).
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        info!(
            target: "partition",
            group = n,
            h_ms = ms(st.ntt),
            msm_h_ms = ms(st.msm_h),
            msm_l_ms = ms(st.msm_l),
            msm_a_ms = ms(st.msm_a),
            msm_b_g1_ms = ms(st.msm_b_g1),
            msm_b_g2_ms = ms(st.msm_b_g2),
            assembly_ms = ms(st.assembly),
            "prove stages"
        );
    }
    for (job, k) in &taken {
        job.run().compute += took / n as u32;
        inner
            .metrics
            .partition_stage(job.kind, "prove", took / n as u32);
        info!(
            target: "partition",
            job_id = %job.id,
            partition = k,
            ms = took.as_millis() as u64,
            group = n,
            srs_streamed_bytes = streamed,
            "prove end"
        );
    }
    match proved {
        Ok(Ok((proofs, _))) if proofs.len() == n => proofs
            .iter()
            .map(|p| Step::Done(p.to_bytes().to_vec()))
            .collect(),
        Ok(Ok(_)) => all_failed(
            n,
            "the backend returned a proof count other than asked".into(),
        ),
        Ok(Err(e @ ProverError::Device(_))) => taken
            .iter()
            .map(|(_, k)| Step::Lost(format!("partition {k}: {e}")))
            .collect(),
        Ok(Err(e @ ProverError::Memory(_))) => taken
            .iter()
            .map(|(_, k)| Step::ShortOfMemory(format!("partition {k}: {e}")))
            .collect(),
        Ok(Err(e)) => taken
            .iter()
            .map(|(_, k)| Step::Failed(format!("partition {k}: {e}")))
            .collect(),
        Err(e) => all_failed(n, e),
    }
}

/// The same failure for each of `n` partitions.
fn all_failed(n: usize, why: String) -> Vec<Step<Vec<u8>>> {
    (0..n).map(|_| Step::Failed(why.clone())).collect()
}
