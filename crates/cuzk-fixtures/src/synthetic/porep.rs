//! A synthetic PoRep C1 output at any sector size.
//!
//! Nothing is sealed. The sector's data is periodic (a random block of
//! leaves repeated), so TreeD and comm_d cost a few hashes; the replica id
//! follows from comm_d; the interactive challenges follow from the replica
//! id and the seed (not from comm_r). Every parent (DRG and expander) of a
//! challenged node gets a pseudorandom column, and each challenged node's
//! labels are computed on every layer exactly as SDR labelling computes them
//! (a challenged node that is also a parent uses its computed column), its
//! key is its last label and its replica value the key plus its data. TreeC
//! holds those columns' hashes and TreeR the replica values, everywhere else
//! a default leaf; then comm_c, comm_r_last and comm_r. The vanilla proofs
//! are checked with `StackedDrg::verify_all_partitions` before they are
//! returned.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

use anyhow::{ensure, Context, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{with_shape, DefaultPieceHasher, MerkleTreeTrait};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{ProverId, RegisteredSealProof, SectorId};
use fr32::bytes_into_fr_repr_safe;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::{Graph, BASE_DEGREE};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof,
    StackedDrg, EXP_DEGREE, TOTAL_PARENTS,
};

use super::prf::Prf;
use super::tree::{Periodic, Shape, Sparse, VirtualTree};

/// Leaves in the repeated block of sector data.
const DATA_PERIOD: u64 = 4096;

/// A synthetic C1 output and the public inputs to verify its proofs with.
pub struct SyntheticSeal {
    pub c1: SealCommitPhase1Output,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    /// Challenged nodes over all partitions.
    pub challenges: usize,
}

/// Makes the C1 output of sector `sector_id` of `prover_id`.
pub fn make(
    proof: RegisteredSealProof,
    prover_id: ProverId,
    sector_id: SectorId,
    prf: &Prf,
) -> Result<SyntheticSeal> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, make_shaped, proof, prover_id, sector_id, prf)
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

fn make_shaped<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    prover_id: ProverId,
    sector_id: SectorId,
    prf: &Prf,
) -> Result<SyntheticSeal> {
    let config = proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let nodes = u64::from(config.sector_size) / 32;

    let data = Periodic::new(prf.block("data", nodes.min(DATA_PERIOD) as usize))?;
    let mut tree_d = VirtualTree::<DefaultPieceHasher, _>::new(Shape::binary(nodes)?, data);
    let comm_d = tree_d.root();
    let ticket = prf.bytes("ticket", 0, 0);
    let seed = prf.bytes("seed", 0, 0);
    let replica_id: TreeDomain<Tree> = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        u64::from(sector_id),
        &ticket,
        comm_d,
        &config.porep_id,
    );

    let inputs = stacked::PublicInputs::<TreeDomain<Tree>, _> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| inputs.challenges(&pp.challenges, nodes as usize, Some(k)))
        .collect();
    let challenged: BTreeSet<u64> = challenges.iter().flatten().map(|&c| c as u64).collect();

    let sdr = Sdr::label(
        &pp.graph,
        pp.num_layers,
        replica_id.as_ref(),
        &challenged,
        prf,
    )?;

    // TreeC: a column hash for every challenged node and every parent.
    let mut columns = BTreeMap::new();
    for (c, parents) in &sdr.parents {
        for v in std::iter::once(*c).chain(parents.iter().map(|&p| u64::from(p))) {
            columns
                .entry(v)
                .or_insert_with(|| column_hash::<Tree>(v, &sdr.column(v)));
        }
    }
    let shape = Shape::of::<Tree>(nodes)?;
    let c_leaves = Sparse::new(prf.fr("tree-c default", 0, 0), columns);
    let mut tree_c = VirtualTree::<Tree::Hasher, _>::new(shape.clone(), c_leaves);
    // TreeR: each challenged node's replica value, its key plus its data.
    let replica: BTreeMap<u64, Fr> = challenged
        .iter()
        .map(|&c| {
            (
                c,
                sdr.labels[&c][pp.num_layers - 1] + tree_d_leaf(&tree_d, c),
            )
        })
        .collect();
    let r_leaves = Sparse::new(prf.fr("tree-r default", 0, 0), replica);
    let mut tree_r = VirtualTree::<Tree::Hasher, _>::new(shape, r_leaves);
    let comm_c = tree_c.root();
    let comm_r_last = tree_r.root();
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);

    let mut trees = Trees {
        d: &mut tree_d,
        c: &mut tree_c,
        r: &mut tree_r,
    };
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = challenges
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|&c| challenge_proof::<Tree>(&sdr, &mut trees, c as u64))
                .collect()
        })
        .collect();

    let inputs = stacked::PublicInputs {
        tau: Some(stacked::Tau { comm_d, comm_r }),
        ..inputs
    };
    ensure!(
        StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&pp, &inputs, &vanilla)?,
        "the synthetic PoRep vanilla proofs do not verify"
    );
    let to_bytes = |d: &dyn AsRef<[u8]>| -> [u8; 32] {
        let mut b = [0u8; 32];
        b.copy_from_slice(d.as_ref());
        b
    };
    let c1 = SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs: wrap(size_of(proof), vanilla)?,
        comm_r: to_bytes(&comm_r),
        comm_d: to_bytes(&comm_d),
        replica_id: Into::<Fr>::into(replica_id).into(),
        seed,
        ticket,
    };
    Ok(SyntheticSeal {
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        ticket,
        seed,
        challenges: challenged.len(),
        c1,
    })
}

fn size_of(proof: RegisteredSealProof) -> u64 {
    u64::from(proof.sector_size())
}

fn tree_d_leaf<L: super::tree::Leaves>(tree: &VirtualTree<DefaultPieceHasher, L>, i: u64) -> Fr {
    tree.leaf(i).into()
}

fn column_hash<Tree: MerkleTreeTrait>(node: u64, rows: &[Fr]) -> Fr {
    let rows = rows.iter().map(|r| TreeDomain::<Tree>::from(*r)).collect();
    stacked::Column::<Tree::Hasher>::new(node as u32, rows)
        .expect("a column")
        .hash()
}

/// The three trees a challenge opens.
struct Trees<'a, H: Hasher> {
    d: &'a mut VirtualTree<DefaultPieceHasher, Periodic>,
    c: &'a mut VirtualTree<H, Sparse>,
    r: &'a mut VirtualTree<H, Sparse>,
}

fn challenge_proof<Tree: 'static + MerkleTreeTrait>(
    sdr: &Sdr,
    trees: &mut Trees<'_, Tree::Hasher>,
    c: u64,
) -> stacked::Proof<Tree, DefaultPieceHasher> {
    let mut column = |v: u64| {
        let rows = sdr
            .column(v)
            .into_iter()
            .map(TreeDomain::<Tree>::from)
            .collect();
        ColumnProof::new(v as u32, rows, trees.c.proof(v))
    };
    let parents = &sdr.parents[&c];
    let c_x = column(c);
    let drg_parents = parents[..BASE_DEGREE]
        .iter()
        .map(|&p| column(u64::from(p)))
        .collect();
    let exp_parents = parents[BASE_DEGREE..]
        .iter()
        .map(|&p| column(u64::from(p)))
        .collect();
    let layers = sdr.layers;
    let parent_labels = |layer: usize| -> Vec<TreeDomain<Tree>> {
        sdr.parent_labels(c, layer)
            .into_iter()
            .map(Into::into)
            .collect()
    };
    stacked::Proof {
        comm_d_proofs: trees.d.proof(c),
        comm_r_last_proof: trees.r.proof(c),
        replica_column_proofs: ReplicaColumnProof {
            c_x,
            drg_parents,
            exp_parents,
        },
        labeling_proofs: (1..=layers)
            .map(|l| LabelingProof::new(l as u32, c, parent_labels(l)))
            .collect(),
        encoding_proof: EncodingProof::new(layers as u32, c, parent_labels(layers)),
    }
}

/// The SDR labels of the challenged nodes and the columns of their parents.
struct Sdr {
    layers: usize,
    prf: Prf,
    /// Each challenged node's parents: DRG first, then expander.
    parents: BTreeMap<u64, Vec<u32>>,
    /// Each challenged node's label on layers 1..=layers.
    labels: BTreeMap<u64, Vec<Fr>>,
}

impl Sdr {
    fn label<H: Hasher, G: Graph<H>>(
        graph: &G,
        layers: usize,
        replica_id: &[u8],
        challenged: &BTreeSet<u64>,
        prf: &Prf,
    ) -> Result<Sdr> {
        let mut parents = BTreeMap::new();
        for &c in challenged {
            let mut p = vec![0u32; BASE_DEGREE + EXP_DEGREE];
            graph
                .parents(c as usize, &mut p)
                .with_context(|| format!("parents of node {c}"))?;
            ensure!(
                p[..BASE_DEGREE].iter().all(|&d| u64::from(d) < c),
                "node {c} has a DRG parent that is not below it"
            );
            parents.insert(c, p);
        }
        let mut sdr = Sdr {
            layers,
            prf: *prf,
            parents,
            labels: challenged.iter().map(|&c| (c, Vec::new())).collect(),
        };
        // Layer by layer, nodes in increasing order: a node's DRG parents
        // (lower indices, this layer) and expander parents (last layer) are
        // labelled before it.
        for layer in 1..=layers {
            for &c in challenged {
                let label = create_label(replica_id, layer, c, &sdr.parent_labels(c, layer));
                sdr.labels
                    .get_mut(&c)
                    .expect("a challenged node")
                    .push(label);
            }
        }
        Ok(sdr)
    }

    /// The label of `node` on `layer` (1-based): computed for challenged
    /// nodes, pseudorandom for every other node.
    fn value(&self, node: u64, layer: usize) -> Fr {
        match self.labels.get(&node) {
            Some(rows) => rows[layer - 1],
            None => self.prf.fr("column", node, layer as u64),
        }
    }

    /// The column of `node`: its labels on every layer.
    fn column(&self, node: u64) -> Vec<Fr> {
        (1..=self.layers).map(|l| self.value(node, l)).collect()
    }

    /// The `TOTAL_PARENTS` parent labels hashed into challenged node `c`'s
    /// label on `layer`, in labelling order: the DRG parents on this layer,
    /// then (above layer 1) the expander parents on the layer below,
    /// repeated.
    fn parent_labels(&self, c: u64, layer: usize) -> Vec<Fr> {
        let parents = &self.parents[&c];
        let count = if layer == 1 {
            BASE_DEGREE
        } else {
            BASE_DEGREE + EXP_DEGREE
        };
        let once: Vec<Fr> = parents[..count]
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let on = if i < BASE_DEGREE { layer } else { layer - 1 };
                self.value(u64::from(p), on)
            })
            .collect();
        once.iter().cycle().take(TOTAL_PARENTS).copied().collect()
    }
}

/// SDR's label of `node` on `layer`: SHA-256 of the replica id, the layer,
/// the node and the parent labels, truncated to a field element.
fn create_label(replica_id: &[u8], layer: usize, node: u64, parents: &[Fr]) -> Fr {
    let mut head = [0u8; 64];
    head[..32].copy_from_slice(replica_id);
    head[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    head[36..44].copy_from_slice(&node.to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(head);
    for p in parents {
        hasher.update(ff::PrimeField::to_repr(p));
    }
    let repr = bytes_into_fr_repr_safe(hasher.finalize().as_ref());
    <Fr as ff::PrimeField>::from_repr_vartime(repr).expect("a 254-bit value")
}

/// filecoin-proofs-api's C1 enum variant of a shape's proofs.
fn wrap<Tree: 'static + MerkleTreeTrait>(
    sector_size: u64,
    proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
) -> Result<VanillaSealProof> {
    use filecoin_proofs::constants::*;
    let any: Box<dyn Any> = Box::new(proofs);
    macro_rules! variant {
        ($v:ident, $shape:ty) => {
            VanillaSealProof::$v(
                *any.downcast::<Vec<Vec<stacked::Proof<$shape, DefaultPieceHasher>>>>()
                    .map_err(|_| anyhow::anyhow!("shape mismatch for {sector_size}"))?,
            )
        };
    }
    Ok(match sector_size {
        SECTOR_SIZE_2_KIB => variant!(StackedDrg2KiBV1, SectorShape2KiB),
        SECTOR_SIZE_8_MIB => variant!(StackedDrg8MiBV1, SectorShape8MiB),
        SECTOR_SIZE_512_MIB => variant!(StackedDrg512MiBV1, SectorShape512MiB),
        SECTOR_SIZE_32_GIB => variant!(StackedDrg32GiBV1, SectorShape32GiB),
        SECTOR_SIZE_64_GIB => variant!(StackedDrg64GiBV1, SectorShape64GiB),
        other => anyhow::bail!("no C1 output format for sector size {other}"),
    })
}
