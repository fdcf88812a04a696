//! bellperson's own CPU prover on a proof's circuits: the reference our
//! proofs are compared with (cuzk-core's `equal_bellperson` test,
//! cuzk-lab's `prover-bench`). Not part of [`PartitionSource`], the
//! engine's view of a proof: [`ProofCircuits`] offers both.

use bellperson::groth16::{Parameters, Proof as BellpersonProof};
use blstrs::{Bls12, Scalar};

use crate::{CircuitError, Circuits, PartitionSource};

/// bellperson's prover on the same circuits as a [`PartitionSource`].
pub trait BellpersonReference: Send + Sync {
    /// All partitions' proofs by bellperson's CPU prover, with the given
    /// randomisers.
    fn bellperson_proofs(
        &self,
        params: &Parameters<Bls12>,
        r: Vec<Scalar>,
        s: Vec<Scalar>,
    ) -> Result<Vec<BellpersonProof<Bls12>>, CircuitError>;
}

impl<T: Circuits> BellpersonReference for T {
    fn bellperson_proofs(
        &self,
        params: &Parameters<Bls12>,
        r: Vec<Scalar>,
        s: Vec<Scalar>,
    ) -> Result<Vec<BellpersonProof<Bls12>>, CircuitError> {
        let circuits = (0..self.count())
            .map(|k| self.circuit(k))
            .collect::<Result<Vec<_>, _>>()?;
        bellperson::groth16::create_proof_batch(circuits, params, r, s)
            .map_err(|e| CircuitError::Bellperson(e.to_string()))
    }
}

/// Both views of one kind's circuits.
trait Both: PartitionSource + BellpersonReference {
    fn into_source(self: Box<Self>) -> Box<dyn PartitionSource>;
    fn source(&self) -> &dyn PartitionSource;
    fn reference(&self) -> &dyn BellpersonReference;
}

impl<T: PartitionSource + BellpersonReference + 'static> Both for T {
    fn into_source(self: Box<Self>) -> Box<dyn PartitionSource> {
        self
    }
    fn source(&self) -> &dyn PartitionSource {
        self
    }
    fn reference(&self) -> &dyn BellpersonReference {
        self
    }
}

/// A proof's circuits as the kinds' constructors build them
/// ([`crate::porep_source`] and the others).
pub struct ProofCircuits(Box<dyn Both>);

impl ProofCircuits {
    pub(crate) fn new<T: Circuits + 'static>(circuits: T) -> ProofCircuits {
        ProofCircuits(Box::new(circuits))
    }

    /// The partitions to synthesize: all the engine needs.
    pub fn into_source(self) -> Box<dyn PartitionSource> {
        self.0.into_source()
    }

    pub fn source(&self) -> &dyn PartitionSource {
        self.0.source()
    }

    /// bellperson's prover on the same circuits.
    pub fn reference(&self) -> &dyn BellpersonReference {
        self.0.reference()
    }
}
