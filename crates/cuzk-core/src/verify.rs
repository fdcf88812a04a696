//! Verification of finished proofs against their request's public inputs.
//!
//! The engine returns no proof that has not passed here. PoRep, WinningPoSt
//! and SnapDeals use filecoin-proofs-api's own verify functions. A single
//! WindowPoSt partition has no API verifier (Curio merges partitions before
//! verifying), so it is checked the way `verify_window_post` checks each of
//! its partitions: the same public inputs, the same verifying key, for
//! partition `k` of the deadline. Those inputs are derived from the
//! partition's own sectors ([`window_partition_public_inputs`]): nothing
//! is allocated in proportion to `k`.

use std::collections::BTreeMap;

use bellperson::groth16;
use blstrs::Bls12;
use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::window_post_public_params;
use filecoin_proofs::{as_safe_commitment, with_shape};
use filecoin_proofs_api::{
    post, seal, update, ChallengeSeed, Commitment, MerkleTreeTrait, ProverId, PublicReplicaInfo,
    RegisteredPoStProof, SectorId,
};
use rand::rngs::OsRng;
use sha2::{Digest, Sha256};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::gadgets::por::PoRCompound;
use storage_proofs_core::por;
use storage_proofs_core::util::NODE_SIZE;
#[cfg(test)]
use storage_proofs_post::fallback::PublicInputs;
use storage_proofs_post::fallback::{
    self, generate_leaf_challenge_inner, get_challenge_index, FallbackPoSt, FallbackPoStCircuit,
    FallbackPoStCompound, PublicSector,
};

use crate::kinds::ProofType;
use crate::request::{ProofInput, ProofRequest};

/// filecoin-proofs' verifier could not run (malformed proof bytes, a
/// missing verifying key, a request that does not fit its proof type...):
/// not that the proof is wrong. Carries filecoin-proofs' own error chain.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct VerifyError(#[from] anyhow::Error);

/// Size of one Groth16 proof (compressed A, B, C).
pub const GROTH_PROOF_BYTES: usize = 192;

/// Checks `proof` against the public inputs of `req`.
///
/// `Ok(false)`: the proof is well-formed but wrong. `Err`: verification could
/// not run (malformed proof bytes, missing verifying key, ...).
pub fn verify_proof(req: &ProofRequest, proof: &[u8]) -> Result<bool, VerifyError> {
    verify_any(req, proof).map_err(VerifyError)
}

fn verify_any(req: &ProofRequest, proof: &[u8]) -> anyhow::Result<bool> {
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
        ) => verify_window_any(
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
/// its deadline, which enters the challenge derivation. `prover_id` is
/// part of the API for symmetry with `verify_window_post`; FallbackPoSt's
/// public inputs do not contain it.
fn verify_window_any(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    _prover_id: ProverId,
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
        sectors,
        partition_index,
        proof
    )
}

fn verify_window_partition_inner<Tree: 'static + MerkleTreeTrait>(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
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
    let pub_sectors = sectors
        .iter()
        .map(|(id, comm_r)| {
            Ok(PublicSector {
                id: *id,
                comm_r: as_safe_commitment(comm_r, "comm_r")?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let randomness = as_safe_commitment(randomness, "randomness")?;
    let inputs =
        public_inputs_any::<Tree>(&vanilla_params, &randomness, &pub_sectors, partition_index)?;
    let vk = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::verifying_key::<OsRng>(None, &vanilla_params)?;
    let pvk = groth16::prepare_verifying_key(&vk);
    let proof = groth16::Proof::<Bls12>::read(proof)?;
    Ok(groth16::verify_proof(&pvk, &proof, &inputs)?)
}

/// The circuit's public inputs for partition `k` of a WindowPoSt deadline
/// whose partition `k` holds `sectors`: the inputs
/// `FallbackPoStCompound::generate_public_inputs` derives from the whole
/// deadline for `Some(k)`, computed from this partition's sectors alone.
///
/// That function selects chunk `k` of the deadline's sectors and uses `k`
/// only in each sector's index (`k * sector_count + i`), which feeds the
/// challenge index of the older proof versions. Taking the chunk as given
/// and the index as a number means no memory in proportion to `k`.
pub fn window_partition_public_inputs<Tree: 'static + MerkleTreeTrait>(
    params: &fallback::PublicParams,
    randomness: &<Tree::Hasher as Hasher>::Domain,
    sectors: &[PublicSector<<Tree::Hasher as Hasher>::Domain>],
    k: usize,
) -> Result<Vec<Fr>, VerifyError> {
    public_inputs_any::<Tree>(params, randomness, sectors, k).map_err(VerifyError)
}

fn public_inputs_any<Tree: 'static + MerkleTreeTrait>(
    params: &fallback::PublicParams,
    randomness: &<Tree::Hasher as Hasher>::Domain,
    sectors: &[PublicSector<<Tree::Hasher as Hasher>::Domain>],
    k: usize,
) -> anyhow::Result<Vec<Fr>> {
    anyhow::ensure!(!sectors.is_empty(), "no sectors to derive inputs for");
    anyhow::ensure!(
        sectors.len() <= params.sector_count,
        "{} sectors exceed one partition ({})",
        sectors.len(),
        params.sector_count
    );
    let first_index = k
        .checked_mul(params.sector_count)
        .ok_or_else(|| anyhow::anyhow!("partition index {k} is out of range"))?;
    let por_params = por::PublicParams {
        leaves: params.sector_size as usize / NODE_SIZE,
        private: true,
    };
    let mut inputs = Vec::new();
    for (i, sector) in sectors.iter().enumerate() {
        inputs.push(sector.comm_r.into());
        let mut hasher = Sha256::new();
        hasher.update(AsRef::<[u8]>::as_ref(randomness));
        hasher.update(u64::from(sector.id).to_le_bytes());
        for n in 0..params.challenge_count {
            let challenge_index = get_challenge_index(
                params.api_version,
                first_index + i,
                params.challenge_count,
                n,
            );
            let leaf = generate_leaf_challenge_inner::<<Tree::Hasher as Hasher>::Domain>(
                hasher.clone(),
                params,
                challenge_index,
            );
            let por_inputs = por::PublicInputs::<<Tree::Hasher as Hasher>::Domain> {
                commitment: None,
                challenge: leaf as usize,
            };
            inputs.extend(PoRCompound::<Tree>::generate_public_inputs(
                &por_inputs,
                &por_params,
                Some(k),
            )?);
        }
    }
    // A partition with fewer sectors repeats its last sector's inputs.
    let per_sector = inputs.len() / sectors.len();
    let last = inputs[inputs.len() - per_sector..].to_vec();
    for _ in sectors.len()..params.sector_count {
        inputs.extend_from_slice(&last);
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs::SectorShape2KiB;
    use filecoin_proofs_api::RegisteredPoStProof as P;

    type Tree = SectorShape2KiB;
    type D = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

    fn sector(id: u64) -> PublicSector<D> {
        let mut c = [0u8; 32];
        c[..8].copy_from_slice(&id.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
        PublicSector {
            id: SectorId::from(id),
            comm_r: as_safe_commitment(&c, "comm_r").unwrap(),
        }
    }

    /// The inputs for partition k equal filecoin-proofs' own, computed over
    /// a whole deadline whose k-th chunk is this partition.
    #[test]
    fn partition_inputs_equal_the_deadline_derivation() {
        for post_type in [P::StackedDrgWindow2KiBV1, P::StackedDrgWindow2KiBV1_2] {
            let params = window_post_public_params::<Tree>(&post_type.as_v1_config()).unwrap();
            let randomness = as_safe_commitment(&[7u8; 32], "randomness").unwrap();
            let n = params.sector_count;
            for k in 0..3usize {
                for take in [1, n] {
                    let mine: Vec<_> = (0..take as u64).map(|i| sector(100 + i)).collect();
                    let mut deadline: Vec<_> = (0..(k * n) as u64).map(|i| sector(i + 1)).collect();
                    deadline.extend(mine.iter().cloned());
                    let pub_inputs = PublicInputs {
                        randomness,
                        prover_id: randomness,
                        sectors: deadline,
                        k: Some(k),
                    };
                    let want = <FallbackPoStCompound<Tree> as CompoundProof<
                        FallbackPoSt<'_, Tree>,
                        FallbackPoStCircuit<Tree>,
                    >>::generate_public_inputs(
                        &pub_inputs, &params, Some(k)
                    )
                    .unwrap();
                    let got =
                        window_partition_public_inputs::<Tree>(&params, &randomness, &mine, k)
                            .unwrap();
                    assert_eq!(got, want, "{post_type:?} partition {k}, {take} sectors");
                }
            }
        }
    }

    /// A huge partition index costs no memory in proportion to it.
    #[test]
    fn a_huge_partition_index_allocates_nothing_in_proportion() {
        let post_type = P::StackedDrgWindow2KiBV1;
        let params = window_post_public_params::<Tree>(&post_type.as_v1_config()).unwrap();
        let randomness = as_safe_commitment(&[7u8; 32], "randomness").unwrap();
        let got = window_partition_public_inputs::<Tree>(
            &params,
            &randomness,
            &[sector(1)],
            4_000_000_000,
        )
        .unwrap();
        let per_sector = 1 + params.challenge_count;
        assert_eq!(got.len(), per_sector * params.sector_count);
        let e =
            window_partition_public_inputs::<Tree>(&params, &randomness, &[sector(1)], usize::MAX)
                .unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}
