//! Which SRS sections stay on a card that cannot hold them all
//! (`gpus.srs_on_device = "auto"`): the rule, apart from the upload
//! (`device_srs.rs`) so it is tested without a GPU.
//!
//! Each partition runs five MSMs, one per section (h, l, a, b_g1, b_g2).
//! A section left on the host is streamed in tiles whose copies overlap
//! that MSM's kernels, so what a resident section saves is the part of
//! its copy its MSM cannot hide. Measured per 2^27 partition alone at
//! 16 GiB against resident (gpu-bench, H200, 2026-12-04/05): H 824 vs
//! 645 ms (~14 ms a streamed GB: its long full-width MSM hides much of
//! the copy), L 340 vs 126, A 329 vs 125, B_G1 110 vs 42, B_G2 232 vs 99
//! (~17-21 ms a GB: their mostly 0/1 scalars make them copy-bound). But
//! partitions sharing a pass (`gpus.partitions_per_pass` = k) stream each
//! witness section once for k of them, and H once for each: a witness
//! section's cost a partition is divided by k, H's is not. So each set of
//! sections that fits is scored by the time it saves a partition (H's
//! bytes × 14, the witness sections' × 17 / k), and the best set stays:
//! alone (k = 1) the witness sections mostly go first, shared (k ≥ 2) H
//! does. k is the configured `gpus.partitions_per_pass`: it assumes the
//! card proves partitions of one circuit several at a time (a PoRep's
//! ten, under load), not lone or CRITICAL ones.

/// Sections in the order of `OnDevice`'s arrays: h, l, a, b_g1, b_g2.
pub const SECTIONS: usize = 5;

/// The index of H's section.
const H: usize = 0;

/// Streaming cost of H a GB (ms, see the module doc).
const H_MS_PER_GB: u128 = 14;
/// Streaming cost of a witness section a GB when one partition streams it.
const WITNESS_MS_PER_GB: u128 = 17;

/// The sections to keep on the device given `room` bytes for them, each
/// section's `bytes`, and `k` partitions sharing each streamed pass: of
/// every set that fits, the one that saves a partition the most streaming
/// time (see the module doc), then the one with more bytes.
pub fn choose(room: u64, bytes: [u64; SECTIONS], k: usize) -> [bool; SECTIONS] {
    let k = k.max(1) as u128;
    let mut best = (0u128, 0u64, 0usize);
    for set in 0usize..(1 << SECTIONS) {
        let mut total = 0u64;
        // The time saved, scaled by k (H's × k, the witness sections' × 1).
        let mut saved = 0u128;
        for (i, b) in bytes.iter().enumerate() {
            if set & (1 << i) != 0 {
                total = total.saturating_add(*b);
                saved += u128::from(*b)
                    * if i == H {
                        H_MS_PER_GB * k
                    } else {
                        WITNESS_MS_PER_GB
                    };
            }
        }
        if total <= room && (saved, total) > (best.0, best.1) {
            best = (saved, total, set);
        }
    }
    std::array::from_fn(|i| best.2 & (1 << i) != 0)
}

/// The sections' names, for logs and status: the resident ones of `on`.
pub fn names(on: &[bool; SECTIONS]) -> String {
    const NAMES: [&str; SECTIONS] = ["h", "l", "a", "b_g1", "b_g2"];
    let v: Vec<&str> = NAMES
        .iter()
        .zip(on)
        .filter_map(|(n, r)| r.then_some(*n))
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;
    /// A 32 GiB PoRep partition's sections (h, l, a, b_g1, b_g2), ~47.4 GB.
    const POREP32: [u64; 5] = [
        12_885 * GB / 1000,
        12_500 * GB / 1000,
        12_500 * GB / 1000,
        3_200 * GB / 1000,
        6_300 * GB / 1000,
    ];

    #[test]
    fn everything_fits_everything_stays() {
        for k in [1, 2, 8] {
            assert_eq!(choose(50 * GB, POREP32, k), [true; 5]);
        }
        assert_eq!(names(&[true; 5]), "h,l,a,b_g1,b_g2");
    }

    #[test]
    fn nothing_fits_nothing_stays() {
        assert_eq!(choose(3 * GB, POREP32, 2), [false; 5]);
        assert_eq!(names(&[false; 5]), "none");
    }

    #[test]
    fn alone_the_witness_sections_go_before_h() {
        // 13 GB: L (12.5) rather than H (12.9).
        assert_eq!(
            choose(13 * GB, POREP32, 1),
            [false, true, false, false, false]
        );
        // 10 GB: b_g1 and b_g2 (9.5).
        assert_eq!(
            choose(10 * GB, POREP32, 1),
            [false, false, false, true, true]
        );
        // 26 GB: l and a (25.0).
        assert_eq!(
            choose(26 * GB, POREP32, 1),
            [false, true, true, false, false]
        );
        // 38 GB: H, L and A (37.9) save more than every witness section
        // (34.5).
        assert_eq!(
            choose(38 * GB, POREP32, 1),
            [true, true, true, false, false]
        );
        // 48 GB: all.
        assert_eq!(choose(48 * GB, POREP32, 1), [true; 5]);
    }

    #[test]
    fn shared_passes_keep_h_first() {
        // Two partitions a pass: H (12.9) saves each more than L (12.5 / 2).
        assert_eq!(
            choose(14 * GB, POREP32, 2),
            [true, false, false, false, false]
        );
        // H does not fit: the witness sections as alone.
        assert_eq!(
            choose(10 * GB, POREP32, 2),
            [false, false, false, true, true]
        );
        // 26 GB: H and L (25.4) rather than L and A (25.0).
        assert_eq!(
            choose(26 * GB, POREP32, 2),
            [true, true, false, false, false]
        );
        // 38 GB: H, L and A (37.9).
        assert_eq!(
            choose(38 * GB, POREP32, 2),
            [true, true, true, false, false]
        );
    }

    #[test]
    fn what_is_left_is_filled() {
        // 16.2 GB alone: l + b_g1 (15.7).
        assert_eq!(
            choose(16_200 * GB / 1000, POREP32, 1),
            [false, true, false, true, false]
        );
        // Only h is small enough: it stays.
        assert_eq!(
            choose(5 * GB, [4 * GB, 6 * GB, 6 * GB, 6 * GB, 6 * GB], 1),
            [true, false, false, false, false]
        );
    }
}
