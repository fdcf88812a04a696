//! Memory-aware staging tiers: how much of a partition's witness goes to the
//! device at once, chosen per partition from the room the card really has.
//!
//! Before a partition's H stage the backend asks its context for the free
//! device memory (after the stream-ordered pool has returned its cache, and
//! within `gpus.vram_limit`) plus what its own scratch buffers hold, keeps
//! `gpus.vram_safety_margin` aside, and takes the first tier that fits.
//! The MSM scratch in a tier's need is the least the MSM driver can run
//! with (`Ctx::msm_scratch` with `least`, from `cuda/msm_driver.cuh`:
//! narrow windows, many batches, streamed tiles): every MSM fits itself to
//! the room it finds, faster with more, so a tier is refused only when
//! not even that fits. The window rule and the scratch bound are written
//! once, in the CUDA code. The tiers:
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
//! A partition whose a, b and c are evaluated on the device
//! ([`StagingTier::need_with`]) has aux there during the H stage too, and
//! no [`StagingTier::None`]: H on the host would need a, b and c on the
//! host, which its reservation does not hold; its lowest tier is a-only.
//!
//! When an allocation fails anyway (another process took the memory, or the
//! test hook), the partition drops to the next tier and tries again; the
//! context stays usable.
//!
//! ("Staging" here is only this: how much of the witness is on the device.
//! Host copies through pinned chunks are "chunked copies", and cuzk-lab's
//! stage-by-stage access is `lab::StageContext`.)

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
    /// at this tier, given `msm_temp`, the scratch of one MSM of
    /// max(n, aux) points. At [`StagingTier::All`]: a|b|c, aux and the
    /// scalars picked for A and B on the device, all kept between
    /// partitions, plus the MSM scratch. Below it, the larger of the H
    /// stage (its vectors and the H MSM's scratch) and the MSM stage, which
    /// holds one vector: the A and B scalars are picked on the host and
    /// uploaded over aux once L is done.
    pub fn need(self, n: usize, aux: usize, msm_temp: u64) -> u64 {
        let (n, aux) = (n as u64, aux as u64);
        let vectors = self.vectors() * n * FR;
        match self {
            StagingTier::All => vectors + 2 * aux * FR + aux / 8 + msm_temp,
            _ => vectors.max(aux * FR + aux / 8) + msm_temp,
        }
    }
}

impl StagingTier {
    /// As [`StagingTier::need`] for a partition whose a, b and c are
    /// evaluated on the device (`abc_on_device`): aux is on the device
    /// during the H stage too, and there is no [`StagingTier::None`] (H
    /// on the host would need a, b and c there): its need is `u64::MAX`.
    pub fn need_with(self, n: usize, aux: usize, msm_temp: u64, abc_on_device: bool) -> u64 {
        if !abc_on_device {
            return self.need(n, aux, msm_temp);
        }
        let (n64, aux64) = (n as u64, aux as u64);
        match self {
            StagingTier::All => self.need(n, aux, msm_temp),
            StagingTier::AOnly => 2 * n64 * FR + aux64 * FR + aux64 / 8 + msm_temp,
            StagingTier::None => u64::MAX,
        }
    }

    /// The lowest tier for such a partition.
    pub fn lowest(abc_on_device: bool) -> StagingTier {
        if abc_on_device {
            StagingTier::AOnly
        } else {
            StagingTier::None
        }
    }

    /// The tier to fall back to, if any, for such a partition.
    pub fn lower_with(self, abc_on_device: bool) -> Option<StagingTier> {
        self.lower()
            .filter(|t| *t != StagingTier::None || !abc_on_device)
    }
}

/// The first tier whose need plus `margin` fits in `room` bytes;
/// [`StagingTier::None`] when none does (it is then tried anyway).
pub fn choose(room: u64, margin: u64, n: usize, aux: usize, msm_temp: u64) -> StagingTier {
    choose_with(room, margin, n, aux, msm_temp, false)
}

/// As [`choose`], for a partition whose a, b and c are evaluated on the
/// device when `abc_on_device` (the lowest tier is then the a-only one).
pub fn choose_with(
    room: u64,
    margin: u64,
    n: usize,
    aux: usize,
    msm_temp: u64,
    abc_on_device: bool,
) -> StagingTier {
    StagingTier::ORDER
        .into_iter()
        .find(|t| {
            t.need_with(n, aux, msm_temp, abc_on_device)
                .saturating_add(margin)
                <= room
        })
        .unwrap_or(StagingTier::lowest(abc_on_device))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn tiers_need_less_memory_in_order() {
        for lg in [10u32, 16, 20, 24, 27] {
            let n = 1usize << lg;
            let temp = (n as u64) * 40;
            let needs: Vec<u64> = StagingTier::ORDER
                .iter()
                .map(|t| t.need(n, n - 80, temp))
                .collect();
            assert!(
                needs[0] > needs[1] && needs[1] > needs[2],
                "2^{lg}: {needs:?}"
            );
            // The MSM scratch counts in full at every tier.
            for t in StagingTier::ORDER {
                assert_eq!(t.need(n, n - 80, temp + 7), t.need(n, n - 80, temp) + 7);
            }
        }
    }

    #[test]
    fn the_room_picks_the_tier() {
        // A 2^27 partition (PoRep 32 GiB): a|b|c alone is 12 GiB.
        let n = 1usize << 27;
        let aux = n - 80;
        let margin = 512 << 20;
        let temp = 24 * GIB;
        assert_eq!(choose(140 * GIB, margin, n, aux, temp), StagingTier::All);
        let need = |t: StagingTier| t.need(n, aux, temp);
        assert_eq!(
            choose(need(StagingTier::All) + margin, margin, n, aux, temp),
            StagingTier::All
        );
        assert_eq!(
            choose(need(StagingTier::All) + margin - 1, margin, n, aux, temp),
            StagingTier::AOnly
        );
        assert_eq!(
            choose(need(StagingTier::AOnly) + margin, margin, n, aux, temp),
            StagingTier::AOnly
        );
        assert_eq!(
            choose(need(StagingTier::None) + margin, margin, n, aux, temp),
            StagingTier::None
        );
        // Nothing fits: the least demanding tier is tried.
        assert_eq!(choose(GIB, margin, n, aux, temp), StagingTier::None);
        // Wider MSM windows (more scratch) push the same room down a tier.
        let room = need(StagingTier::All) + margin;
        assert_eq!(choose(room, margin, n, aux, temp + GIB), StagingTier::AOnly);
    }

    #[test]
    fn with_abc_on_the_device_the_a_only_tier_is_the_lowest() {
        let n = 1usize << 27;
        let (aux, temp, margin) = (n - 80, 24 * GIB, 512 << 20);
        let need = |t: StagingTier| t.need_with(n, aux, temp, true);
        // aux is on the device during the H stage: a-only needs more.
        assert!(need(StagingTier::AOnly) > StagingTier::AOnly.need(n, aux, temp));
        assert_eq!(need(StagingTier::All), StagingTier::All.need(n, aux, temp));
        assert!(need(StagingTier::All) > need(StagingTier::AOnly));
        let choose = |room| choose_with(room, margin, n, aux, temp, true);
        assert_eq!(choose(need(StagingTier::All) + margin), StagingTier::All);
        assert_eq!(
            choose(need(StagingTier::AOnly) + margin),
            StagingTier::AOnly
        );
        assert_eq!(choose(GIB), StagingTier::AOnly);
        assert_eq!(StagingTier::AOnly.lower_with(true), None);
        assert_eq!(StagingTier::All.lower_with(true), Some(StagingTier::AOnly));
        assert_eq!(
            StagingTier::AOnly.lower_with(false),
            Some(StagingTier::None)
        );
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
