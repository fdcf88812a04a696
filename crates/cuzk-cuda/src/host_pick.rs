//! The A and B scalars picked on the host: below the top staging tier the
//! device holds one witness vector, so the aux scalars a density bitmap
//! selects are gathered here and uploaded over aux (`backend/gpu.rs`). A
//! 32 GiB PoRep partition selects ~127 M of 134 M scalars for A: one
//! thread took seconds, inside the device lock; the words of the bitmap
//! are split among the cores instead, each writing its own range of the
//! result.

use blstrs::Scalar;
use cuzk_prover::density::Density;

/// The scalars of `aux` whose bit is set in `density`, in order (the
/// lengths must agree: the caller checks).
pub(crate) fn pick(aux: &[Scalar], density: &Density) -> Vec<Scalar> {
    let len = density.len().min(aux.len());
    let words = &density.words()[..len.div_ceil(64)];
    // Bit i of word w, for i < len only.
    let word = |w: usize| -> u64 {
        let bits = words[w];
        let left = len - w * 64;
        if left >= 64 {
            bits
        } else {
            bits & ((1u64 << left) - 1)
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 16);
    let per = words.len().div_ceil(threads).max(1);
    let ranges: Vec<(usize, usize)> = (0..words.len())
        .step_by(per)
        .map(|w| (w, (w + per).min(words.len())))
        .collect();
    let counts: Vec<usize> = ranges
        .iter()
        .map(|&(a, b)| (a..b).map(|w| word(w).count_ones() as usize).sum())
        .collect();
    let total: usize = counts.iter().sum();
    let mut out: Vec<Scalar> = Vec::with_capacity(total);
    {
        let mut rest = &mut out.spare_capacity_mut()[..total];
        std::thread::scope(|s| {
            for (&(a, b), &count) in ranges.iter().zip(&counts) {
                let (mine, others) = std::mem::take(&mut rest).split_at_mut(count);
                rest = others;
                let word = &word;
                s.spawn(move || {
                    let mut at = 0;
                    for w in a..b {
                        let mut bits = word(w);
                        while bits != 0 {
                            let i = w * 64 + bits.trailing_zeros() as usize;
                            mine[at].write(aux[i]);
                            at += 1;
                            bits &= bits - 1;
                        }
                    }
                });
            }
        });
    }
    // SAFETY: the ranges' counts sum to `total` and each thread wrote
    // exactly its count of consecutive slots (one per set bit of its
    // words, the same bits counted above), so all `total` are written.
    unsafe { out.set_len(total) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn serial(aux: &[Scalar], d: &Density) -> Vec<Scalar> {
        aux.iter()
            .zip(d.iter())
            .filter_map(|(s, set)| set.then_some(*s))
            .collect()
    }

    #[test]
    fn picks_what_the_bitmap_selects_in_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (len, percent) in [
            (0usize, 50u32),
            (1, 100),
            (63, 50),
            (64, 100),
            (65, 0),
            (1000, 95),
            (4097, 25),
            (100_003, 50),
        ] {
            let aux: Vec<Scalar> = (0..len).map(|_| Scalar::random(&mut rng)).collect();
            let mut d = Density::new();
            for i in 0..len {
                d.push();
                if rng.gen_range(0..100) < percent {
                    d.set(i);
                }
            }
            let picked = pick(&aux, &d);
            assert_eq!(picked.len(), d.count(), "len {len}");
            assert_eq!(picked, serial(&aux, &d), "len {len}, {percent} %");
        }
    }
}
