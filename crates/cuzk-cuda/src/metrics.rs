//! The CUDA backend's own counters, and the metrics the engine exports
//! from them ([`cuzk_prover::ProverBackend::metrics`]): partitions per
//! staging tier, tier fallbacks, waits for device memory, GPU busy time.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cuzk_prover::{BackendMetric, MetricKind};

use crate::staging::StagingTier;

/// Partitions per device-memory staging tier, and the tiers abandoned after
/// an allocation failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingCounts {
    /// a, b and c on the device at once.
    pub all: u32,
    /// a on the device, b and c through a second buffer.
    pub a_only: u32,
    /// Nothing staged: H computed on the host.
    pub none: u32,
    /// Attempts that ran out of device memory and fell back a tier.
    pub fallbacks: u32,
    /// Times a partition found no room even for the lowest tier (or ran out
    /// in its MSM stage) and waited for other partitions on the device to
    /// give memory back, instead of failing.
    pub waits: u32,
}

impl std::ops::AddAssign for StagingCounts {
    fn add_assign(&mut self, o: StagingCounts) {
        self.all += o.all;
        self.a_only += o.a_only;
        self.none += o.none;
        self.fallbacks += o.fallbacks;
        self.waits += o.waits;
    }
}

impl std::ops::Sub for StagingCounts {
    type Output = StagingCounts;
    fn sub(self, o: StagingCounts) -> StagingCounts {
        StagingCounts {
            all: self.all - o.all,
            a_only: self.a_only - o.a_only,
            none: self.none - o.none,
            fallbacks: self.fallbacks - o.fallbacks,
            waits: self.waits - o.waits,
        }
    }
}

impl StagingCounts {
    /// `(tier, count)` in the order all, a_only, none.
    pub fn by_tier(&self) -> [(StagingTier, u32); 3] {
        [
            (StagingTier::All, self.all),
            (StagingTier::AOnly, self.a_only),
            (StagingTier::None, self.none),
        ]
    }
}

/// A backend's running [`StagingCounts`], shared by its clones.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    all: AtomicU32,
    a_only: AtomicU32,
    none: AtomicU32,
    fallbacks: AtomicU32,
    waits: AtomicU32,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl Counters {
    pub(crate) fn staged(&self, tier: StagingTier) {
        match tier {
            StagingTier::All => &self.all,
            StagingTier::AOnly => &self.a_only,
            StagingTier::None => &self.none,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fell_back(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn waited(&self) {
        self.waits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> StagingCounts {
        StagingCounts {
            all: self.all.load(Ordering::Relaxed),
            a_only: self.a_only.load(Ordering::Relaxed),
            none: self.none.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
        }
    }
}

/// The samples of a backend with these counts and this much GPU busy time
/// (`None`: not measured): tiers, fallbacks and waits once they happened.
pub(crate) fn samples(counts: &StagingCounts, busy: Option<Duration>) -> Vec<BackendMetric> {
    let counter = |name, help, labels, value: u32| BackendMetric {
        name,
        help,
        kind: MetricKind::Counter,
        labels,
        value: f64::from(value),
    };
    let mut out: Vec<BackendMetric> = counts
        .by_tier()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(tier, n)| {
            counter(
                "cuzk_gpu_staging_partitions_total",
                "Partitions proved on a GPU, by backend and device-memory staging tier \
                 (all: a, b, c on the device; a_only; none: H on the host)",
                vec![("tier", tier.label().to_string())],
                n,
            )
        })
        .collect();
    if counts.fallbacks > 0 {
        out.push(counter(
            "cuzk_gpu_staging_fallbacks_total",
            "GPU partition attempts that ran out of device memory and fell back a tier",
            Vec::new(),
            counts.fallbacks,
        ));
    }
    if counts.waits > 0 {
        out.push(counter(
            "cuzk_gpu_memory_waits_total",
            "Times a GPU partition waited for device memory held by other partitions",
            Vec::new(),
            counts.waits,
        ));
    }
    if let Some(busy) = busy {
        out.push(BackendMetric {
            name: "cuzk_gpu_busy_seconds",
            help: "Seconds a GPU has spent in this daemon's kernel regions since start \
                   (CUDA events; its rate is the busy share)",
            kind: MetricKind::Gauge,
            labels: Vec::new(),
            value: busy.as_secs_f64(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_become_the_gpu_metrics() {
        let c = Counters::default();
        c.staged(StagingTier::All);
        c.staged(StagingTier::All);
        c.staged(StagingTier::AOnly);
        c.fell_back();
        for _ in 0..3 {
            c.waited();
        }
        let counts = c.get();
        assert_eq!(
            counts,
            StagingCounts {
                all: 2,
                a_only: 1,
                none: 0,
                fallbacks: 1,
                waits: 3
            }
        );
        let m = samples(&counts, Some(Duration::from_millis(1500)));
        let line = |m: &BackendMetric| {
            let labels: Vec<String> = m.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}{{{}}} {}", m.name, labels.join(","), m.value)
        };
        let lines: Vec<String> = m.iter().map(line).collect();
        assert_eq!(
            lines,
            [
                "cuzk_gpu_staging_partitions_total{tier=all} 2",
                "cuzk_gpu_staging_partitions_total{tier=a_only} 1",
                "cuzk_gpu_staging_fallbacks_total{} 1",
                "cuzk_gpu_memory_waits_total{} 3",
                "cuzk_gpu_busy_seconds{} 1.5",
            ]
        );
        // A tier never used, fallbacks and waits that never happened are
        // not exported; the busy time is, once measured.
        let quiet = samples(&StagingCounts::default(), None);
        assert!(quiet.is_empty(), "{quiet:?}");
        assert_eq!(
            counts
                - StagingCounts {
                    all: 1,
                    ..Default::default()
                },
            StagingCounts { all: 1, ..counts }
        );
    }
}
