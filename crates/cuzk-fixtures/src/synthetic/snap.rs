//! Synthetic SnapDeals partition proofs at any sector size.
//!
//! The challenges of an update depend on comm_r_new, so trees that are
//! sparse where the challenges land would be circular. Instead the old
//! replica and the new data are periodic (one random block of leaves each,
//! repeated), and the period divides the block of nodes that share one rho
//! (rho depends only on the high `h` bits of a node index): the new replica,
//! `old + data * rho`, is then periodic within each rho block, and every
//! tree root — TreeROld, TreeDNew, TreeRNew — costs a few thousand hashes.
//! The proofs are checked with filecoin-proofs-api's
//! `verify_partition_proofs` before they are returned.

use anyhow::{ensure, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{with_shape, MerkleTreeTrait};
use filecoin_proofs_api::update::verify_partition_proofs;
use filecoin_proofs_api::{PartitionProofBytes, RegisteredUpdateProof};
use storage_proofs_update::constants::{h_default, TreeDHasher, TreeRHasher};
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams};

use super::prf::Prf;
use super::tree::{Encoded, Periodic, Shape, VirtualTree};

/// Leaves in the repeated block of the old replica and of the new data (at
/// most one rho block). Each rho block has its own new replica, so TreeRNew
/// costs about `PERIOD / 7` hashes per block (2^h = 1024 blocks): 512 keeps
/// a 32 GiB update at ~75 k hashes.
const PERIOD: u64 = 512;

/// A synthetic SnapDeals update: its commitments and partition proofs.
pub struct SyntheticUpdate {
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition.
    pub vanilla: Vec<Vec<u8>>,
}

/// Makes an update of `update_type`'s sector size; `advance(done, total)`
/// follows the partitions.
pub fn make(
    update_type: RegisteredUpdateProof,
    prf: &Prf,
    advance: &mut dyn FnMut(u64, u64),
) -> Result<SyntheticUpdate> {
    let size = u64::from(update_type.sector_size());
    with_shape!(size, make_shaped, update_type, prf, advance)
}

fn bytes(d: &impl AsRef<[u8]>) -> [u8; 32] {
    let mut b = [0u8; 32];
    b.copy_from_slice(d.as_ref());
    b
}

fn make_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    update_type: RegisteredUpdateProof,
    prf: &Prf,
    advance: &mut dyn FnMut(u64, u64),
) -> Result<SyntheticUpdate> {
    let size = u64::from(update_type.sector_size());
    let pp = PublicParams::from_sector_size(size);
    let nodes = pp.sector_nodes as u64;
    let h = h_default(pp.sector_nodes);
    let shr = nodes.trailing_zeros() - h as u32;
    let period = PERIOD.min(1 << shr) as usize;
    let old = prf.block("old replica", period);
    let data = prf.block("new data", period);

    let shape = Shape::of::<Tree>(nodes)?;
    let mut tree_r_old =
        VirtualTree::<TreeRHasher, _>::new(shape.clone(), Periodic::new(old.clone())?);
    let comm_c = prf.fr("comm_c", 0, 0).into();
    let root_r_old = tree_r_old.root();
    let comm_r_old = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &root_r_old);

    let mut tree_d =
        VirtualTree::<TreeDHasher, _>::new(Shape::binary(nodes)?, Periodic::new(data.clone())?);
    let comm_d_new = tree_d.root();

    let phi = phi(&comm_d_new, &comm_r_old);
    let rhos: Vec<Fr> = (0..1u32 << h).map(|high| rho(&phi, high)).collect();
    let encoded = Encoded::new(Periodic::new(old)?, Periodic::new(data)?, rhos, shr)?;
    let mut tree_r_new = VirtualTree::<TreeRHasher, _>::new(shape, encoded);
    let root_r_new = tree_r_new.root();
    let comm_r_new = <TreeRHasher as Hasher>::Function::hash2(&comm_c, &root_r_new);

    let apex_height = pp.challenge_bit_len - pp.partition_bit_len - pp.apex_leaf_bit_len;
    let mut vanilla = Vec::with_capacity(pp.partition_count);
    for k in 0..pp.partition_count {
        advance(k as u64, pp.partition_count as u64);
        let first_apex = (k * pp.apex_leaf_count) as u64;
        let apex_leafs = (first_apex..first_apex + pp.apex_leaf_count as u64)
            .map(|i| tree_d.node(apex_height, i))
            .collect();
        let challenge_proofs = Challenges::new(pp.sector_nodes, comm_r_new, k)
            .map(|c| {
                let c = u64::from(c);
                ChallengeProof::<Tree> {
                    proof_r_old: tree_r_old.proof(c),
                    proof_d_new: tree_d.proof(c),
                    proof_r_new: tree_r_new.proof(c),
                }
            })
            .collect();
        let proof = PartitionProof::<Tree> {
            comm_c,
            apex_leafs,
            challenge_proofs,
        };
        vanilla.push(bincode::serialize(&proof)?);
    }

    let out = SyntheticUpdate {
        comm_r_old: bytes(&comm_r_old),
        comm_r_new: bytes(&comm_r_new),
        comm_d_new: bytes(&comm_d_new),
        vanilla,
    };
    let as_api: Vec<PartitionProofBytes> = out
        .vanilla
        .iter()
        .map(|b| PartitionProofBytes(b.clone()))
        .collect();
    ensure!(
        verify_partition_proofs(
            update_type,
            &as_api,
            out.comm_r_old,
            out.comm_r_new,
            out.comm_d_new
        )?,
        "the synthetic SnapDeals partition proofs do not verify"
    );
    Ok(out)
}
