//! One partition on the device: the SRS on the device if the engine had it
//! prepared there (`device_srs.rs`), else streamed; the H stage at the
//! staging tier the device's free memory allows (falling back a tier, or
//! waiting for memory other partitions hold; a, b and c copied up, or
//! evaluated on the device from the shape's matrices there when the
//! witness left them to the backend, `matrices.rs`), then the L, A and B MSMs;
//! uploads run on the worker context's own stream outside the device lock,
//! kernels inside. A partition waits for device memory at most
//! [`MEMORY_WAIT_LIMIT`] in all, over both stages.

use std::time::Instant;

use blstrs::{G1Projective, Scalar};
use cuzk_prover::backend::{check_srs, ProveStats, ProverError, SrsRef};
use cuzk_prover::density::Density;
use cuzk_prover::msm::{msm, G1, G2};
use cuzk_prover::proof::{assemble, MsmResults, Proof};
use cuzk_prover::synth::PartitionWitness;
use ff::{Field, PrimeField};
use group::Group;

use cuzk_prover::ntt::{compute_h, Domain};

use cuzk_prover::srs::Section;

use super::{CudaBackend, GPU_MIN_POINTS};
use crate::device::{Device, KernelRegion, Wait};
use crate::device_srs::OnDevice;
use crate::error::CudaError;
use crate::ffi::{Ctx, Source};
use crate::matrices::DeviceMatrices;
use crate::metrics::Counters;
use crate::staging::{self, StagingTier};

pub(super) fn prove(
    backend: &CudaBackend,
    counters: &Counters,
    witnesses: &mut [PartitionWitness],
    srs: &SrsRef<'_>,
    r: &[Scalar],
    s: &[Scalar],
    abc_freed: &mut dyn FnMut(usize),
) -> Result<(Vec<Proof>, ProveStats), ProverError> {
    let mut stats = ProveStats::default();
    let mut proofs = Vec::with_capacity(witnesses.len());
    // This call's own context (buffers, upload stream); the device lock
    // is taken only around kernel launches, so uploads, host work and
    // the assembly below overlap other calls' kernels.
    // A CRITICAL job's partition goes before other waiters for the
    // device lock (`urgent_lock.rs`).
    let urgent = witnesses.iter().any(|w| w.urgent);
    if !urgent {
        backend.dev.yield_to_waiters();
    }
    // In flight for as long as the context is taken (declared first, so
    // dropped after it, on every path): a partition short of memory then
    // never takes this context's buffers for nobody's (neither in flight
    // nor idle) and gives up alone (a 24 GiB job lost two partitions so
    // on 2026-12-05).
    let flight = backend.dev.flight();
    let mut worker = backend.dev.take_worker(urgent)?;
    for (i, ((w, r), s)) in witnesses.iter_mut().zip(r).zip(s).enumerate() {
        let m = partition(
            &mut worker,
            backend,
            counters,
            w,
            srs,
            &mut stats,
            &mut || abc_freed(i),
        )?;
        if backend.dev.squeezed() {
            // Another partition waits for device memory: give back the
            // buffers this context would have kept.
            worker.trim()?;
            backend.dev.freed();
        }
        let t = Instant::now();
        proofs.push(assemble(srs, &m, *r, *s)?);
        stats.assembly += t.elapsed();
    }
    drop(worker);
    drop(flight);
    Ok((proofs, stats))
}

/// How long a partition waits in all for device memory that other
/// partitions hold before it gives up with an out-of-memory error.
const MEMORY_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// bellperson's domain for `len` evaluations: the next power of two
/// (1 for none).
fn domain(len: usize) -> Result<(usize, u32), ProverError> {
    let n = len
        .checked_next_power_of_two()
        .filter(|n| n.trailing_zeros() <= Scalar::S)
        .ok_or_else(|| ProverError::Input(format!("{len} constraints do not fit an NTT domain")))?;
    Ok((n, n.trailing_zeros()))
}

/// 1/Z(g) = 1/(g^n − 1) on the coset of generator g = 7.
fn z_inverse(n: usize) -> Result<Scalar, ProverError> {
    let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([n as u64]) - Scalar::ONE;
    Option::from(z.invert()).ok_or_else(|| ProverError::Input("Z(g) is zero".into()))
}

/// What both stages of one partition start from: its domain, the shape's
/// matrices on the device (when a, b and c are left to this backend) and
/// the SRS sections on the device.
pub(super) struct Prepared {
    pub(super) mats: Option<std::sync::Arc<DeviceMatrices>>,
    pub(super) resident: Resident,
    pub(super) n: usize,
    pub(super) lg_n: u32,
}

impl Prepared {
    pub(super) fn stage(&self) -> Stage<'_> {
        Stage {
            resident: self.resident,
            mats: self.mats.as_deref(),
            n: self.n,
            lg_n: self.lg_n,
        }
    }
}

/// Checks the witness against the SRS and finds what its stages need.
pub(super) fn prepare(
    ctx: &mut Ctx,
    backend: &CudaBackend,
    w: &PartitionWitness,
    srs: &SrsRef<'_>,
) -> Result<Prepared, ProverError> {
    let (n, lg_n) = domain(w.num_constraints())?;
    check_srs(w, srs, n)?;
    for d in [&w.a_aux_density, &w.b_aux_density] {
        if d.len() != w.aux.len() {
            return Err(ProverError::Input(format!(
                "density of {} bits for {} aux variables",
                d.len(),
                w.aux.len()
            )));
        }
    }
    let dev = &*backend.dev;
    // a, b and c left to this backend: from the shape's matrices, kept
    // on the device.
    let mats = match &w.matrices {
        Some(m) if w.abc_deferred() => Some(dev.matrices.get(ctx, &**m)?),
        _ => None,
    };
    Ok(Prepared {
        mats,
        resident: resident(backend, srs),
        n,
        lg_n,
    })
}

/// The sections on the device when the engine prepared them there for
/// this backend (the others stream); the handle in `srs` keeps them there
/// until the call returns.
pub(super) fn resident(backend: &CudaBackend, srs: &SrsRef<'_>) -> Resident {
    match srs.device.map(|d| d.downcast_ref::<OnDevice>()) {
        None => Resident::none(),
        Some(Some(d)) if d.serves(&backend.dev, srs) => Resident::of(d),
        Some(_) => {
            tracing::warn!(
                device = backend.device,
                "the SRS prepared for another device or circuit; streaming its points"
            );
            Resident::none()
        }
    }
}

/// The H stage's result handed to the MSM stage: a, b and c are given
/// back to the pool (their reservation released) once H is computed.
pub(super) fn give_back_abc(w: &mut PartitionWitness, abc_freed: &mut dyn FnMut()) {
    let abc = [
        std::mem::take(&mut w.a),
        std::mem::take(&mut w.b),
        std::mem::take(&mut w.c),
    ];
    abc_freed();
    for v in abc {
        cuzk_prover::pool::pool().give(v);
    }
}

fn partition(
    ctx: &mut Ctx,
    backend: &CudaBackend,
    counters: &Counters,
    w: &mut PartitionWitness,
    srs: &SrsRef<'_>,
    stats: &mut ProveStats,
    abc_freed: &mut dyn FnMut(),
) -> Result<MsmResults, ProverError> {
    let prepared = prepare(ctx, backend, w, srs)?;
    let res = prepared.resident;
    // One deadline for every wait for device memory of this partition.
    let wait = Waits::new(&backend.dev, counters);

    // At the top tier with several workers, or with a, b and c evaluated
    // on the device, aux is on the device already and the device lock is
    // still held for the MSM stage.
    let at = prepared.stage();
    let (h, tier, region) = h_stage(ctx, backend, &wait, w, srs, &at, stats)?;
    give_back_abc(w, abc_freed);
    // Below the top tier the A and B scalars are picked over aux itself
    // where a second vector would crowd the MSMs (`Picks::small`).
    let small = tier != StagingTier::All;
    let m = msm_stage_waiting(ctx, backend, &wait, w, srs, (res, small), region, stats)?;
    Ok(MsmResults { h, ..m })
}

/// [`msm_stage`], which needs aux and scratch on the device: when it runs
/// out of memory while other partitions hold some, it waits for them and
/// runs again.
#[allow(clippy::too_many_arguments)]
pub(super) fn msm_stage_waiting(
    ctx: &mut Ctx,
    backend: &CudaBackend,
    wait: &Waits<'_>,
    w: &PartitionWitness,
    srs: &SrsRef<'_>,
    (res, small): (Resident, bool),
    mut region: Option<KernelRegion<'_>>,
    stats: &mut ProveStats,
) -> Result<MsmResults, ProverError> {
    loop {
        match msm_stage(ctx, backend, w, srs, res, small, region.take(), stats) {
            Ok(m) => return Ok(m),
            Err(CudaError::OutOfMemory(why)) => {
                let (_, streamed) = ctx.take_shape()?;
                stats.streamed_bytes += streamed;
                ctx.trim()?;
                tracing::warn!(%why, "GPU MSM stage out of device memory; waiting to run it again");
                wait.or_fail(why)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// L, B and A on the device (H is done): aux uploaded without the
/// device lock, the MSMs under it; or, given the region the H stage
/// held (`held`), aux is there already and the lock is kept. Below the
/// top tier (`small`) A's scalars are picked over aux, so A goes last.
/// `h` of the result is left at zero.
#[allow(clippy::too_many_arguments)]
pub(super) fn msm_stage(
    ctx: &mut Ctx,
    backend: &CudaBackend,
    w: &PartitionWitness,
    srs: &SrsRef<'_>,
    res: Resident,
    small: bool,
    held: Option<KernelRegion<'_>>,
    stats: &mut ProveStats,
) -> Result<MsmResults, CudaError> {
    let t = Instant::now();
    // A CRITICAL partition waiting for the device goes between this
    // partition's H stage and its L/A/B stage, and between two of its
    // MSMs: a PoSt partition's full-width MSMs take 0.5–2.1 s each, so
    // it waits for one MSM, not for the whole partition.
    let mut kernels = match held {
        Some(k) => k.let_urgent_in(w.urgent)?,
        None => {
            // Without the device lock: the copy runs on this context's
            // stream.
            ctx.upload_aux(&w.aux)?;
            backend.dev.kernels(w.urgent)?
        }
    };
    let l = if srs.l.len() < GPU_MIN_POINTS {
        msm::<G1>(srs.l, &w.aux, None).0
    } else if res.l {
        ctx.msm_g1_resident(Source::Aux, Section::L, 0, srs.l.len())?
    } else {
        ctx.msm_g1(Source::Aux, srs.l)?
    };
    stats.msm_l += t.elapsed();
    kernels = kernels.let_urgent_in(w.urgent)?;
    let mut picks = Picks {
        small,
        aux_whole: true,
    };

    let t = Instant::now();
    let bi = w.b_input_density.count();
    let (b1_in, _) = msm::<G1>(&srs.b_g1[..bi], &w.input, Some(&w.b_input_density));
    let b_on_gpu = srs.b_g1.len() - bi >= GPU_MIN_POINTS;
    let mut b_src = Source::Picked;
    let b1_aux = if b_on_gpu {
        b_src = picks.pick(ctx, &w.aux, &w.b_aux_density, srs.b_g1.len() - bi, false)?;
        if res.b_g1 {
            ctx.msm_g1_resident(b_src, Section::BG1, bi, srs.b_g1.len() - bi)?
        } else {
            ctx.msm_g1(b_src, &srs.b_g1[bi..])?
        }
    } else {
        msm::<G1>(&srs.b_g1[bi..], &w.aux, Some(&w.b_aux_density)).0
    };
    stats.msm_b_g1 += t.elapsed();
    kernels = kernels.let_urgent_in(w.urgent)?;

    // B_G2 over the scalars picked for B_G1's aux part.
    let t = Instant::now();
    let (b2_in, _) = msm::<G2>(&srs.b_g2[..bi], &w.input, Some(&w.b_input_density));
    let b2_aux = if b_on_gpu && res.b_g2 {
        ctx.msm_g2_resident(b_src, bi, srs.b_g2.len() - bi)?
    } else if b_on_gpu {
        ctx.msm_g2(b_src, &srs.b_g2[bi..])?
    } else {
        msm::<G2>(&srs.b_g2[bi..], &w.aux, Some(&w.b_aux_density)).0
    };
    stats.msm_b_g2 += t.elapsed();
    kernels = kernels.let_urgent_in(w.urgent)?;

    let t = Instant::now();
    let ni = w.input.len();
    let (a_in, _) = msm::<G1>(&srs.a[..ni], &w.input, None);
    let na = srs.a.len() - ni;
    let a_aux = if na < GPU_MIN_POINTS {
        msm::<G1>(&srs.a[ni..], &w.aux, Some(&w.a_aux_density)).0
    } else {
        let src = picks.pick(ctx, &w.aux, &w.a_aux_density, na, true)?;
        if res.a {
            ctx.msm_g1_resident(src, Section::A, ni, na)?
        } else {
            ctx.msm_g1(src, &srs.a[ni..])?
        }
    };
    stats.msm_a += t.elapsed();
    let (shape, streamed) = ctx.take_shape()?;
    stats.shape += shape;
    stats.streamed_bytes += streamed;
    drop(kernels);

    Ok(MsmResults {
        a: a_in + a_aux,
        b_g1: b1_in + b1_aux,
        b_g2: b2_in + b2_aux,
        h: G1Projective::identity(),
        l,
    })
}

/// H on the device and its MSM, at the staging tier the device's room
/// allows, falling back a tier when an allocation fails. a, b and c are
/// still needed after a failure, so the caller frees them only after.
#[allow(clippy::too_many_arguments)]
pub(super) fn h_stage<'d>(
    ctx: &mut Ctx,
    backend: &'d CudaBackend,
    wait: &Waits<'_>,
    w: &mut PartitionWitness,
    srs: &SrsRef<'_>,
    at: &Stage<'_>,
    stats: &mut ProveStats,
) -> Result<(G1Projective, StagingTier, Option<KernelRegion<'d>>), ProverError> {
    let dev = &*backend.dev;
    let (n, aux, on_dev) = (at.n, w.aux.len(), at.mats.is_some());
    let lowest = StagingTier::lowest(on_dev);
    // The MSM driver's scratch for this partition's largest MSM.
    // The least the MSM driver's scratch for this partition's largest MSM
    // can be (it fits itself to the room there is, faster with more).
    let temp = ctx.msm_scratch(n.max(aux), true)?;
    // Set once H is computed on the host (tier none): a then holds H's
    // coefficients, so every later attempt stays at that tier.
    let mut h_on_host = false;
    // Set once idle contexts were asked for their kept buffers.
    let mut trimmed = false;
    // Held from this partition's first wait for memory until its H stage
    // is done (its room taken): partitions about to start yield to it.
    let mut waiting = None;
    'measure: loop {
        let (free, held) = ctx.mem_room()?;
        let room = free + held;
        if room < lowest.need_with(n, aux, temp, on_dev) + backend.vram_margin
            && Instant::now() < wait.deadline
        {
            // Not even the lowest tier fits: memory other partitions
            // hold comes back, or this one tries its luck alone. A
            // waiting partition holds nothing: two partitions each
            // keeping buffers the other needs would wait for each other.
            if held > 0 {
                ctx.trim()?;
            }
            waiting.get_or_insert_with(|| dev.memory_waiter());
            match dev.wait_for_memory()? {
                Wait::Alone => {}
                Wait::Freed => continue 'measure,
                Wait::Waited => {
                    wait.counters.waited();
                    continue 'measure;
                }
            }
        }
        dev.unsqueeze();
        let chosen = if h_on_host {
            StagingTier::None
        } else {
            staging::choose_with(room, backend.vram_margin, n, aux, temp, on_dev)
        };
        // Buffers idle contexts keep (a partition at the top tier keeps
        // its a|b|c) are worth more to this one when they would raise its
        // tier: a partition took tier none beside 12 GB kept that way at
        // 24 GiB (2026-12-05).
        if chosen != StagingTier::All && !trimmed && !h_on_host {
            trimmed = true;
            let idle = dev.idle_held()?;
            let better =
                staging::choose_with(room + idle, backend.vram_margin, n, aux, temp, on_dev);
            if better != chosen && dev.trim_idle()? {
                continue 'measure;
            }
        }
        let mut tier = chosen;
        loop {
            match h_at(dev, ctx, (tier, &mut h_on_host), w, srs, at, stats) {
                Ok((h, region)) => {
                    tracing::info!(
                        target: "partition",
                        device = backend.device,
                        tier = tier.label(),
                        chosen = chosen.label(),
                        room,
                        need = tier.need_with(n, aux, temp, on_dev),
                        abc_on_device = on_dev,
                        "GPU staging"
                    );
                    wait.counters.staged(tier);
                    if tier != StagingTier::All && on_dev {
                        // Give H's room back before the MSMs; aux, uploaded
                        // for the evaluation, stays for them.
                        ctx.trim_keeping_aux()?;
                    } else if tier != StagingTier::All {
                        // Give the a|b|c room back before aux and the MSMs.
                        ctx.trim()?;
                    }
                    return Ok((h, tier, region));
                }
                Err(CudaError::OutOfMemory(why)) => {
                    ctx.trim()?;
                    if let Some(lower) = tier.lower_with(on_dev) {
                        tracing::warn!(
                            device = backend.device,
                            from = tier.label(),
                            to = lower.label(),
                            %why,
                            "GPU allocation failed; falling back a staging tier"
                        );
                        wait.counters.fell_back();
                        tier = lower;
                        continue;
                    }
                    // The lowest tier failed too: wait for memory that
                    // other partitions hold, then measure again.
                    wait.or_fail(why)?;
                    continue 'measure;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One attempt of [`h_stage`] at `tier`.
#[allow(clippy::too_many_arguments)]
fn h_at<'d>(
    dev: &'d Device,
    ctx: &mut Ctx,
    (tier, h_on_host): (StagingTier, &mut bool),
    w: &mut PartitionWitness,
    srs: &SrsRef<'_>,
    at: &Stage<'_>,
    stats: &mut ProveStats,
) -> Result<(G1Projective, Option<KernelRegion<'d>>), CudaError> {
    let (resident, n, lg_n) = (at.resident.h, at.n, at.lg_n);
    let t = Instant::now();
    if tier != StagingTier::All {
        // The buffers kept from the last partition (aux, the split's
        // gathered points) were counted as room: free them, or the
        // a-only tier's vectors do not fit beside them on a small card.
        ctx.trim()?;
    }
    // Page-locking a source per copy stalls other workers' kernel launches
    // (docs/PERF.md): with several workers, copy through pinned chunks.
    ctx.set_chunked_copies(dev.workers_made() > 1)?;
    let several = tier == StagingTier::All && dev.workers_made() > 1;
    // With a, b and c evaluated on the device, aux goes up first (without
    // the device lock) and stays, with the lock, for the MSM stage.
    let keep = several || at.mats.is_some();
    let kernels = match (tier, at.mats) {
        (StagingTier::None, Some(_)) => {
            return Err(CudaError::OutOfMemory(
                "no staging tier below a-only for a, b and c evaluated on the device".into(),
            ))
        }
        (_, Some(m)) => {
            ctx.upload_aux(&w.aux)?;
            let k = dev.kernels(w.urgent)?;
            let vectors = if tier == StagingTier::All { 3 } else { 2 };
            ctx.h_eval(m, &w.input, lg_n, &z_inv(n)?, vectors)?;
            k
        }
        (_, None) => h_copied(dev, ctx, (tier, h_on_host, several), w, (n, lg_n))?,
    };
    stats.ntt += t.elapsed();
    // A CRITICAL partition waiting for the device goes between H's
    // transforms and its MSM (each stage ends synchronized).
    let kernels = kernels.let_urgent_in(w.urgent)?;
    let t = Instant::now();
    let h = if n > 1 && resident {
        ctx.msm_g1_resident(Source::H, Section::H, 0, srs.h.len())?
    } else if n > 1 {
        ctx.msm_g1(Source::H, srs.h)?
    } else {
        G1Projective::identity()
    };
    stats.msm_h += t.elapsed();
    Ok((h, keep.then_some(kernels)))
}

/// Which SRS sections are on the device for this partition (the others
/// are streamed from host memory).
#[derive(Clone, Copy)]
pub(super) struct Resident {
    pub(super) h: bool,
    pub(super) l: bool,
    pub(super) a: bool,
    pub(super) b_g1: bool,
    pub(super) b_g2: bool,
}

impl Resident {
    pub(super) fn none() -> Resident {
        Resident {
            h: false,
            l: false,
            a: false,
            b_g1: false,
            b_g2: false,
        }
    }

    fn of(d: &OnDevice) -> Resident {
        Resident {
            h: d.resident(Section::H),
            l: d.resident(Section::L),
            a: d.resident(Section::A),
            b_g1: d.resident(Section::BG1),
            b_g2: d.resident(Section::BG2),
        }
    }
}

/// What [`h_stage`] works with besides the witness.
pub(super) struct Stage<'a> {
    /// The SRS sections on the device.
    resident: Resident,
    /// a, b and c are evaluated from these matrices on the device.
    mats: Option<&'a DeviceMatrices>,
    n: usize,
    lg_n: u32,
}

/// The H stage of [`h_at`] from a, b and c on the host (copied up, or H
/// computed on the host at the lowest tier); the device lock on return.
fn h_copied<'d>(
    dev: &'d Device,
    ctx: &mut Ctx,
    (tier, h_on_host, several): (StagingTier, &mut bool, bool),
    w: &mut PartitionWitness,
    (n, lg_n): (usize, u32),
) -> Result<KernelRegion<'d>, CudaError> {
    let urgent = w.urgent;
    Ok(match tier {
        // Several calls on the device: a, b, c and aux copied on this
        // context's stream first, without the device lock, so the
        // copies overlap another call's kernels; then the whole
        // partition's kernels in one region (kept for the MSM stage).
        StagingTier::All if several => {
            ctx.upload_abc(&w.a, &w.b, &w.c, lg_n)?;
            ctx.upload_aux(&w.aux)?;
            let k = dev.kernels(urgent)?;
            ctx.h_compute(lg_n, &z_inv(n)?)?;
            k
        }
        // The only call on the device: copies overlapping the NTTs.
        StagingTier::All => {
            let k = dev.kernels(urgent)?;
            ctx.h_prepare(&w.a, &w.b, &w.c, lg_n, &z_inv(n)?)?;
            k
        }
        StagingTier::AOnly => {
            let k = dev.kernels(urgent)?;
            ctx.h_prepare_a_only(&w.a, &w.b, &w.c, lg_n, &z_inv(n)?)?;
            k
        }
        StagingTier::None => {
            // H on the host (the CPU backend's NTT): a becomes H.
            if !*h_on_host {
                let domain = Domain::new(lg_n).map_err(|e| CudaError::Input(e.to_string()))?;
                compute_h(&domain, &mut w.a, &mut w.b, &mut w.c);
                w.a.truncate(n.saturating_sub(1));
                *h_on_host = true;
            }
            ctx.h_upload(&w.a, lg_n)?;
            dev.kernels(urgent)?
        }
    })
}

/// Waiting for device memory that other partitions on the device hold,
/// until one deadline for the whole partition.
pub(super) struct Waits<'a> {
    dev: &'a Device,
    counters: &'a Counters,
    deadline: Instant,
}

impl<'a> Waits<'a> {
    /// One deadline, [`MEMORY_WAIT_LIMIT`] from now, for every wait of a
    /// partition (or of a group of partitions sharing passes).
    pub(super) fn new(dev: &'a Device, counters: &'a Counters) -> Waits<'a> {
        Waits {
            dev,
            counters,
            deadline: Instant::now() + MEMORY_WAIT_LIMIT,
        }
    }

    /// After running out of device memory (`why`): waits for memory that
    /// other partitions on the device hold, or gives the error back when
    /// this partition is alone on the device or the deadline has passed.
    pub(super) fn or_fail(&self, why: String) -> Result<(), CudaError> {
        if Instant::now() >= self.deadline {
            return Err(CudaError::OutOfMemory(why));
        }
        match self.dev.wait_for_memory()? {
            Wait::Alone => Err(CudaError::OutOfMemory(why)),
            Wait::Freed => Ok(()),
            Wait::Waited => {
                self.counters.waited();
                Ok(())
            }
        }
    }
}

fn z_inv(n: usize) -> Result<Scalar, CudaError> {
    z_inverse(n).map_err(|e| CudaError::Input(e.to_string()))
}

/// How the MSM stage puts the A and B scalars on the device: picked by
/// density into a second buffer ([`Source::Picked`]), or, below the top
/// tier where that buffer would crowd the MSMs (`small`), over aux itself
/// ([`Source::Aux`]; aux is uploaded again if a later pick needs it whole).
pub(super) struct Picks {
    pub(super) small: bool,
    pub(super) aux_whole: bool,
}

impl Picks {
    /// Puts the aux scalars of `density` on the device and says where;
    /// `last`: no later pick needs aux.
    pub(super) fn pick(
        &mut self,
        ctx: &mut Ctx,
        aux: &[Scalar],
        density: &Density,
        npoints: usize,
        last: bool,
    ) -> Result<Source, CudaError> {
        if density.len() != aux.len() {
            return Err(CudaError::Input(format!(
                "density of {} bits for {} aux variables",
                density.len(),
                aux.len()
            )));
        }
        if !self.aux_whole {
            ctx.upload_aux(aux)?;
            self.aux_whole = true;
        }
        let in_place = self.small && (last || !self.second_vector_fits(ctx, density)?);
        let (count, src) = if in_place {
            self.aux_whole = false;
            (
                ctx.pick_in_place(density.words(), density.len())?,
                Source::Aux,
            )
        } else {
            (ctx.pick(density.words(), density.len())?, Source::Picked)
        };
        if count != npoints {
            return Err(CudaError::Input(format!(
                "{count} variables in the density for {npoints} points"
            )));
        }
        Ok(src)
    }

    /// Whether the picked scalars of `density` fit beside what the
    /// widest MSM over them would like.
    fn second_vector_fits(&self, ctx: &mut Ctx, density: &Density) -> Result<bool, CudaError> {
        let count = density.count();
        let (free, _) = ctx.mem_room()?;
        let want = count as u64 * 32 + ctx.msm_scratch(count, false)?;
        Ok(want <= free)
    }
}
