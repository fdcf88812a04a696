//! Blocked in-place bit-reversal permutation.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{rev_bits, SyncPtr};

/// log2 of the tile edge used by the blocked bit-reversal permutation.
const TILE_LOG: u32 = 4;
const TILE: usize = 1 << TILE_LOG;

/// In-place bit-reversal permutation of a power-of-two-length slice.
///
/// Blocked for cache efficiency: with indices split as `(hi, mid, lo)` (`hi`, `lo` of
/// `TILE_LOG` bits), `rev(hi, mid, lo) = (rev lo, rev mid, rev hi)`, so the `TILE x TILE` tile
/// `{(*, mid, *)}` maps transposed onto the tile of `rev(mid)`. Each pair of tiles is read
/// into stack buffers row by row (contiguous runs) and written back transposed.
pub fn bitrev_permute(a: &mut [Scalar]) {
    let n = a.len();
    assert!(
        n.is_power_of_two() || n == 0,
        "bitrev_permute: length {n} is not a power of two"
    );
    let log_n = n.trailing_zeros();
    if log_n < 2 * TILE_LOG {
        for i in 0..n {
            let j = rev_bits(i, log_n);
            if i < j {
                a.swap(i, j);
            }
        }
        return;
    }
    let mid_log = log_n - 2 * TILE_LOG;
    let hi_stride = 1usize << (mid_log + TILE_LOG);
    let rev_t: [usize; TILE] = std::array::from_fn(|i| rev_bits(i, TILE_LOG));
    let ptr = SyncPtr(a.as_mut_ptr());
    let read = |mid: usize, buf: &mut [Scalar; TILE * TILE]| {
        for (hi, row) in buf.chunks_exact_mut(TILE).enumerate() {
            // SAFETY: see below; reads row `hi` of tile `mid`, TILE elements in bounds.
            unsafe {
                let src = ptr.get().add(hi * hi_stride + (mid << TILE_LOG));
                std::ptr::copy_nonoverlapping(src, row.as_mut_ptr(), TILE);
            }
        }
    };
    let write = |mid: usize, buf: &[Scalar; TILE * TILE]| {
        for r in 0..TILE {
            let row: [Scalar; TILE] = std::array::from_fn(|c| buf[rev_t[c] * TILE + rev_t[r]]);
            // SAFETY: see below; writes row `r` of tile `mid`, TILE elements in bounds.
            unsafe {
                let dst = ptr.get().add(r * hi_stride + (mid << TILE_LOG));
                std::ptr::copy_nonoverlapping(row.as_ptr(), dst, TILE);
            }
        }
    };
    // SAFETY (for `read`/`write`): the task for `m1` touches only tiles `m1` and `m2 = rev(m1)`,
    // and runs only if `m1 <= m2`; `rev` is an involution, so every tile belongs to exactly one
    // task. `a` is exclusively borrowed for the duration of the loop.
    (0..1usize << mid_log).into_par_iter().for_each(|m1| {
        let m2 = rev_bits(m1, mid_log);
        if m1 > m2 {
            return;
        }
        let mut t1 = [Scalar::ZERO; TILE * TILE];
        read(m1, &mut t1);
        if m1 == m2 {
            write(m1, &t1);
        } else {
            let mut t2 = [Scalar::ZERO; TILE * TILE];
            read(m2, &mut t2);
            write(m2, &t1);
            write(m1, &t2);
        }
    });
}
