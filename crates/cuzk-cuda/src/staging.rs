//! Memory-aware staging tiers: how much of a partition's witness goes to the
//! device at once, chosen per partition from the room the card really has.
//!
//! Before a partition's H stage the backend asks its context for the free
//! device memory (after the stream-ordered pool has returned its cache, and
//! within `gpus.vram_limit`) plus what its own scratch buffers hold, keeps
//! `gpus.vram_safety_margin` aside, and takes the first tier that fits:
//!
//! - [`StagingTier::All`]: a, b and c on the device at once (the fastest;
//!   the a|b|c buffer is kept for the next partition);
//! - [`StagingTier::AOnly`]: a on the device, b then c copied through one
//!   second buffer and folded into a (two vectors instead of three);
//! - [`StagingTier::None`]: nothing staged: H is computed on the host and
//!   only its coefficients are uploaded for the H MSM.
//!
//! Below the top tier the A and B scalars are also picked on the host and
//! uploaded over aux, so the MSM stage holds one vector, not two.
//!
//! When an allocation fails anyway (another process took the memory, or the
//! test hook), the partition drops to the next tier and tries again; the
//! context stays usable.

/// One staging tier (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StagingTier {
    All,
    AOnly,
    None,
}

/// Bytes of one scalar on the device.
const FR: u64 = 32;

impl StagingTier {
    /// From the most to the least device memory.
    pub const ORDER: [StagingTier; 3] = [StagingTier::All, StagingTier::AOnly, StagingTier::None];

    /// The name in logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            StagingTier::All => "all",
            StagingTier::AOnly => "a_only",
            StagingTier::None => "none",
        }
    }

    /// The tier to fall back to, if any.
    pub fn lower(self) -> Option<StagingTier> {
        match self {
            StagingTier::All => Some(StagingTier::AOnly),
            StagingTier::AOnly => Some(StagingTier::None),
            StagingTier::None => None,
        }
    }

    /// Domain-sized vectors this tier keeps on the device during the H
    /// stage.
    fn vectors(self) -> u64 {
        match self {
            StagingTier::All => 3,
            StagingTier::AOnly => 2,
            StagingTier::None => 1,
        }
    }

    /// Device bytes a partition of domain `n` with `aux` variables needs
    /// at this tier. At [`StagingTier::All`]: a|b|c, aux and the scalars
    /// picked for A and B on the device, all kept between partitions, plus
    /// the MSM temporaries. Below it, the larger of the H stage (its
    /// vectors and the H MSM's temporaries) and the MSM stage, which holds
    /// one vector: the A and B scalars are picked on the host and uploaded
    /// over aux once L is done.
    pub fn need(self, n: usize, aux: usize) -> u64 {
        let (n, aux) = (n as u64, aux as u64);
        let vectors = self.vectors() * n * FR;
        let temp = msm_temp(n.max(aux));
        match self {
            StagingTier::All => vectors + 2 * aux * FR + aux / 8 + temp,
            _ => vectors.max(aux * FR + aux / 8) + temp,
        }
    }
}

/// The window width `cuda/msm_driver.cuh` takes for an MSM with
/// lg = lg2(1.5·n): sppark's rule (lg − 8 within 10..=18), except 17 bits
/// for lg 22..=24 and 22 bits for the largest G1 MSMs (lg ≥ 27).
pub fn msm_wbits(lg: u32, g1: bool) -> u32 {
    match lg {
        27.. if g1 => 22,
        22..=24 => 17,
        _ => lg.saturating_sub(8).clamp(10, 18),
    }
}

/// Device scratch of one MSM of `points` points through
/// `cuda/msm_driver.cuh`: windows of [`msm_wbits`], n/⌈2^(lg−w−6)⌉ points
/// per batch; per batch 4-byte digits for every window and the sort's
/// scratch (16 bytes a point, or 12 and CUB's: 7.8 MB measured for 2^26
/// points), per window 2^(w−1)
/// buckets and histogram counters, plus the accumulated window sums and
/// the span pairs of the two-level integration (`integrate_fanout`) and the
/// buckets' size order (`cuda/accumulate.cuh`). The
/// larger of G1 (192-byte buckets) and G2 (384-byte buckets, never wide),
/// with batch-addition sums for up to 256 SMs. It bounds MSMs over device
/// points (resident SRS) at the default windows; an MSM over host points
/// (streamed SRS, sppark's `msm_t`) also takes a buffer of two batches of
/// points, and `CUZK_MSM_WBITS` wider windows, neither counted here.
pub fn msm_temp(points: u64) -> u64 {
    let n = points.max(1);
    // CUB's scratch for a radix sort of `items` pairs (at most a byte per
    // four items and 64 KiB).
    let cub = |items: u64| items / 4 + (64 << 10);
    // The size order of the buckets (`cuda/accumulate.cuh`): four words a
    // bucket, a counter, CUB's scratch and alignment.
    let order = |buckets: u64| buckets * 16 + cub(buckets) + 768;
    let lg = (n + n / 2).ilog2();
    let scratch = |w: u32, bucket: u64, degree: u64| {
        let batch = ((1u64 << (lg.max(w) - w)) >> 6).max(1);
        let stride = n.div_ceil(batch).next_multiple_of(32);
        let nwins = 254 / u64::from(w) + 1;
        let (row, sums) = (1u64 << (w - 1), 2048);
        let pairs = nwins * 2 * (256 / degree) * integrate_fanout(w, degree, 256);
        (nwins * row + sums) * bucket
            + nwins * row * 4
            + (stride * 16).max(stride * 12 + cub(stride))
            + nwins * stride * 4
            + (nwins * 512 + sums) * bucket
            + pairs * bucket
            + order(nwins * row)
    };
    let g1 = scratch(msm_wbits(lg, true), 192, 1);
    g1.max(scratch(msm_wbits(lg, false), 384, 2))
}

/// Spans per integrate thread in `cuda/integrate.cuh` (`integrate_fanout`)
/// for `w`-bit windows on a card with `sms` SMs; 0 where sppark's
/// `integrate` runs. `degree`: 1 for G1, 2 for G2.
pub fn integrate_fanout(w: u32, degree: u64, sms: u64) -> u64 {
    let t = 256 / degree;
    let k = 1u64 << (w - 1);
    if k < t * 4 {
        return 0;
    }
    let nwins = 254 / u64::from(w) + 1;
    let top = 255 - u64::from(w) * (nwins - 1);
    let stride = 1u64 << (u64::from(w) - top.min(u64::from(w)));
    let per_block = 128 / degree;
    let mut m = 1;
    while m < 16 && nwins * t * (m * 2) / per_block <= 2 * sms && k / (t * m * 2) >= 2 * stride {
        m *= 2;
    }
    if m >= 2 {
        m
    } else {
        0
    }
}

/// The first tier whose need plus `margin` fits in `room` bytes;
/// [`StagingTier::None`] when none does (it is then tried anyway).
pub fn choose(room: u64, margin: u64, n: usize, aux: usize) -> StagingTier {
    StagingTier::ORDER
        .into_iter()
        .find(|t| t.need(n, aux).saturating_add(margin) <= room)
        .unwrap_or(StagingTier::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn tiers_need_less_memory_in_order() {
        for lg in [10u32, 16, 20, 24, 27] {
            let n = 1usize << lg;
            let needs: Vec<u64> = StagingTier::ORDER
                .iter()
                .map(|t| t.need(n, n - 80))
                .collect();
            assert!(
                needs[0] > needs[1] && needs[1] > needs[2],
                "2^{lg}: {needs:?}"
            );
        }
    }

    #[test]
    fn the_room_picks_the_tier() {
        // A 2^27 partition (PoRep 32 GiB): a|b|c alone is 12 GiB.
        let n = 1usize << 27;
        let aux = n - 80;
        let margin = 512 << 20;
        assert_eq!(choose(140 * GIB, margin, n, aux), StagingTier::All);
        assert_eq!(
            choose(StagingTier::All.need(n, aux) + margin, margin, n, aux),
            StagingTier::All
        );
        assert_eq!(
            choose(StagingTier::All.need(n, aux) + margin - 1, margin, n, aux),
            StagingTier::AOnly
        );
        assert_eq!(
            choose(StagingTier::AOnly.need(n, aux) + margin, margin, n, aux),
            StagingTier::AOnly
        );
        assert_eq!(
            choose(StagingTier::None.need(n, aux) + margin, margin, n, aux),
            StagingTier::None
        );
        // Nothing fits: the least demanding tier is tried.
        assert_eq!(choose(GIB, margin, n, aux), StagingTier::None);
        // A 16 GiB card with a 2^24 partition stages everything.
        assert_eq!(
            choose(16 * GIB, margin, 1 << 24, (1 << 24) - 80),
            StagingTier::All
        );
    }

    /// The scratch `cuda/msm_driver.cuh` takes for an MSM of `n` G1 points
    /// at window `w` (192-byte buckets; 1,056 batch-addition sums, an H200).
    fn driver_scratch(n: u64, w: u32) -> u64 {
        let lg = (n + n / 2).ilog2();
        let batch = ((1u64 << (lg.max(w) - w)) >> 6).max(1);
        let stride = n.div_ceil(batch).next_multiple_of(32);
        let nwins = 254 / u64::from(w) + 1;
        let (row, sums) = (1u64 << (w - 1), 1056);
        (nwins * row + sums) * 192
            + nwins * row * 4
            + (stride * 16).max(stride * 12 + stride / 4 + (64 << 10))
            + nwins * stride * 4
            + (nwins * 512 + sums) * 192
            + nwins * 512 * integrate_fanout(w, 1, 132) * 192
            + nwins * row * 16
            + 512
    }

    #[test]
    fn the_msm_bound_covers_the_driver() {
        for lg in [16u32, 20, 24, 26, 27, 28] {
            for n in [(1u64 << lg) - 1, 3 << (lg - 2), 3 << (lg - 1)] {
                let w = msm_wbits((n + n / 2).ilog2(), true);
                let (bound, g1) = (msm_temp(n), driver_scratch(n, w));
                assert!(bound >= g1, "n={n}: bound {bound} < scratch {g1}");
                assert!(bound < g1 * 2, "n={n}: bound {bound} far above {g1}");
            }
        }
    }

    #[test]
    fn the_window_rule_is_the_drivers() {
        // sppark's rule, 17 bits for lg 22..=24, 22 bits only for the
        // largest G1 MSMs.
        let cases = [
            (16, 10),
            (20, 12),
            (21, 13),
            (22, 17),
            (23, 17),
            (24, 17),
            (25, 17),
            (26, 18),
        ];
        for (lg, w) in cases {
            assert_eq!(
                (msm_wbits(lg, true), msm_wbits(lg, false)),
                (w, w),
                "lg {lg}"
            );
        }
        assert_eq!((msm_wbits(27, true), msm_wbits(27, false)), (22, 18));
    }

    #[test]
    fn the_integrate_fanout_covers_an_h200_and_keeps_whole_strides() {
        // 2^27 H MSM (22-bit windows, 12 of them) and the ~13 M- and
        // ~3 M-point "others" (17-bit, 15): eight spans per thread, 192
        // and 240 blocks of 128 threads on 132 SMs (G1 and G2 alike).
        assert_eq!(integrate_fanout(22, 1, 132), 8);
        assert_eq!(integrate_fanout(20, 1, 132), 8);
        assert_eq!(integrate_fanout(17, 1, 132), 8);
        assert_eq!(integrate_fanout(17, 2, 132), 8);
        assert_eq!(integrate_fanout(16, 1, 132), 8);
        // A 3-bit top window (12-bit windows) spreads its digits 512
        // buckets apart: no span would hold two of them.
        assert_eq!(integrate_fanout(12, 1, 132), 0);
        assert_eq!(integrate_fanout(14, 2, 132), 0);
        assert_eq!(integrate_fanout(15, 2, 132), 4);
        assert_eq!(integrate_fanout(18, 1, 132), 0);
        // Too few buckets per thread.
        assert_eq!(integrate_fanout(10, 1, 132), 0);
        for w in 10..=22 {
            for degree in [1, 2] {
                let m = integrate_fanout(w, degree, 256);
                assert!(m == 0 || (m.is_power_of_two() && (2..=16).contains(&m)));
            }
        }
    }

    #[test]
    fn falling_back_ends_at_none() {
        let mut t = StagingTier::All;
        let mut seen = vec![t.label()];
        while let Some(l) = t.lower() {
            t = l;
            seen.push(t.label());
        }
        assert_eq!(seen, ["all", "a_only", "none"]);
    }
}
