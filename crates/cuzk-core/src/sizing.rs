//! How the engine sizes itself when `[engine]` leaves its worker counts at
//! `"auto"` (the default): synthesis workers, prover workers per device and
//! the synthesized queue, chosen from the machine (cores, the host memory
//! budget, each device and its memory) by one rule, [`choose`], with the
//! reasons said in words for the start log and `--print-config`.

use serde::{Deserialize, Serialize};

use cuzk_prover::ProverBackend;

/// A worker count of `[engine]`: `"auto"` (sized by [`choose`]) or a number
/// of at least 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Count {
    #[default]
    Auto,
    Fixed(usize),
}

impl From<usize> for Count {
    fn from(n: usize) -> Count {
        Count::Fixed(n)
    }
}

impl Count {
    /// The number given, or `auto`'s.
    pub fn or(self, auto: usize) -> usize {
        match self {
            Count::Auto => auto,
            Count::Fixed(n) => n,
        }
    }
}

impl Serialize for Count {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Count::Auto => s.serialize_str("auto"),
            Count::Fixed(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(u64),
        }
        match Raw::deserialize(d)? {
            Raw::Text(t) if t.trim().eq_ignore_ascii_case("auto") => Ok(Count::Auto),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "{t:?}: a number or \"auto\""
            ))),
            Raw::Number(n) => usize::try_from(n)
                .map(Count::Fixed)
                .map_err(|_| serde::de::Error::custom(format!("{n} is too large"))),
        }
    }
}

/// What the rule looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Cores this process may use.
    pub cores: usize,
    /// The host memory budget in bytes.
    pub budget: u64,
    /// Per backend: the device memory it may use (the card's, or less
    /// under `gpus.vram_limit`), `None` for the CPU backend.
    pub devices: Vec<Option<u64>>,
}

impl Machine {
    /// This machine, proving on `backends` within a host memory budget of
    /// `budget` bytes.
    pub fn of(backends: &[std::sync::Arc<dyn ProverBackend>], budget: u64) -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let devices = backends
            .iter()
            .map(|b| {
                b.device().map(|d| {
                    d.memory_limit
                        .map_or(d.memory_total, |l| l.min(d.memory_total))
                })
            })
            .collect();
        Machine {
            cores,
            budget,
            devices,
        }
    }
}

/// The worker counts chosen, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sizing {
    pub partition_workers: usize,
    pub gpu_workers_per_device: usize,
    pub synthesized_queue: usize,
    /// The reasons, one line each.
    pub why: Vec<String>,
}

/// Host memory of the largest partition operators prove, a 32 GiB PoRep
/// partition with a, b and c evaluated on the GPU (8,363,426,226 bytes
/// reserved on 2026-12-02, docs/PERF.md): the unit of the memory rule.
pub const PARTITION_BYTES: u64 = 8_400_000_000;

/// Device memory below which one prover worker per card: a 2^27 partition
/// at the a-only tier needs ~13 GB and a second worker's aux 4.2 GB more.
pub const TWO_WORKER_VRAM: u64 = 15 << 30;

/// Cores per synthesis worker: a 32 GiB PoRep partition synthesizes in
/// ~16 core-s while a GPU proves one every 1.3–2.6 s.
pub const CORES_PER_SYNTHESIS: usize = 8;

/// The rule. On the CPU backend alone: one of each (a CPU proof uses every
/// core). With GPUs: two prover workers per card of at least
/// [`TWO_WORKER_VRAM`] (one's uploads and host work overlap the other's
/// kernels), else one; a synthesis worker per [`CORES_PER_SYNTHESIS`]
/// cores, at least one and at most two per GPU; a synthesized partition
/// waiting for each prover worker; and no more witnesses in flight than
/// the budget holds of [`PARTITION_BYTES`] (queue first, then synthesis
/// workers, never below one).
pub fn choose(m: &Machine) -> Sizing {
    let gpus: Vec<u64> = m.devices.iter().flatten().copied().collect();
    let mut why = Vec::new();
    if gpus.is_empty() {
        why.push("CPU backend only: one partition at a time uses every core".to_string());
        return Sizing {
            partition_workers: 1,
            gpu_workers_per_device: 1,
            synthesized_queue: 1,
            why,
        };
    }
    let smallest = gpus.iter().copied().min().unwrap_or(0);
    let per_device = if smallest >= TWO_WORKER_VRAM { 2 } else { 1 };
    why.push(format!(
        "gpu_workers_per_device = {per_device}: smallest card {:.1} GiB ({} for two workers)",
        smallest as f64 / (1u64 << 30) as f64,
        if per_device == 2 {
            "room"
        } else {
            "too little room"
        }
    ));
    let mut synthesis = (m.cores / CORES_PER_SYNTHESIS).clamp(1, 2 * gpus.len());
    why.push(format!(
        "partition_workers = {synthesis}: {} cores, {} GPU(s) (one per {CORES_PER_SYNTHESIS} cores, at most two per GPU)",
        m.cores,
        gpus.len()
    ));
    let provers = per_device * m.devices.len();
    let mut queue = provers;
    why.push(format!(
        "synthesized_queue = {queue}: one waiting per prover worker"
    ));
    let fits = (m.budget / PARTITION_BYTES).max(1) as usize;
    let wanted = (synthesis, queue);
    while synthesis + queue + provers > fits && (queue > 1 || synthesis > 1) {
        if queue > 1 {
            queue -= 1;
        } else {
            synthesis -= 1;
        }
    }
    if (synthesis, queue) != wanted {
        why.push(format!(
            "host memory budget {:.0} GiB holds {fits} 32 GiB partitions: \
             queue {queue}, synthesis workers {synthesis}",
            m.budget as f64 / (1u64 << 30) as f64
        ));
    }
    Sizing {
        partition_workers: synthesis,
        gpu_workers_per_device: per_device,
        synthesized_queue: queue,
        why,
    }
}

/// `engine.max_queued_jobs = "auto"`: one unfinished job per 512 MiB of
/// the host memory budget, at least 8 and at most 1024.
pub fn max_queued_jobs(budget: u64) -> usize {
    ((budget >> 29) as usize).clamp(8, 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn machine(cores: usize, budget_gib: u64, devices: &[Option<u64>]) -> Machine {
        Machine {
            cores,
            budget: budget_gib * GIB,
            devices: devices.to_vec(),
        }
    }

    fn counts(s: &Sizing) -> (usize, usize, usize) {
        (
            s.partition_workers,
            s.gpu_workers_per_device,
            s.synthesized_queue,
        )
    }

    #[test]
    fn the_cpu_backend_gets_one_of_each() {
        let s = choose(&machine(2, 22, &[None]));
        assert_eq!(counts(&s), (1, 1, 1));
        assert_eq!(counts(&choose(&machine(64, 512, &[None]))), (1, 1, 1));
    }

    #[test]
    fn the_h200_gets_the_hand_tuned_figures() {
        // 16 cores, 125 GiB, one 140 GiB card or the same at 16 GiB: the
        // configuration measured best on 2026-12-04 (2, 2, 2).
        for vram in [140 * GIB, 16 * GIB] {
            let s = choose(&machine(16, 123, &[Some(vram)]));
            assert_eq!(counts(&s), (2, 2, 2), "{:?}", s.why);
        }
    }

    #[test]
    fn small_cards_get_one_worker_and_many_cores_feed_several_gpus() {
        assert_eq!(
            counts(&choose(&machine(16, 123, &[Some(12 * GIB)]))),
            (2, 1, 1)
        );
        let four = [Some(24 * GIB); 4];
        assert_eq!(counts(&choose(&machine(96, 500, &four))), (8, 2, 8));
        assert_eq!(counts(&choose(&machine(4, 500, &four))), (1, 2, 8));
    }

    #[test]
    fn a_small_budget_shortens_the_queue_then_synthesis() {
        // 40 GiB holds 5 partitions: 2 provers, then 2 synthesis + 1 queued.
        let s = choose(&machine(32, 40, &[Some(80 * GIB)]));
        assert_eq!(counts(&s), (2, 2, 1), "{:?}", s.why);
        // 20 GiB holds 2: never below one of each.
        let s = choose(&machine(32, 20, &[Some(80 * GIB)]));
        assert_eq!(counts(&s), (1, 2, 1), "{:?}", s.why);
        assert!(
            s.why.iter().any(|w| w.contains("host memory budget")),
            "{:?}",
            s.why
        );
    }

    #[test]
    fn queued_jobs_follow_the_budget_within_bounds() {
        assert_eq!(max_queued_jobs(2 * GIB), 8);
        assert_eq!(max_queued_jobs(123 * GIB), 246);
        assert_eq!(max_queued_jobs(4096 * GIB), 1024);
    }

    #[test]
    fn counts_read_auto_or_a_number() {
        #[derive(Deserialize, Serialize)]
        struct T {
            n: Count,
        }
        let t: T = toml::from_str("n = \"auto\"").unwrap();
        assert_eq!(t.n, Count::Auto);
        let t: T = toml::from_str("n = 3").unwrap();
        assert_eq!(t.n, Count::Fixed(3));
        assert!(toml::from_str::<T>("n = \"three\"").is_err());
        assert_eq!(
            toml::to_string(&T { n: Count::Auto }).unwrap().trim(),
            "n = \"auto\""
        );
        assert_eq!(Count::Auto.or(4), 4);
        assert_eq!(Count::Fixed(2).or(4), 2);
    }
}
