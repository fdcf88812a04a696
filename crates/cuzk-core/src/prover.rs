//! Provers: what turns a checked request into proof bytes.
//!
//! The engine drives any [`Prover`]; it proves, then always verifies before a
//! proof leaves the daemon. [`FilecoinApiProver`] proves through
//! filecoin-proofs-api on the CPU.

use filecoin_proofs_api::{post, seal, update, PartitionProofBytes};

use crate::request::{ProofInput, ProofRequest};
use crate::verify::verify_proof;

/// Produces and checks proofs for checked requests. Implementations are
/// called from the engine's worker threads and may block for minutes.
pub trait Prover: Send + Sync + 'static {
    /// A short name for logs and status (`cpu`, `cuda:0`).
    fn name(&self) -> String;

    /// Proves `req`; the error text becomes the job's error message.
    fn prove(&self, req: &ProofRequest) -> Result<Vec<u8>, String>;

    /// Verifies a proof of `req`: `Ok(true)` only for a valid proof.
    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, String>;
}

/// Proves through filecoin-proofs-api's CPU code paths (bellperson prover).
#[derive(Clone, Copy, Debug, Default)]
pub struct FilecoinApiProver;

impl Prover for FilecoinApiProver {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn prove(&self, req: &ProofRequest) -> Result<Vec<u8>, String> {
        prove_with_api(req).map_err(|e| format!("{e:#}"))
    }

    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, String> {
        verify_proof(req, proof).map_err(|e| format!("{e:#}"))
    }
}

fn prove_with_api(req: &ProofRequest) -> anyhow::Result<Vec<u8>> {
    use crate::kinds::ProofType;
    match (&req.input, req.proof_type) {
        (
            ProofInput::PoRep {
                c1,
                prover_id,
                sector_id,
            },
            _,
        ) => Ok(seal::seal_commit_phase2((**c1).clone(), *prover_id, *sector_id)?.proof),
        (
            ProofInput::WinningPost {
                randomness,
                prover_id,
                vanilla_proofs,
                ..
            },
            ProofType::Winning(post_type),
        ) => {
            let proofs = post::generate_winning_post_with_vanilla(
                post_type,
                randomness,
                *prover_id,
                vanilla_proofs,
            )?;
            Ok(proofs.into_iter().flat_map(|(_, p)| p).collect())
        }
        (
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                vanilla_proofs,
                ..
            },
            ProofType::Window(post_type),
        ) => Ok(post::generate_single_window_post_with_vanilla(
            post_type,
            randomness,
            *prover_id,
            vanilla_proofs,
            *partition_index,
        )?
        .0),
        (
            ProofInput::SnapDeals {
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            },
            ProofType::Update(update_type),
        ) => Ok(update::generate_empty_sector_update_proof_with_vanilla(
            update_type,
            vanilla_proofs.iter().cloned().map(PartitionProofBytes).collect(),
            *comm_r_old,
            *comm_r_new,
            *comm_d_new,
        )?
        .0),
        (_, t) => anyhow::bail!("request input does not match its proof type {t}"),
    }
}
