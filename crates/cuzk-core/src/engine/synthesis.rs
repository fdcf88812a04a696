//! How a partition is synthesized: through its shape's compiled constraint
//! system (or the reference path), on the engine's synthesis threads, into
//! witness vectors recycled from earlier partitions.
//!
//! [`SynthesisSetup`] owns the thread pool (`engine.synthesis_threads`,
//! shared by the synthesis workers: the compiled path assigns independent
//! sub-circuits, such as a PoRep's challenges, in parallel) and ties the
//! process's witness pool (`cuzk_prover::pool`, `engine.witness_pool`) to
//! the memory budget: idle vectors are charged to it, and freed before any
//! reservation waits.

use std::sync::Arc;

use cuzk_prover::pool::{pool, PoolAccount};
use cuzk_prover::{Synthesized, WitnessSize};

use crate::budget::MemoryBudget;
use crate::config::{Amount, EngineConfig, SynthesisPath};
use crate::r1cs_manager::ConstraintSystems;

/// The engine's synthesis threads.
pub(super) struct SynthesisSetup {
    threads: Option<rayon::ThreadPool>,
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
            n => rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("cuzk-synth-{i}"))
                .build()
                .map_err(|e| tracing::warn!("synthesis threads: {e}; using the global pool"))
                .ok(),
        };
        SynthesisSetup { threads }
    }

    fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.threads {
            Some(t) => t.install(f),
            None => f(),
        }
    }
}

/// Partition `k` through the shape's compiled constraint system (config
/// `engine.synthesis = "compiled"`, the default) or the old way; a compiled
/// system that does not fit the circuit falls back to the old way.
pub(super) fn synthesize_partition(
    setup: &SynthesisSetup,
    config: &EngineConfig,
    r1cs: &ConstraintSystems,
    source: &dyn cuzk_circuits::PartitionSource,
    k: usize,
    size: WitnessSize,
) -> Result<Synthesized, String> {
    use cuzk_circuits::CircuitError;
    setup.install(|| {
        if config.synthesis == SynthesisPath::Compiled {
            if let Some(cs) = r1cs.get(source, k) {
                match source.synthesize_compiled(k, &cs) {
                    Err(CircuitError::Compiled {
                        source: cuzk_r1cs::CompiledSynthError::Compiled(e),
                        ..
                    }) => tracing::warn!(
                        "compiled constraint system unusable, synthesizing the old way: {e}"
                    ),
                    r => return r.map_err(|e| e.to_string()),
                }
            }
        }
        source
            .synthesize_sized(k, Some(size))
            .map_err(|e| e.to_string())
    })
}
