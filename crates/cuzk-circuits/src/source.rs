//! What every proof kind's circuits are to the engine: a
//! [`PartitionSource`] (partition count, shape, synthesis of partition `k`
//! by either path, constraint checks), built from the kinds' own
//! [`Circuits`], and why that can fail ([`CircuitError`]).

use bellperson::{Circuit as _, SynthesisError};
use blstrs::Scalar;
use cuzk_prover::check::{check_satisfied, CircuitCheck};
use std::sync::Arc;

use cuzk_prover::{AbcAt, SynthError, Synthesized, WitnessSize};
use cuzk_r1cs::{AssignmentCs, CompiledCs, CompiledSynthError};

/// Why circuits could not be built or synthesized.
#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    #[error("cannot decode the vanilla proofs: {0}")]
    Decode(String),
    #[error("cannot build the circuit: {0}")]
    Build(String),
    #[error("partition {k} does not exist (the proof has {count})")]
    NoPartition { k: usize, count: usize },
    #[error("partition {k}: {source}")]
    Synth { k: usize, source: SynthError },
    #[error("partition {k}: {source}")]
    Compiled {
        k: usize,
        source: CompiledSynthError,
    },
    #[error("recording the constraint system: {0}")]
    Record(String),
    #[error("bellperson: {0}")]
    Bellperson(String),
}

impl CircuitError {
    pub(crate) fn build(e: anyhow::Error) -> CircuitError {
        CircuitError::Build(format!("{e:#}"))
    }
}

/// The partitions of one proof, ready to synthesize.
pub trait PartitionSource: Send + Sync {
    /// Number of partitions (Groth16 proofs) the proof is made of.
    fn partitions(&self) -> usize;

    /// The circuit shape (kind and registered proof) of every partition:
    /// partitions of one shape share one constraint system.
    fn shape(&self) -> &str;

    /// Records partition `k`'s constraint system (its matrices; no
    /// witness), named by [`PartitionSource::shape`].
    fn record(&self, k: usize) -> Result<CompiledCs, CircuitError>;

    /// Synthesizes partition `k` through the compiled system `cs` of this
    /// shape: the same witness as [`PartitionSource::synthesize`], without
    /// building linear combinations.
    /// `at`: whether a, b and c are evaluated here or left to the prover
    /// backend (the witness then carries `cs`).
    fn synthesize_compiled(
        &self,
        k: usize,
        cs: &Arc<CompiledCs>,
        at: AbcAt,
    ) -> Result<Synthesized, CircuitError>;

    /// Synthesizes partition `k` (and checks it is satisfied).
    fn synthesize(&self, k: usize) -> Result<Synthesized, CircuitError> {
        self.synthesize_sized(k, None)
    }

    /// As [`PartitionSource::synthesize`], allocating the witness for
    /// `size` up front when given.
    fn synthesize_sized(
        &self,
        k: usize,
        size: Option<WitnessSize>,
    ) -> Result<Synthesized, CircuitError>;

    /// Synthesizes partition `k` keeping only its assignment and checks
    /// every constraint (A·B = C), without building a witness.
    fn check(&self, k: usize) -> Result<CircuitCheck, CircuitError>;
}

/// What each kind provides: its circuit for partition `k`. Every such set
/// is a [`PartitionSource`].
pub(crate) trait Circuits: Send + Sync {
    type Circuit: bellperson::Circuit<Scalar> + Send;
    fn count(&self) -> usize;
    fn shape(&self) -> &str;
    /// The circuit of partition `k < count()`.
    fn circuit(&self, k: usize) -> Result<Self::Circuit, CircuitError>;
    /// Partition `k`'s assignment made natively ([`assign`]), where this
    /// kind has such code; `None` runs the circuit's gadgets instead.
    fn assign(&self, _k: usize, _cs: &mut AssignmentCs) -> Option<Result<(), SynthesisError>> {
        None
    }
    /// Whether [`Circuits::assign`] is native for this kind (then the
    /// circuit itself is not built for a compiled synthesis).
    fn assigns_natively(&self) -> bool {
        false
    }
}

impl<T: Circuits> PartitionSource for T {
    fn partitions(&self) -> usize {
        self.count()
    }

    fn shape(&self) -> &str {
        Circuits::shape(self)
    }

    fn record(&self, k: usize) -> Result<CompiledCs, CircuitError> {
        let circuit = self.partition_circuit(k)?;
        cuzk_r1cs::record(Circuits::shape(self), circuit)
            .map_err(|e| CircuitError::Record(e.to_string()))
    }

    fn synthesize_compiled(
        &self,
        k: usize,
        cs: &Arc<CompiledCs>,
        at: AbcAt,
    ) -> Result<Synthesized, CircuitError> {
        let circuit = match self.assigns_natively() {
            true if k < self.count() => None,
            _ => Some(self.partition_circuit(k)?),
        };
        cuzk_r1cs::synthesize_compiled_at(cs, at, |asg| match circuit {
            Some(circuit) => circuit.synthesize(asg),
            None => self
                .assign(k, asg)
                .unwrap_or(Err(SynthesisError::AssignmentMissing)),
        })
        .map_err(|source| CircuitError::Compiled { k, source })
    }

    fn synthesize_sized(
        &self,
        k: usize,
        size: Option<WitnessSize>,
    ) -> Result<Synthesized, CircuitError> {
        let count = self.count();
        if k >= count {
            return Err(CircuitError::NoPartition { k, count });
        }
        cuzk_prover::synthesize_sized(self.circuit(k)?, size)
            .map_err(|source| CircuitError::Synth { k, source })
    }

    fn check(&self, k: usize) -> Result<CircuitCheck, CircuitError> {
        let count = self.count();
        if k >= count {
            return Err(CircuitError::NoPartition { k, count });
        }
        check_satisfied(self.circuit(k)?).map_err(|source| CircuitError::Synth { k, source })
    }
}

/// Partition `k`'s circuit, `k` checked.
trait PartitionCircuit: Circuits {
    fn partition_circuit(&self, k: usize) -> Result<Self::Circuit, CircuitError> {
        let count = self.count();
        if k >= count {
            return Err(CircuitError::NoPartition { k, count });
        }
        self.circuit(k)
    }
}

impl<T: Circuits> PartitionCircuit for T {}
