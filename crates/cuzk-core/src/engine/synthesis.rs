//! How a partition is synthesized: through its shape's compiled constraint
//! system (or the reference path), on the engine's synthesis threads, into
//! witness vectors recycled from earlier partitions.
//!
//! [`SynthesisSetup`] owns the thread pool (`engine.synthesis_threads`,
//! shared by the synthesis workers: the compiled path assigns independent
//! sub-circuits, such as a PoRep's challenges, in parallel) and ties the
//! process's witness pool (`cuzk_prover::pool`, `engine.witness_pool`) to
//! the memory budget: idle vectors are charged to it, and freed before any
//! reservation waits. Small CRITICAL partitions (WinningPoSt's) are
//! synthesized on a small pool of their own, so they never queue behind a
//! PoRep's challenges in the shared one; a large CRITICAL partition (a
//! PoRep submitted at CRITICAL) needs the shared pool's threads.

use std::sync::Arc;

use cuzk_prover::pool::{pool, PoolAccount};
use cuzk_prover::{AbcAt, Synthesized, WitnessSize};

use crate::budget::MemoryBudget;
use crate::config::{Amount, EngineConfig, SynthesisPath};
use crate::r1cs_manager::ConstraintSystems;

/// The largest partition (in constraints) synthesized on the CRITICAL
/// pool: a 32 GiB WinningPoSt has ~2^18.6, a PoRep or WindowPoSt partition
/// ~2^27.
pub(super) const CRITICAL_POOL_MAX_CONSTRAINTS: usize = 1 << 22;

/// Whether a partition of `size` at `priority` is synthesized on the
/// CRITICAL pool.
pub(super) fn on_critical_pool(priority: crate::kinds::Priority, size: &WitnessSize) -> bool {
    priority == crate::kinds::Priority::Critical
        && size.constraints <= CRITICAL_POOL_MAX_CONSTRAINTS
}

/// The engine's synthesis threads.
pub(super) struct SynthesisSetup {
    threads: Option<rayon::ThreadPool>,
    /// For CRITICAL partitions (when `engine.critical_workers` > 0).
    critical: Option<rayon::ThreadPool>,
}

struct BudgetAccount(Arc<MemoryBudget>);

impl PoolAccount for BudgetAccount {
    fn hold(&self, bytes: u64) -> bool {
        self.0.charge(bytes)
    }
    fn release(&self, bytes: u64) {
        self.0.uncharge(bytes)
    }
}

impl SynthesisSetup {
    /// The thread pool, and the witness pool charged to `budget`.
    pub(super) fn new(config: &EngineConfig, budget: &Arc<MemoryBudget>) -> SynthesisSetup {
        let limit = match config.witness_pool {
            Amount::Auto => budget.limit() / 4,
            Amount::Bytes(b) => b.as_u64(),
        };
        pool().configure(limit, Some(Arc::new(BudgetAccount(budget.clone()))));
        budget.set_reclaimer(Box::new(|| pool().clear()));
        let threads = match config.synthesis_threads {
            0 => None,
            n => thread_pool(n, "cuzk-synth"),
        };
        // A quarter of the cores (1 to 8): a WinningPoSt is small.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let critical = (config.critical_workers > 0)
            .then(|| thread_pool((cores / 4).clamp(1, 8), "cuzk-critical"))
            .flatten();
        SynthesisSetup { threads, critical }
    }

    fn install<T: Send>(&self, critical: bool, f: impl FnOnce() -> T + Send) -> T {
        let pool = if critical {
            self.critical.as_ref().or(self.threads.as_ref())
        } else {
            self.threads.as_ref()
        };
        match pool {
            Some(t) => t.install(f),
            None => f(),
        }
    }
}

fn thread_pool(n: usize, name: &'static str) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| tracing::warn!("{name} threads: {e}; using the global pool"))
        .ok()
}

/// Partition `k` through the shape's compiled constraint system (config
/// `engine.synthesis = "compiled"`, the default) or the old way; a compiled
/// system that does not fit the circuit falls back to the old way.
/// `critical`: on the CRITICAL pool ([`on_critical_pool`]).
pub(super) fn synthesize_partition(
    setup: &SynthesisSetup,
    critical: bool,
    config: &EngineConfig,
    r1cs: &ConstraintSystems,
    source: &dyn cuzk_circuits::PartitionSource,
    k: usize,
    (size, at): (WitnessSize, AbcAt),
) -> Result<Synthesized, String> {
    use cuzk_circuits::CircuitError;
    setup.install(critical, || {
        if config.synthesis == SynthesisPath::Compiled {
            if let Some(cs) = r1cs.get(source, k) {
                match source.synthesize_compiled(k, &cs, at) {
                    Err(CircuitError::Compiled {
                        source: cuzk_r1cs::CompiledSynthError::Compiled(e),
                        ..
                    }) if at == AbcAt::Synthesis => tracing::warn!(
                        "compiled constraint system unusable, synthesizing the old way: {e}"
                    ),
                    r => return r.map_err(|e| e.to_string()),
                }
            }
        }
        if at == AbcAt::Backend {
            // The reservation has no room for a, b and c on the host.
            return Err(format!(
                "the compiled constraint system of {} is not usable for partition {k}",
                source.shape()
            ));
        }
        source
            .synthesize_sized(k, Some(size))
            .map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Priority;

    #[test]
    fn only_small_critical_partitions_use_the_critical_pool() {
        let size = |constraints| WitnessSize {
            constraints,
            inputs: 1,
            aux: 1,
        };
        assert!(on_critical_pool(Priority::Critical, &size(1 << 19)));
        assert!(!on_critical_pool(Priority::Critical, &size(1 << 27)));
        assert!(!on_critical_pool(Priority::High, &size(1 << 19)));
    }
}
