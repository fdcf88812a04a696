//! Which SRS sections stay on a card that cannot hold them all
//! (`gpus.srs_on_device = "auto"`): the rule, apart from the upload
//! (`device_srs.rs`) so it is tested without a GPU.
//!
//! Each partition runs five MSMs, one per section (h, l, a, b_g1, b_g2).
//! A section left on the host is streamed in tiles whose copies overlap
//! that MSM's kernels, so what a resident section saves is the part of
//! its copy its MSM cannot hide. H's MSM takes longest (full-width
//! scalars over every point: ~0.6 s at 2^27 on an H200, while its 12.9 GB
//! copy takes ~0.3-0.7 s), the witness sections' MSMs are short (their
//! scalars are mostly 0 or 1: ~0.04-0.12 s against the same order of
//! bytes): so the witness sections go first, by bytes, and H takes what
//! is left.

/// Sections in the order of `OnDevice`'s arrays: h, l, a, b_g1, b_g2.
pub const SECTIONS: usize = 5;

/// The index of H's section.
const H: usize = 0;

/// The sections to keep on the device given `room` bytes for them and each
/// section's `bytes`: of every set that fits, the one with the most
/// witness-section bytes (l, a, b_g1, b_g2), then the most bytes of h.
pub fn choose(room: u64, bytes: [u64; SECTIONS]) -> [bool; SECTIONS] {
    let mut best = (0u64, 0u64, 0usize);
    for set in 0usize..(1 << SECTIONS) {
        let mut total = 0u64;
        let mut witness = 0u64;
        for (i, b) in bytes.iter().enumerate() {
            if set & (1 << i) != 0 {
                total = total.saturating_add(*b);
                if i != H {
                    witness = witness.saturating_add(*b);
                }
            }
        }
        let h = if set & (1 << H) != 0 { bytes[H] } else { 0 };
        if total <= room && (witness, h) > (best.0, best.1) {
            best = (witness, h, set);
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
        assert_eq!(choose(50 * GB, POREP32), [true; 5]);
        assert_eq!(names(&[true; 5]), "h,l,a,b_g1,b_g2");
    }

    #[test]
    fn nothing_fits_nothing_stays() {
        assert_eq!(choose(3 * GB, POREP32), [false; 5]);
        assert_eq!(names(&[false; 5]), "none");
    }

    #[test]
    fn witness_sections_before_h() {
        // 13 GB: L (12.5) rather than H (12.9).
        assert_eq!(choose(13 * GB, POREP32), [false, true, false, false, false]);
        // 10 GB: b_g1 and b_g2 (9.5).
        assert_eq!(choose(10 * GB, POREP32), [false, false, false, true, true]);
        // 26 GB: l and a (25.0).
        assert_eq!(choose(26 * GB, POREP32), [false, true, true, false, false]);
        // 38 GB: every witness section (34.5), no room for H.
        assert_eq!(choose(38 * GB, POREP32), [false, true, true, true, true]);
        // 48 GB: all.
        assert_eq!(choose(48 * GB, POREP32), [true; 5]);
    }

    #[test]
    fn h_takes_what_the_witness_sections_leave() {
        // 16.2 GB: l + b_g1 (15.7) is the most witness bytes; h does not fit too.
        assert_eq!(
            choose(16_200 * GB / 1000, POREP32),
            [false, true, false, true, false]
        );
        // Only h is small enough: it stays.
        assert_eq!(
            choose(5 * GB, [4 * GB, 6 * GB, 6 * GB, 6 * GB, 6 * GB]),
            [true, false, false, false, false]
        );
    }
}
