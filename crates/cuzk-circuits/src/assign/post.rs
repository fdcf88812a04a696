//! WindowPoSt and WinningPoSt partitions (storage-proofs-post's
//! `FallbackPoStCircuit`) assigned natively: per sector comm_r_last, comm_c
//! and comm_r (an input), comm_r checked against the Poseidon hash of the
//! other two, then each challenged leaf and its inclusion in comm_r_last
//! ([`super::por`]). The gadget path synthesizes groups of sectors apart
//! and appends them in order; the assignment is the sequential one, which
//! is what the sectors here give (the first alone, the rest in parallel
//! into their own ranges).

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_r1cs::AssignmentCs;
use filecoin_hashers::POSEIDON_CONSTANTS_2;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::por::{poseidon_inclusion, Level};
use super::poseidon::poseidon_hash;
use super::AssignOnly;

/// One challenged sector of a partition, as its circuit sees it.
pub(crate) struct PostSector {
    pub comm_r: Fr,
    pub comm_c: Fr,
    pub comm_r_last: Fr,
    /// Per challenge: the leaf and its path in the replica tree.
    pub challenges: Vec<(Fr, Vec<Level>)>,
}

/// Allocates a PoSt partition's assignment into `cs` (its sectors in
/// order, padding included).
pub(crate) fn assign<Tree: MerkleTreeTrait>(
    cs: &mut AssignmentCs,
    sectors: &[PostSector],
) -> Result<(), SynthesisError> {
    let Some((first, rest)) = sectors.split_first() else {
        return Err(SynthesisError::AssignmentMissing);
    };
    let before = cs.counts();
    sector::<Tree, _>(cs, first)?;
    let after = cs.counts();
    let each = (after.0 - before.0, after.1 - before.1);
    cs.assign_parallel(rest, each, |w, s| sector::<Tree, _>(w, s))
}

fn sector<Tree: MerkleTreeTrait, CS: AssignOnly>(
    cs: &mut CS,
    s: &PostSector,
) -> Result<(), SynthesisError> {
    let alloc = |cs: &mut CS, v: Fr| AllocatedNum::alloc(&mut *cs, || Ok(v));
    let comm_r_last = alloc(cs, s.comm_r_last)?;
    let comm_c = alloc(cs, s.comm_c)?;
    let comm_r = alloc(cs, s.comm_r)?;
    comm_r.inputize(&mut *cs)?;
    let hash = poseidon_hash(
        cs,
        vec![comm_c, comm_r_last.clone()],
        &*POSEIDON_CONSTANTS_2,
    )?;
    constraint::equal(cs, || "comm_r", &comm_r, &hash);
    for (leaf, path) in &s.challenges {
        let leaf = alloc(cs, *leaf)?;
        poseidon_inclusion::<Tree, CS>(cs, path, &comm_r_last, &leaf)?;
    }
    Ok(())
}
