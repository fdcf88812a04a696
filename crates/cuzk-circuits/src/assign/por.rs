//! Merkle inclusion proofs assigned natively, as storage-proofs' private
//! `PoRCircuit` allocates them: per level the index bits, the siblings,
//! the insertion of the current node among them (the gadget itself) and
//! the hash of the level ([`super::poseidon`] or [`super::sha256`]); then
//! the index bits packed into inputs and the root compared (no variable).
//!
//! Paths come as filecoin's `MerkleProofTrait::as_options` gives them: the
//! base levels first, then the sub-tree and top-tree levels of the tree's
//! shape, each `(siblings, index within the level)`.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::PrimeField;
use filecoin_hashers::PoseidonArity;
use generic_array::typenum::Unsigned;
use storage_proofs_core::gadgets::{constraint, insertion::insert};
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::{poseidon::poseidon_hash, sha256::sha256, to_bits_le, AssignOnly};

/// One level of a path: siblings and the node's index among them.
pub type Level = (Vec<Option<Fr>>, Option<usize>);

/// Index bits and siblings of one level, the node inserted among them.
fn level<CS: AssignOnly>(
    cs: &mut CS,
    arity: usize,
    cur: &AllocatedNum<Fr>,
    (siblings, index): &Level,
    index_bits: &mut Vec<Boolean>,
) -> Result<Vec<AllocatedNum<Fr>>, SynthesisError> {
    if !arity.is_power_of_two() || siblings.len() + 1 != arity {
        return Err(SynthesisError::Unsatisfiable);
    }
    let index = index.ok_or(SynthesisError::AssignmentMissing)?;
    let start = index_bits.len();
    for i in 0..arity.trailing_zeros() {
        let bit = AllocatedBit::alloc(&mut *cs, Some((index >> i) & 1 == 1))?;
        index_bits.push(Boolean::from(bit));
    }
    let siblings = siblings
        .iter()
        .map(|s| AllocatedNum::alloc(&mut *cs, || s.ok_or(SynthesisError::AssignmentMissing)))
        .collect::<Result<Vec<_>, _>>()?;
    insert(&mut *cs, cur, &index_bits[start..], &siblings)
}

fn poseidon_level<A: PoseidonArity, CS: AssignOnly>(
    cs: &mut CS,
    cur: &AllocatedNum<Fr>,
    path_level: &Level,
    index_bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let inserted = level(cs, A::to_usize(), cur, path_level, index_bits)?;
    poseidon_hash(cs, inserted, A::PARAMETERS())
}

/// Inclusion of `leaf` under `root` in a Poseidon tree of `Tree`'s shape
/// (`PoRCircuit::<Tree>` with `private = true`).
pub fn poseidon_inclusion<Tree: MerkleTreeTrait, CS: AssignOnly>(
    cs: &mut CS,
    path: &[Level],
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let (sub, top) = (
        Tree::SubTreeArity::to_usize() > 0,
        Tree::TopTreeArity::to_usize() > 0,
    );
    let extra = usize::from(sub) + usize::from(top);
    if path.len() < extra {
        return Err(SynthesisError::Unsatisfiable);
    }
    let (base, rest) = path.split_at(path.len() - extra);
    let mut cur = leaf.clone();
    let mut index_bits = Vec::new();
    for l in base {
        cur = poseidon_level::<Tree::Arity, CS>(cs, &cur, l, &mut index_bits)?;
    }
    if sub {
        cur = poseidon_level::<Tree::SubTreeArity, CS>(cs, &cur, &rest[0], &mut index_bits)?;
    }
    if top {
        cur =
            poseidon_level::<Tree::TopTreeArity, CS>(cs, &cur, &rest[extra - 1], &mut index_bits)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(cs, || "root", &cur, root);
    Ok(())
}

/// Inclusion in a binary SHA-256 tree (the data tree), as the private
/// `PoRCircuit` of that tree.
pub fn sha256_inclusion<CS: AssignOnly>(
    cs: &mut CS,
    path: &[Level],
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for l in path {
        let pair = level(cs, 2, &cur, l, &mut index_bits)?;
        cur = sha256_pair(cs, &pair)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(cs, || "root", &cur, root);
    Ok(())
}

/// `Sha256Function::hash_multi_leaf_circuit` (and `hash2_circuit`): each
/// element's bits, byte by byte in hashing order, hashed and packed back
/// into a field element.
pub fn sha256_pair<CS: AssignOnly>(
    cs: &mut CS,
    leaves: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bits = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        let mut le = to_bits_le(cs, leaf)?;
        le.resize(le.len().next_multiple_of(8), Boolean::Constant(false));
        bits.extend(
            le.chunks_exact(8)
                .flat_map(|byte| byte.iter().rev())
                .cloned(),
        );
    }
    let digest = sha256(cs, &bits)?;
    let le: Vec<Boolean> = digest
        .chunks(8)
        .flat_map(|byte| byte.iter().rev())
        .take(Fr::CAPACITY as usize)
        .cloned()
        .collect();
    multipack::pack_bits(&mut *cs, &le)
}
