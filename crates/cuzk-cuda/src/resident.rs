//! The SRS kept on the device across calls ([`SrsPlacement`]).
//!
//! One SRS per device context: a call with another SRS evicts it. An SRS is
//! known by its slices' addresses and lengths plus the bytes of the first
//! and last point of each section and δ (so another SRS that reuses the
//! same memory is not mistaken for the resident one).

use blstrs::{G1Affine, G2Affine};
use cuzk_prover::backend::SrsRef;

use crate::ffi::{Ctx, Section};
use crate::{CudaError, SrsPlacement};

/// Headroom kept free beside the resident SRS for sppark's MSM buckets,
/// digits and temporaries.
const MSM_HEADROOM: u64 = 4 << 30;

/// What identifies an SRS on the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SrsKey {
    slices: [(usize, usize); 5],
    fingerprint: Vec<u8>,
}

fn g1_bytes(p: Option<&G1Affine>) -> Vec<u8> {
    p.map(|p| p.to_uncompressed().to_vec()).unwrap_or_default()
}

fn g2_bytes(p: Option<&G2Affine>) -> Vec<u8> {
    p.map(|p| p.to_uncompressed().to_vec()).unwrap_or_default()
}

impl SrsKey {
    pub(crate) fn of(srs: &SrsRef<'_>) -> SrsKey {
        let g1s = [srs.h, srs.l, srs.a, srs.b_g1];
        let mut slices = [(0, 0); 5];
        let mut fingerprint = srs.delta_g1.to_uncompressed().to_vec();
        for (i, s) in g1s.iter().enumerate() {
            slices[i] = (s.as_ptr() as usize, s.len());
            fingerprint.extend(g1_bytes(s.first()));
            fingerprint.extend(g1_bytes(s.last()));
        }
        slices[4] = (srs.b_g2.as_ptr() as usize, srs.b_g2.len());
        fingerprint.extend(g2_bytes(srs.b_g2.first()));
        fingerprint.extend(g2_bytes(srs.b_g2.last()));
        SrsKey {
            slices,
            fingerprint,
        }
    }
}

/// Bytes the SRS points take on the device.
pub fn srs_device_bytes(srs: &SrsRef<'_>) -> u64 {
    let g1 = (srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len()) as u64;
    g1 * Section::H.point_bytes() as u64 + srs.b_g2.len() as u64 * Section::BG2.point_bytes() as u64
}

/// Makes `srs` resident when `placement` asks for it and (for `Auto`) it
/// fits beside a partition of domain `n` with `aux` variables, and no
/// partition (`users`) reads the resident one it would evict; returns
/// whether the MSMs can use the resident points. Bytes uploaded are added
/// to `uploaded`.
pub(crate) fn ensure(
    ctx: &mut Ctx,
    device: usize,
    srs: &SrsRef<'_>,
    placement: SrsPlacement,
    (n, aux): (usize, usize),
    users: usize,
    uploaded: &mut u64,
) -> Result<bool, CudaError> {
    if placement == SrsPlacement::Never {
        return Ok(false);
    }
    let key = SrsKey::of(srs);
    if ctx.resident.as_ref() == Some(&key) {
        return Ok(true);
    }
    if users > 0 {
        // Another worker's partition is reading the resident SRS: this
        // partition streams its points instead of evicting it.
        return Ok(false);
    }
    // Evict the other SRS and the scratch buffers, then measure the room.
    ctx.srs_free()?;
    ctx.trim()?;
    let need = srs_device_bytes(srs);
    if placement == SrsPlacement::Auto {
        // Free memory within gpus.vram_limit, the pool's cache returned.
        let (free, _) = ctx.mem_room()?;
        let scratch = ((3 * n + 2 * aux) * std::mem::size_of::<blstrs::Scalar>()) as u64;
        if need + scratch + MSM_HEADROOM > free {
            tracing::info!(
                need,
                free,
                "SRS left on the host: it does not fit on device {device} beside a partition"
            );
            return Ok(false);
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
    *uploaded += need;
    ctx.resident = Some(key);
    tracing::info!(
        bytes = need,
        ms = t.elapsed().as_millis() as u64,
        "SRS resident on device {device}"
    );
    Ok(true)
}
