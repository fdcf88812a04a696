//! The `extern "C"` surface of `cuda/cuzk_cuda.cu` and a safe wrapper over
//! one device context. The functions only cuzk-lab and the GPU tests use
//! (tiling an SRS section, failing allocations on purpose) exist with the
//! `lab` feature only, on both sides.
//!
//! Layouts: blstrs' `Scalar` is blst_fr and sppark's `fr_t` (32 bytes,
//! Montgomery); `G1Affine` is blst_p1_affine and sppark's affine point
//! (96 bytes); sppark's `jacobian_t<fp_t>` is blst_p1 (144 bytes), which
//! `G1Projective` wraps; the same over Fp2 for G2 (192 and 288 bytes). Every C function returns sppark's error struct; a
//! non-zero code becomes [`CudaError::Cuda`] with the C++ side's message.

use std::ffi::{c_char, CStr};
use std::ptr::NonNull;

use blst::{blst_p1, blst_p2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_prover::srs::Section;

use crate::config::GpuTuning;
use crate::error::CudaError;
use crate::raw_tuning::RawTuning;

/// The signature `cuzk_cuda_h_prepare` and `cuzk_cuda_h_prepare_a_only`
/// share.
type PrepareFn = unsafe extern "C" fn(
    *mut RawCtx,
    *const Scalar,
    *const Scalar,
    *const Scalar,
    usize,
    u32,
    *const Scalar,
) -> sppark::Error;

/// Opaque per-device context (device buffers kept across calls).
#[repr(C)]
pub(crate) struct RawCtx {
    _private: [u8; 0],
}

extern "C" {
    fn cuzk_cuda_device_count(out: *mut usize) -> sppark::Error;
    fn cuzk_cuda_device_name(id: usize, buf: *mut c_char, len: usize) -> sppark::Error;
    fn cuzk_cuda_mem_info(id: usize, free: *mut usize, total: *mut usize) -> sppark::Error;
    fn cuzk_cuda_ctx_new(id: usize, out: *mut *mut RawCtx) -> sppark::Error;
    fn cuzk_cuda_ctx_free(ctx: *mut RawCtx);
    fn cuzk_cuda_ctx_trim(ctx: *mut RawCtx, keep_aux: i32) -> sppark::Error;
    fn cuzk_cuda_h_prepare(
        ctx: *mut RawCtx,
        a: *const Scalar,
        b: *const Scalar,
        c: *const Scalar,
        len: usize,
        lg_n: u32,
        z_inv: *const Scalar,
    ) -> sppark::Error;
    fn cuzk_cuda_abc_upload(
        ctx: *mut RawCtx,
        a: *const Scalar,
        b: *const Scalar,
        c: *const Scalar,
        len: usize,
        lg_n: u32,
    ) -> sppark::Error;
    fn cuzk_cuda_h_compute(ctx: *mut RawCtx, lg_n: u32, z_inv: *const Scalar) -> sppark::Error;
    fn cuzk_cuda_srs_alloc(ctx: *mut RawCtx, sec: i32, npoints: usize) -> sppark::Error;
    fn cuzk_cuda_srs_upload(
        ctx: *mut RawCtx,
        sec: i32,
        offset: usize,
        points: *const u8,
        npoints: usize,
    ) -> sppark::Error;
    fn cuzk_cuda_srs_free(ctx: *mut RawCtx) -> sppark::Error;
    fn cuzk_cuda_msm_g1_resident(
        ctx: *mut RawCtx,
        source: i32,
        sec: i32,
        offset: usize,
        npoints: usize,
        out: *mut blst_p1,
    ) -> sppark::Error;
    fn cuzk_cuda_msm_g2_resident(
        ctx: *mut RawCtx,
        source: i32,
        sec: i32,
        offset: usize,
        npoints: usize,
        out: *mut blst_p2,
    ) -> sppark::Error;
    fn cuzk_cuda_upload_aux(ctx: *mut RawCtx, aux: *const Scalar, len: usize) -> sppark::Error;
    fn cuzk_cuda_pick(
        ctx: *mut RawCtx,
        words: *const u64,
        nbits: usize,
        in_place: i32,
        count: *mut usize,
    ) -> sppark::Error;
    fn cuzk_cuda_msm_g1(
        ctx: *mut RawCtx,
        source: i32,
        points: *const G1Affine,
        npoints: usize,
        out: *mut blst_p1,
    ) -> sppark::Error;
    fn cuzk_cuda_msm_g2(
        ctx: *mut RawCtx,
        source: i32,
        points: *const G2Affine,
        npoints: usize,
        out: *mut blst_p2,
    ) -> sppark::Error;
}

extern "C" {
    fn cuzk_cuda_ctx_new_worker(owner: *mut RawCtx, out: *mut *mut RawCtx) -> sppark::Error;
    fn cuzk_cuda_h_prepare_a_only(
        ctx: *mut RawCtx,
        a: *const Scalar,
        b: *const Scalar,
        c: *const Scalar,
        len: usize,
        lg_n: u32,
        z_inv: *const Scalar,
    ) -> sppark::Error;
    fn cuzk_cuda_h_upload(
        ctx: *mut RawCtx,
        h: *const Scalar,
        len: usize,
        lg_n: u32,
    ) -> sppark::Error;
    fn cuzk_cuda_mem_room(ctx: *mut RawCtx, free: *mut usize, held: *mut usize) -> sppark::Error;
    fn cuzk_cuda_set_vram_limit(ctx: *mut RawCtx, limit: usize, margin: usize) -> sppark::Error;
    fn cuzk_cuda_set_tuning(ctx: *mut RawCtx, tuning: *const RawTuning) -> sppark::Error;
    fn cuzk_cuda_msm_scratch(
        ctx: *mut RawCtx,
        npoints: usize,
        least: i32,
        bytes: *mut usize,
    ) -> sppark::Error;
    fn cuzk_cuda_span_begin(ctx: *mut RawCtx) -> sppark::Error;
    fn cuzk_cuda_span_end(
        ctx: *mut RawCtx,
        ms: *mut f32,
        begin: *mut f32,
        end: *mut f32,
    ) -> sppark::Error;
    fn cuzk_cuda_span_mark(ctx: *mut RawCtx) -> sppark::Error;
    fn cuzk_cuda_set_split01(ctx: *mut RawCtx, min_points: usize) -> sppark::Error;
    fn cuzk_cuda_set_chunked_copies(ctx: *mut RawCtx, on: i32) -> sppark::Error;
    fn cuzk_cuda_take_shape(
        ctx: *mut RawCtx,
        zeros: *mut usize,
        ones: *mut usize,
        others: *mut usize,
        streamed: *mut usize,
    ) -> sppark::Error;
}

#[cfg(feature = "lab")]
extern "C" {
    fn cuzk_cuda_srs_tile(
        ctx: *mut RawCtx,
        sec: i32,
        pattern: *const u8,
        npattern: usize,
    ) -> sppark::Error;
    fn cuzk_cuda_fail_next_allocs(ctx: *mut RawCtx, count: i32) -> sppark::Error;
    fn cuzk_cuda_carried_msms(ctx: *mut RawCtx, out: *mut usize) -> sppark::Error;
}

/// The code the C side gives an out-of-device-memory error (sppark's
/// negated `cudaErrorMemoryAllocation`).
const OOM: i32 = -2;

/// CUDA errors (`cudaError_t`, negated by the C side as `OOM` is) after
/// which the context is unusable: initialization errors, devices
/// unavailable, uncorrectable ECC, the launch faults 700–719 and unknown.
const DEVICE_LOST: [i32; 13] = [3, 4, 46, 214, 700, 702, 714, 715, 716, 717, 718, 719, 999];

pub(crate) fn check(e: sppark::Error) -> Result<(), CudaError> {
    match e.code {
        0 => Ok(()),
        OOM => Err(CudaError::OutOfMemory(String::from(&e))),
        c if DEVICE_LOST.contains(&-c) => Err(CudaError::DeviceLost(String::from(&e))),
        _ => Err(CudaError::Cuda(String::from(&e))),
    }
}

fn same_lengths(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Result<(), CudaError> {
    if a.len() != b.len() || a.len() != c.len() {
        return Err(CudaError::Input(format!(
            "a, b, c have {}, {}, {} evaluations",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    Ok(())
}

/// Where an MSM's scalars are on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The n − 1 H coefficients of the last [`Ctx::h_prepare`].
    H = 0,
    /// The aux assignment of the last [`Ctx::upload_aux`].
    Aux = 1,
    /// The scalars of the last [`Ctx::pick`].
    Picked = 2,
}

/// The C side's index of a device SRS section (`SRS_SECTIONS` in
/// `cuda/cuzk_cuda.cu`): h, l, a, b_g1 (G1) and b_g2 (G2).
pub(crate) fn section_index(sec: Section) -> Result<i32, CudaError> {
    match sec {
        Section::H => Ok(0),
        Section::L => Ok(1),
        Section::A => Ok(2),
        Section::BG1 => Ok(3),
        Section::BG2 => Ok(4),
        other => Err(CudaError::Input(format!(
            "{other} is not a section of the SRS on the device"
        ))),
    }
}

mod sealed {
    /// Only the two point types the C side knows (it reads each point at
    /// its type's size): no other crate may add one.
    pub trait Sealed {}
    impl Sealed for blstrs::G1Affine {}
    impl Sealed for blstrs::G2Affine {}
}

/// The points an SRS section on the device holds: G1 for every section
/// but [`Section::BG2`], G2 for it (sealed: only these two).
pub trait SectionPoint: sealed::Sealed + Copy {
    /// Whether section `sec` holds points of this type.
    fn held_by(sec: Section) -> bool;
}

impl SectionPoint for G1Affine {
    fn held_by(sec: Section) -> bool {
        sec != Section::BG2
    }
}

impl SectionPoint for G2Affine {
    fn held_by(sec: Section) -> bool {
        sec == Section::BG2
    }
}

/// [`section_index`] of `sec`, which must hold points of type `P`.
fn section_for<P: SectionPoint>(sec: Section) -> Result<i32, CudaError> {
    if !P::held_by(sec) {
        return Err(CudaError::Input(format!(
            "{} points for the {sec} section",
            std::any::type_name::<P>()
        )));
    }
    section_index(sec)
}

/// Bytes per point of a device section (affine, uncompressed in memory).
pub(crate) fn point_bytes(sec: Section) -> usize {
    match sec {
        Section::BG2 => std::mem::size_of::<G2Affine>(),
        _ => std::mem::size_of::<G1Affine>(),
    }
}

/// Number of usable CUDA devices (compute capability 7.0+, cooperative launch).
pub(crate) fn device_count() -> Result<usize, CudaError> {
    let mut n = 0usize;
    // SAFETY: writes one usize.
    check(unsafe { cuzk_cuda_device_count(&mut n) })?;
    Ok(n)
}

/// The device's name as CUDA reports it.
pub(crate) fn device_name(id: usize) -> Result<String, CudaError> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the C side writes at most `len` bytes, NUL-terminated.
    check(unsafe { cuzk_cuda_device_name(id, buf.as_mut_ptr(), buf.len()) })?;
    // SAFETY: NUL-terminated by the C side (and the buffer was zeroed).
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// Free and total device memory, as `cudaMemGetInfo` reports them.
pub(crate) fn mem_info(id: usize) -> Result<(u64, u64), CudaError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two usizes.
    check(unsafe { cuzk_cuda_mem_info(id, &mut free, &mut total) })?;
    Ok((free as u64, total as u64))
}

/// One device's context. Not thread-safe: the backend keeps it in a Mutex.
pub(crate) struct Ctx {
    raw: NonNull<RawCtx>,
    /// `gpus.tuning.pack_aux` (worker contexts take their owner's).
    pub(crate) pack_aux: bool,
    /// Aux uploads that went packed (`aux_pack.rs`), for tests.
    pub(crate) aux_uploads_packed: u64,
}

// SAFETY: the context is only used through &mut (behind a Mutex); the CUDA
// runtime allows use from any thread once the device is selected, which
// every C function does first.
unsafe impl Send for Ctx {}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: created by cuzk_cuda_ctx_new, freed once.
        unsafe { cuzk_cuda_ctx_free(self.raw.as_ptr()) }
    }
}

impl Ctx {
    pub(crate) fn new(device: usize) -> Result<Ctx, CudaError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        check(unsafe { cuzk_cuda_ctx_new(device, &mut raw) })?;
        let mut ctx = NonNull::new(raw)
            .map(|raw| Ctx {
                raw,
                pack_aux: false,
                aux_uploads_packed: 0,
            })
            .ok_or_else(|| CudaError::Cuda("no context returned".into()))?;
        ctx.set_split01(true)?;
        Ok(ctx)
    }

    /// A worker context on `owner`'s device: its own buffers, allocator and
    /// upload stream; its resident MSMs read `owner`'s SRS.
    ///
    /// # Safety
    /// `owner` must outlive the worker (its SRS sections are read through a
    /// pointer), and the worker's kernel calls must hold the owner's lock.
    pub(crate) unsafe fn new_worker(owner: &mut Ctx) -> Result<Ctx, CudaError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: a live owner; writes one pointer.
        check(unsafe { cuzk_cuda_ctx_new_worker(owner.raw.as_ptr(), &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Ctx {
                raw,
                pack_aux: owner.pack_aux,
                aux_uploads_packed: 0,
            })
            .ok_or_else(|| CudaError::Cuda("no context returned".into()))
    }

    /// The C context, for the other modules' `extern "C"` calls.
    pub(crate) fn raw(&mut self) -> *mut RawCtx {
        self.raw.as_ptr()
    }

    /// Frees the device buffers (allocated again when next needed).
    pub(crate) fn trim(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_ctx_trim(self.raw.as_ptr(), 0) })
    }

    /// [`Ctx::trim`] but the aux scalars stay on the device.
    pub(crate) fn trim_keeping_aux(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_ctx_trim(self.raw.as_ptr(), 1) })
    }

    /// The a-only staging tier of [`Ctx::h_prepare`]: room for two
    /// vectors on the device instead of three (b and c pass through the
    /// second one).
    pub(crate) fn h_prepare_a_only(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
        z_inv: &Scalar,
    ) -> Result<(), CudaError> {
        self.h_prepare_by(cuzk_cuda_h_prepare_a_only, [a, b, c], lg_n, z_inv)
    }

    /// One of the C side's H preparations (`prepare`: all three vectors
    /// on the device, or the a-only tier) over a, b and c.
    fn h_prepare_by(
        &mut self,
        prepare: PrepareFn,
        [a, b, c]: [&[Scalar]; 3],
        lg_n: u32,
        z_inv: &Scalar,
    ) -> Result<(), CudaError> {
        same_lengths(a, b, c)?;
        // SAFETY: the slices outlive the call; the C side reads len of each.
        check(unsafe {
            prepare(
                self.raw.as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
                c.as_ptr(),
                a.len(),
                lg_n,
                z_inv,
            )
        })
    }

    /// The no-staging tier: H coefficients computed on the host (at most
    /// 2^lg_n − 1) uploaded as [`Source::H`].
    pub(crate) fn h_upload(&mut self, h: &[Scalar], lg_n: u32) -> Result<(), CudaError> {
        if h.len() >= 1usize << lg_n && lg_n > 0 {
            return Err(CudaError::Input(format!(
                "{} H coefficients for a domain of 2^{lg_n}",
                h.len()
            )));
        }
        // SAFETY: h outlives the call; the C side reads h.len() scalars.
        check(unsafe { cuzk_cuda_h_upload(self.raw.as_ptr(), h.as_ptr(), h.len(), lg_n) })
    }

    /// Device memory the context may still take (free after trimming the
    /// stream-ordered pool, within `vram_limit`) and what its scratch
    /// buffers hold now (reusable), in bytes.
    pub(crate) fn mem_room(&mut self) -> Result<(u64, u64), CudaError> {
        let (mut free, mut held) = (0usize, 0usize);
        // SAFETY: a live context; two usizes written.
        check(unsafe { cuzk_cuda_mem_room(self.raw.as_ptr(), &mut free, &mut held) })?;
        Ok((free as u64, held as u64))
    }

    /// Records the start of a kernel region on the device's main stream.
    pub(crate) fn span_begin(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_span_begin(self.raw.as_ptr()) })
    }

    /// Ends the kernel region begun by [`Ctx::span_begin`]: its length in
    /// milliseconds, from the two CUDA events, and its begin and end in
    /// milliseconds after the epoch ([`Ctx::span_mark`]) when one was set.
    pub(crate) fn span_end(&mut self) -> Result<(f32, Option<(f32, f32)>), CudaError> {
        let (mut ms, mut begin, mut end) = (0f32, 0f32, 0f32);
        // SAFETY: a live context; three f32 written.
        check(unsafe { cuzk_cuda_span_end(self.raw.as_ptr(), &mut ms, &mut begin, &mut end) })?;
        Ok((ms, (begin >= 0.0).then_some((begin, end))))
    }

    /// Sets the epoch of [`Ctx::span_end`]'s timeline to now, on the
    /// device's main stream.
    pub(crate) fn span_mark(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_span_mark(self.raw.as_ptr()) })
    }

    /// `gpus.vram_limit` for this context's allocations (0: none) and
    /// `gpus.vram_safety_margin`, which the MSMs leave free when they fit
    /// their scratch to the room there is.
    pub(crate) fn set_vram_limit(&mut self, limit: u64, margin: u64) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe {
            cuzk_cuda_set_vram_limit(self.raw.as_ptr(), limit as usize, margin as usize)
        })
    }

    /// `[gpus.tuning]` for this context's kernels and copies (worker
    /// contexts made later take their owner's).
    pub(crate) fn set_tuning(&mut self, tuning: &GpuTuning) -> Result<(), CudaError> {
        let raw = RawTuning::from(tuning);
        self.pack_aux = tuning.pack_aux;
        // SAFETY: a live context; the struct is read once.
        check(unsafe { cuzk_cuda_set_tuning(self.raw.as_ptr(), &raw) })
    }

    /// Device scratch of one MSM of `points` points on this context's
    /// device (the larger of G1 and G2): at the windows its tuning gives
    /// over device points (`least` false), or the least the driver fits
    /// itself into with the points streamed from the host (`least`: what
    /// the staging tiers count). The MSM driver's own figure
    /// (`cuda/msm_driver.cuh`).
    pub(crate) fn msm_scratch(&mut self, points: usize, least: bool) -> Result<u64, CudaError> {
        let mut bytes = 0usize;
        // SAFETY: a live context; one usize written.
        check(unsafe {
            cuzk_cuda_msm_scratch(self.raw.as_ptr(), points, i32::from(least), &mut bytes)
        })?;
        Ok(bytes as u64)
    }

    /// Test hook: the next `count` allocations of this context fail as if
    /// the device were full.
    #[cfg(feature = "lab")]
    pub(crate) fn fail_next_allocs(&mut self, count: u32) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_fail_next_allocs(self.raw.as_ptr(), count as i32) })
    }

    /// Streamed MSMs of this context that carried their buckets across
    /// batches (`gpus.tuning.carry_buckets`).
    #[cfg(feature = "lab")]
    pub(crate) fn carried_msms(&mut self) -> Result<u64, CudaError> {
        let mut n = 0usize;
        // SAFETY: a live context; the count is written once.
        check(unsafe { cuzk_cuda_carried_msms(self.raw.as_ptr(), &mut n) })?;
        Ok(n as u64)
    }

    /// Uploads a, b, c (same length ≤ 2^lg_n) and computes the H
    /// coefficients on the device; the host vectors are free on return.
    pub(crate) fn h_prepare(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
        z_inv: &Scalar,
    ) -> Result<(), CudaError> {
        self.h_prepare_by(cuzk_cuda_h_prepare, [a, b, c], lg_n, z_inv)
    }

    /// Uploads a, b, c (same length ≤ 2^lg_n), zero-padded to 2^lg_n.
    pub(crate) fn upload_abc(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        lg_n: u32,
    ) -> Result<(), CudaError> {
        same_lengths(a, b, c)?;
        // SAFETY: the slices outlive the call; the C side reads len of each.
        check(unsafe {
            cuzk_cuda_abc_upload(
                self.raw.as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
                c.as_ptr(),
                a.len(),
                lg_n,
            )
        })
    }

    /// The H coefficients from the uploaded a, b, c (source [`Source::H`]).
    pub(crate) fn h_compute(&mut self, lg_n: u32, z_inv: &Scalar) -> Result<(), CudaError> {
        // SAFETY: a live context; z_inv is read once.
        check(unsafe { cuzk_cuda_h_compute(self.raw.as_ptr(), lg_n, z_inv) })
    }

    /// Allocates device section `sec` for `npoints` points (content
    /// undefined until uploaded or tiled).
    pub(crate) fn srs_alloc(&mut self, sec: Section, npoints: usize) -> Result<(), CudaError> {
        let sec = section_index(sec)?;
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_srs_alloc(self.raw.as_ptr(), sec, npoints) })
    }

    /// Copies `points` into resident section `sec` (G1 points for every
    /// section but [`Section::BG2`], G2 points for it).
    pub(crate) fn srs_upload<P: SectionPoint>(
        &mut self,
        sec: Section,
        points: &[P],
    ) -> Result<(), CudaError> {
        let sec = section_for::<P>(sec)?;
        // SAFETY: points outlive the call; the C side checks the bounds.
        check(unsafe {
            cuzk_cuda_srs_upload(
                self.raw.as_ptr(),
                sec,
                0,
                points.as_ptr().cast(),
                points.len(),
            )
        })
    }

    /// Fills section `sec` with `pattern` repeated (points as for
    /// [`Ctx::srs_upload`]).
    #[cfg(feature = "lab")]
    pub(crate) fn srs_tile<P: SectionPoint>(
        &mut self,
        sec: Section,
        pattern: &[P],
    ) -> Result<(), CudaError> {
        let sec = section_for::<P>(sec)?;
        // SAFETY: pattern outlives the call.
        check(unsafe {
            cuzk_cuda_srs_tile(
                self.raw.as_ptr(),
                sec,
                pattern.as_ptr().cast(),
                pattern.len(),
            )
        })
    }

    /// Frees the device SRS sections.
    pub(crate) fn srs_free(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_srs_free(self.raw.as_ptr()) })
    }

    /// Σ scalar_i·points_i in G1 over `source` against `npoints` resident
    /// points of `sec` from `offset` on.
    pub(crate) fn msm_g1_resident(
        &mut self,
        source: Source,
        sec: Section,
        offset: usize,
        npoints: usize,
    ) -> Result<G1Projective, CudaError> {
        let sec = section_index(sec)?;
        let mut out = blst_p1::default();
        // SAFETY: the C side checks the section bounds; out is written once.
        check(unsafe {
            cuzk_cuda_msm_g1_resident(
                self.raw.as_ptr(),
                source as i32,
                sec,
                offset,
                npoints,
                &mut out,
            )
        })?;
        // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
        Ok(unsafe { std::mem::transmute::<blst_p1, G1Projective>(out) })
    }

    /// The same in G2 ([`Section::BG2`]).
    pub(crate) fn msm_g2_resident(
        &mut self,
        source: Source,
        offset: usize,
        npoints: usize,
    ) -> Result<G2Projective, CudaError> {
        let mut out = blst_p2::default();
        // SAFETY: the C side checks the section bounds; out is written once.
        check(unsafe {
            cuzk_cuda_msm_g2_resident(
                self.raw.as_ptr(),
                source as i32,
                section_index(Section::BG2)?,
                offset,
                npoints,
                &mut out,
            )
        })?;
        // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
        Ok(unsafe { std::mem::transmute::<blst_p2, G2Projective>(out) })
    }

    /// Turns on (the default) or off the 0/1 split of the resident MSMs over
    /// [`Source::Aux`] and [`Source::Picked`] of at least
    /// [`crate::config::SPLIT01_MIN_POINTS`] points: zeros dropped, ones summed by
    /// index, Pippenger over the rest only.
    pub(crate) fn set_split01(&mut self, on: bool) -> Result<(), CudaError> {
        let min = if on {
            crate::config::SPLIT01_MIN_POINTS
        } else {
            usize::MAX
        };
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_set_split01(self.raw.as_ptr(), min) })
    }

    /// Host-to-device copies through the context's page-locked chunks
    /// (`true`: no page-locking per call, which would hold the driver while
    /// other workers launch kernels) or by page-locking each source for its
    /// copy (`false`: fewer passes over host memory). `gpus.tuning.host_copy`
    /// overrides it (`cuda/host_copy.cuh`).
    pub(crate) fn set_chunked_copies(&mut self, on: bool) -> Result<(), CudaError> {
        // SAFETY: a live context.
        check(unsafe { cuzk_cuda_set_chunked_copies(self.raw.as_ptr(), i32::from(on)) })
    }

    /// Zeros, ones and other scalars the split MSMs saw since the last
    /// call, and the bytes of SRS points streamed from host memory.
    pub(crate) fn take_shape(&mut self) -> Result<(cuzk_prover::msm::MsmShape, u64), CudaError> {
        let mut shape = cuzk_prover::msm::MsmShape::default();
        let mut streamed = 0usize;
        // SAFETY: a live context; the four counts are written once.
        check(unsafe {
            cuzk_cuda_take_shape(
                self.raw.as_ptr(),
                &mut shape.zeros,
                &mut shape.ones,
                &mut shape.others,
                &mut streamed,
            )
        })?;
        Ok((shape, streamed as u64))
    }

    /// Uploads the aux assignment (source [`Source::Aux`]) as it is;
    /// [`Ctx::upload_aux`] (`aux_pack.rs`) packs it first when that pays.
    pub(crate) fn upload_aux_plain(&mut self, aux: &[Scalar]) -> Result<(), CudaError> {
        // SAFETY: aux outlives the call.
        check(unsafe { cuzk_cuda_upload_aux(self.raw.as_ptr(), aux.as_ptr(), aux.len()) })
    }

    /// Picks the aux scalars whose bit is set in `words` (`nbits` bits, the
    /// aux length), in order, as source [`Source::Picked`]; returns how many.
    pub(crate) fn pick(&mut self, words: &[u64], nbits: usize) -> Result<usize, CudaError> {
        self.pick_into(words, nbits, false)
    }

    /// [`Ctx::pick`] over aux itself: the picked scalars become source
    /// [`Source::Aux`] (no second vector; [`Source::Picked`] keeps the
    /// last pick to its own vector); aux must be uploaded again before it
    /// is needed whole.
    pub(crate) fn pick_in_place(
        &mut self,
        words: &[u64],
        nbits: usize,
    ) -> Result<usize, CudaError> {
        self.pick_into(words, nbits, true)
    }

    fn pick_into(
        &mut self,
        words: &[u64],
        nbits: usize,
        in_place: bool,
    ) -> Result<usize, CudaError> {
        if words.len() < nbits.div_ceil(64) {
            return Err(CudaError::Input(
                "density bitmap shorter than its length".into(),
            ));
        }
        let mut count = 0usize;
        // SAFETY: words holds nbits bits; count is written once.
        check(unsafe {
            cuzk_cuda_pick(
                self.raw.as_ptr(),
                words.as_ptr(),
                nbits,
                in_place as i32,
                &mut count,
            )
        })?;
        Ok(count)
    }

    /// Σ scalar_i·points_i in G1 over all scalars of `source`.
    pub(crate) fn msm_g1(
        &mut self,
        source: Source,
        points: &[G1Affine],
    ) -> Result<G1Projective, CudaError> {
        let mut out = blst_p1::default();
        // SAFETY: points outlive the call; out is written once.
        check(unsafe {
            cuzk_cuda_msm_g1(
                self.raw.as_ptr(),
                source as i32,
                points.as_ptr(),
                points.len(),
                &mut out,
            )
        })?;
        // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
        Ok(unsafe { std::mem::transmute::<blst_p1, G1Projective>(out) })
    }

    /// Σ scalar_i·points_i in G2 over all scalars of `source`.
    pub(crate) fn msm_g2(
        &mut self,
        source: Source,
        points: &[G2Affine],
    ) -> Result<G2Projective, CudaError> {
        let mut out = blst_p2::default();
        // SAFETY: points outlive the call; out is written once.
        check(unsafe {
            cuzk_cuda_msm_g2(
                self.raw.as_ptr(),
                source as i32,
                points.as_ptr(),
                points.len(),
                &mut out,
            )
        })?;
        // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
        Ok(unsafe { std::mem::transmute::<blst_p2, G2Projective>(out) })
    }
}
