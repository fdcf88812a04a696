//! Fixed-base products on a GPU for parameter generation
//! (`cuda/fixed_base.cuh`): a generator's two fixed-base tables — cuzk-setup's
//! `FixedBaseTable` layout, `points[j * 2^(w-1) + k] = (k + 1) * 2^(w j) *
//! base` — copied to one device once, then chunks of scalars multiplied by
//! the base, the products back in Jacobian form. The prover never uses it.

use std::ptr::NonNull;
use std::sync::Mutex;

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::Scalar;

use crate::error::CudaError;
use crate::ffi::check;

#[repr(C)]
struct RawFixedBase {
    _private: [u8; 0],
}

extern "C" {
    #[allow(clippy::too_many_arguments)]
    fn cuzk_cuda_fb_new(
        id: usize,
        g1: *const blst_p1_affine,
        g1_len: usize,
        g1_wbits: u32,
        g1_windows: u32,
        g2: *const blst_p2_affine,
        g2_len: usize,
        g2_wbits: u32,
        g2_windows: u32,
        out: *mut *mut RawFixedBase,
    ) -> sppark::Error;
    fn cuzk_cuda_fb_g1(
        fb: *mut RawFixedBase,
        scalars: *const Scalar,
        n: usize,
        out: *mut blst_p1,
    ) -> sppark::Error;
    fn cuzk_cuda_fb_g2(
        fb: *mut RawFixedBase,
        scalars: *const Scalar,
        n: usize,
        out: *mut blst_p2,
    ) -> sppark::Error;
    fn cuzk_cuda_fb_free(fb: *mut RawFixedBase);
}

/// One fixed-base table: its affine points and window width in bits.
pub struct FixedBaseTable<'a, P> {
    pub points: &'a [P],
    pub window: u32,
}

impl<P> FixedBaseTable<'_, P> {
    /// Windows in the table (its length over `2^(window-1)`).
    fn windows(&self) -> Result<u32, CudaError> {
        let half = 1usize
            .checked_shl(self.window.saturating_sub(1))
            .filter(|_| (2..=24).contains(&self.window))
            .ok_or_else(|| CudaError::Input(format!("{}-bit fixed-base windows", self.window)))?;
        if self.points.len() % half != 0 {
            return Err(CudaError::Input(format!(
                "a fixed-base table of {} points is not whole {}-bit windows",
                self.points.len(),
                self.window
            )));
        }
        u32::try_from(self.points.len() / half)
            .map_err(|_| CudaError::Input("too many fixed-base windows".into()))
    }
}

/// A generator's G1 and G2 tables on one device. Calls are serialised (one
/// set of chunk buffers).
pub struct FixedBaseDevice {
    raw: Mutex<NonNull<RawFixedBase>>,
}

// The C++ object is used under the mutex only.
unsafe impl Send for FixedBaseDevice {}
unsafe impl Sync for FixedBaseDevice {}

impl FixedBaseDevice {
    /// Copies both tables to CUDA device `device`.
    pub fn new(
        device: usize,
        g1: FixedBaseTable<'_, blst_p1_affine>,
        g2: FixedBaseTable<'_, blst_p2_affine>,
    ) -> Result<Self, CudaError> {
        let (w1, w2) = (g1.windows()?, g2.windows()?);
        let mut raw = std::ptr::null_mut();
        // SAFETY: the slices are valid for their lengths during the call
        // (the C side copies them); `raw` receives an owned object or null.
        check(unsafe {
            cuzk_cuda_fb_new(
                device,
                g1.points.as_ptr(),
                g1.points.len(),
                g1.window,
                w1,
                g2.points.as_ptr(),
                g2.points.len(),
                g2.window,
                w2,
                &mut raw,
            )
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| CudaError::Cuda("no fixed-base tables returned".into()))?;
        Ok(FixedBaseDevice {
            raw: Mutex::new(raw),
        })
    }

    /// `out[i] = scalars[i] * base` of the G1 table (Jacobian).
    pub fn g1(&self, scalars: &[Scalar], out: &mut [blst_p1]) -> Result<(), CudaError> {
        same_len(scalars.len(), out.len())?;
        let raw = self.raw.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: both slices are valid for `n` elements; layouts per ffi.rs.
        check(unsafe {
            cuzk_cuda_fb_g1(
                raw.as_ptr(),
                scalars.as_ptr(),
                scalars.len(),
                out.as_mut_ptr(),
            )
        })
    }

    /// `out[i] = scalars[i] * base` of the G2 table (Jacobian).
    pub fn g2(&self, scalars: &[Scalar], out: &mut [blst_p2]) -> Result<(), CudaError> {
        same_len(scalars.len(), out.len())?;
        let raw = self.raw.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: as in `g1`.
        check(unsafe {
            cuzk_cuda_fb_g2(
                raw.as_ptr(),
                scalars.as_ptr(),
                scalars.len(),
                out.as_mut_ptr(),
            )
        })
    }
}

impl Drop for FixedBaseDevice {
    fn drop(&mut self) {
        let raw = self.raw.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: owned, freed once.
        unsafe { cuzk_cuda_fb_free(raw.as_ptr()) }
    }
}

fn same_len(scalars: usize, out: usize) -> Result<(), CudaError> {
    match scalars == out {
        true => Ok(()),
        false => Err(CudaError::Input(format!(
            "{scalars} scalars but room for {out} products"
        ))),
    }
}
