//! The aux assignment packed for its host-to-device copy: two bitmaps
//! (which scalars are neither 0 nor 1, which are 1) and the values of the
//! others, in order. A PoRep partition's aux is ~98 % zeros and ones
//! (docs/perf), so its 4.3 GB at 2^27 cross the bus as ~0.1 GB and the
//! device expands them (`cuda/aux_pack.cuh`). The copies it saves were
//! sharing the bus with the SRS sections a small card streams (three aux
//! uploads a pair of partitions sharing a pass, 2026-12-05). A witness with
//! more than one in [`MAX_OTHERS_SHARE`] others is copied as it is.

use blstrs::Scalar;
use ff::Field;

/// The largest share of others (1/8) that is packed: the expansion's
/// temporary then holds at most ~4.5 bytes a scalar and CUB's scratch
/// (admitted under `gpus.vram_limit`, else aux is copied as it is), and
/// the copy is at most ~1/7 of the plain one.
pub(crate) const MAX_OTHERS_SHARE: usize = 8;

/// A packed aux assignment (see the module documentation).
pub(crate) struct PackedAux {
    /// Bit i of word i/64: scalar i is neither 0 nor 1.
    pub(crate) other: Vec<u64>,
    /// Bit i of word i/64: scalar i is 1.
    pub(crate) one: Vec<u64>,
    /// The others' values in order.
    pub(crate) others: Vec<Scalar>,
}

/// One 64-aligned run of scalars packed, or None as soon as more than
/// one in [`MAX_OTHERS_SHARE`] of them are others (a WindowPoSt witness
/// is ~99 % others: it stops at once instead of copying them).
fn pack_run(run: &[Scalar]) -> Option<PackedAux> {
    let words = run.len().div_ceil(64);
    let limit = run.len() / MAX_OTHERS_SHARE;
    let mut p = PackedAux {
        other: vec![0; words],
        one: vec![0; words],
        others: Vec::with_capacity(limit),
    };
    let (zero, one) = (Scalar::ZERO, Scalar::ONE);
    for (i, s) in run.iter().enumerate() {
        let bit = 1u64 << (i % 64);
        if *s == one {
            p.one[i / 64] |= bit;
        } else if *s != zero {
            if p.others.len() == limit {
                return None;
            }
            p.other[i / 64] |= bit;
            p.others.push(*s);
        }
    }
    Some(p)
}

/// `aux` packed on up to `threads` threads (0: one a core, at most 16), or
/// None when more than one in [`MAX_OTHERS_SHARE`] of the scalars of a
/// thread's run are others.
pub(crate) fn pack(aux: &[Scalar], threads: usize) -> Option<PackedAux> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(4, |n| n.get().min(16)),
        t => t,
    }
    // A thread a 2^16 scalars at least (the 2 KiB circuits' need one).
    .min(aux.len() / (1 << 16) + 1);
    // Runs of whole words, so each thread's bitmaps are whole words too.
    let run = aux.len().div_ceil(threads).next_multiple_of(64).max(64);
    if aux.len() <= run {
        return pack_run(aux);
    }
    let parts: Vec<PackedAux> = std::thread::scope(|s| {
        let handles: Vec<_> = aux
            .chunks(run)
            .map(|c| s.spawn(move || pack_run(c)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect::<Option<Vec<_>>>()
    })?;
    let count: usize = parts.iter().map(|p| p.others.len()).sum();
    let mut all = PackedAux {
        other: Vec::with_capacity(aux.len().div_ceil(64)),
        one: Vec::with_capacity(aux.len().div_ceil(64)),
        others: Vec::with_capacity(count),
    };
    for p in parts {
        all.other.extend_from_slice(&p.other);
        all.one.extend_from_slice(&p.one);
        all.others.extend_from_slice(&p.others);
    }
    Some(all)
}

#[cfg(feature = "cuda")]
mod upload {
    use blstrs::Scalar;

    use super::PackedAux;
    use crate::error::CudaError;
    use crate::ffi::{check, Ctx, RawCtx};

    extern "C" {
        #[allow(clippy::too_many_arguments)]
        fn cuzk_cuda_upload_aux_packed(
            ctx: *mut RawCtx,
            aux: *const Scalar,
            len: usize,
            other: *const u64,
            one: *const u64,
            others: *const Scalar,
            nothers: usize,
            one_v: *const Scalar,
            packed: *mut i32,
        ) -> sppark::Error;
    }

    impl Ctx {
        /// Uploads the aux assignment (source [`crate::Source::Aux`]):
        /// packed when `gpus.tuning.pack_aux` is on and few of its
        /// scalars are neither 0 nor 1, as it is otherwise.
        pub(crate) fn upload_aux(&mut self, aux: &[Scalar]) -> Result<(), CudaError> {
            match self.pack_aux.then(|| super::pack(aux, 0)).flatten() {
                Some(p) => self.upload_aux_packed(aux, &p),
                None => self.upload_aux_plain(aux),
            }
        }

        /// `aux` uploaded from `p`, its packed form (aux itself when the
        /// device has no room to expand it).
        fn upload_aux_packed(&mut self, aux: &[Scalar], p: &PackedAux) -> Result<(), CudaError> {
            let one = <Scalar as ff::Field>::ONE;
            let mut packed = 0i32;
            // SAFETY: aux, the bitmaps (a word per 64 scalars each), the
            // others and `one` outlive the call, which waits for its
            // copies; it writes one int.
            check(unsafe {
                cuzk_cuda_upload_aux_packed(
                    self.raw(),
                    aux.as_ptr(),
                    aux.len(),
                    p.other.as_ptr(),
                    p.one.as_ptr(),
                    p.others.as_ptr(),
                    p.others.len(),
                    &one,
                    &mut packed,
                )
            })?;
            self.aux_uploads_packed += u64::from(packed != 0);
            Ok(())
        }
    }
}

/// What the device's expansion computes, on the host (for tests).
#[cfg(test)]
pub(crate) fn unpack(p: &PackedAux, len: usize) -> Vec<Scalar> {
    let mut next = p.others.iter();
    (0..len)
        .map(|i| {
            let bit = 1u64 << (i % 64);
            if p.other[i / 64] & bit != 0 {
                *next.next().expect("an other value for each other bit")
            } else if p.one[i / 64] & bit != 0 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn witness(len: usize, every: usize) -> Vec<Scalar> {
        (0..len)
            .map(|i| match (i * 7919) % 100 {
                _ if i % every == every - 1 => Scalar::from(1000 + i as u64),
                0..=49 => Scalar::ZERO,
                _ => Scalar::ONE,
            })
            .collect()
    }

    #[test]
    fn a_packed_witness_unpacks_to_itself_for_any_length_and_thread_count() {
        // 300,000: several threads' runs, stitched.
        for len in [0, 1, 63, 64, 65, 1000, 4097, 300_000] {
            for threads in [1, 3, 16] {
                let aux = witness(len, 40);
                let p = pack(&aux, threads).expect("few others");
                assert_eq!(p.other.len(), len.div_ceil(64));
                assert_eq!(p.one.len(), len.div_ceil(64));
                assert_eq!(p.others.len(), len / 40);
                assert_eq!(unpack(&p, len), aux, "len {len}, {threads} threads");
            }
        }
    }

    #[test]
    fn a_witness_of_many_others_is_not_packed() {
        let aux = witness(10_000, 7);
        assert!(pack(&aux, 4).is_none());
        let aux = witness(10_000, 9);
        assert!(pack(&aux, 4).is_some());
    }
}
