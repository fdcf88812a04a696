//! Constraint matrices kept on a device (`cuda/abc_eval.cuh`): one copy
//! per circuit shape and device, uploaded by the first partition of that
//! shape and kept for the life of the process (a few hundred MB for a
//! 32 GiB PoRep, ~1.5 GB for SnapDeals), from which each partition's a, b
//! and c are evaluated on the device ([`Ctx::h_eval`]).

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::Scalar;
use cuzk_prover::{ConstraintMatrices, FlatChunk};
use ff::Field;

use crate::error::CudaError;
use crate::ffi::{check, Ctx, RawCtx};

/// Rows per chunk of the device form: one GPU thread each (2^19 threads
/// for a 2^27 partition).
pub(crate) const CHUNK_ROWS: u32 = 256;

#[repr(C)]
struct RawMatrices {
    _private: [u8; 0],
}

extern "C" {
    fn cuzk_cuda_matrices_new(
        ctx: *mut RawCtx,
        bytes: *const u8,
        nbytes: usize,
        chunks: *const FlatChunk,
        nchunks: usize,
        coeffs: *const Scalar,
        kinds: *const u8,
        ncoeffs: usize,
        rows: u64,
        inputs: u64,
        aux: u64,
        out: *mut *mut RawMatrices,
    ) -> sppark::Error;
    fn cuzk_cuda_matrices_free(m: *mut RawMatrices);
    fn cuzk_cuda_h_eval(
        ctx: *mut RawCtx,
        m: *mut RawMatrices,
        input: *const Scalar,
        ninputs: usize,
        lg_n: u32,
        z_inv: *const Scalar,
        vectors: i32,
        first_bad: *mut u64,
    ) -> sppark::Error;
}

/// One shape's matrices on one device.
pub(crate) struct DeviceMatrices {
    raw: NonNull<RawMatrices>,
    /// Device bytes held.
    pub(crate) bytes: u64,
}

// SAFETY: the device copy is read-only once uploaded; the two scratch
// words it holds (the partition's inputs, the first unsatisfied row) are
// written only by `h_eval`, whose callers hold the device lock.
unsafe impl Send for DeviceMatrices {}
unsafe impl Sync for DeviceMatrices {}

impl Drop for DeviceMatrices {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_cuda_matrices_new, freed once.
        unsafe { cuzk_cuda_matrices_free(self.raw.as_ptr()) }
    }
}

/// A device's matrices by key.
#[derive(Default)]
pub(crate) struct MatricesCache {
    map: Mutex<HashMap<String, Arc<DeviceMatrices>>>,
}

impl MatricesCache {
    /// `m` on the device of `ctx`, uploaded (through `ctx`) the first
    /// time its key is seen.
    pub(crate) fn get(
        &self,
        ctx: &mut Ctx,
        m: &dyn ConstraintMatrices,
    ) -> Result<Arc<DeviceMatrices>, CudaError> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = map.get(m.key()) {
            return Ok(Arc::clone(d));
        }
        let t = Instant::now();
        let d = Arc::new(upload(ctx, m)?);
        tracing::info!(
            shape = m.key(),
            bytes = d.bytes,
            ms = t.elapsed().as_millis() as u64,
            "constraint matrices on the device"
        );
        map.insert(m.key().to_string(), Arc::clone(&d));
        Ok(d)
    }
}

fn upload(ctx: &mut Ctx, m: &dyn ConstraintMatrices) -> Result<DeviceMatrices, CudaError> {
    let f = m.flat(CHUNK_ROWS);
    let minus_one = -Scalar::ONE;
    let kinds: Vec<u8> = f
        .coeffs
        .iter()
        .map(|c| {
            if *c == Scalar::ONE {
                0
            } else if *c == minus_one {
                1
            } else {
                2
            }
        })
        .collect();
    let mut raw = std::ptr::null_mut();
    // SAFETY: a live context; every slice outlives the call, which copies
    // them and writes one pointer.
    check(unsafe {
        cuzk_cuda_matrices_new(
            ctx.raw(),
            f.bytes.as_ptr(),
            f.bytes.len(),
            f.chunks.as_ptr(),
            f.chunks.len(),
            f.coeffs.as_ptr(),
            kinds.as_ptr(),
            f.coeffs.len(),
            f.rows,
            f.inputs,
            f.aux,
            &mut raw,
        )
    })?;
    let raw = NonNull::new(raw).ok_or_else(|| CudaError::Cuda("no matrices returned".into()))?;
    Ok(DeviceMatrices {
        raw,
        bytes: f.device_bytes() + kinds.len() as u64 + 32 * f.inputs,
    })
}

impl Ctx {
    /// The H coefficients of a partition from matrices `m` on the device,
    /// `input` and the aux assignment uploaded last ([`Ctx::upload_aux`]),
    /// in `vectors` domain-sized buffers (3: the top staging tier, where
    /// A·B = C is checked; 2: the a-only tier). The first unsatisfied
    /// constraint is an error.
    pub(crate) fn h_eval(
        &mut self,
        m: &DeviceMatrices,
        input: &[Scalar],
        lg_n: u32,
        z_inv: &Scalar,
        vectors: i32,
    ) -> Result<(), CudaError> {
        let mut bad = u64::MAX;
        // SAFETY: a live context and matrices of its device (checked on
        // the C side); input and z_inv outlive the call; writes one word.
        check(unsafe {
            cuzk_cuda_h_eval(
                self.raw(),
                m.raw.as_ptr(),
                input.as_ptr(),
                input.len(),
                lg_n,
                z_inv,
                vectors,
                &mut bad,
            )
        })?;
        if bad != u64::MAX {
            return Err(CudaError::Input(format!(
                "the circuit is not satisfied: constraint {bad} has A·B ≠ C \
                 (evaluated on the device)"
            )));
        }
        Ok(())
    }
}
