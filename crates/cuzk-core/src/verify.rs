//! Verification of finished proofs against their request's public inputs.
//!
//! The engine returns no proof that has not passed here. PoRep, WinningPoSt
//! and SnapDeals use filecoin-proofs-api's own verify functions. A single
//! WindowPoSt partition has no API verifier (Curio merges partitions before
//! verifying), so it is checked the way `verify_window_post` checks each of
//! its partitions: the same public inputs, the same verifying key, for
//! partition `k` of the deadline.

use std::collections::BTreeMap;

use bellperson::groth16;
use blstrs::Bls12;
use filecoin_proofs::parameters::window_post_public_params;
use filecoin_proofs::{as_safe_commitment, with_shape};
use filecoin_proofs_api::{
    post, seal, update, ChallengeSeed, Commitment, MerkleTreeTrait, ProverId, PublicReplicaInfo,
    RegisteredPoStProof, SectorId,
};
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{
    FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicSector,
};

use crate::kinds::ProofType;
use crate::request::{ProofInput, ProofRequest};

/// Size of one Groth16 proof (compressed A, B, C).
pub const GROTH_PROOF_BYTES: usize = 192;

/// Checks `proof` against the public inputs of `req`.
///
/// `Ok(false)`: the proof is well-formed but wrong. `Err`: verification could
/// not run (malformed proof bytes, missing verifying key, ...).
pub fn verify_proof(req: &ProofRequest, proof: &[u8]) -> anyhow::Result<bool> {
    match (&req.input, req.proof_type) {
        (
            ProofInput::PoRep {
                c1,
                prover_id,
                sector_id,
            },
            _,
        ) => seal::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            *prover_id,
            *sector_id,
            c1.ticket,
            c1.seed,
            proof,
        ),
        (
            ProofInput::WinningPost {
                randomness,
                prover_id,
                sectors,
                ..
            },
            ProofType::Winning(post_type),
        ) => {
            let replicas: BTreeMap<SectorId, PublicReplicaInfo> = sectors
                .iter()
                .map(|(id, comm_r)| (*id, PublicReplicaInfo::new(post_type, *comm_r)))
                .collect();
            post::verify_winning_post(randomness, proof, &replicas, *prover_id)
        }
        (
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                sectors,
                ..
            },
            ProofType::Window(post_type),
        ) => verify_window_post_partition(
            post_type,
            randomness,
            *prover_id,
            sectors,
            *partition_index,
            proof,
        ),
        (
            ProofInput::SnapDeals {
                comm_r_old,
                comm_r_new,
                comm_d_new,
                ..
            },
            ProofType::Update(update_type),
        ) => update::verify_empty_sector_update_proof(
            update_type,
            proof,
            *comm_r_old,
            *comm_r_new,
            *comm_d_new,
        ),
        (_, t) => anyhow::bail!("request input does not match its proof type {t}"),
    }
}

/// Verifies one WindowPoSt partition proof.
///
/// `sectors` are the partition's sectors (id, comm_r) in the order the
/// vanilla proofs were given; `partition_index` is the partition's place in
/// its deadline, which enters the challenge derivation.
pub fn verify_window_post_partition(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    sectors: &[(SectorId, Commitment)],
    partition_index: usize,
    proof: &[u8],
) -> anyhow::Result<bool> {
    anyhow::ensure!(!sectors.is_empty(), "no sectors to verify against");
    with_shape!(
        u64::from(post_type.sector_size()),
        verify_window_partition_inner,
        post_type,
        randomness,
        prover_id,
        sectors,
        partition_index,
        proof
    )
}

fn verify_window_partition_inner<Tree: 'static + MerkleTreeTrait>(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    sectors: &[(SectorId, Commitment)],
    partition_index: usize,
    proof: &[u8],
) -> anyhow::Result<bool> {
    if proof.len() != GROTH_PROOF_BYTES {
        return Ok(false);
    }
    let config = post_type.as_v1_config();
    let vanilla_params = window_post_public_params::<Tree>(&config)?;
    anyhow::ensure!(
        sectors.len() <= vanilla_params.sector_count,
        "{} sectors exceed one partition ({})",
        sectors.len(),
        vanilla_params.sector_count
    );

    let mut pub_sectors = Vec::with_capacity((partition_index + 1) * vanilla_params.sector_count);
    let to_public = |(id, comm_r): &(SectorId, Commitment)| -> anyhow::Result<PublicSector<_>> {
        Ok(PublicSector {
            id: *id,
            comm_r: as_safe_commitment(comm_r, "comm_r")?,
        })
    };
    // The circuit's public inputs for partition k come from the k-th chunk of
    // the deadline's sectors; earlier chunks only shift the index, so they are
    // filled with copies of this partition's first sector.
    let filler = to_public(&sectors[0])?;
    pub_sectors.resize(partition_index * vanilla_params.sector_count, filler);
    for s in sectors {
        pub_sectors.push(to_public(s)?);
    }
    let pub_inputs = PublicInputs {
        randomness: as_safe_commitment(randomness, "randomness")?,
        prover_id: as_safe_commitment(&prover_id, "prover_id")?,
        sectors: pub_sectors,
        k: Some(partition_index),
    };
    let inputs =
        <FallbackPoStCompound<Tree> as CompoundProof<
            FallbackPoSt<'_, Tree>,
            FallbackPoStCircuit<Tree>,
        >>::generate_public_inputs(&pub_inputs, &vanilla_params, Some(partition_index))?;
    let vk = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::verifying_key::<OsRng>(None, &vanilla_params)?;
    let pvk = groth16::prepare_verifying_key(&vk);
    let proof = groth16::Proof::<Bls12>::read(proof)?;
    Ok(groth16::verify_proof(&pvk, &proof, &inputs)?)
}
