//! `[gpus]` of the daemon's config file, owned here because only the GPU
//! backend reads it: which backend proves, on which CUDA devices, where the
//! SRS lives, the device memory discipline, and `[gpus.tuning]`, the few
//! knobs of the CUDA code (`cuda/tuning.cuh`) handed to every device
//! context. This is the only way to change what the CUDA code does: it
//! reads no environment variable, and `cuzk-daemon --print-config` shows
//! every field.

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

/// Default `gpus.vram_safety_margin`: device memory a partition leaves free.
pub const DEFAULT_VRAM_MARGIN: u64 = 512 << 20;

/// `gpus.partitions_per_pass` by default.
pub const DEFAULT_PARTITIONS_PER_PASS: usize = 2;

/// `[gpus]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpusConfig {
    /// `"auto"`, `"cpu"` or `"cuda"`.
    pub backend: BackendChoice,
    /// CUDA device ordinals to use; empty: every usable device.
    pub devices: Vec<usize>,
    /// Where the SRS points live for the GPU MSMs: `"auto"` (in VRAM
    /// across partitions and jobs when they fit beside a partition; else
    /// the sections that fit stay in VRAM and the rest are streamed from
    /// host memory, page-locked once), `"always"` (in VRAM) or `"never"`
    /// (streamed every partition).
    pub srs_on_device: SrsPlacement,
    /// Device memory the CUDA backend may use on each GPU (e.g. `"16GiB"`):
    /// its allocations fail as if the card had only this much, so
    /// small-card behaviour can be run on a large card. Unset: the card.
    pub vram_limit: Option<ByteSize>,
    /// Device memory each partition leaves free when it chooses how much of
    /// its witness to stage on the GPU.
    pub vram_safety_margin: ByteSize,
    /// Evaluate a, b and c on the GPU from the circuit's constraint
    /// matrices kept there (a few hundred MB per circuit shape), so each
    /// partition uploads and keeps in host memory only its assignment;
    /// `false`: synthesis evaluates them on the host and they are copied.
    /// Applies when the card can hold two domain-sized vectors beside the
    /// assignment.
    pub abc_on_device: bool,
    /// Partitions of one circuit that share each pass over the SRS
    /// sections streamed from host memory (a card too small for the whole
    /// SRS): the engine hands a GPU up to this many ready partitions at
    /// once (never waiting for more, never with a CRITICAL one) and each
    /// streamed section is copied to the device once for all of them.
    /// 1: every partition streams the sections itself.
    pub partitions_per_pass: usize,
    /// `[gpus.tuning]`.
    pub tuning: GpuTuning,
}

impl Default for GpusConfig {
    fn default() -> Self {
        GpusConfig {
            backend: BackendChoice::default(),
            devices: Vec::new(),
            srs_on_device: SrsPlacement::default(),
            vram_limit: None,
            vram_safety_margin: ByteSize::b(DEFAULT_VRAM_MARGIN),
            abc_on_device: true,
            partitions_per_pass: DEFAULT_PARTITIONS_PER_PASS,
            tuning: GpuTuning::default(),
        }
    }
}

/// Which prover backend the daemon uses (`gpus.backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA on the configured devices when this build has CUDA and a device
    /// exists; the CPU otherwise.
    #[default]
    Auto,
    Cpu,
    /// CUDA, or refuse to start.
    Cuda,
}

impl std::str::FromStr for BackendChoice {
    type Err = InvalidConfig;
    fn from_str(s: &str) -> Result<Self, InvalidConfig> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" => Ok(BackendChoice::Cuda),
            _ => Err(InvalidConfig(format!(
                "unknown backend {s:?}: use auto, cpu or cuda"
            ))),
        }
    }
}

/// Where a circuit's SRS points live while proving (`gpus.srs_on_device`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SrsPlacement {
    /// Kept on the device across partitions when it fits beside a
    /// partition's buffers; otherwise the sections that fit are kept there
    /// and the others streamed from page-locked host memory.
    #[default]
    Auto,
    /// Kept on the device whenever it can be uploaded.
    Always,
    /// Streamed from host memory on every partition.
    Never,
}

impl std::str::FromStr for SrsPlacement {
    type Err = InvalidConfig;
    fn from_str(s: &str) -> Result<Self, InvalidConfig> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(SrsPlacement::Auto),
            "always" => Ok(SrsPlacement::Always),
            "never" => Ok(SrsPlacement::Never),
            _ => Err(InvalidConfig(format!(
                "unknown SRS placement {s:?}: use auto, always or never"
            ))),
        }
    }
}

/// `[gpus.tuning]`: the CUDA code's knobs. The defaults are what the
/// numbers in docs/PERF.md were measured with; the traces print to stderr.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuTuning {
    /// MSM window width in bits (10 to 22) for MSMs of at least 2^26
    /// points; 0: the built-in rule (22 for the largest G1 MSMs). The
    /// device memory each partition is sized for follows the width.
    pub msm_window_bits: u32,
    /// The same for MSMs of 2^21 up to 2^26 points (0: the rule, 17 bits
    /// for most of them).
    pub msm_window_bits_mid: u32,
    /// Host-to-device copies: `"auto"` (through pinned chunks while several
    /// workers share a GPU, else the source page-locked per copy),
    /// `"chunked"`, `"registered"` or `"pageable"` for every copy.
    pub host_copy: HostCopy,
    /// Host threads filling one chunked copy (0: one per core, at most 16).
    pub copy_threads: u32,
    /// Print each large MSM's phase timings.
    pub trace_msm: bool,
    /// Print the H stage's step timings.
    pub trace_ntt: bool,
    /// Print the 0/1 split's phase timings.
    pub trace_split: bool,
    /// Compute every split MSM again by plain Pippenger and print whether
    /// the two agree (slow: for debugging).
    pub check_split: bool,
    /// A streamed 0/1-split MSM (a small card's L, A, B) runs Pippenger
    /// over each tile's other scalars as soon as they are gathered, while
    /// the next tiles are copied, instead of over all of them after the
    /// last tile. Off: 7.6 % slower at 24 GiB on an H100 (2026-12-05).
    pub split_tile_others: bool,
    /// A streamed MSM of several batches (a small card's H: eight tiles of
    /// 2^24 points) keeps its buckets' sums from batch to batch and
    /// integrates them once after the last, instead of once a batch (10–20
    /// ms each at 2^27, 24 GiB, H200); the next batch's digits are sorted
    /// while this one accumulates (a second set of digits, ~0.9 GB at
    /// 2^24 points a batch, taken only where it fits). Not yet measured:
    /// off.
    pub carry_buckets: bool,
    /// A shared MSM stage on a small card (L, A and B streamed) runs each
    /// streamed MSM's Pippenger over its other scalars on side streams
    /// while the stage goes on to the next MSM, whose tiles are copied
    /// meanwhile, instead of after the last tile with the copies idle
    /// (at 24 GiB on an H100 those runs were ~0.4 s of a pair's ~1.2 s
    /// stage, 2026-12-05/06). On: a 32 GiB PoRep at 24 GiB with three
    /// partitions a pass, 20.90 → 19.89 s a proof pipelined on an H100;
    /// 6–9 % off the MSM stage at 16, 24 and 32 GiB in the per-pass bench
    /// (2026-12-06, docs/PERF.md).
    pub overlap_others: bool,
    /// Buckets of an XYZZ-accumulated MSM holding more points than this
    /// are each summed by a block of threads (strided shares, then a
    /// fold), not by one thread's chain; 0: one thread each. A value
    /// repeated thousands of times among a PoRep partition's other scalars
    /// puts its points into one bucket of every window (`cuzk-lab
    /// witness-shape`: ~2.4 k points a batch against a mean of ~100).
    /// 64 to 65,534 (the bucket sort clamps sizes at 65,535). Default
    /// 1,024, ten times the mean bucket of a partition's others. In
    /// `gpu-bench`'s per-pass run at 24 GiB on an H100, its others cycling
    /// through a real partition's values: 2,390 ms a partition against
    /// 3,381–3,487 without (2026-12-06, docs/PERF.md); a whole proof's
    /// gain is not yet measured.
    pub heavy_bucket_points: u32,
    /// Failure hook (for tests of a daemon with several GPUs): the device
    /// of this index fails every partition after its first
    /// `fail_after_partitions`, as a lost device does.
    pub fail_device: Option<usize>,
    /// See `fail_device`.
    pub fail_after_partitions: u64,
    /// Points of one tile of an MSM whose SRS points are streamed from
    /// host memory (0: the driver's choice from the free device memory,
    /// at most 2^24); small values make several tiles at a small size,
    /// for tests.
    pub stream_tile_points: u64,
    /// Copy the aux assignment to the device packed (`aux_pack.rs`: two
    /// bitmaps and the values neither 0 nor 1, expanded on the device)
    /// instead of as it is. Off: on the H200 at `vram_limit` 16/24/32 GiB
    /// (2026-12-05) it did not pay, and it took device memory past the
    /// limit.
    pub pack_aux: bool,
    /// The earlier name's opposite (aux copied as it is, which is now the
    /// default): accepted so that configs written for it still load, and
    /// ignored; `pack_aux` decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plain_aux: Option<bool>,
}

impl Default for GpuTuning {
    fn default() -> Self {
        Self {
            msm_window_bits: 0,
            msm_window_bits_mid: 0,
            host_copy: HostCopy::default(),
            copy_threads: 0,
            trace_msm: false,
            trace_ntt: false,
            trace_split: false,
            check_split: false,
            split_tile_others: false,
            carry_buckets: false,
            overlap_others: true,
            heavy_bucket_points: DEFAULT_HEAVY_BUCKET_POINTS,
            fail_device: None,
            fail_after_partitions: 0,
            stream_tile_points: 0,
            pack_aux: false,
            plain_aux: None,
        }
    }
}

/// `gpus.tuning.heavy_bucket_points` when unset (the CUDA code's own
/// default in `cuda/tuning.cuh` is the same).
pub const DEFAULT_HEAVY_BUCKET_POINTS: u32 = 1024;

/// `gpus.tuning.host_copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostCopy {
    #[default]
    Auto,
    Chunked,
    Registered,
    Pageable,
}

/// A `[gpus]` value that parses but makes no sense.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

impl GpusConfig {
    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        for (name, w) in [
            ("gpus.tuning.msm_window_bits", self.tuning.msm_window_bits),
            (
                "gpus.tuning.msm_window_bits_mid",
                self.tuning.msm_window_bits_mid,
            ),
        ] {
            if w != 0 && !(10..=22).contains(&w) {
                return Err(InvalidConfig(format!(
                    "{name} = {w}: use 0 (the built-in rule) or 10 to 22"
                )));
            }
        }
        let heavy = self.tuning.heavy_bucket_points;
        if heavy != 0 && !(64..=65_534).contains(&heavy) {
            return Err(InvalidConfig(format!(
                "gpus.tuning.heavy_bucket_points = {heavy}: use 0 (off) or 64 to 65534"
            )));
        }
        let tile = self.tuning.stream_tile_points;
        if tile != 0 && !(1024..=(1 << 28)).contains(&tile) {
            return Err(InvalidConfig(format!(
                "gpus.tuning.stream_tile_points = {tile}: use 0 (the driver's choice) or 1024 to 2^28"
            )));
        }
        if !(1..=8).contains(&self.partitions_per_pass) {
            return Err(InvalidConfig(format!(
                "gpus.partitions_per_pass = {}: use 1 (none share) to 8",
                self.partitions_per_pass
            )));
        }
        if self.tuning.copy_threads > 64 {
            return Err(InvalidConfig(format!(
                "gpus.tuning.copy_threads = {}: at most 64",
                self.tuning.copy_threads
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in &self.devices {
            if !seen.insert(d) {
                return Err(InvalidConfig(format!(
                    "gpus.devices lists device {d} twice"
                )));
            }
        }
        Ok(())
    }
}

/// Resident witness MSMs with fewer points run as plain Pippenger, not
/// split into zeros, ones and the rest: below 2^17 points the split's extra
/// passes cost more than they save (H200, docs/PERF.md).
pub const SPLIT01_MIN_POINTS: usize = 1 << 17;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> GpusConfig {
        toml::from_str(text).expect("valid [gpus] table")
    }

    #[test]
    fn defaults_and_values_parse() {
        assert_eq!(parse(""), GpusConfig::default());
        let g = parse(
            "backend = \"cuda\"\ndevices = [1]\nsrs_on_device = \"never\"\n\
             vram_limit = \"16GiB\"\n[tuning]\nmsm_window_bits = 20\nhost_copy = \"chunked\"\n\
             trace_msm = true\n",
        );
        assert_eq!(g.backend, BackendChoice::Cuda);
        assert_eq!(g.srs_on_device, SrsPlacement::Never);
        assert_eq!(g.vram_limit.map(|b| b.as_u64()), Some(16 << 30));
        assert_eq!(g.tuning.msm_window_bits, 20);
        assert_eq!(g.tuning.host_copy, HostCopy::Chunked);
        assert!(g.tuning.trace_msm && !g.tuning.trace_ntt);
        assert_eq!(g.validate(), Ok(()));
        assert!(toml::from_str::<GpusConfig>("[tuning]\nwbits = 3\n").is_err());
    }

    #[test]
    fn aux_is_copied_as_it_is_unless_pack_aux_and_the_old_key_still_loads() {
        assert!(!GpusConfig::default().tuning.pack_aux);
        assert!(parse("[tuning]\npack_aux = true\n").tuning.pack_aux);
        // A config written for the earlier `plain_aux` still loads; the
        // key decides nothing.
        let g = parse("[tuning]\nplain_aux = false\n");
        assert_eq!(g.tuning.plain_aux, Some(false));
        assert!(!g.tuning.pack_aux);
    }

    #[test]
    fn window_widths_outside_the_drivers_range_are_refused() {
        for (w, ok) in [(0, true), (9, false), (10, true), (22, true), (23, false)] {
            let mut g = GpusConfig::default();
            g.tuning.msm_window_bits_mid = w;
            assert_eq!(g.validate().is_ok(), ok, "{w}");
        }
        let g = GpusConfig {
            devices: vec![0, 0],
            ..Default::default()
        };
        assert!(g.validate().unwrap_err().0.contains("twice"));
        for (k, ok) in [(0, false), (1, true), (2, true), (8, true), (9, false)] {
            let g = GpusConfig {
                partitions_per_pass: k,
                ..Default::default()
            };
            assert_eq!(g.validate().is_ok(), ok, "partitions_per_pass {k}");
        }
        assert_eq!(GpusConfig::default().partitions_per_pass, 2);
        // heavy_bucket_points: 1,024 unless set, 0 turns it off.
        assert_eq!(GpusConfig::default().tuning.heavy_bucket_points, 1024);
        assert_eq!(parse("").tuning.heavy_bucket_points, 1024);
        assert_eq!(
            parse("[tuning]\nheavy_bucket_points = 0\n")
                .tuning
                .heavy_bucket_points,
            0
        );
        for (h, ok) in [
            (0, true),
            (63, false),
            (64, true),
            (65_534, true),
            (65_535, false),
        ] {
            let mut g = GpusConfig::default();
            g.tuning.heavy_bucket_points = h;
            assert_eq!(g.validate().is_ok(), ok, "heavy_bucket_points {h}");
        }
        assert_eq!(
            parse("[tuning]\nheavy_bucket_points = 1024\n")
                .tuning
                .heavy_bucket_points,
            1024
        );
        // carry_buckets: off unless set.
        assert!(!GpusConfig::default().tuning.carry_buckets);
        assert!(
            parse("[tuning]\ncarry_buckets = true\n")
                .tuning
                .carry_buckets
        );
    }

    #[test]
    fn names_parse() {
        assert_eq!("Always".parse(), Ok(SrsPlacement::Always));
        assert_eq!("never".parse(), Ok(SrsPlacement::Never));
        assert!("sometimes".parse::<SrsPlacement>().is_err());
        assert_eq!("CUDA".parse(), Ok(BackendChoice::Cuda));
        assert!("gpu".parse::<BackendChoice>().is_err());
    }
}
