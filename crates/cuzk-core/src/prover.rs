//! The Filecoin proof system the engine drives: a request's circuits
//! (cuzk-circuits, partition by partition) and the verification of the
//! assembled proof (filecoin-proofs-api's verifiers, see [`crate::verify`]).

use cuzk_circuits::{
    porep_source, snap_source, window_post_source, winning_post_source, CircuitError,
    PartitionSource, ProofCircuits,
};

use crate::kinds::ProofType;
use crate::request::{ProofInput, ProofRequest};
use crate::verify::verify_proof;

/// Why a request's circuits could not be built or its proof verified.
#[derive(Debug, thiserror::Error)]
pub enum ProofSystemError {
    #[error(transparent)]
    Circuits(#[from] CircuitError),
    #[error("request input does not match its proof type {0}")]
    Mismatch(ProofType),
    /// filecoin-proofs' verifier failed (not: the proof is invalid).
    #[error("verification failed: {0}")]
    Verify(String),
    /// Any other proof system's own failure.
    #[error("{0}")]
    Other(String),
}

/// The Filecoin side of proving, as the engine needs it.
pub trait ProofSystem: Send + Sync + 'static {
    /// The proof's partitions, ready to synthesize.
    fn source(&self, req: &ProofRequest) -> Result<Box<dyn PartitionSource>, ProofSystemError>;
    /// Whether `proof` is a valid proof of `req`.
    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, ProofSystemError>;
}

/// A request's circuits: the partitions the engine synthesizes and, for
/// tests and cuzk-lab, bellperson's prover on the same circuits.
pub fn proof_circuits(req: &ProofRequest) -> Result<ProofCircuits, ProofSystemError> {
    Ok(match (&req.input, req.proof_type) {
        (ProofInput::PoRep { c1, .. }, _) => porep_source(c1)?,
        (
            ProofInput::WinningPost {
                randomness,
                prover_id,
                vanilla_proofs,
                ..
            },
            ProofType::Winning(t),
        ) => winning_post_source(t, randomness, *prover_id, vanilla_proofs)?,
        (
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                vanilla_proofs,
                ..
            },
            ProofType::Window(t),
        ) => window_post_source(t, randomness, *prover_id, vanilla_proofs, *partition_index)?,
        (
            ProofInput::SnapDeals {
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            },
            ProofType::Update(t),
        ) => snap_source(t, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new)?,
        (_, t) => return Err(ProofSystemError::Mismatch(t)),
    })
}

/// The partitions of a request's proof, ready to synthesize.
pub fn partition_source(req: &ProofRequest) -> Result<Box<dyn PartitionSource>, ProofSystemError> {
    proof_circuits(req).map(ProofCircuits::into_source)
}

/// Filecoin's circuits and verifiers.
#[derive(Clone, Copy, Debug, Default)]
pub struct FilecoinProofs;

impl ProofSystem for FilecoinProofs {
    fn source(&self, req: &ProofRequest) -> Result<Box<dyn PartitionSource>, ProofSystemError> {
        partition_source(req)
    }

    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, ProofSystemError> {
        verify_proof(req, proof).map_err(|e| ProofSystemError::Verify(format!("{e:#}")))
    }
}
