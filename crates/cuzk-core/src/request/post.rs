//! PoSt vanilla proofs: decoding and the checks that need no proving.
//!
//! Each `FallbackPoStSectorProof` must hold one sector proof with exactly
//! the proof type's challenge count of inclusion proofs, each of the tree's
//! path length, all rooted at the sector's comm_r_last, with
//! `comm_r = H(comm_c, comm_r_last)`, and each opening the leaf that the
//! randomness, the sector id and the sector's place in the deadline
//! challenge — the same derivation the verifier uses. A vanilla proof made
//! for another randomness, sector or partition is refused here rather than
//! proved and discarded. (The Merkle paths themselves are hashed by the
//! circuit, not here: at 2349 sectors that would cost seconds.)

use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs_api::{
    Commitment, FallbackPoStSectorProof, MerkleTreeTrait, RegisteredPoStProof, SectorId,
};
use sha2::{Digest, Sha256};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{self, generate_leaf_challenge_inner, get_challenge_index};

use super::{bincode_strict, canonical, invalid, merkle_canonical, RequestError};

/// What the challenges of a PoSt request derive from.
pub struct ChallengeInputs<'a> {
    pub post_type: RegisteredPoStProof,
    pub randomness: &'a [u8; 32],
    /// The partition's index in its deadline (0 for WinningPoSt), already
    /// bounded by [`super::MAX_PARTITIONS_PER_DEADLINE`].
    pub partition_index: usize,
}

/// Decodes and checks the vanilla proofs of one PoSt partition; returns
/// each one's (sector id, comm_r) in request order.
pub fn decode_post_vanilla<Tree: 'static + MerkleTreeTrait>(
    proofs: &[Vec<u8>],
    inputs: &ChallengeInputs<'_>,
) -> Result<Vec<(SectorId, Commitment)>, RequestError> {
    let config = inputs.post_type.as_v1_config();
    let params = fallback::PublicParams {
        sector_size: u64::from(config.padded_sector_size()),
        challenge_count: config.challenge_count,
        sector_count: config.sector_count,
        api_version: config.api_version,
    };
    proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let field = format!("vanilla_proofs[{i}]");
            let p: FallbackPoStSectorProof<Tree> = bincode_strict(bytes).map_err(|e| {
                invalid(
                    &field,
                    format!(
                        "not a bincode FallbackPoStSectorProof for {}: {e}",
                        Tree::display()
                    ),
                )
            })?;
            check_sector::<Tree>(&p, &params, inputs, i).map_err(|m| invalid(&field, m))?;
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(p.comm_r.as_ref());
            Ok((p.sector_id, comm_r))
        })
        .collect()
}

fn check_sector<Tree: 'static + MerkleTreeTrait>(
    p: &FallbackPoStSectorProof<Tree>,
    params: &fallback::PublicParams,
    inputs: &ChallengeInputs<'_>,
    i: usize,
) -> Result<(), String> {
    let sector = p.sector_id;
    let [sp] = p.vanilla_proof.sectors.as_slice() else {
        return Err(format!(
            "sector {sector}: holds {} sector proofs; a FallbackPoStSectorProof has one",
            p.vanilla_proof.sectors.len()
        ));
    };
    if sp.inclusion_proofs.len() != params.challenge_count {
        return Err(format!(
            "sector {sector}: {} inclusion proofs; {:?} challenges {} leaves per sector",
            sp.inclusion_proofs.len(),
            inputs.post_type,
            params.challenge_count
        ));
    }
    if !canonical(&sp.comm_c) || !canonical(&sp.comm_r_last) || !canonical(&p.comm_r) {
        return Err(format!(
            "sector {sector}: comm_r, comm_c or comm_r_last is not a field element"
        ));
    }
    if let Some(n) = sp
        .inclusion_proofs
        .iter()
        .position(|p| !merkle_canonical(p))
    {
        return Err(format!(
            "sector {sector}: inclusion proof {n} holds a value that is not a field element"
        ));
    }
    if <Tree::Hasher as Hasher>::Function::hash2(&sp.comm_c, &sp.comm_r_last) != p.comm_r {
        return Err(format!(
            "sector {sector}: comm_r is not H(comm_c, comm_r_last) of its proof"
        ));
    }
    let leaves = params.sector_size as usize / NODE_SIZE;
    let sector_index = inputs
        .partition_index
        .checked_mul(params.sector_count)
        .and_then(|x| x.checked_add(i))
        .ok_or_else(|| "partition_index is out of range".to_string())?;
    let mut hasher = Sha256::new();
    hasher.update(inputs.randomness);
    hasher.update(u64::from(sector).to_le_bytes());
    for (n, proof) in sp.inclusion_proofs.iter().enumerate() {
        if proof.root() != sp.comm_r_last {
            return Err(format!(
                "sector {sector}: inclusion proof {n} is not rooted at the sector's comm_r_last"
            ));
        }
        let path = proof.path();
        if path.len() != proof.expected_len(leaves) {
            return Err(format!(
                "sector {sector}: inclusion proof {n} has a path of {} levels; {} byte \
                 sectors have {}",
                path.len(),
                params.sector_size,
                proof.expected_len(leaves)
            ));
        }
        let challenge_index =
            get_challenge_index(params.api_version, sector_index, params.challenge_count, n);
        let leaf = generate_leaf_challenge_inner::<<Tree::Hasher as Hasher>::Domain>(
            hasher.clone(),
            params,
            challenge_index,
        );
        if proof.path_index() as u64 != leaf {
            return Err(format!(
                "sector {sector}: inclusion proof {n} opens leaf {}, but randomness, the \
                 sector id and partition_index {} challenge leaf {leaf}: the vanilla proof \
                 was made for other inputs",
                proof.path_index(),
                inputs.partition_index
            ));
        }
    }
    Ok(())
}
