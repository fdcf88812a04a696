//! Synthetic WinningPoSt and WindowPoSt vanilla proofs at any sector size.
//!
//! A PoSt opens a few leaves of each sector's TreeR (`comm_r_last`) and
//! checks `comm_r = H(comm_c, comm_r_last)`. The challenged leaves follow from
//! the randomness, the prover and the sector ids alone, so they are derived
//! first (`generate_fallback_sector_challenges`, as a PoSt worker does); then
//! each sector gets its own TreeR, with a pseudorandom value at each of its
//! challenged leaves and every subtree no challenge opens standing as a
//! distinct pseudorandom node ([`Opaque`]), and its own pseudorandom comm_c,
//! hence its own comm_r: a witness with the values of real, distinct
//! replicas. (Until 2026-12-03 one sparse tree with a default leaf served
//! every sector: the siblings of a 32 GiB WindowPoSt then repeated a few
//! default hashes ~517,000 times each, and the nodes shared near the root
//! once per challenge, and the GPU's Pippenger summed each such bucket on
//! one thread; docs/PERF.md.) Each sector's proof is a
//! bincode `FallbackPoStSectorProof`, as `generate_single_vanilla_proof`
//! returns it, and the set is checked with filecoin-proofs'
//! `partition_vanilla_proofs` (which runs the fallback vanilla verifier).

use std::collections::BTreeMap;

use anyhow::{ensure, Context, Result};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, with_shape, FallbackPoStSectorProof,
    MerkleTreeTrait, PoStType,
};
use filecoin_proofs_api::{post, ProverId, RegisteredPoStProof, SectorId};
use storage_proofs_post::fallback::{self, PublicSector, SectorProof};

use super::prf::Prf;
use super::tree::{Opaque, Shape, VirtualTree};

/// The vanilla proofs of one PoSt over `sectors`, each backed by its own
/// synthetic replica.
pub struct SyntheticPost {
    /// Each sector's comm_r, in `sectors` order.
    pub comm_rs: Vec<[u8; 32]>,
    /// One bincode `FallbackPoStSectorProof` per sector, in `sectors` order.
    pub vanilla: Vec<Vec<u8>>,
}

/// Makes the vanilla proofs of `post_type` for `sectors` and `randomness`;
/// `advance(done, total)` follows the sector proofs.
pub fn make(
    post_type: RegisteredPoStProof,
    sectors: &[SectorId],
    prover_id: ProverId,
    randomness: &[u8; 32],
    prf: &Prf,
    advance: &mut dyn FnMut(u64, u64),
) -> Result<SyntheticPost> {
    ensure!(!sectors.is_empty(), "a PoSt needs at least one sector");
    if post_type.typ() == PoStType::Winning {
        // The sector the chain would pick must be one we prove.
        let picked = post::generate_winning_post_sector_challenge(
            post_type,
            randomness,
            sectors.len() as u64,
            prover_id,
        )?;
        ensure!(
            picked.iter().all(|&i| (i as usize) < sectors.len()),
            "winning PoSt picked {picked:?} of {} sectors",
            sectors.len()
        );
    }
    let challenges =
        post::generate_fallback_sector_challenges(post_type, randomness, sectors, prover_id)?;
    let size = u64::from(post_type.sector_size());
    with_shape!(
        size,
        make_shaped,
        post_type,
        sectors,
        &challenges,
        prover_id,
        randomness,
        prf,
        advance
    )
}

fn make_shaped<Tree: 'static + MerkleTreeTrait>(
    post_type: RegisteredPoStProof,
    sectors: &[SectorId],
    challenges: &BTreeMap<SectorId, Vec<u64>>,
    prover_id: ProverId,
    randomness: &[u8; 32],
    prf: &Prf,
    advance: &mut dyn FnMut(u64, u64),
) -> Result<SyntheticPost> {
    let shape = Shape::of::<Tree>(u64::from(post_type.sector_size()) / 32)?;
    let mut proofs = Vec::with_capacity(sectors.len());
    for (i, id) in sectors.iter().enumerate() {
        advance(i as u64, sectors.len() as u64);
        let leaves = challenges
            .get(id)
            .with_context(|| format!("no challenges for sector {id:?}"))?;
        let sector = prf.derive("sector", u64::from(*id));
        let explicit: BTreeMap<u64, _> = leaves
            .iter()
            .map(|&leaf| (leaf, sector.fr("tree-r leaf", leaf, 0)))
            .collect();
        let mut tree =
            VirtualTree::<Tree::Hasher, _>::new(shape.clone(), Opaque::new(sector, explicit));
        let comm_c = sector.fr("comm_c", 0, 0).into();
        let comm_r_last = tree.root();
        let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
        let inclusion_proofs = leaves.iter().map(|&leaf| tree.proof(leaf)).collect();
        proofs.push(FallbackPoStSectorProof::<Tree> {
            sector_id: *id,
            comm_r,
            vanilla_proof: fallback::Proof {
                sectors: vec![SectorProof {
                    inclusion_proofs,
                    comm_c,
                    comm_r_last,
                }],
            },
        });
    }
    check::<Tree>(post_type, sectors, prover_id, randomness, &proofs)?;
    let comm_rs = proofs
        .iter()
        .map(|p| {
            let mut b = [0u8; 32];
            b.copy_from_slice(p.comm_r.as_ref());
            b
        })
        .collect();
    Ok(SyntheticPost {
        comm_rs,
        vanilla: proofs
            .iter()
            .map(bincode::serialize)
            .collect::<Result<_, _>>()?,
    })
}

/// Partitions and verifies the proofs as filecoin-proofs does before it
/// proves a PoSt.
fn check<Tree: 'static + MerkleTreeTrait>(
    post_type: RegisteredPoStProof,
    sectors: &[SectorId],
    prover_id: ProverId,
    randomness: &[u8; 32],
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<()> {
    let config = post_type.as_v1_config();
    let params = match config.typ {
        PoStType::Winning => winning_post_public_params::<Tree>(&config)?,
        PoStType::Window => window_post_public_params::<Tree>(&config)?,
    };
    let inputs = fallback::PublicInputs {
        randomness: as_safe_commitment(randomness, "randomness")?,
        prover_id: as_safe_commitment(&prover_id, "prover_id")?,
        sectors: sectors
            .iter()
            .zip(proofs)
            .map(|(&id, p)| PublicSector {
                id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    let partitions = sectors.len().div_ceil(params.sector_count).max(1);
    // Errors unless every partition passes FallbackPoSt's verifier.
    partition_vanilla_proofs(&config, &params, &inputs, partitions, proofs)
        .context("the synthetic PoSt vanilla proofs do not verify")?;
    Ok(())
}
