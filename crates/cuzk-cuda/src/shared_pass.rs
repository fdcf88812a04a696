//! MSMs of several partitions of one circuit that share each pass over an
//! SRS section streamed from host memory (`msm_shared` in
//! `cuda/cuzk_cuda.cu`): each partition's scalars are on its own worker
//! context, a tile of points is copied to the device once and serves every
//! partition, so host-to-device bytes per partition fall by the number of
//! partitions. For sections that stay on the card nothing is shared: each
//! partition runs its resident MSM.
//!
//! With `gpus.tuning.overlap_others` a pass returns before the Pippenger
//! over each partition's other scalars (neither 0 nor 1) is done: it runs
//! on the context's side streams while the stage goes on to its next MSM
//! (`cuda/deferred.cuh`), and the result is [`Pending`] until resolved.

use blst::{blst_p1, blst_p2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

use crate::error::CudaError;
use crate::ffi::{check, Ctx, RawCtx, Source};

extern "C" {
    fn cuzk_cuda_msm_g1_shared(
        ctxs: *const *mut RawCtx,
        sources: *const i32,
        k: usize,
        points: *const G1Affine,
        npoints: usize,
        outs: *mut blst_p1,
        tickets: *mut u64,
    ) -> sppark::Error;
    fn cuzk_cuda_msm_g2_shared(
        ctxs: *const *mut RawCtx,
        sources: *const i32,
        k: usize,
        points: *const G2Affine,
        npoints: usize,
        outs: *mut blst_p2,
        tickets: *mut u64,
    ) -> sppark::Error;
    fn cuzk_cuda_deferred_g1(ctx: *mut RawCtx, ticket: u64, out: *mut blst_p1) -> sppark::Error;
    fn cuzk_cuda_deferred_g2(ctx: *mut RawCtx, ticket: u64, out: *mut blst_p2) -> sppark::Error;
    fn cuzk_cuda_deferred_drop(ctx: *mut RawCtx) -> sppark::Error;
}

/// One context's result of a shared pass: whole (`ticket` 0), or the
/// ones' part with the others' Pippenger still queued on the context's
/// side streams under `ticket` ([`resolve`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending<P> {
    part: P,
    ticket: u64,
}

impl<P> Pending<P> {
    /// A result computed whole (a resident MSM's).
    pub(crate) fn whole(part: P) -> Pending<P> {
        Pending { part, ticket: 0 }
    }
}

/// The raw contexts and scalar sources of one shared pass.
fn raw_parts(
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
) -> Result<(Vec<*mut RawCtx>, Vec<i32>), CudaError> {
    if ctxs.len() != sources.len() {
        return Err(CudaError::Input(format!(
            "{} contexts but {} scalar sources for a shared pass",
            ctxs.len(),
            sources.len()
        )));
    }
    let raw = ctxs.iter_mut().map(|c| c.raw()).collect();
    let src = sources.iter().map(|s| *s as i32).collect();
    Ok((raw, src))
}

/// A shared-pass entry point of `cuda/cuzk_cuda.cu`, over points `A`
/// with raw projective results `R` and a ticket each.
pub(crate) type Entry<A, R> = unsafe extern "C" fn(
    *const *mut RawCtx,
    *const i32,
    usize,
    *const A,
    usize,
    *mut R,
    *mut u64,
) -> sppark::Error;

/// Runs `entry` for each context's scalars of its source over `points` in
/// host memory; one raw result and ticket per context, in order.
fn run_shared<A, R: Default + Clone>(
    entry: Entry<A, R>,
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
    points: &[A],
) -> Result<Vec<Pending<R>>, CudaError> {
    let (raw, src) = raw_parts(ctxs, sources)?;
    let mut outs = vec![R::default(); raw.len()];
    let mut tickets = vec![0u64; raw.len()];
    // SAFETY: the contexts are borrowed mutably (no other call uses them),
    // points, outs and tickets outlive the call; outs and tickets have one
    // slot per context. A queued Pippenger reads only its context's device
    // buffers, not these.
    check(unsafe {
        entry(
            raw.as_ptr(),
            src.as_ptr(),
            raw.len(),
            points.as_ptr(),
            points.len(),
            outs.as_mut_ptr(),
            tickets.as_mut_ptr(),
        )
    })?;
    Ok(outs
        .into_iter()
        .zip(tickets)
        .map(|(part, ticket)| Pending { part, ticket })
        .collect())
}

/// A group a shared pass runs in: its raw result type and entry points.
pub(crate) trait PassGroup: Copy + std::ops::Add<Output = Self> {
    /// The points in host memory.
    type Affine;
    /// blst's projective point, which `Self` wraps.
    type Raw: Default + Clone;
    /// The shared pass's entry point.
    const SHARED: Entry<Self::Affine, Self::Raw>;
    /// Waits for a queued run and gives its sum.
    const DEFERRED: unsafe extern "C" fn(*mut RawCtx, u64, *mut Self::Raw) -> sppark::Error;
    fn from_raw(r: Self::Raw) -> Self;
}

impl PassGroup for G1Projective {
    type Affine = G1Affine;
    type Raw = blst_p1;
    const SHARED: Entry<G1Affine, blst_p1> = cuzk_cuda_msm_g1_shared;
    const DEFERRED: unsafe extern "C" fn(*mut RawCtx, u64, *mut blst_p1) -> sppark::Error =
        cuzk_cuda_deferred_g1;
    fn from_raw(r: blst_p1) -> Self {
        // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
        unsafe { std::mem::transmute::<blst_p1, G1Projective>(r) }
    }
}

impl PassGroup for G2Projective {
    type Affine = G2Affine;
    type Raw = blst_p2;
    const SHARED: Entry<G2Affine, blst_p2> = cuzk_cuda_msm_g2_shared;
    const DEFERRED: unsafe extern "C" fn(*mut RawCtx, u64, *mut blst_p2) -> sppark::Error =
        cuzk_cuda_deferred_g2;
    fn from_raw(r: blst_p2) -> Self {
        // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
        unsafe { std::mem::transmute::<blst_p2, G2Projective>(r) }
    }
}

/// Σ scalar_i·points_i in G1 or G2 for each context's scalars of its
/// source (`sources[j]`, [`Source::Aux`] or [`Source::Picked`]), in one
/// pass over `points` in host memory; one result per context, in order,
/// to be resolved ([`resolve`]) on the same contexts.
pub(crate) fn msm<P: PassGroup>(
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
    points: &[P::Affine],
) -> Result<Vec<Pending<P>>, CudaError> {
    let outs = run_shared(P::SHARED, ctxs, sources, points)?;
    Ok(outs
        .into_iter()
        .map(|p| Pending {
            part: P::from_raw(p.part),
            ticket: p.ticket,
        })
        .collect())
}

/// The whole results of `pending` (context j's in `ctxs[j]`), waiting for
/// the queued Pippenger runs.
pub(crate) fn resolve<P: PassGroup>(
    ctxs: &mut [&mut Ctx],
    pending: Vec<Pending<P>>,
) -> Result<Vec<P>, CudaError> {
    ctxs.iter_mut()
        .zip(pending)
        .map(|(c, p)| {
            if p.ticket == 0 {
                return Ok(p.part);
            }
            let mut out = P::Raw::default();
            // SAFETY: a live context borrowed mutably; out is written once.
            check(unsafe { (P::DEFERRED)(c.raw(), p.ticket, &mut out) })?;
            Ok(p.part + P::from_raw(out))
        })
        .collect()
}

/// Waits for every queued Pippenger of `ctxs` and drops the results (a
/// stage that failed part-way); the first error, after trying them all.
pub(crate) fn drop_deferred(ctxs: &mut [&mut Ctx]) -> Result<(), CudaError> {
    let mut first = Ok(());
    for c in ctxs.iter_mut() {
        // SAFETY: a live context borrowed mutably.
        let r = check(unsafe { cuzk_cuda_deferred_drop(c.raw()) });
        if first.is_ok() {
            first = r;
        }
    }
    first
}
