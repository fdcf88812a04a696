//! An SRS on the device: its points in the owner context's sections, made
//! ready by [`CudaBackend::prepare_srs`](crate::CudaBackend) for the
//! engine's SRS manager, which keeps the [`OnDevice`] handle in its device
//! tier (keyed by circuit id) for as long as the host copy is hot. This is
//! no cache of its own: one SRS at a time per device, freed when the
//! manager drops the handle, and a device that holds one answers
//! `Occupied` until then (the manager releases an idle one and asks
//! again).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cuzk_prover::backend::SrsRef;
use cuzk_prover::srs::Section;
use cuzk_prover::{SrsPreparation, WitnessSize};

use crate::device::Device;
use crate::ffi::{point_bytes, Ctx};
use crate::{CudaError, SrsPlacement};

/// Headroom kept free beside an SRS on the device for the MSM scratch.
const MSM_HEADROOM: u64 = 4 << 30;

/// The handle of an SRS on a device; dropping it frees the points.
pub(crate) struct OnDevice {
    dev: Arc<Device>,
    generation: u64,
    /// Points per section (h, l, a, b_g1, b_g2).
    lens: [usize; 5],
}

impl OnDevice {
    /// Whether this is the SRS on `dev` with the sections `srs` has.
    pub(crate) fn serves(&self, dev: &Arc<Device>, srs: &SrsRef<'_>) -> bool {
        Arc::ptr_eq(&self.dev, dev)
            && *dev.srs_state() == Some(self.generation)
            && self.lens == lens(srs)
    }
}

impl Drop for OnDevice {
    fn drop(&mut self) {
        let mut owner = self.dev.lock();
        let mut st = self.dev.srs_state();
        if *st == Some(self.generation) {
            *st = None;
            drop(st);
            if let Err(e) = owner.srs_free() {
                tracing::warn!(%e, "freeing the SRS on the device failed");
            }
        }
    }
}

fn lens(srs: &SrsRef<'_>) -> [usize; 5] {
    [
        srs.h.len(),
        srs.l.len(),
        srs.a.len(),
        srs.b_g1.len(),
        srs.b_g2.len(),
    ]
}

/// Bytes the SRS points take on the device.
pub fn srs_device_bytes(srs: &SrsRef<'_>) -> u64 {
    let g1 = (srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len()) as u64;
    g1 * point_bytes(Section::H) as u64 + srs.b_g2.len() as u64 * point_bytes(Section::BG2) as u64
}

/// Makes `srs` ready on `dev` for partitions of `size`, as `placement`
/// says (for `Auto`: only when it fits beside such a partition).
pub(crate) fn prepare(
    dev: &Arc<Device>,
    device: usize,
    srs: &SrsRef<'_>,
    placement: SrsPlacement,
    size: &WitnessSize,
) -> Result<SrsPreparation, CudaError> {
    if placement == SrsPlacement::Never {
        return Ok(SrsPreparation::Host);
    }
    let mut retried = false;
    loop {
        // A device holding another SRS says so at once: the device lock
        // may be held through a whole partition's kernels, and a CRITICAL
        // partition waiting for it only to hear `Occupied` (then proving
        // from host memory) waited seconds behind PoRep partitions.
        if dev.srs_state().is_some() {
            return Ok(SrsPreparation::Occupied);
        }
        let attempt = {
            let mut owner = dev.lock();
            let mut st = dev.srs_state();
            if st.is_some() {
                return Ok(SrsPreparation::Occupied);
            }
            let made = upload(&mut owner, device, srs, placement, size);
            if let Ok(Some(generation)) = made {
                *st = Some(generation);
            }
            made
        };
        match attempt {
            Ok(Some(generation)) => {
                let handle = OnDevice {
                    dev: Arc::clone(dev),
                    generation,
                    lens: lens(srs),
                };
                return Ok(SrsPreparation::Ready {
                    srs: Arc::new(handle),
                    bytes: srs_device_bytes(srs),
                });
            }
            Ok(None) => return Ok(SrsPreparation::Host),
            // Idle worker contexts' kept buffers make room; if that is not
            // enough, the points stream.
            Err(CudaError::OutOfMemory(_)) if !retried => {
                retried = true;
                dev.trim_idle()?;
            }
            Err(CudaError::OutOfMemory(why)) => {
                tracing::warn!(
                    device,
                    %why,
                    "no room for the SRS on the device; streaming its points"
                );
                return Ok(SrsPreparation::Host);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Uploads `srs` into the owner's sections (nothing else on the device);
/// `None` when `Auto` finds it does not fit beside a partition of `size`.
fn upload(
    ctx: &mut Ctx,
    device: usize,
    srs: &SrsRef<'_>,
    placement: SrsPlacement,
    size: &WitnessSize,
) -> Result<Option<u64>, CudaError> {
    static GENERATION: AtomicU64 = AtomicU64::new(1);
    // Free the scratch buffers, then measure the room.
    ctx.srs_free()?;
    ctx.trim()?;
    let need = srs_device_bytes(srs);
    if placement == SrsPlacement::Auto {
        // Free memory within gpus.vram_limit, the pool's cache returned.
        let (free, _) = ctx.mem_room()?;
        let (n, aux) = (size.constraints, size.aux);
        let scratch = ((3 * n + 2 * aux) * std::mem::size_of::<blstrs::Scalar>()) as u64;
        if need + scratch + MSM_HEADROOM > free {
            tracing::info!(
                need,
                free,
                "SRS left on the host: it does not fit on device {device} beside a partition"
            );
            return Ok(None);
        }
    }
    let t = std::time::Instant::now();
    let g1 = [
        (Section::H, srs.h),
        (Section::L, srs.l),
        (Section::A, srs.a),
        (Section::BG1, srs.b_g1),
    ];
    let result = (|| {
        for (sec, points) in g1 {
            ctx.srs_alloc(sec, points.len())?;
            ctx.srs_upload_g1(sec, points)?;
        }
        ctx.srs_alloc(Section::BG2, srs.b_g2.len())?;
        ctx.srs_upload_g2(srs.b_g2)
    })();
    if let Err(e) = result {
        // Leave nothing half-uploaded behind.
        let _ = ctx.srs_free();
        return Err(e);
    }
    tracing::info!(
        bytes = need,
        ms = t.elapsed().as_millis() as u64,
        "SRS uploaded to device {device}"
    );
    Ok(Some(GENERATION.fetch_add(1, Ordering::Relaxed)))
}
