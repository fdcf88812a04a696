//! MSMs of several partitions of one circuit that share each pass over an
//! SRS section streamed from host memory (`msm_shared` in
//! `cuda/cuzk_cuda.cu`): each partition's scalars are on its own worker
//! context, a tile of points is copied to the device once and serves every
//! partition, so host-to-device bytes per partition fall by the number of
//! partitions. For sections that stay on the card nothing is shared: each
//! partition runs its resident MSM.

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
    ) -> sppark::Error;
    fn cuzk_cuda_msm_g2_shared(
        ctxs: *const *mut RawCtx,
        sources: *const i32,
        k: usize,
        points: *const G2Affine,
        npoints: usize,
        outs: *mut blst_p2,
    ) -> sppark::Error;
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

/// A shared-pass entry point of `cuda/msm_entry.cuh`, over points `A`
/// with raw projective results `R`.
type Entry<A, R> = unsafe extern "C" fn(
    *const *mut RawCtx,
    *const i32,
    usize,
    *const A,
    usize,
    *mut R,
) -> sppark::Error;

/// Runs `entry` for each context's scalars of its source over `points` in
/// host memory; one raw result per context, in order.
fn run_shared<A, R: Default + Clone>(
    entry: Entry<A, R>,
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
    points: &[A],
) -> Result<Vec<R>, CudaError> {
    let (raw, src) = raw_parts(ctxs, sources)?;
    let mut outs = vec![R::default(); raw.len()];
    // SAFETY: the contexts are borrowed mutably (no other call uses them),
    // points and outs outlive the call; outs has one slot per context.
    check(unsafe {
        entry(
            raw.as_ptr(),
            src.as_ptr(),
            raw.len(),
            points.as_ptr(),
            points.len(),
            outs.as_mut_ptr(),
        )
    })?;
    Ok(outs)
}

/// Σ scalar_i·points_i in G1 for each context's scalars of its source
/// (`sources[j]`, [`Source::Aux`] or [`Source::Picked`]), in one pass over
/// `points` in host memory; one result per context, in order.
pub(crate) fn msm_g1(
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
    points: &[G1Affine],
) -> Result<Vec<G1Projective>, CudaError> {
    let outs = run_shared(cuzk_cuda_msm_g1_shared, ctxs, sources, points)?;
    // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
    Ok(outs
        .into_iter()
        .map(|p| unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) })
        .collect())
}

/// The same in G2.
pub(crate) fn msm_g2(
    ctxs: &mut [&mut Ctx],
    sources: &[Source],
    points: &[G2Affine],
) -> Result<Vec<G2Projective>, CudaError> {
    let outs = run_shared(cuzk_cuda_msm_g2_shared, ctxs, sources, points)?;
    // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
    Ok(outs
        .into_iter()
        .map(|p| unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) })
        .collect())
}
