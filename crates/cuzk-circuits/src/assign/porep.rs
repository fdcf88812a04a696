//! The PoRep partition circuit (storage-proofs-porep's `StackedCircuit`)
//! assigned natively: the same walk over the vanilla proofs of one
//! partition, the same gadgets, except that SHA-256 (the labels and the
//! comm_d inclusion paths) is [`super::sha256`].

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_r1cs::AssignmentCs;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::types::VanillaSealProof;
use filecoin_proofs::DefaultPieceHasher;
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::{constraint, encode::encode};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, Column};

use super::por::{poseidon_inclusion, sha256_inclusion, Level};
use super::poseidon::poseidon_hash;
use super::sha256::sha256;
use super::{to_bits_le, AssignOnly};

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PieceDomain = <DefaultPieceHasher as Hasher>::Domain;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The public values a partition's circuit starts from.
pub(crate) struct PorepPublic<Tree: MerkleTreeTrait> {
    pub replica_id: Domain<Tree>,
    pub comm_d: PieceDomain,
    pub comm_r: Domain<Tree>,
}

/// One column of a replica column proof: its rows (layer 1 first) and the
/// inclusion path of its hash in comm_c.
struct ColumnOpening {
    rows: Vec<Fr>,
    path: Vec<Level>,
}

/// A column proof's parts. storage-proofs keeps the inclusion proof
/// crate-private, so the parts are read back from the proof's own
/// serialization (the same fields in the same order).
#[derive(serde::Deserialize)]
#[serde(bound(deserialize = ""))]
struct ColumnProofParts<Tree: MerkleTreeTrait> {
    column: Column<Tree::Hasher>,
    inclusion_proof: TreeProof<Tree>,
}

fn opening<Tree: MerkleTreeTrait>(
    proof: &stacked::ColumnProof<TreeProof<Tree>>,
) -> Result<ColumnOpening, SynthesisError> {
    let bytes = bincode::serialize(proof).map_err(|_| SynthesisError::AssignmentMissing)?;
    let parts: ColumnProofParts<Tree> =
        bincode::deserialize(&bytes).map_err(|_| SynthesisError::AssignmentMissing)?;
    Ok(ColumnOpening {
        rows: parts.column.rows().iter().map(|d| (*d).into()).collect(),
        path: parts.inclusion_proof.as_options(),
    })
}

/// Allocates partition `vanilla`'s circuit assignment into `cs`, as
/// `StackedCircuit::synthesize` does. The first challenge runs alone; the
/// others, which allocate as many variables each, run in parallel into
/// their own ranges ([`AssignmentCs::assign_parallel`]).
pub(crate) fn assign<Tree: 'static + MerkleTreeTrait>(
    cs: &mut AssignmentCs,
    public: &PorepPublic<Tree>,
    vanilla: &[VanillaSealProof<Tree>],
) -> Result<(), SynthesisError> {
    let first = vanilla.first().ok_or(SynthesisError::AssignmentMissing)?;
    let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
    if vanilla
        .iter()
        .any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c)
    {
        return Err(SynthesisError::Unsatisfiable);
    }
    let alloc = |cs: &mut AssignmentCs, v: Fr| AllocatedNum::alloc(&mut *cs, || Ok(v));
    let replica_id = alloc(cs, public.replica_id.into())?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = reverse_bit_numbering(to_bits_le(cs, &replica_id)?);
    let comm_d = alloc(cs, public.comm_d.into())?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = alloc(cs, public.comm_r.into())?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = alloc(cs, comm_r_last.into())?;
    let comm_c = alloc(cs, comm_c.into())?;
    if <Tree::Hasher as Hasher>::name() != PoseidonHasher::name() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let hash = poseidon_hash(
        cs,
        vec![comm_c.clone(), comm_r_last.clone()],
        &*POSEIDON_CONSTANTS_2,
    )?;
    constraint::equal(cs, || "comm_r", &comm_r, &hash);
    let roots = Roots {
        comm_d: &comm_d,
        comm_c: &comm_c,
        comm_r_last: &comm_r_last,
    };
    let before = cs.counts();
    challenge::<Tree, _>(cs, first, &roots, &replica_id_bits)?;
    let after = cs.counts();
    let each = (after.0 - before.0, after.1 - before.1);
    cs.assign_parallel(&vanilla[1..], each, |w, proof| {
        challenge::<Tree, _>(w, proof, &roots, &replica_id_bits)
    })
}

struct Roots<'a> {
    comm_d: &'a AllocatedNum<Fr>,
    comm_c: &'a AllocatedNum<Fr>,
    comm_r_last: &'a AllocatedNum<Fr>,
}

/// One challenge, as the circuit's `Proof::synthesize`.
fn challenge<Tree: 'static + MerkleTreeTrait, CS: AssignOnly>(
    cs: &mut CS,
    proof: &VanillaSealProof<Tree>,
    roots: &Roots<'_>,
    replica_id_bits: &[Boolean],
) -> Result<(), SynthesisError> {
    let data_leaf: Fr = proof.comm_d_proofs.leaf().into();
    let data_leaf = AllocatedNum::alloc(&mut *cs, || Ok(data_leaf))?;
    sha256_inclusion(
        cs,
        &proof.comm_d_proofs.as_options(),
        roots.comm_d,
        &data_leaf,
    )?;

    let columns = &proof.replica_column_proofs;
    let mut drg = Vec::with_capacity(columns.drg_parents.len());
    let mut exp = Vec::with_capacity(columns.exp_parents.len());
    for (list, out) in [
        (&columns.drg_parents, &mut drg),
        (&columns.exp_parents, &mut exp),
    ] {
        for column in list {
            let ColumnOpening { rows, path } = opening::<Tree>(column)?;
            let rows = rows
                .into_iter()
                .map(|r| AllocatedNum::alloc(&mut *cs, || Ok(r)))
                .collect::<Result<Vec<_>, _>>()?;
            let hash = column_hash(cs, &rows)?;
            poseidon_inclusion::<Tree, CS>(cs, &path, roots.comm_c, &hash)?;
            out.push(rows);
        }
    }
    let layers = drg.first().map_or(0, Vec::len);
    if layers == 0 || exp.is_empty() || drg.iter().chain(&exp).any(|c| c.len() != layers) {
        return Err(SynthesisError::Unsatisfiable);
    }

    let node = proof.comm_d_proofs.path_index() as u64;
    let node = UInt64::alloc(&mut *cs, Some(node))?;
    node.pack_into_input(&mut *cs)?;

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents = Vec::with_capacity(drg.len() + exp.len());
        for column in &drg {
            parents.push(reverse_bit_numbering(to_bits_le(cs, &column[layer - 1])?));
        }
        if layer > 1 {
            for column in &exp {
                parents.push(reverse_bit_numbering(to_bits_le(cs, &column[layer - 2])?));
            }
        }
        labels.push(label(
            cs,
            replica_id_bits,
            &expand(&parents),
            layer as u32,
            &node,
        )?);
    }

    let encoded = encode(&mut *cs, &labels[layers - 1], &data_leaf)?;
    let comm_r_last_path = proof.comm_r_last_proof.as_options();
    poseidon_inclusion::<Tree, CS>(cs, &comm_r_last_path, roots.comm_r_last, &encoded)?;

    let c_x = opening::<Tree>(&columns.c_x)?;
    let hash = column_hash(cs, &labels)?;
    poseidon_inclusion::<Tree, CS>(cs, &c_x.path, roots.comm_c, &hash)
}

/// The 37 parents a label hashes: the base parents (and, above the first
/// layer, the expander parents) repeated, as the circuit repeats them.
fn expand(parents: &[Vec<Boolean>]) -> Vec<&[Boolean]> {
    const TOTAL_PARENTS: usize = 37;
    parents
        .iter()
        .cycle()
        .take(TOTAL_PARENTS)
        .map(Vec::as_slice)
        .collect()
}

/// `create_label_circuit`: SHA-256 of replica id ‖ layer ‖ node ‖ parents,
/// packed into a field element.
fn label<CS: AssignOnly>(
    cs: &mut CS,
    replica_id: &[Boolean],
    parents: &[&[Boolean]],
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bits = Vec::with_capacity((2 + parents.len()) * 256);
    bits.extend_from_slice(replica_id);
    bits.resize(256, Boolean::Constant(false));
    bits.extend(
        (0..32)
            .rev()
            .map(|i| Boolean::Constant((layer >> i) & 1 == 1)),
    );
    bits.extend(node.to_bits_be());
    bits.resize(512, Boolean::Constant(false));
    for parent in parents {
        bits.extend_from_slice(parent);
        bits.resize(bits.len().next_multiple_of(256), Boolean::Constant(false));
    }
    let digest = reverse_bit_numbering(sha256(cs, &bits)?);
    multipack::pack_bits(&mut *cs, &digest[..Fr::CAPACITY as usize])
}

fn column_hash<CS: AssignOnly>(
    cs: &mut CS,
    rows: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match rows.len() {
        2 => poseidon_hash(cs, rows.to_vec(), &*POSEIDON_CONSTANTS_2),
        11 => poseidon_hash(cs, rows.to_vec(), &*POSEIDON_CONSTANTS_11),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}
