//! The reference prover: filecoin-proofs-api's monolithic CPU path
//! (bellperson). Not used by the daemon; tests and benchmarks compare
//! against it.

use std::time::Instant;

use filecoin_proofs_api::{post, seal, update, PartitionProofBytes};

use crate::prover::{ProveOutput, Prover};
use crate::request::{ProofInput, ProofRequest};

/// Proves through filecoin-proofs-api's CPU code paths (bellperson prover).
#[derive(Clone, Copy, Debug, Default)]
pub struct FilecoinApiProver;

impl Prover for FilecoinApiProver {
    fn name(&self) -> String {
        "filecoin-proofs-api".to_string()
    }

    fn prove(&self, req: &ProofRequest) -> Result<ProveOutput, String> {
        let t = Instant::now();
        let proof = prove_with_api(req).map_err(|e| format!("{e:#}"))?;
        // One opaque call: parameter loading, synthesis and compute together.
        Ok(ProveOutput {
            proof,
            compute: t.elapsed(),
            ..Default::default()
        })
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
