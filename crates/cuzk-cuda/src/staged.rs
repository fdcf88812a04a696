//! [`Staged`]: one device context driven stage by stage (for benches that
//! time each stage, or that build a synthetic SRS directly on the device).

use std::sync::MutexGuard;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_prover::density::Density;
use ff::{Field, PrimeField};

use crate::ffi::{Ctx, Section, Source};
use crate::CudaError;

/// The locked context of one device (see [`crate::CudaBackend::staged`]).
/// Dropping it releases the device for other calls; the resident SRS and
/// buffers stay.
pub struct Staged<'a> {
    ctx: MutexGuard<'a, Ctx>,
    device: usize,
}

impl<'a> Staged<'a> {
    pub(crate) fn new(ctx: MutexGuard<'a, Ctx>, device: usize) -> Staged<'a> {
        Staged { ctx, device }
    }

    /// Free and total device memory, in bytes.
    pub fn memory(&self) -> Result<(u64, u64), CudaError> {
        crate::ffi::mem_info(self.device)
    }

    /// Frees the scratch buffers (a/b/c, aux, picked).
    pub fn release_buffers(&mut self) -> Result<(), CudaError> {
        self.ctx.trim()
    }

    /// Uploads a, b, c (zero-padded to 2^lg_n).
    pub fn upload_abc(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
    ) -> Result<(), CudaError> {
        self.ctx.upload_abc(a, b, c, lg_n)
    }

    /// Upload and H together, as the backend does: the copies of a, b, c
    /// (page-locked when possible) overlap the NTTs of the vectors already
    /// on the device.
    pub fn h_prepare(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
    ) -> Result<(), CudaError> {
        let z_inv = z_inverse(lg_n)?;
        self.ctx.h_prepare(a, b, c, lg_n, &z_inv)
    }

    /// The H coefficients from the uploaded a, b, c (iNTT, coset NTT,
    /// pointwise, coset iNTT), as source [`Source::H`].
    pub fn h_compute(&mut self, lg_n: u32) -> Result<(), CudaError> {
        let z_inv = z_inverse(lg_n)?;
        self.ctx.h_compute(lg_n, &z_inv)
    }

    /// Uploads the aux assignment (source [`Source::Aux`]).
    pub fn upload_aux(&mut self, aux: &[Scalar]) -> Result<(), CudaError> {
        self.ctx.upload_aux(aux)
    }

    /// Picks the aux scalars set in `density` (source [`Source::Picked`]);
    /// returns how many.
    pub fn pick(&mut self, density: &Density) -> Result<usize, CudaError> {
        self.ctx.pick(density.words(), density.len())
    }

    /// Allocates resident section `sec` for `npoints` points.
    pub fn srs_alloc(&mut self, sec: Section, npoints: usize) -> Result<(), CudaError> {
        self.ctx.srs_alloc(sec, npoints)
    }

    /// Copies G1 points into resident section `sec`.
    pub fn srs_upload_g1(&mut self, sec: Section, points: &[G1Affine]) -> Result<(), CudaError> {
        self.ctx.srs_upload_g1(sec, points)
    }

    /// Copies G2 points into the resident [`Section::BG2`].
    pub fn srs_upload_g2(&mut self, points: &[G2Affine]) -> Result<(), CudaError> {
        self.ctx.srs_upload_g2(points)
    }

    /// Fills G1 section `sec` with `pattern` repeated (on the device).
    pub fn srs_tile_g1(&mut self, sec: Section, pattern: &[G1Affine]) -> Result<(), CudaError> {
        self.ctx.srs_tile_g1(sec, pattern)
    }

    /// Fills [`Section::BG2`] with `pattern` repeated (on the device).
    pub fn srs_tile_g2(&mut self, pattern: &[G2Affine]) -> Result<(), CudaError> {
        self.ctx.srs_tile_g2(pattern)
    }

    /// Turns the 0/1 split of the resident witness MSMs on or off.
    pub fn set_split01(&mut self, on: bool) -> Result<(), CudaError> {
        self.ctx.set_split01(on)
    }

    /// Zeros, ones and other scalars the split MSMs saw since the last call.
    pub fn take_shape(&mut self) -> Result<cuzk_prover::msm::MsmShape, CudaError> {
        self.ctx.take_shape()
    }

    /// Frees the resident SRS.
    pub fn srs_free(&mut self) -> Result<(), CudaError> {
        self.ctx.srs_free()
    }

    /// G1 MSM of `source` against host points (streamed by sppark).
    pub fn msm_g1(
        &mut self,
        source: Source,
        points: &[G1Affine],
    ) -> Result<G1Projective, CudaError> {
        self.ctx.msm_g1(source, points)
    }

    /// G2 MSM of `source` against host points (streamed by sppark).
    pub fn msm_g2(
        &mut self,
        source: Source,
        points: &[G2Affine],
    ) -> Result<G2Projective, CudaError> {
        self.ctx.msm_g2(source, points)
    }

    /// G1 MSM of `source` against resident points of `sec` from `offset`.
    pub fn msm_g1_resident(
        &mut self,
        source: Source,
        sec: Section,
        offset: usize,
        npoints: usize,
    ) -> Result<G1Projective, CudaError> {
        self.ctx.msm_g1_resident(source, sec, offset, npoints)
    }

    /// G2 MSM of `source` against resident [`Section::BG2`] points.
    pub fn msm_g2_resident(
        &mut self,
        source: Source,
        offset: usize,
        npoints: usize,
    ) -> Result<G2Projective, CudaError> {
        self.ctx.msm_g2_resident(source, offset, npoints)
    }
}

/// 1/(g^n − 1) for the coset generator g = 7 and n = 2^lg_n.
fn z_inverse(lg_n: u32) -> Result<Scalar, CudaError> {
    if lg_n > Scalar::S {
        return Err(CudaError::Input(format!("domain 2^{lg_n} too large")));
    }
    let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([1u64 << lg_n]) - Scalar::ONE;
    Option::from(z.invert()).ok_or_else(|| CudaError::Input("Z(g) is zero".into()))
}
