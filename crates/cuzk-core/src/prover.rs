//! The Filecoin proof system the engine drives: a request's circuits
//! (cuzk-circuits, partition by partition) and the verification of the
//! assembled proof (filecoin-proofs-api's verifiers, see [`crate::verify`]).

use cuzk_circuits::{
    porep_source, snap_source, window_post_source, winning_post_source, PartitionSource,
};

use crate::engine::ProofSystem;
use crate::kinds::ProofType;
use crate::request::{ProofInput, ProofRequest};
use crate::verify::verify_proof;

/// The partitions of a request's proof, ready to synthesize.
pub fn partition_source(req: &ProofRequest) -> Result<Box<dyn PartitionSource>, String> {
    let err = |e: cuzk_circuits::CircuitError| e.to_string();
    match (&req.input, req.proof_type) {
        (ProofInput::PoRep { c1, .. }, _) => porep_source(c1).map_err(err),
        (
            ProofInput::WinningPost {
                randomness,
                prover_id,
                vanilla_proofs,
                ..
            },
            ProofType::Winning(t),
        ) => winning_post_source(t, randomness, *prover_id, vanilla_proofs).map_err(err),
        (
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                vanilla_proofs,
                ..
            },
            ProofType::Window(t),
        ) => window_post_source(t, randomness, *prover_id, vanilla_proofs, *partition_index)
            .map_err(err),
        (
            ProofInput::SnapDeals {
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            },
            ProofType::Update(t),
        ) => snap_source(t, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new).map_err(err),
        (_, t) => Err(format!("request input does not match its proof type {t}")),
    }
}

/// Filecoin's circuits and verifiers.
#[derive(Clone, Copy, Debug, Default)]
pub struct FilecoinProofs;

impl ProofSystem for FilecoinProofs {
    fn source(&self, req: &ProofRequest) -> Result<Box<dyn PartitionSource>, String> {
        partition_source(req)
    }

    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, String> {
        verify_proof(req, proof).map_err(|e| format!("{e:#}"))
    }
}
