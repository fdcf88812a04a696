//! [`CudaBackend`]: the [`ProverBackend`] over one CUDA device.
//!
//! Per partition: a, b, c are uploaded and turned into H coefficients on the
//! device (then freed on the host and reported through `abc_freed`); the H,
//! L, A-aux, B_G1-aux and B_G2-aux MSMs run on the GPU against SRS points
//! kept in VRAM across calls ([`SrsPlacement`], see `resident.rs`) or
//! streamed from host memory per call (resident L, A and B MSMs split their
//! scalars: zeros dropped, ones batch-added, Pippenger over the rest only,
//! see `cuda/split01.cuh`); the input MSMs and MSMs below [`GPU_MIN_POINTS`]
//! points run on the CPU. The device context
//! (its buffers kept across calls) is one per device for the whole process,
//! behind a Mutex held for one partition's device work (not its assembly):
//! one partition at a time per device, however many backends share it.

use blstrs::Scalar;
use cuzk_prover::backend::{ProveStats, ProverBackend, ProverError, SrsRef};
use cuzk_prover::proof::Proof;
use cuzk_prover::synth::PartitionWitness;

use crate::{CudaError, SrsPlacement};

/// MSMs with fewer points than this run on the CPU (launches cost more).
pub const GPU_MIN_POINTS: usize = 1 << 10;

/// Default `gpus.vram_safety_margin`: device memory a partition leaves free.
pub const DEFAULT_VRAM_MARGIN: u64 = 512 << 20;

/// Proves on one CUDA device.
#[derive(Clone)]
pub struct CudaBackend {
    device: usize,
    placement: SrsPlacement,
    /// Device bytes each partition leaves free when choosing its tier.
    vram_margin: u64,
    #[cfg(feature = "cuda")]
    ctx: std::sync::Arc<std::sync::Mutex<crate::ffi::Ctx>>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// A backend on CUDA device `device` (0-based among usable devices),
    /// with the SRS kept on the device when it fits ([`SrsPlacement::Auto`]).
    pub fn new(device: usize) -> Result<CudaBackend, CudaError> {
        CudaBackend::with_placement(device, SrsPlacement::Auto)
    }

    /// A backend on `device` with the SRS placed as `placement` says.
    pub fn with_placement(
        device: usize,
        placement: SrsPlacement,
    ) -> Result<CudaBackend, CudaError> {
        #[cfg(feature = "cuda")]
        {
            let count = crate::ffi::device_count()?;
            if device >= count {
                return Err(CudaError::NoDevice { device, count });
            }
            Ok(CudaBackend {
                device,
                placement,
                vram_margin: DEFAULT_VRAM_MARGIN,
                ctx: shared_ctx(device)?,
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (device, placement);
            Err(CudaError::NotBuilt)
        }
    }

    /// Device memory discipline: `vram_limit` bytes are all the card is
    /// taken to have (`gpus.vram_limit`; `None`: the whole card; it applies
    /// to the device, so to every backend on it) and each partition leaves
    /// `margin` bytes free when it chooses its staging tier
    /// (`gpus.vram_safety_margin`).
    pub fn with_memory(mut self, vram_limit: Option<u64>, margin: u64) -> Result<Self, CudaError> {
        self.vram_margin = margin;
        #[cfg(feature = "cuda")]
        {
            self.ctx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .set_vram_limit(vram_limit.unwrap_or(0))?;
            Ok(self)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = vram_limit;
            Err(CudaError::NotBuilt)
        }
    }

    /// Test hook: the next `count` device allocations on this device fail
    /// as if the card were full (each partition then falls back a tier).
    pub fn fail_next_allocs(&self, count: u32) -> Result<(), CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.ctx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .fail_next_allocs(count)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = count;
            Err(CudaError::NotBuilt)
        }
    }

    /// Where this backend keeps the SRS points.
    pub fn placement(&self) -> SrsPlacement {
        self.placement
    }

    /// Frees the resident SRS of this device (shared by every backend on
    /// it); the next call with `Auto` or `Always` uploads it again.
    pub fn release_srs(&self) -> Result<(), CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.ctx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .srs_free()
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// The device context for stage-by-stage work (benches): holds the
    /// device's lock until dropped.
    #[cfg(feature = "cuda")]
    pub fn staged(&self) -> crate::Staged<'_> {
        crate::Staged::new(
            self.ctx.lock().unwrap_or_else(|p| p.into_inner()),
            self.device,
        )
    }

    /// Frees the device buffers kept between calls (a/b/c, aux, picked
    /// scalars); the next call allocates them again. Waits for a running
    /// call on this device to end.
    pub fn release_buffers(&self) -> Result<(), CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.ctx.lock().unwrap_or_else(|p| p.into_inner()).trim()
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// The device index.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The device's name as CUDA reports it.
    pub fn device_name(&self) -> Result<String, CudaError> {
        #[cfg(feature = "cuda")]
        {
            crate::ffi::device_name(self.device)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }
}

impl CudaBackend {
    /// Free and total VRAM of the device, in bytes.
    pub fn memory(&self) -> Result<(u64, u64), CudaError> {
        #[cfg(feature = "cuda")]
        {
            crate::ffi::mem_info(self.device)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }
}

/// The one context of `device`, shared by every backend on it: sppark's
/// streams and MSM counters are per device, so two calls must never run on
/// one device at once.
#[cfg(feature = "cuda")]
fn shared_ctx(
    device: usize,
) -> Result<std::sync::Arc<std::sync::Mutex<crate::ffi::Ctx>>, CudaError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Table = Mutex<HashMap<usize, Arc<Mutex<crate::ffi::Ctx>>>>;
    static CONTEXTS: OnceLock<Table> = OnceLock::new();
    let mut table = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(ctx) = table.get(&device) {
        return Ok(Arc::clone(ctx));
    }
    let ctx = Arc::new(Mutex::new(crate::ffi::Ctx::new(device)?));
    table.insert(device, Arc::clone(&ctx));
    Ok(ctx)
}

impl ProverBackend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{}", self.device)
    }

    fn device(&self) -> Option<cuzk_prover::DeviceInfo> {
        let (memory_free, memory_total) = self.memory().unwrap_or((0, 0));
        Some(cuzk_prover::DeviceInfo {
            ordinal: self.device as u32,
            name: self
                .device_name()
                .unwrap_or_else(|e| format!("unknown ({e})")),
            memory_total,
            memory_free,
        })
    }

    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        cuzk_prover::backend::check_batch(witnesses.len(), r, s)?;
        #[cfg(feature = "cuda")]
        {
            gpu::prove(self, witnesses, srs, r, s, abc_freed)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (srs, abc_freed);
            Err(CudaError::NotBuilt.into())
        }
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    use std::time::Instant;

    use blstrs::{G1Affine, G1Projective, Scalar};
    use cuzk_prover::backend::{check_srs, ProveStats, ProverError, SrsRef};
    use cuzk_prover::density::Density;
    use cuzk_prover::msm::{msm, G1, G2};
    use cuzk_prover::proof::{assemble, MsmResults, Proof};
    use cuzk_prover::synth::PartitionWitness;
    use ff::{Field, PrimeField};
    use group::Group;

    use cuzk_prover::ntt::{compute_h, Domain};

    use super::{CudaBackend, GPU_MIN_POINTS};
    use crate::ffi::{Ctx, Section, Source};
    use crate::staging::{self, StagingTier};
    use crate::CudaError;

    pub(super) fn prove(
        backend: &CudaBackend,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        let mut stats = ProveStats::default();
        let mut proofs = Vec::with_capacity(witnesses.len());
        for (i, ((w, r), s)) in witnesses.iter_mut().zip(r).zip(s).enumerate() {
            // The device is held for one partition's GPU work only: the
            // assembly below, on the CPU, lets another worker use it.
            // A poisoned lock only means another prove panicked: the
            // context holds scratch buffers, rewritten by every call.
            let m = {
                let mut ctx = backend.ctx.lock().unwrap_or_else(|p| p.into_inner());
                partition(&mut ctx, backend, w, srs, &mut stats, &mut || abc_freed(i))?
            };
            let t = Instant::now();
            proofs.push(assemble(srs, &m, *r, *s)?);
            stats.assembly += t.elapsed();
        }
        Ok((proofs, stats))
    }

    /// bellperson's domain for `len` evaluations: the next power of two
    /// (1 for none).
    fn domain(len: usize) -> Result<(usize, u32), ProverError> {
        let n = len
            .checked_next_power_of_two()
            .filter(|n| n.trailing_zeros() <= Scalar::S)
            .ok_or_else(|| {
                ProverError::Input(format!("{len} constraints do not fit an NTT domain"))
            })?;
        Ok((n, n.trailing_zeros()))
    }

    /// 1/Z(g) = 1/(g^n − 1) on the coset of generator g = 7.
    fn z_inverse(n: usize) -> Result<Scalar, ProverError> {
        let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([n as u64]) - Scalar::ONE;
        Option::from(z.invert()).ok_or_else(|| ProverError::Input("Z(g) is zero".into()))
    }

    fn partition(
        ctx: &mut Ctx,
        backend: &CudaBackend,
        w: &mut PartitionWitness,
        srs: &SrsRef<'_>,
        stats: &mut ProveStats,
        abc_freed: &mut dyn FnMut(),
    ) -> Result<MsmResults, ProverError> {
        let (n, lg_n) = domain(w.a.len())?;
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

        let mut uploaded = 0;
        let res = crate::resident::ensure(
            ctx,
            backend.device,
            srs,
            backend.placement,
            n,
            w.aux.len(),
            &mut uploaded,
        )?;

        let (h, tier) = h_stage(ctx, backend, w, srs, res, (n, lg_n), stats)?;
        // Below the top tier the A and B scalars are picked on the host and
        // uploaded over aux (after L), so the MSM stage holds one vector.
        let host_pick = (tier != StagingTier::All).then_some(&w.aux[..]);
        w.a = Vec::new();
        w.b = Vec::new();
        w.c = Vec::new();
        abc_freed();

        let t = Instant::now();
        ctx.upload_aux(&w.aux)?;
        let l = if srs.l.len() < GPU_MIN_POINTS {
            msm::<G1>(srs.l, &w.aux, None).0
        } else if res {
            ctx.msm_g1_resident(Source::Aux, Section::L, 0, srs.l.len())?
        } else {
            ctx.msm_g1(Source::Aux, srs.l)?
        };
        stats.msm_l += t.elapsed();

        let t = Instant::now();
        let ni = w.input.len();
        let (a_in, _) = msm::<G1>(&srs.a[..ni], &w.input, None);
        let a_aux = if res && srs.a.len() - ni >= GPU_MIN_POINTS {
            let src = picked(ctx, &w.a_aux_density, srs.a.len() - ni, host_pick)?;
            ctx.msm_g1_resident(src, Section::A, ni, srs.a.len() - ni)?
        } else {
            pick_g1(ctx, &w.a_aux_density, &srs.a[ni..], &w.aux, host_pick)?
        };
        stats.msm_a += t.elapsed();

        let t = Instant::now();
        let bi = w.b_input_density.count();
        let (b1_in, _) = msm::<G1>(&srs.b_g1[..bi], &w.input, Some(&w.b_input_density));
        let b_on_gpu = srs.b_g1.len() - bi >= GPU_MIN_POINTS;
        let mut b_src = Source::Picked;
        let b1_aux = if b_on_gpu {
            b_src = picked(ctx, &w.b_aux_density, srs.b_g1.len() - bi, host_pick)?;
            if res {
                ctx.msm_g1_resident(b_src, Section::BG1, bi, srs.b_g1.len() - bi)?
            } else {
                ctx.msm_g1(b_src, &srs.b_g1[bi..])?
            }
        } else {
            msm::<G1>(&srs.b_g1[bi..], &w.aux, Some(&w.b_aux_density)).0
        };
        stats.msm_b_g1 += t.elapsed();

        // B_G2 over the scalars picked for B_G1's aux part.
        let t = Instant::now();
        let (b2_in, _) = msm::<G2>(&srs.b_g2[..bi], &w.input, Some(&w.b_input_density));
        let b2_aux = if b_on_gpu && res {
            ctx.msm_g2_resident(b_src, bi, srs.b_g2.len() - bi)?
        } else if b_on_gpu {
            ctx.msm_g2(b_src, &srs.b_g2[bi..])?
        } else {
            msm::<G2>(&srs.b_g2[bi..], &w.aux, Some(&w.b_aux_density)).0
        };
        stats.msm_b_g2 += t.elapsed();
        stats.shape += ctx.take_shape()?;

        Ok(MsmResults {
            a: a_in + a_aux,
            b_g1: b1_in + b1_aux,
            b_g2: b2_in + b2_aux,
            h,
            l,
        })
    }

    /// H on the device and its MSM, at the staging tier the device's room
    /// allows, falling back a tier when an allocation fails. a, b and c are
    /// still needed after a failure, so the caller frees them only after.
    fn h_stage(
        ctx: &mut Ctx,
        backend: &CudaBackend,
        w: &mut PartitionWitness,
        srs: &SrsRef<'_>,
        resident: bool,
        (n, lg_n): (usize, u32),
        stats: &mut ProveStats,
    ) -> Result<(G1Projective, StagingTier), ProverError> {
        let (free, held) = ctx.mem_room()?;
        let room = free + held;
        let mut tier = staging::choose(room, backend.vram_margin, n, w.aux.len());
        let chosen = tier;
        loop {
            match h_at(ctx, tier, w, srs, resident, (n, lg_n), stats) {
                Ok(h) => {
                    tracing::info!(
                        target: "partition",
                        device = backend.device,
                        tier = tier.label(),
                        chosen = chosen.label(),
                        room,
                        need = tier.need(n, w.aux.len()),
                        "GPU staging"
                    );
                    match tier {
                        StagingTier::All => stats.staging.all += 1,
                        StagingTier::AOnly => stats.staging.a_only += 1,
                        StagingTier::None => stats.staging.none += 1,
                    }
                    if tier != StagingTier::All {
                        // Give the a|b|c room back before aux and the MSMs.
                        ctx.trim()?;
                    }
                    return Ok((h, tier));
                }
                Err(CudaError::OutOfMemory(why)) => {
                    let Some(lower) = tier.lower() else {
                        return Err(CudaError::OutOfMemory(why).into());
                    };
                    tracing::warn!(
                        device = backend.device,
                        from = tier.label(),
                        to = lower.label(),
                        %why,
                        "GPU allocation failed; falling back a staging tier"
                    );
                    stats.staging.fallbacks += 1;
                    ctx.trim()?;
                    tier = lower;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// One attempt of [`h_stage`] at `tier`.
    fn h_at(
        ctx: &mut Ctx,
        tier: StagingTier,
        w: &mut PartitionWitness,
        srs: &SrsRef<'_>,
        resident: bool,
        (n, lg_n): (usize, u32),
        stats: &mut ProveStats,
    ) -> Result<G1Projective, CudaError> {
        let t = Instant::now();
        match tier {
            StagingTier::All => ctx.h_prepare(&w.a, &w.b, &w.c, lg_n, &z_inv(n)?)?,
            StagingTier::AOnly => ctx.h_prepare_a_only(&w.a, &w.b, &w.c, lg_n, &z_inv(n)?)?,
            StagingTier::None => {
                // H on the host (the CPU backend's NTT): a becomes H.
                let domain = Domain::new(lg_n).map_err(|e| CudaError::Input(e.to_string()))?;
                compute_h(&domain, &mut w.a, &mut w.b, &mut w.c);
                w.a.truncate(n.saturating_sub(1));
                ctx.h_upload(&w.a, lg_n)?;
            }
        }
        stats.ntt += t.elapsed();
        let t = Instant::now();
        let h = if n > 1 && resident {
            ctx.msm_g1_resident(Source::H, Section::H, 0, srs.h.len())?
        } else if n > 1 {
            ctx.msm_g1(Source::H, srs.h)?
        } else {
            G1Projective::identity()
        };
        stats.msm_h += t.elapsed();
        Ok(h)
    }

    fn z_inv(n: usize) -> Result<Scalar, CudaError> {
        z_inverse(n).map_err(|e| CudaError::Input(e.to_string()))
    }

    /// Σ over the aux variables set in `density` in G1: picked and summed
    /// on the GPU, or on the CPU when small.
    fn pick_g1(
        ctx: &mut Ctx,
        density: &Density,
        points: &[G1Affine],
        aux: &[Scalar],
        host_pick: Option<&[Scalar]>,
    ) -> Result<G1Projective, CudaError> {
        if points.len() < GPU_MIN_POINTS {
            return Ok(msm::<G1>(points, aux, Some(density)).0);
        }
        let src = picked(ctx, density, points.len(), host_pick)?;
        ctx.msm_g1(src, points)
    }

    /// Puts the aux scalars of `density` on the device and says where:
    /// picked on the device ([`Source::Picked`], a second buffer), or, given
    /// the host's aux (`host_pick`), picked on the host and uploaded over
    /// the aux buffer ([`Source::Aux`]; aux itself is no longer there).
    fn picked(
        ctx: &mut Ctx,
        density: &Density,
        npoints: usize,
        host_pick: Option<&[Scalar]>,
    ) -> Result<Source, CudaError> {
        let (count, src) = match host_pick {
            None => (ctx.pick(density.words(), density.len())?, Source::Picked),
            Some(aux) => {
                if density.len() != aux.len() {
                    return Err(CudaError::Input(format!(
                        "density of {} bits for {} aux variables",
                        density.len(),
                        aux.len()
                    )));
                }
                let chosen: Vec<Scalar> = aux
                    .iter()
                    .zip(density.iter())
                    .filter_map(|(s, set)| set.then_some(*s))
                    .collect();
                ctx.upload_aux(&chosen)?;
                (chosen.len(), Source::Aux)
            }
        };
        if count != npoints {
            return Err(CudaError::Input(format!(
                "{count} variables in the density for {npoints} points"
            )));
        }
        Ok(src)
    }
}
