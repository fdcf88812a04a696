//! SnapDeals partition proofs: decoding and the checks that need no
//! proving.
//!
//! As the vanilla verifier (`EmptySectorUpdate::verify`) does before it
//! hashes anything: each partition proof holds the proof type's number of
//! apex leaves and challenge proofs; `comm_r_old = H(comm_c, root_r_old)`
//! and `comm_r_new = H(comm_c, root_r_new)` for the roots its Merkle proofs
//! open; every TreeD proof is rooted at `comm_d_new`; every challenge proof
//! opens the node the partition's challenge names, with paths of the tree's
//! length. Inconsistent inputs are named here (swapped `comm_r_old` and
//! `comm_r_new` say so) instead of failing deep in synthesis.

use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::PartitionProof;
use filecoin_proofs_api::{Commitment, MerkleTreeTrait};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{Challenges, PublicParams};

use super::{bincode_strict, canonical, invalid, merkle_canonical, RequestError};

/// The request's sector size and three commitments (already canonical
/// field elements).
pub struct Commitments<'a> {
    pub sector_size: u64,
    pub comm_r_old: &'a Commitment,
    pub comm_r_new: &'a Commitment,
    pub comm_d_new: &'a Commitment,
}

/// Decodes every partition proof and checks it against the commitments.
pub fn check_snap_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proofs: &[Vec<u8>],
    comms: &Commitments<'_>,
) -> Result<(), RequestError> {
    let decoded = proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode_strict::<PartitionProof<Tree>>(bytes).map_err(|e| {
                invalid(
                    format!("vanilla_proofs[{i}]"),
                    format!("not a bincode PartitionProof for {}: {e}", Tree::display()),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = decoded.first() else {
        return Err(invalid("vanilla_proofs", "is empty"));
    };
    let params = PublicParams::from_sector_size(comms.sector_size);
    let domain = |c: &Commitment| -> TreeRDomain { to_domain(c) };
    let comm_r_old = domain(comms.comm_r_old);
    let comm_r_new = domain(comms.comm_r_new);
    let comm_d_new: TreeDDomain = to_domain(comms.comm_d_new);
    for (k, p) in decoded.iter().enumerate() {
        let field = format!("vanilla_proofs[{k}]");
        if p.comm_c != first.comm_c {
            return Err(invalid(
                field,
                "has another comm_c than vanilla_proofs[0]: the partition proofs are not of one sector update",
            ));
        }
        check_partition::<Tree>(p, k, &params, &comm_r_old, &comm_r_new, &comm_d_new)
            .map_err(|(fields, m)| invalid(fields.unwrap_or(field), m))?;
    }
    Ok(())
}

/// A commitment as a domain element (the bytes were checked canonical).
fn to_domain<D: filecoin_hashers::Domain>(c: &Commitment) -> D {
    D::try_from_bytes(c).unwrap_or_default()
}

type Failure = (Option<String>, String);

fn check_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    p: &PartitionProof<Tree>,
    k: usize,
    params: &PublicParams,
    comm_r_old: &TreeRDomain,
    comm_r_new: &TreeRDomain,
    comm_d_new: &TreeDDomain,
) -> Result<(), Failure> {
    if p.apex_leafs.len() != params.apex_leaf_count {
        return Err((
            None,
            format!(
                "{} apex leaves; the sector size has {}",
                p.apex_leafs.len(),
                params.apex_leaf_count
            ),
        ));
    }
    if p.challenge_proofs.len() != params.challenge_count {
        return Err((
            None,
            format!(
                "{} challenge proofs; the sector size has {} per partition",
                p.challenge_proofs.len(),
                params.challenge_count
            ),
        ));
    }
    let elements_ok = canonical(&p.comm_c)
        && p.apex_leafs.iter().all(canonical)
        && p.challenge_proofs.iter().all(|c| {
            merkle_canonical(&c.proof_r_old)
                && merkle_canonical(&c.proof_d_new)
                && merkle_canonical(&c.proof_r_new)
        });
    if !elements_ok {
        return Err((
            None,
            "holds a value (comm_c, an apex leaf or a Merkle proof element) that is not a \
             field element"
                .into(),
        ));
    }
    let first = &p.challenge_proofs[0];
    let root_r_old = first.proof_r_old.root();
    let root_r_new = first.proof_r_new.root();
    let hash = |root: &TreeRDomain| <TreeRHasher as Hasher>::Function::hash2(&p.comm_c, root);
    let (old_ok, new_ok) = (
        hash(&root_r_old) == *comm_r_old,
        hash(&root_r_new) == *comm_r_new,
    );
    if !old_ok || !new_ok {
        let swapped = hash(&root_r_old) == *comm_r_new && hash(&root_r_new) == *comm_r_old;
        let (fields, what) = match (old_ok, new_ok, swapped) {
            (_, _, true) => (
                "comm_r_old, comm_r_new",
                "are swapped: comm_r_new is H(comm_c, root_r_old) and comm_r_old is \
                 H(comm_c, root_r_new) of the partition proofs"
                    .to_string(),
            ),
            (false, true, _) => (
                "comm_r_old",
                format!("is not H(comm_c, root_r_old) of vanilla_proofs[{k}]: it belongs to another sector or update"),
            ),
            (true, false, _) => (
                "comm_r_new",
                format!("is not H(comm_c, root_r_new) of vanilla_proofs[{k}]: it belongs to another sector or update"),
            ),
            _ => (
                "comm_r_old, comm_r_new",
                format!("neither is H(comm_c, root) of vanilla_proofs[{k}]'s TreeR proofs: the commitments belong to another sector or update"),
            ),
        };
        return Err((Some(fields.to_string()), what));
    }
    let challenges = Challenges::new(params.sector_nodes, *comm_r_new, k);
    for (j, (c, cp)) in challenges.zip(&p.challenge_proofs).enumerate() {
        let c = c as usize;
        if cp.proof_d_new.root() != *comm_d_new {
            return Err((
                Some("comm_d_new".into()),
                format!("is not the root of vanilla_proofs[{k}]'s TreeD proof {j}: it belongs to another update"),
            ));
        }
        if cp.proof_r_old.root() != root_r_old || cp.proof_r_new.root() != root_r_new {
            return Err((
                None,
                format!("challenge proof {j} has other TreeR roots than challenge proof 0"),
            ));
        }
        let nodes = params.sector_nodes;
        let lengths_ok = cp.proof_d_new.path().len() == cp.proof_d_new.expected_len(nodes)
            && cp.proof_r_old.path().len() == cp.proof_r_old.expected_len(nodes)
            && cp.proof_r_new.path().len() == cp.proof_r_new.expected_len(nodes);
        if !lengths_ok {
            return Err((
                None,
                format!(
                    "challenge proof {j} has Merkle paths of the wrong length for the sector size"
                ),
            ));
        }
        let opened = [
            cp.proof_r_old.path_index(),
            cp.proof_d_new.path_index(),
            cp.proof_r_new.path_index(),
        ];
        if opened.iter().any(|&i| i != c) {
            return Err((
                None,
                format!(
                    "challenge proof {j} opens node {}, but comm_r_new and partition {k} challenge node {c}",
                    opened[0]
                ),
            ));
        }
    }
    Ok(())
}
