//! The device tier of SRS residency: what each prover backend made of an
//! SRS on its device ([`ProverBackend::prepare_srs`]), by SRS key (the
//! engine's SRS manager uses the circuit id) and backend slot (its index
//! among the engine's backends).
//!
//! The policy, in one place: a copy is made on first use by a partition of
//! that backend; it is not released while a partition uses it
//! ([`DeviceLease`]); when the device holds another key's copy (the
//! backend answers `Occupied`), the least recently used idle one on that
//! slot is released and the backend asked again, and when there is none
//! the partition proves from host memory. A copy is not released for an
//! SRS under [`SMALLER`]th of its points: a small SRS (a WinningPoSt's,
//! 192 MB) streams from the host rather than push a large idle one (a
//! 32 GiB PoRep's, between two partitions) off the device, since loading
//! that again costs more than streaming this. A key the backend
//! proves from host memory (no device tier, or it does not fit) is not
//! asked again on that slot until another key is made ready there. The
//! SRS manager drops a key's copies when its host copy leaves the hot
//! tier ([`DeviceTier::forget`]). What a backend keeps on its device, and
//! how, is its own business: the tier holds the opaque [`DeviceSrs`], and
//! dropping the last clone frees it.
//!
//! cuzk-lab's benches and the GPU tests use a tier of their own, so they
//! keep an SRS on the device exactly as the daemon does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use cuzk_prover::srs::Section;
use cuzk_prover::{DeviceSrs, ProverBackend, ProverError, SrsPreparation, SrsRef, WitnessSize};
use tracing::info;

/// An idle copy stays on its device for an SRS with fewer than 1/SMALLER
/// of its points (see the module doc).
pub const SMALLER: usize = 8;

/// Points of `srs`, all sections: the size the tier compares.
fn points(srs: &SrsRef<'_>) -> usize {
    srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len() + srs.b_g2.len()
}

/// A ready copy of an SRS on a backend's device, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCopyInfo {
    pub backend: String,
    /// Device memory the copy takes.
    pub bytes: u64,
    /// The sections on the device (`h`, `l`, `a`, `b_g1`, `b_g2`); the
    /// others are streamed from host memory.
    pub resident: Vec<&'static str>,
}

/// One key's state on one backend's device.
enum DeviceCopy {
    Ready {
        srs: DeviceSrs,
        bytes: u64,
        /// The sections on the device (the others stream).
        resident: Vec<Section>,
        /// Points of the SRS (all sections), to compare sizes.
        points: usize,
        backend: String,
        in_use: u32,
        last_use: Instant,
    },
    /// Proved from host memory on this device (see the module doc).
    Host,
}

type Copies = HashMap<(String, usize), DeviceCopy>;

#[derive(Default)]
struct Inner {
    copies: Mutex<Copies>,
    /// One preparation per slot at a time: the second finds the first's.
    turns: Mutex<HashMap<usize, Arc<Mutex<()>>>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Copies> {
        self.copies.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The device copies of SRS, by key and backend slot. Cheap to clone;
/// clones share the table.
#[derive(Clone, Default)]
pub struct DeviceTier {
    inner: Arc<Inner>,
}

/// A partition's use of its SRS's device copy, or of none (then it proves
/// from host memory). The copy is not released while this lives.
pub struct DeviceLease {
    srs: Option<DeviceSrs>,
    owner: Option<(Arc<Inner>, (String, usize))>,
}

impl DeviceLease {
    fn host() -> DeviceLease {
        DeviceLease {
            srs: None,
            owner: None,
        }
    }

    /// The device copy to prove with ([`SrsRef::on_device`]), if any.
    pub fn srs(&self) -> Option<&DeviceSrs> {
        self.srs.as_ref()
    }
}

impl Drop for DeviceLease {
    fn drop(&mut self) {
        // This clone goes first: once the copy counts as idle, the table's
        // may be the last one, and releasing it frees the device's copy.
        drop(self.srs.take());
        if let Some((inner, at)) = self.owner.take() {
            if let Some(DeviceCopy::Ready {
                in_use, last_use, ..
            }) = inner.lock().get_mut(&at)
            {
                *in_use = in_use.saturating_sub(1);
                *last_use = Instant::now();
            }
        }
    }
}

impl DeviceTier {
    pub fn new() -> DeviceTier {
        DeviceTier::default()
    }

    /// The device copy of `srs` (known as `key`) on `backend` (slot
    /// `slot`), made ready for partitions of `size` if there is none yet
    /// (see the module doc). `Ok` with no copy: prove from host memory.
    pub fn on_device(
        &self,
        key: &str,
        srs: &SrsRef<'_>,
        slot: usize,
        backend: &dyn ProverBackend,
        size: &WitnessSize,
    ) -> Result<DeviceLease, ProverError> {
        let at = (key.to_string(), slot);
        if let Some(found) = self.lookup(&at) {
            return Ok(found);
        }
        let turn = {
            let mut turns = self.inner.turns.lock().unwrap_or_else(|p| p.into_inner());
            turns.entry(slot).or_default().clone()
        };
        let _turn = turn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = self.lookup(&at) {
            return Ok(found);
        }
        let wanted = points(srs);
        loop {
            match backend.prepare_srs(srs, size)? {
                SrsPreparation::Ready {
                    srs,
                    bytes,
                    resident,
                } => {
                    let name = backend.name();
                    info!(srs = key, backend = %name, bytes, "SRS ready on the device");
                    let mut copies = self.inner.lock();
                    // Another SRS on this device: keys left on the host for
                    // lack of room may fit now.
                    copies.retain(|(_, s), c| *s != slot || !matches!(c, DeviceCopy::Host));
                    copies.insert(
                        at.clone(),
                        DeviceCopy::Ready {
                            srs: srs.clone(),
                            bytes,
                            resident,
                            points: wanted,
                            backend: name,
                            in_use: 1,
                            last_use: Instant::now(),
                        },
                    );
                    return Ok(DeviceLease {
                        srs: Some(srs),
                        owner: Some((self.inner.clone(), at)),
                    });
                }
                SrsPreparation::Occupied => {
                    let Some(released) = self.release_idle(slot, key, wanted) else {
                        // Other partitions prove with the device's copy,
                        // or it is larger: this one proves from host memory.
                        return Ok(DeviceLease::host());
                    };
                    // Freed on its device, the table unlocked.
                    drop(released);
                }
                SrsPreparation::Host => {
                    self.inner.lock().insert(at, DeviceCopy::Host);
                    return Ok(DeviceLease::host());
                }
            }
        }
    }

    /// Drops every device copy of `key` (its host copy is gone); frees
    /// them after the table is unlocked.
    pub fn forget(&self, key: &str) {
        let gone: Vec<DeviceCopy> = {
            let mut copies = self.inner.lock();
            let keys: Vec<(String, usize)> =
                copies.keys().filter(|(k, _)| k == key).cloned().collect();
            keys.iter().filter_map(|at| copies.remove(at)).collect()
        };
        drop(gone);
    }

    /// The ready copies of `key`, by backend.
    pub fn ready_on(&self, key: &str) -> Vec<DeviceCopyInfo> {
        let mut out: Vec<DeviceCopyInfo> = self
            .inner
            .lock()
            .iter()
            .filter(|((k, _), _)| k == key)
            .filter_map(|(_, c)| match c {
                DeviceCopy::Ready {
                    backend,
                    bytes,
                    resident,
                    ..
                } => Some(DeviceCopyInfo {
                    backend: backend.clone(),
                    bytes: *bytes,
                    resident: resident.iter().map(|s| s.name()).collect(),
                }),
                DeviceCopy::Host => None,
            })
            .collect();
        out.sort_by(|a, b| a.backend.cmp(&b.backend));
        out
    }

    /// What the tier says of `at`, counting one more user of a ready copy;
    /// `None` when it says nothing yet.
    fn lookup(&self, at: &(String, usize)) -> Option<DeviceLease> {
        match self.inner.lock().get_mut(at)? {
            DeviceCopy::Ready { srs, in_use, .. } => {
                *in_use += 1;
                Some(DeviceLease {
                    srs: Some(srs.clone()),
                    owner: Some((self.inner.clone(), at.clone())),
                })
            }
            DeviceCopy::Host => Some(DeviceLease::host()),
        }
    }

    /// Takes the least recently used idle copy on `slot` of a key other
    /// than `keep`, not more than [`SMALLER`] times the `wanted` points,
    /// out of the table (`None` when there is none).
    fn release_idle(&self, slot: usize, keep: &str, wanted: usize) -> Option<DeviceCopy> {
        let mut copies = self.inner.lock();
        let (_, at) = copies
            .iter()
            .filter_map(|((k, s), c)| match c {
                DeviceCopy::Ready {
                    in_use: 0,
                    last_use,
                    points,
                    ..
                } if *s == slot && k != keep && *points <= wanted.saturating_mul(SMALLER) => {
                    Some((*last_use, (k.clone(), *s)))
                }
                _ => None,
            })
            .min()?;
        info!(srs = %at.0, slot, "SRS released from the device for another one");
        copies.remove(&at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A device with room for one SRS, or none (`fits` false).
    struct OneSlot {
        fits: bool,
        held: Arc<Mutex<Option<usize>>>,
        asked: AtomicUsize,
        prepared: AtomicUsize,
    }

    /// The handle of `OneSlot`'s SRS: dropping it frees the slot.
    struct Held(Arc<Mutex<Option<usize>>>);

    impl Drop for Held {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = None;
        }
    }

    impl ProverBackend for OneSlot {
        fn name(&self) -> String {
            "one-slot".into()
        }
        fn host_bytes(&self, _: &WitnessSize) -> cuzk_prover::HostBytes {
            Default::default()
        }
        fn prepare_srs(
            &self,
            srs: &SrsRef<'_>,
            _: &WitnessSize,
        ) -> Result<SrsPreparation, ProverError> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            if !self.fits {
                return Ok(SrsPreparation::Host);
            }
            let mut held = self.held.lock().unwrap();
            if held.is_some() {
                return Ok(SrsPreparation::Occupied);
            }
            *held = Some(srs.h.len());
            self.prepared.fetch_add(1, Ordering::Relaxed);
            Ok(SrsPreparation::Ready {
                srs: Arc::new(Held(self.held.clone())),
                bytes: 100,
                resident: vec![Section::H, Section::BG1],
            })
        }
        fn prove_with(
            &self,
            _: &mut [cuzk_prover::PartitionWitness],
            _: &SrsRef<'_>,
            _: &[blstrs::Scalar],
            _: &[blstrs::Scalar],
            _: &mut dyn FnMut(usize),
        ) -> Result<(Vec<cuzk_prover::Proof>, cuzk_prover::ProveStats), ProverError> {
            Err(ProverError::Backend("not in this test".into()))
        }
    }

    fn srs_of(points: &[blstrs::G1Affine]) -> SrsRef<'_> {
        use group::prime::PrimeCurveAffine;
        SrsRef {
            alpha_g1: blstrs::G1Affine::identity(),
            beta_g1: blstrs::G1Affine::identity(),
            beta_g2: blstrs::G2Affine::identity(),
            delta_g1: blstrs::G1Affine::identity(),
            delta_g2: blstrs::G2Affine::identity(),
            h: points,
            l: &[],
            a: &[],
            b_g1: &[],
            b_g2: &[],
            device: None,
        }
    }

    #[test]
    fn one_policy_for_a_device_with_room_for_one_srs() {
        use group::prime::PrimeCurveAffine;
        let dev = OneSlot {
            fits: true,
            held: Default::default(),
            asked: AtomicUsize::new(0),
            prepared: AtomicUsize::new(0),
        };
        let tier = DeviceTier::new();
        let size = WitnessSize::default();
        // "b" is more than SMALLER times "a"; "c" is not.
        let (p1, p2, p3) = (
            vec![blstrs::G1Affine::identity(); 1],
            vec![blstrs::G1Affine::identity(); SMALLER + 1],
            vec![blstrs::G1Affine::identity(); 2],
        );
        let (a, b, c) = (srs_of(&p1), srs_of(&p2), srs_of(&p3));
        // First use prepares; a second user shares the copy.
        let a1 = tier.on_device("a", &a, 0, &dev, &size).unwrap();
        let a2 = tier.on_device("a", &a, 0, &dev, &size).unwrap();
        assert!(a1.srs().is_some() && a2.srs().is_some());
        assert_eq!(dev.prepared.load(Ordering::Relaxed), 1);
        let one = |bytes| DeviceCopyInfo {
            backend: "one-slot".into(),
            bytes,
            resident: vec!["h", "b_g1"],
        };
        assert_eq!(tier.ready_on("a"), [one(100)]);
        // While "a" is in use, "b" proves from host memory.
        assert!(tier
            .on_device("b", &b, 0, &dev, &size)
            .unwrap()
            .srs()
            .is_none());
        drop((a1, a2));
        // Idle, "a" is released for "b".
        let b1 = tier.on_device("b", &b, 0, &dev, &size).unwrap();
        assert!(b1.srs().is_some());
        assert_eq!(*dev.held.lock().unwrap(), Some(SMALLER + 1));
        assert!(tier.ready_on("a").is_empty());
        drop(b1);
        // Idle but much larger, "b" stays: the small "a" proves from host
        // memory, every time it asks.
        for _ in 0..2 {
            let a3 = tier.on_device("a", &a, 0, &dev, &size).unwrap();
            assert!(a3.srs().is_none());
            assert_eq!(*dev.held.lock().unwrap(), Some(SMALLER + 1));
        }
        assert_eq!(tier.ready_on("b"), [one(100)]);
        // "c" is smaller than "b" but not by that much: "b" goes for it.
        let c1 = tier.on_device("c", &c, 0, &dev, &size).unwrap();
        assert!(c1.srs().is_some());
        assert_eq!(*dev.held.lock().unwrap(), Some(2));
        assert!(tier.ready_on("b").is_empty());
        drop(c1);
        // Forgetting a key frees its copy.
        tier.forget("c");
        assert_eq!(*dev.held.lock().unwrap(), None);
        assert!(tier.ready_on("c").is_empty());
    }

    #[test]
    fn a_key_that_does_not_fit_is_not_asked_again() {
        use group::prime::PrimeCurveAffine;
        let dev = OneSlot {
            fits: false,
            held: Default::default(),
            asked: AtomicUsize::new(0),
            prepared: AtomicUsize::new(0),
        };
        let tier = DeviceTier::new();
        let p = vec![blstrs::G1Affine::identity(); 1];
        for _ in 0..3 {
            let l = tier
                .on_device("big", &srs_of(&p), 0, &dev, &WitnessSize::default())
                .unwrap();
            assert!(l.srs().is_none());
        }
        assert!(tier.ready_on("big").is_empty());
        assert_eq!(dev.asked.load(Ordering::Relaxed), 1);
    }
}
