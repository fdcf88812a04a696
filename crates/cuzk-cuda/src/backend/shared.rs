//! Several partitions of one circuit in one call, sharing each pass over
//! the SRS sections that stream from host memory (`gpus.partitions_per_pass`,
//! `src/shared_pass.rs`): their H stages run one after another, each on its
//! own worker context (aux given back after each but the last when the
//! next H stage needs the room), then one MSM stage for all of them under
//! the device lock: L, B and A each read their streamed points once for
//! the whole group, and sections on the card run per partition. When the
//! shared stage runs out of device memory, each partition's MSM stage runs
//! on its own as a single partition's would, so a group never fails where
//! its partitions alone would not.

use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_prover::backend::{ProveStats, ProverError, SrsRef};
use cuzk_prover::msm::{msm, G1, G2};
use cuzk_prover::proof::{assemble, MsmResults, Proof};
use cuzk_prover::srs::Section;
use cuzk_prover::synth::PartitionWitness;
use group::Group;

use super::gpu::{self, Picks, Resident, Waits};
use super::{CudaBackend, GPU_MIN_POINTS};
use crate::device::Worker;
use crate::error::CudaError;
use crate::ffi::{Ctx, Source};
use crate::metrics::Counters;
use crate::shared_pass::{self, Pending};
use crate::staging::StagingTier;

/// Whether `witnesses` go through one shared MSM stage: more than one,
/// allowed by `gpus.partitions_per_pass`, none urgent (a CRITICAL
/// partition is never held up by others), of one shape, and some witness
/// section streams from host memory.
pub(super) fn applies(
    backend: &CudaBackend,
    witnesses: &[PartitionWitness],
    srs: &SrsRef<'_>,
) -> bool {
    let Some(first) = witnesses.first() else {
        return false;
    };
    let res = gpu::resident(backend, srs);
    let streams = !(res.l && res.a && res.b_g1 && res.b_g2);
    let same = |w: &PartitionWitness| {
        w.aux.len() == first.aux.len()
            && w.input.len() == first.input.len()
            && w.num_constraints() == first.num_constraints()
            && w.b_input_density.count() == first.b_input_density.count()
    };
    witnesses.len() > 1
        && witnesses.len() <= backend.partitions_per_pass
        && streams
        && srs.l.len() >= GPU_MIN_POINTS
        && witnesses.iter().all(|w| !w.urgent && same(w))
}

/// Proves `witnesses` (see [`applies`]) with one shared MSM stage.
pub(super) fn prove(
    backend: &CudaBackend,
    counters: &Counters,
    witnesses: &mut [PartitionWitness],
    srs: &SrsRef<'_>,
    (r, s): (&[Scalar], &[Scalar]),
    abc_freed: &mut dyn FnMut(usize),
) -> Result<(Vec<Proof>, ProveStats), ProverError> {
    let dev = &*backend.dev;
    let mut stats = ProveStats::default();
    dev.yield_to_waiters();
    // In flight while its contexts are taken (see `gpu::prove`).
    let flight = dev.flight();
    let mut workers = (0..witnesses.len())
        .map(|_| dev.take_worker(false))
        .collect::<Result<Vec<Worker<'_>>, CudaError>>()?;
    // The group is one partition in flight: its members never wait for
    // each other's memory. What the contexts after the first kept from
    // their last partitions would be invisible to the first one's H
    // stage, which counts only its own buffers as room: given back.
    for w in workers.iter_mut().skip(1) {
        w.trim()?;
    }
    let wait = Waits::new(dev, counters);
    let mut hs = Vec::with_capacity(witnesses.len());
    // Whether each context still holds its partition's aux after its H
    // stage (an H stage that hands back the device lock left it there).
    let mut aux_there = Vec::with_capacity(witnesses.len());
    let mut res = Resident::none();
    let last = witnesses.len() - 1;
    for (i, (w, ctx)) in witnesses.iter_mut().zip(workers.iter_mut()).enumerate() {
        let prepared = gpu::prepare(ctx, backend, w, srs)?;
        res = prepared.resident;
        let (h, tier, region) =
            gpu::h_stage(ctx, backend, &wait, w, srs, &prepared.stage(), &mut stats)?;
        let mut there = region.is_some();
        drop(region);
        gpu::give_back_abc(w, &mut || abc_freed(i));
        if i < last && tier != StagingTier::All {
            // The next H stage needs the room; aux goes up again for the
            // shared MSM stage.
            ctx.trim()?;
            there = false;
        }
        hs.push(h);
        aux_there.push(there);
    }
    let t = Instant::now();
    let mut ctxs: Vec<&mut Ctx> = workers.iter_mut().map(|w| &mut **w).collect();
    let ms = shared_or_alone(
        &mut ctxs,
        backend,
        &wait,
        witnesses,
        srs,
        (res, aux_there),
        &mut stats,
    )?;
    tracing::debug!(
        partitions = ctxs.len(),
        ms = t.elapsed().as_millis() as u64,
        "shared MSM stage"
    );
    if dev.squeezed() {
        for c in ctxs.iter_mut() {
            c.trim()?;
        }
    }
    drop(ctxs);
    drop(workers);
    drop(flight);
    let t = Instant::now();
    let mut proofs = Vec::with_capacity(ms.len());
    for ((m, h), (r, s)) in ms.into_iter().zip(hs).zip(r.iter().zip(s)) {
        proofs.push(assemble(srs, &MsmResults { h, ..m }, *r, *s)?);
    }
    stats.assembly += t.elapsed();
    Ok((proofs, stats))
}

/// The shared MSM stage; out of device memory, it waits for memory other
/// partitions on the device hold and runs again, and where waiting cannot
/// help (this group alone on the device, or the wait's deadline passed)
/// each partition's MSM stage runs on its own, needing a group's share.
fn shared_or_alone(
    ctxs: &mut [&mut Ctx],
    backend: &CudaBackend,
    wait: &Waits<'_>,
    ws: &[PartitionWitness],
    srs: &SrsRef<'_>,
    (res, mut aux_there): (Resident, Vec<bool>),
    stats: &mut ProveStats,
) -> Result<Vec<MsmResults>, ProverError> {
    loop {
        let why = match msm_stage(ctxs, backend, ws, srs, (res, &aux_there), stats) {
            Ok(ms) => return Ok(ms),
            Err(CudaError::OutOfMemory(why)) => why,
            Err(e) => return Err(e.into()),
        };
        // Trimmed below: every aux goes up again.
        aux_there.iter_mut().for_each(|t| *t = false);
        for c in ctxs.iter_mut() {
            stats.streamed_bytes += c.take_shape()?.1;
            c.trim()?;
        }
        if wait.or_fail(why.clone()).is_ok() {
            continue;
        }
        tracing::warn!(%why, "shared GPU MSM stage out of device memory; one partition at a time");
        backend.counters.fell_back();
        let mut ms = Vec::with_capacity(ctxs.len());
        for (c, w) in ctxs.iter_mut().zip(ws) {
            ms.push(gpu::msm_stage_waiting(
                c,
                backend,
                wait,
                w,
                srs,
                (res, true),
                None,
                stats,
            )?);
        }
        return Ok(ms);
    }
}

/// L, B and A of every partition under the device lock, each streamed
/// section read once for all; `h` of the results left at zero. Pippenger
/// runs still queued when it fails are waited for and dropped (their
/// scratch is the contexts').
fn msm_stage(
    ctxs: &mut [&mut Ctx],
    backend: &CudaBackend,
    ws: &[PartitionWitness],
    srs: &SrsRef<'_>,
    (res, aux_there): (Resident, &[bool]),
    stats: &mut ProveStats,
) -> Result<Vec<MsmResults>, CudaError> {
    let r = msm_stage_queued(ctxs, backend, ws, srs, (res, aux_there), stats);
    if r.is_err() {
        if let Err(e) = shared_pass::drop_deferred(ctxs) {
            tracing::warn!(%e, "dropping queued MSMs after a failed shared stage");
        }
    }
    r
}

/// [`msm_stage`]'s work: with `gpus.tuning.overlap_others` each streamed
/// MSM's Pippenger over its others runs while the next MSM's tiles are
/// copied (`shared_pass`); all are resolved before the device lock goes.
/// The order puts a streamed section after each queued run where it can:
/// L, B_G2, then B_G1 and A, with a resident B_G1 after A when B's scalars
/// have their own vector (A's pick, the last, then leaves them alone).
fn msm_stage_queued(
    ctxs: &mut [&mut Ctx],
    backend: &CudaBackend,
    ws: &[PartitionWitness],
    srs: &SrsRef<'_>,
    (res, aux_there): (Resident, &[bool]),
    stats: &mut ProveStats,
) -> Result<Vec<MsmResults>, CudaError> {
    // Aux up (without the device lock) where the H stage gave it back.
    for ((c, w), there) in ctxs.iter_mut().zip(ws).zip(aux_there) {
        if !there {
            c.upload_aux(&w.aux)?;
        }
    }
    let mut kernels = backend.dev.kernels(false)?;
    let k = ctxs.len();
    let t = Instant::now();
    let l = if res.l {
        each_g1(ctxs, |c, _| {
            c.msm_g1_resident(Source::Aux, Section::L, 0, srs.l.len())
        })?
    } else {
        shared_pass::msm::<G1Projective>(ctxs, &vec![Source::Aux; k], srs.l)?
    };
    stats.msm_l += t.elapsed();
    kernels = kernels.let_urgent_in(false)?;

    let t = Instant::now();
    let mut picks: Vec<Picks> = (0..k)
        .map(|_| Picks {
            small: true,
            aux_whole: true,
        })
        .collect();
    let b = BPart::new(ws, srs);
    let mut b_src = Vec::with_capacity(k);
    for ((c, w), p) in ctxs.iter_mut().zip(ws).zip(picks.iter_mut()) {
        b_src.push(p.pick(c, &w.aux, &w.b_aux_density, b.n, false)?);
    }
    let b2_aux = b.g2(ctxs, res, &b_src, srs)?;
    stats.msm_b_g2 += t.elapsed();
    kernels = kernels.let_urgent_in(false)?;
    let b1_late = res.b_g1 && b_src.iter().all(|s| *s == Source::Picked);
    let b1_early = if b1_late {
        None
    } else {
        let t = Instant::now();
        let v = b.g1(ctxs, res, &b_src, srs)?;
        stats.msm_b_g1 += t.elapsed();
        kernels = kernels.let_urgent_in(false)?;
        Some(v)
    };

    let t = Instant::now();
    let ni = ws[0].input.len();
    let na = srs.a.len() - ni;
    let mut a_src = Vec::with_capacity(k);
    for ((c, w), p) in ctxs.iter_mut().zip(ws).zip(picks.iter_mut()) {
        a_src.push(p.pick(c, &w.aux, &w.a_aux_density, na, true)?);
    }
    if b1_late && a_src.contains(&Source::Picked) {
        return Err(CudaError::Cuda(
            "A's scalars were picked over B's, which B_G1 still needs".into(),
        ));
    }
    let a_aux = if res.a {
        each_g1(ctxs, |c, j| c.msm_g1_resident(a_src[j], Section::A, ni, na))?
    } else {
        shared_pass::msm::<G1Projective>(ctxs, &a_src, &srs.a[ni..])?
    };
    stats.msm_a += t.elapsed();
    let b1_aux = match b1_early {
        Some(v) => v,
        None => {
            let t = Instant::now();
            let v = b.g1(ctxs, res, &b_src, srs)?;
            stats.msm_b_g1 += t.elapsed();
            v
        }
    };
    // The queued runs, in the order they were queued (their wait counted
    // in A's stage wall: L's and B's walls are then only their tiles).
    let t = Instant::now();
    let l = shared_pass::resolve(ctxs, l)?;
    let b2_aux = shared_pass::resolve(ctxs, b2_aux)?;
    let b1_aux = shared_pass::resolve(ctxs, b1_aux)?;
    let a_aux = shared_pass::resolve(ctxs, a_aux)?;
    stats.msm_a += t.elapsed();
    for c in ctxs.iter_mut() {
        let (shape, streamed) = c.take_shape()?;
        stats.shape += shape;
        stats.streamed_bytes += streamed;
    }
    drop(kernels);
    Ok(ws
        .iter()
        .enumerate()
        .map(|(j, w)| host_parts(w, srs, (l[j], a_aux[j], b1_aux[j], b2_aux[j])))
        .collect())
}

/// B's aux points: those after the `bi` input ones, `n` of them.
struct BPart {
    bi: usize,
    n: usize,
}

impl BPart {
    fn new(ws: &[PartitionWitness], srs: &SrsRef<'_>) -> Self {
        let bi = ws[0].b_input_density.count();
        Self {
            bi,
            n: srs.b_g1.len() - bi,
        }
    }

    /// B_G1 over `src`, resident or streamed.
    fn g1(
        &self,
        ctxs: &mut [&mut Ctx],
        res: Resident,
        src: &[Source],
        srs: &SrsRef<'_>,
    ) -> Result<Vec<Pending<G1Projective>>, CudaError> {
        if res.b_g1 {
            each_g1(ctxs, |c, j| {
                c.msm_g1_resident(src[j], Section::BG1, self.bi, self.n)
            })
        } else {
            shared_pass::msm::<G1Projective>(ctxs, src, &srs.b_g1[self.bi..])
        }
    }

    /// B_G2 over `src`, resident or streamed.
    fn g2(
        &self,
        ctxs: &mut [&mut Ctx],
        res: Resident,
        src: &[Source],
        srs: &SrsRef<'_>,
    ) -> Result<Vec<Pending<G2Projective>>, CudaError> {
        if res.b_g2 {
            let mut v = Vec::with_capacity(ctxs.len());
            for (j, c) in ctxs.iter_mut().enumerate() {
                v.push(Pending::whole(c.msm_g2_resident(src[j], self.bi, self.n)?));
            }
            Ok(v)
        } else {
            shared_pass::msm::<G2Projective>(ctxs, src, &srs.b_g2[self.bi..])
        }
    }
}

/// One resident G1 MSM per context (whole results).
fn each_g1(
    ctxs: &mut [&mut Ctx],
    mut f: impl FnMut(&mut Ctx, usize) -> Result<G1Projective, CudaError>,
) -> Result<Vec<Pending<G1Projective>>, CudaError> {
    ctxs.iter_mut()
        .enumerate()
        .map(|(j, c)| f(c, j).map(Pending::whole))
        .collect()
}

/// A partition's MSM results: the device's aux parts plus the input
/// parts, summed on the host.
fn host_parts(
    w: &PartitionWitness,
    srs: &SrsRef<'_>,
    (l, a_aux, b1_aux, b2_aux): (G1Projective, G1Projective, G1Projective, G2Projective),
) -> MsmResults {
    let bi = w.b_input_density.count();
    let (b1_in, _) = msm::<G1>(&srs.b_g1[..bi], &w.input, Some(&w.b_input_density));
    let (b2_in, _) = msm::<G2>(&srs.b_g2[..bi], &w.input, Some(&w.b_input_density));
    let (a_in, _) = msm::<G1>(&srs.a[..w.input.len()], &w.input, None);
    MsmResults {
        a: a_in + a_aux,
        b_g1: b1_in + b1_aux,
        b_g2: b2_in + b2_aux,
        h: G1Projective::identity(),
        l,
    }
}
