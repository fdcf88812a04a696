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
//! PoRep submitted at CRITICAL) needs the shared pool's threads. A shape's
//! constraint system is fetched (recorded, the first time, on rayon's
//! global threads) before a partition enters either pool: no pool thread
//! ever waits for the shape's lock.

use std::sync::Arc;

use cuzk_prover::pool::{pool, PoolAccount};
use cuzk_prover::{AbcAt, Synthesized, WitnessSize};

use crate::budget::MemoryBudget;
use crate::config::{Amount, EngineConfig, SynthesisPath};
use crate::r1cs_manager::{synthesize_through, ConstraintSystems};

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
    // The shape's system first, outside the pool: the first partition of a
    // shape records it holding the shape's lock, and partitions arriving
    // with it wait for that lock. Inside the pool, a thread of the
    // recording could, while it waits for its own parallel work, take up
    // one of those partitions and wait for the lock it holds itself (the
    // 2026-12-03 hang of three WinningPoSts arriving together).
    let compiled = match config.synthesis {
        SynthesisPath::Compiled => r1cs.get(source, k),
        SynthesisPath::Circuit => None,
    };
    setup.install(critical, || {
        if let Some(r) = compiled.and_then(|cs| synthesize_through(source, k, &cs, at)) {
            return r.map_err(|e| e.to_string());
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

    /// A source whose recording waits for parallel work in the current
    /// pool (as the real recordings do) and then fails (synthesis then
    /// goes the old way).
    struct ParallelRecording;

    impl cuzk_circuits::PartitionSource for ParallelRecording {
        fn partitions(&self) -> usize {
            1
        }
        fn shape(&self) -> &str {
            "parallel-recording"
        }
        fn record(&self, _: usize) -> Result<cuzk_r1cs::CompiledCs, cuzk_circuits::CircuitError> {
            use rayon::prelude::*;
            (0..64u64).into_par_iter().for_each(|_| {
                std::thread::sleep(std::time::Duration::from_millis(2));
            });
            Err(cuzk_circuits::CircuitError::Record(
                "not in this test".into(),
            ))
        }
        fn synthesize_compiled(
            &self,
            _: usize,
            _: &Arc<cuzk_r1cs::CompiledCs>,
            _: AbcAt,
        ) -> Result<Synthesized, cuzk_circuits::CircuitError> {
            Err(cuzk_circuits::CircuitError::Record(
                "not in this test".into(),
            ))
        }
        fn synthesize_sized(
            &self,
            _: usize,
            _: Option<WitnessSize>,
        ) -> Result<Synthesized, cuzk_circuits::CircuitError> {
            Ok(Synthesized {
                witness: Default::default(),
                elapsed: std::time::Duration::ZERO,
            })
        }
        fn check(
            &self,
            _: usize,
        ) -> Result<cuzk_prover::check::CircuitCheck, cuzk_circuits::CircuitError> {
            Err(cuzk_circuits::CircuitError::Record(
                "not in this test".into(),
            ))
        }
    }

    #[test]
    fn partitions_of_a_new_shape_arriving_together_do_not_hang_on_its_recording() {
        // Eight partitions of one new shape at once on a 2-thread pool.
        // With the recording inside the pool, a thread of the recording
        // could take up another partition and wait for the shape's lock it
        // holds itself (three WinningPoSts hung a daemon that way).
        let config = EngineConfig {
            synthesis_threads: 2,
            ..Default::default()
        };
        let budget = MemoryBudget::new(1 << 30);
        let setup = Arc::new(SynthesisSetup::new(&config, &budget));
        let r1cs = Arc::new(ConstraintSystems::new(None, budget));
        let (done, finished) = std::sync::mpsc::channel();
        let size = WitnessSize {
            constraints: 1 << 10,
            inputs: 1,
            aux: 1,
        };
        for k in 0..8 {
            let (setup, r1cs, config, done) =
                (setup.clone(), r1cs.clone(), config.clone(), done.clone());
            std::thread::spawn(move || {
                let r = synthesize_partition(
                    &setup,
                    false,
                    &config,
                    &r1cs,
                    &ParallelRecording,
                    0,
                    (size, AbcAt::Synthesis),
                );
                done.send((k, r.is_ok())).unwrap();
            });
        }
        for _ in 0..8 {
            let (k, ok) = finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("a partition hung on the recording of its shape");
            assert!(ok, "partition {k} failed");
        }
    }

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
