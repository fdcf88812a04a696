//! Host memory page-locked for DMA: the SRS sections a device streams
//! from host memory (`device_srs.rs`) are registered with CUDA once, when
//! the SRS is made ready for the device, so each tile's copy is one DMA
//! beside the kernels instead of a pass through the chunk ring
//! (`cuda/stream_tiles.cuh`). The pages are the SRS manager's hot copy,
//! already charged to the host memory budget: locking them adds no bytes.
//! The registration ends when the [`Pinned`] is dropped, which the device
//! tier does before the host copy is freed (`SrsManager` forgets the
//! device copies of an SRS before it drops the host copy).

use std::time::Instant;

use crate::error::CudaError;
use crate::ffi::check;

extern "C" {
    fn cuzk_cuda_host_register(p: *const u8, bytes: usize) -> sppark::Error;
    fn cuzk_cuda_host_unregister(p: *const u8) -> sppark::Error;
}

/// One page-locked host range; unlocked when dropped.
pub(crate) struct Pinned {
    /// The range's start (kept as an address: the memory is the SRS
    /// manager's, which outlives this).
    at: usize,
    bytes: usize,
}

impl Pinned {
    /// Page-locks `points` (read-only, for every device); `None` for an
    /// empty slice.
    pub(crate) fn register<T>(points: &[T]) -> Result<Option<Pinned>, CudaError> {
        let bytes = std::mem::size_of_val(points);
        if bytes == 0 {
            return Ok(None);
        }
        let t = Instant::now();
        let p = points.as_ptr().cast::<u8>();
        // SAFETY: the range is live memory of `bytes` bytes; CUDA only
        // locks its pages (read-only registration).
        check(unsafe { cuzk_cuda_host_register(p, bytes) })?;
        tracing::debug!(
            bytes,
            ms = t.elapsed().as_millis() as u64,
            "SRS section page-locked"
        );
        Ok(Some(Pinned {
            at: p as usize,
            bytes,
        }))
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: registered by `register` and not yet unregistered.
        if let Err(e) = check(unsafe { cuzk_cuda_host_unregister(self.at as *const u8) }) {
            tracing::warn!(%e, "unlocking an SRS section's host pages failed");
        }
    }
}
