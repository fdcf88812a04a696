//! An SRS on the device: its points in the owner context's sections, made
//! ready by [`CudaBackend::prepare_srs`](crate::CudaBackend) for the
//! engine's SRS manager, which keeps the [`OnDevice`] handle in its device
//! tier (keyed by circuit id) for as long as the host copy is hot. This is
//! no cache of its own: one SRS at a time per device, freed when the
//! manager drops the handle, and a device that holds one answers
//! `Occupied` until then (the manager releases an idle one and asks
//! again).
//!
//! On a card that cannot hold the whole SRS beside a partition
//! (`gpus.srs_on_device = "auto"`), the sections that fit stay
//! (`residency.rs` says which) and the others' host memory is page-locked
//! (`pinned.rs`) for the tiles their MSMs stream (`cuda/stream_tiles.cuh`);
//! the handle holds both.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cuzk_prover::backend::SrsRef;
use cuzk_prover::srs::Section;
use cuzk_prover::{SrsPreparation, WitnessSize};

use crate::config::SrsPlacement;
use crate::device::Device;
use crate::error::CudaError;
use crate::ffi::{point_bytes, Ctx};
use crate::pinned::Pinned;
use crate::residency::{self, SECTIONS};

/// Headroom kept free beside an SRS on the device for the MSM scratch.
const MSM_HEADROOM: u64 = 4 << 30;

/// Headroom beside the resident sections of an SRS that does not all fit:
/// the streamed MSMs' tiles and scratch (they fit themselves into what is
/// free, faster with more).
const STREAM_HEADROOM: u64 = 3 << 30;

/// The sections in the order of the handle's arrays.
const ORDER: [Section; SECTIONS] = [
    Section::H,
    Section::L,
    Section::A,
    Section::BG1,
    Section::BG2,
];

/// The handle of an SRS on a device; dropping it frees the points on the
/// device and unlocks the streamed sections' host pages.
pub(crate) struct OnDevice {
    dev: Arc<Device>,
    generation: u64,
    /// Points per section (h, l, a, b_g1, b_g2).
    lens: [usize; SECTIONS],
    /// Which sections are on the device; the others are streamed.
    resident: [bool; SECTIONS],
    /// The streamed sections' host memory, page-locked while this lives
    /// (dropped after `Drop::drop` has freed the device's sections).
    _pinned: Vec<Pinned>,
}

impl OnDevice {
    /// Whether this is the SRS on `dev` with the sections `srs` has.
    pub(crate) fn serves(&self, dev: &Arc<Device>, srs: &SrsRef<'_>) -> bool {
        Arc::ptr_eq(&self.dev, dev)
            && *dev.srs_state() == Some(self.generation)
            && self.lens == lens(srs)
    }

    /// Whether section `sec` is on the device (else its MSM streams it).
    pub(crate) fn resident(&self, sec: Section) -> bool {
        ORDER
            .iter()
            .position(|s| *s == sec)
            .is_some_and(|i| self.resident[i])
    }
}

/// What [`upload`] made of an SRS on the device.
struct Uploaded {
    generation: u64,
    resident: [bool; SECTIONS],
    pinned: Vec<Pinned>,
    device_bytes: u64,
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

fn lens(srs: &SrsRef<'_>) -> [usize; SECTIONS] {
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
    section_bytes(srs).iter().sum()
}

/// Bytes of each section's points (h, l, a, b_g1, b_g2).
fn section_bytes(srs: &SrsRef<'_>) -> [u64; SECTIONS] {
    let l = lens(srs);
    std::array::from_fn(|i| l[i] as u64 * point_bytes(ORDER[i]) as u64)
}

/// Makes `srs` ready on `dev` for partitions of `size`, as `placement`
/// says (for `Auto`: only when it fits beside such a partition; else the
/// sections that fit, chosen for `k` partitions sharing each streamed
/// pass).
pub(crate) fn prepare(
    dev: &Arc<Device>,
    device: usize,
    srs: &SrsRef<'_>,
    (placement, k): (SrsPlacement, usize),
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
            let made = upload(&mut owner, device, srs, (placement, k), size);
            if let Ok(Some(u)) = &made {
                *st = Some(u.generation);
            }
            made
        };
        match attempt {
            Ok(Some(u)) => {
                let handle = OnDevice {
                    dev: Arc::clone(dev),
                    generation: u.generation,
                    lens: lens(srs),
                    resident: u.resident,
                    _pinned: u.pinned,
                };
                return Ok(SrsPreparation::Ready {
                    srs: Arc::new(handle),
                    bytes: u.device_bytes,
                    resident: ORDER
                        .into_iter()
                        .zip(u.resident)
                        .filter_map(|(s, on)| on.then_some(s))
                        .collect(),
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

/// Uploads `srs` into the owner's sections (nothing else on the device):
/// all of them, or with `Auto` on a card that cannot hold them all beside
/// a partition of `size`, those that fit (`residency.rs`), the others'
/// host pages locked for streaming. `None`: nothing fits and nothing could
/// be locked (the points stream from pageable memory).
fn upload(
    ctx: &mut Ctx,
    device: usize,
    srs: &SrsRef<'_>,
    (placement, k): (SrsPlacement, usize),
    size: &WitnessSize,
) -> Result<Option<Uploaded>, CudaError> {
    static GENERATION: AtomicU64 = AtomicU64::new(1);
    // Free the scratch buffers, then measure the room.
    ctx.srs_free()?;
    ctx.trim()?;
    let bytes = section_bytes(srs);
    let need: u64 = bytes.iter().sum();
    let resident = match placement {
        SrsPlacement::Auto => {
            // Free memory within gpus.vram_limit, the pool's cache returned.
            let (free, _) = ctx.mem_room()?;
            let (n, aux) = (size.constraints as u64, size.aux as u64);
            let fr = std::mem::size_of::<blstrs::Scalar>() as u64;
            let scratch = (3 * n + 2 * aux) * fr;
            if need + scratch + MSM_HEADROOM <= free {
                [true; SECTIONS]
            } else {
                // A partition at the a-only tier with a, b and c evaluated
                // on the device (two vectors and aux: the most that tier
                // holds), the next partition's aux (uploaded outside the
                // device lock while this one runs: without its room the
                // second worker waits for memory while the first proves
                // partition after partition, measured at 24 and 32 GiB on
                // 2026-12-04) and the streamed MSMs' tiles beside the
                // sections that stay.
                let partition = (2 * n + 2 * aux) * fr + aux / 8 + STREAM_HEADROOM;
                let chosen = residency::choose(free.saturating_sub(partition), bytes, k);
                tracing::info!(
                    need,
                    free,
                    resident = %residency::names(&chosen),
                    "the SRS does not fit on device {device} beside a partition: \
                     the sections named stay on it, the others stream from host memory"
                );
                chosen
            }
        }
        _ => [true; SECTIONS],
    };
    let t = std::time::Instant::now();
    let result = (|| {
        for (i, sec) in ORDER.into_iter().enumerate() {
            if !resident[i] {
                continue;
            }
            match sec {
                Section::BG2 => {
                    ctx.srs_alloc(sec, srs.b_g2.len())?;
                    ctx.srs_upload(sec, srs.b_g2)?;
                }
                _ => {
                    let points = g1_section(srs, sec);
                    ctx.srs_alloc(sec, points.len())?;
                    ctx.srs_upload(sec, points)?;
                }
            }
        }
        Ok::<(), CudaError>(())
    })();
    if let Err(e) = result {
        // Leave nothing half-uploaded behind.
        let _ = ctx.srs_free();
        return Err(e);
    }
    let device_bytes: u64 = (0..SECTIONS)
        .filter(|i| resident[*i])
        .map(|i| bytes[i])
        .sum();
    let uploaded_ms = t.elapsed().as_millis() as u64;
    let pinned = pin_streamed(srs, &resident);
    tracing::info!(
        bytes = device_bytes,
        ms = uploaded_ms,
        resident = %residency::names(&resident),
        pinned_bytes = pinned.iter().map(|p| p.bytes() as u64).sum::<u64>(),
        "SRS made ready on device {device}"
    );
    if device_bytes == 0 && pinned.is_empty() {
        return Ok(None);
    }
    Ok(Some(Uploaded {
        generation: GENERATION.fetch_add(1, Ordering::Relaxed),
        resident,
        pinned,
        device_bytes,
    }))
}

/// The G1 points of `sec` (not [`Section::BG2`]).
fn g1_section<'a>(srs: &SrsRef<'a>, sec: Section) -> &'a [blstrs::G1Affine] {
    match sec {
        Section::H => srs.h,
        Section::L => srs.l,
        Section::A => srs.a,
        _ => srs.b_g1,
    }
}

/// Page-locks the host memory of the sections not `resident`, once, so
/// their tiles are copied by DMA beside the kernels. A section that cannot
/// be locked (the driver refuses, or memory is short) streams from
/// pageable memory through the chunk ring: slower, not wrong.
fn pin_streamed(srs: &SrsRef<'_>, resident: &[bool; SECTIONS]) -> Vec<Pinned> {
    let t = std::time::Instant::now();
    let mut pinned = Vec::new();
    for (i, sec) in ORDER.into_iter().enumerate() {
        if resident[i] {
            continue;
        }
        let locked = match sec {
            Section::BG2 => Pinned::register(srs.b_g2),
            _ => Pinned::register(g1_section(srs, sec)),
        };
        match locked {
            Ok(Some(p)) => pinned.push(p),
            Ok(None) => {}
            Err(e) => tracing::warn!(
                section = ?sec,
                %e,
                "could not page-lock an SRS section's host memory: it streams from pageable memory"
            ),
        }
    }
    if !pinned.is_empty() {
        tracing::info!(
            bytes = pinned.iter().map(|p| p.bytes() as u64).sum::<u64>(),
            ms = t.elapsed().as_millis() as u64,
            "SRS sections page-locked for streaming"
        );
    }
    pinned
}
