//! For cuzk-lab and the GPU tests only (the `lab` feature, which the
//! daemon never enables): [`StageContext`], one device context driven stage
//! by stage (for benches that time each stage, or that build a synthetic
//! SRS directly on the device), and the allocation-failure hook.

use crate::urgent_lock::UrgentGuard;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_prover::density::Density;
use cuzk_prover::srs::Section;
use ff::{Field, PrimeField};

use crate::error::CudaError;
use crate::ffi::{Ctx, SectionPoint, Source};
use crate::CudaBackend;

impl CudaBackend {
    /// Test hook: the next partition on this device fails its next `count`
    /// device allocations as if the card were full (it then falls back a
    /// tier); partitions of other workers are not affected.
    pub fn fail_next_allocs(&self, count: u32) {
        self.dev.fail_next_allocs(count);
    }

    /// Test hook: holds the device lock until dropped, as a partition's
    /// kernel region does.
    pub fn hold_device(&self) -> DeviceHeld<'_> {
        DeviceHeld(self.dev.lock())
    }

    /// The device's owner context for stage-by-stage work: holds the
    /// device's lock until dropped. Refused while an SRS prepared for the
    /// engine ([`cuzk_prover::ProverBackend::prepare_srs`]) is on the
    /// device: this work replaces its sections.
    pub fn stages(&self) -> Result<StageContext<'_>, CudaError> {
        let owner = self.dev.lock();
        if self.dev.srs_state().is_some() {
            return Err(CudaError::Input(
                "an SRS prepared for proving is on the device; drop it first".into(),
            ));
        }
        Ok(StageContext {
            ctx: owner,
            device: self.device(),
        })
    }
}

/// Page-locks host points for the streamed MSMs' copies, as the backend
/// does with the SRS sections it streams; unlocked when the lock is
/// dropped (before the points are freed). `None` for no points.
pub fn page_lock<T>(points: &[T]) -> Result<Option<HostLock>, CudaError> {
    Ok(crate::pinned::Pinned::register(points)?.map(HostLock))
}

/// Host pages locked by [`page_lock`].
pub struct HostLock(#[allow(dead_code)] crate::pinned::Pinned);

/// The device lock, held (see [`CudaBackend::hold_device`]).
pub struct DeviceHeld<'a>(#[allow(dead_code)] UrgentGuard<'a, Ctx>);

/// The locked owner context of one device (see [`CudaBackend::stages`]).
/// Dropping it releases the device for other calls; the device SRS
/// sections and buffers stay.
pub struct StageContext<'a> {
    ctx: UrgentGuard<'a, Ctx>,
    device: usize,
}

impl StageContext<'_> {
    /// Free and total device memory, in bytes.
    pub fn memory(&self) -> Result<(u64, u64), CudaError> {
        crate::ffi::mem_info(self.device)
    }

    /// Frees the scratch buffers (a/b/c, aux, picked).
    pub fn release_buffers(&mut self) -> Result<(), CudaError> {
        self.ctx.trim()
    }

    /// The MSM driver's device scratch for one MSM of `points` points (the
    /// larger of G1 and G2): at the configured windows over device points,
    /// or the least it fits itself into with the points streamed (`least`,
    /// what the staging tiers count).
    pub fn msm_scratch(&mut self, points: usize, least: bool) -> Result<u64, CudaError> {
        self.ctx.msm_scratch(points, least)
    }

    /// `gpus.vram_limit` and the margin for this owner context (the bench's
    /// small-card runs; the backend sets them with `with_memory`).
    pub fn set_vram_limit(&mut self, limit: u64, margin: u64) -> Result<(), CudaError> {
        self.ctx.set_vram_limit(limit, margin)
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

    /// The a-only staging tier of [`StageContext::h_prepare`]: a on the
    /// device, b and c through a second vector returned before the H MSM.
    pub fn h_prepare_a_only(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
    ) -> Result<(), CudaError> {
        let z_inv = z_inverse(lg_n)?;
        self.ctx.h_prepare_a_only(a, b, c, lg_n, &z_inv)
    }

    /// Upload and H together, as the backend does: the copies of a, b, c
    /// overlap the NTTs of the vectors already on the device.
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

    /// The H coefficients from the uploaded a, b, c (the H stage of
    /// `cuda/h_stage.cuh`), as source [`Source::H`].
    pub fn h_compute(&mut self, lg_n: u32) -> Result<(), CudaError> {
        let z_inv = z_inverse(lg_n)?;
        self.ctx.h_compute(lg_n, &z_inv)
    }

    /// Uploads the aux assignment (source [`Source::Aux`]).
    pub fn upload_aux(&mut self, aux: &[Scalar]) -> Result<(), CudaError> {
        self.ctx.upload_aux(aux)
    }

    /// `gpus.tuning.pack_aux` for this context: aux copied packed.
    pub fn set_pack_aux(&mut self, on: bool) {
        self.ctx.pack_aux = on;
    }

    /// How many of this context's aux uploads went packed.
    pub fn aux_uploads_packed(&self) -> u64 {
        self.ctx.aux_uploads_packed
    }

    /// Picks the aux scalars set in `density` (source [`Source::Picked`]);
    /// returns how many.
    pub fn pick(&mut self, density: &Density) -> Result<usize, CudaError> {
        self.ctx.pick(density.words(), density.len())
    }

    /// The same over aux itself (source [`Source::Aux`]; aux is gone).
    pub fn pick_in_place(&mut self, density: &Density) -> Result<usize, CudaError> {
        self.ctx.pick_in_place(density.words(), density.len())
    }

    /// Allocates device section `sec` for `npoints` points.
    pub fn srs_alloc(&mut self, sec: Section, npoints: usize) -> Result<(), CudaError> {
        self.ctx.srs_alloc(sec, npoints)
    }

    /// Copies points into device section `sec` (G1 for every section but
    /// [`Section::BG2`], G2 for it).
    pub fn srs_upload<P: SectionPoint>(
        &mut self,
        sec: Section,
        points: &[P],
    ) -> Result<(), CudaError> {
        self.ctx.srs_upload(sec, points)
    }

    /// Fills section `sec` with `pattern` repeated (on the device).
    pub fn srs_tile<P: SectionPoint>(
        &mut self,
        sec: Section,
        pattern: &[P],
    ) -> Result<(), CudaError> {
        self.ctx.srs_tile(sec, pattern)
    }

    /// `[gpus.tuning]` for this context's next calls.
    pub fn set_tuning(&mut self, tuning: &crate::config::GpuTuning) -> Result<(), CudaError> {
        self.ctx.set_tuning(tuning)
    }

    /// Turns the 0/1 split of the device-SRS witness MSMs on or off.
    pub fn set_split01(&mut self, on: bool) -> Result<(), CudaError> {
        self.ctx.set_split01(on)
    }

    /// Zeros, ones and other scalars the split MSMs saw since the last
    /// call, and the bytes of SRS points streamed from host memory.
    pub fn take_shape(&mut self) -> Result<(cuzk_prover::msm::MsmShape, u64), CudaError> {
        self.ctx.take_shape()
    }

    /// Streamed MSMs of this context so far that carried their buckets
    /// across batches (`gpus.tuning.carry_buckets`).
    pub fn carried_msms(&mut self) -> Result<u64, CudaError> {
        self.ctx.carried_msms()
    }

    /// Frees the device SRS sections.
    pub fn srs_free(&mut self) -> Result<(), CudaError> {
        self.ctx.srs_free()
    }

    /// G1 MSM of `source` against host points (streamed in tiles).
    pub fn msm_g1(
        &mut self,
        source: Source,
        points: &[G1Affine],
    ) -> Result<G1Projective, CudaError> {
        self.ctx.msm_g1(source, points)
    }

    /// G2 MSM of `source` against host points (streamed in tiles).
    pub fn msm_g2(
        &mut self,
        source: Source,
        points: &[G2Affine],
    ) -> Result<G2Projective, CudaError> {
        self.ctx.msm_g2(source, points)
    }

    /// G1 MSM of `source` against device points of `sec` from `offset`.
    pub fn msm_g1_resident(
        &mut self,
        source: Source,
        sec: Section,
        offset: usize,
        npoints: usize,
    ) -> Result<G1Projective, CudaError> {
        self.ctx.msm_g1_resident(source, sec, offset, npoints)
    }

    /// G2 MSM of `source` against device [`Section::BG2`] points.
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
