//! Merkle trees over a whole sector, computed only where a proof looks.
//!
//! A [`VirtualTree`] has the shape of a storage-proofs tree — base levels of
//! one arity, then an optional sub-tree level and an optional top level — over
//! all of a sector's leaves, whose values come from a [`Leaves`] source. A
//! source also says which subtrees hold the same values (their *class*), and
//! each class's hash is computed once, so a sparse tree (a few explicit
//! leaves, a default value elsewhere) or a periodic one (a block of values
//! repeated) costs a few thousand hashes even over 2^31 leaves. A source may
//! instead stand a pseudorandom value in for every subtree no proof opens
//! ([`Opaque`]): only the explicit leaves' paths are hashed.
//!
//! Nodes hash exactly as the verifier's `InclusionPath::root` hashes them
//! (`multi_node` of the children, with the height inside that part of the
//! path), and [`VirtualTree::proof`] lays a path out as
//! `storage_proofs_core::merkle::MerkleProof` does: the base path, then the
//! sub-tree element, then the top element.

use std::collections::{BTreeMap, HashMap};

use anyhow::{ensure, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use generic_array::typenum::Unsigned;
use merkletree::hash::Algorithm;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};

use super::prf::Prf;

/// Where a tree's leaf values come from.
pub trait Leaves {
    /// The value of leaf `index`.
    fn leaf(&self, index: u64) -> Fr;

    /// The class of the subtree of `span` leaves that starts at leaf
    /// `index * span`: two subtrees of one span with the same class hold the
    /// same leaves (so they have the same hash).
    fn class(&self, span: u64, index: u64) -> u64;

    /// A stand-in for node `index` of `level` (≥ 1, `span` leaves under it)
    /// when no proof opens its subtree: the node takes that value instead of
    /// its children's hash. `None` (the default): hash the children. It must
    /// be `None` for every ancestor of a leaf whose path is proved, or that
    /// path does not verify.
    fn opaque(&self, _level: usize, _span: u64, _index: u64) -> Option<Fr> {
        None
    }
}

/// The arity of every level of a tree, from the leaves up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    arities: Vec<usize>,
    /// How many of `arities` are base levels (the rest are the sub-tree and
    /// top levels, one each).
    base_levels: usize,
}

impl Shape {
    /// The shape of `Tree` (storage-proofs' base / sub / top arities) over
    /// `leaves` leaves.
    pub fn of<Tree: MerkleTreeTrait>(leaves: u64) -> Result<Shape> {
        let base = Tree::Arity::to_usize();
        let sub = Tree::SubTreeArity::to_usize();
        let top = Tree::TopTreeArity::to_usize();
        let mut base_leaves = leaves;
        for a in [sub, top] {
            if a > 0 {
                ensure!(
                    base_leaves % a as u64 == 0,
                    "{leaves} leaves do not split {a} ways"
                );
                base_leaves /= a as u64;
            }
        }
        let base_levels = log_exact(base_leaves, base)?;
        let mut arities = vec![base; base_levels];
        arities.extend([sub, top].into_iter().filter(|&a| a > 0));
        Ok(Shape {
            arities,
            base_levels,
        })
    }

    /// A binary tree over `leaves` leaves (TreeD).
    pub fn binary(leaves: u64) -> Result<Shape> {
        let levels = log_exact(leaves, 2)?;
        Ok(Shape {
            arities: vec![2; levels],
            base_levels: levels,
        })
    }

    /// Number of levels above the leaves.
    pub fn height(&self) -> usize {
        self.arities.len()
    }

    /// Leaves under one node of `level` (level 0 is the leaves).
    pub fn span(&self, level: usize) -> u64 {
        self.arities[..level].iter().map(|&a| a as u64).product()
    }

    /// Leaves of the whole tree.
    pub fn leaves(&self) -> u64 {
        self.span(self.height())
    }

    /// The height `InclusionPath::root` hashes the children of a node of
    /// `level` with: the index within its part of the path.
    fn hash_height(&self, level: usize) -> usize {
        if level <= self.base_levels {
            level - 1
        } else {
            0
        }
    }
}

/// `log_arity(n)`, when `n` is an exact power of `arity`.
fn log_exact(n: u64, arity: usize) -> Result<usize> {
    ensure!(arity >= 2, "arity {arity} is not a tree arity");
    let (mut n_left, mut levels) = (n, 0);
    while n_left > 1 {
        ensure!(n_left % arity as u64 == 0, "{n} is not a power of {arity}");
        n_left /= arity as u64;
        levels += 1;
    }
    ensure!(n_left == 1, "a tree needs at least one leaf");
    Ok(levels)
}

/// A tree of hasher `H` over `L`'s leaves; node hashes are memoised by class.
pub struct VirtualTree<H: Hasher, L: Leaves> {
    shape: Shape,
    leaves: L,
    memo: HashMap<(usize, u64), H::Domain>,
}

impl<H: Hasher, L: Leaves> VirtualTree<H, L> {
    pub fn new(shape: Shape, leaves: L) -> Self {
        VirtualTree {
            shape,
            leaves,
            memo: HashMap::new(),
        }
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The tree's root.
    pub fn root(&mut self) -> H::Domain {
        self.node(self.shape.height(), 0)
    }

    /// The value of leaf `index`.
    pub fn leaf(&self, index: u64) -> H::Domain {
        self.leaves.leaf(index).into()
    }

    /// The hash of node `index` of `level` (level 0: the leaves).
    pub fn node(&mut self, level: usize, index: u64) -> H::Domain {
        if level == 0 {
            return self.leaf(index);
        }
        let span = self.shape.span(level);
        if let Some(v) = self.leaves.opaque(level, span, index) {
            return v.into();
        }
        let key = (level, self.leaves.class(span, index));
        if let Some(h) = self.memo.get(&key) {
            return *h;
        }
        let arity = self.shape.arities[level - 1] as u64;
        let children: Vec<H::Domain> = (0..arity)
            .map(|j| self.node(level - 1, index * arity + j))
            .collect();
        let h = H::Function::default().multi_node(&children, self.shape.hash_height(level));
        self.memo.insert(key, h);
        h
    }

    /// The path of leaf `index`: per level, the siblings and the position.
    pub fn path(&mut self, index: u64) -> Vec<(Vec<H::Domain>, usize)> {
        let mut path = Vec::with_capacity(self.shape.height());
        let mut at = index;
        for level in 0..self.shape.height() {
            let arity = self.shape.arities[level] as u64;
            let first = at - at % arity;
            let siblings = (first..first + arity)
                .filter(|&i| i != at)
                .map(|i| self.node(level, i))
                .collect();
            path.push((siblings, (at % arity) as usize));
            at /= arity;
        }
        path
    }

    /// The inclusion proof of leaf `index` in storage-proofs' layout.
    pub fn proof<A, B, C>(&mut self, index: u64) -> MerkleProof<H, A, B, C>
    where
        A: filecoin_hashers::PoseidonArity,
        B: filecoin_hashers::PoseidonArity,
        C: filecoin_hashers::PoseidonArity,
    {
        let root = self.root();
        let path = self.path(index);
        MerkleProof::from_parts(self.leaf(index), root, path)
    }

    /// Node hashes computed so far (the cost of the tree).
    pub fn hashes(&self) -> usize {
        self.memo.len()
    }
}

/// A default value everywhere except at the explicit leaves.
pub struct Sparse {
    default: Fr,
    explicit: BTreeMap<u64, Fr>,
}

impl Sparse {
    pub fn new(default: Fr, explicit: BTreeMap<u64, Fr>) -> Sparse {
        Sparse { default, explicit }
    }
}

impl Leaves for Sparse {
    fn leaf(&self, index: u64) -> Fr {
        self.explicit.get(&index).copied().unwrap_or(self.default)
    }

    fn class(&self, span: u64, index: u64) -> u64 {
        let start = index * span;
        if self.explicit.range(start..start + span).next().is_some() {
            // Unique: odd classes are subtrees with an explicit leaf.
            2 * index + 1
        } else {
            0
        }
    }
}

/// Explicit leaves, and distinct pseudorandom values for everything no
/// proof opens: a leaf elsewhere, and every node whose subtree holds no
/// explicit leaf (a stand-in for its hash). Paths through the explicit
/// leaves verify like any tree's; their siblings are all distinct, as a
/// real replica's are, where [`Sparse`]'s default subtrees repeat one hash
/// per level (in a PoSt witness, millions of copies of a few values).
pub struct Opaque {
    prf: Prf,
    explicit: BTreeMap<u64, Fr>,
}

impl Opaque {
    pub fn new(prf: Prf, explicit: BTreeMap<u64, Fr>) -> Opaque {
        Opaque { prf, explicit }
    }

    fn holds_explicit(&self, span: u64, index: u64) -> bool {
        let start = index * span;
        self.explicit.range(start..start + span).next().is_some()
    }
}

impl Leaves for Opaque {
    fn leaf(&self, index: u64) -> Fr {
        match self.explicit.get(&index) {
            Some(v) => *v,
            None => self.prf.fr("opaque leaf", index, 0),
        }
    }

    fn class(&self, _span: u64, index: u64) -> u64 {
        // No two subtrees of a span hold the same leaves.
        index
    }

    fn opaque(&self, level: usize, span: u64, index: u64) -> Option<Fr> {
        (!self.holds_explicit(span, index)).then(|| self.prf.fr("opaque node", level as u64, index))
    }
}

/// A block of values (a power of two of them) repeated over the sector.
pub struct Periodic {
    block: Vec<Fr>,
}

impl Periodic {
    pub fn new(block: Vec<Fr>) -> Result<Periodic> {
        ensure!(
            block.len().is_power_of_two(),
            "a period of {} leaves is not a power of two",
            block.len()
        );
        Ok(Periodic { block })
    }

    pub fn period(&self) -> u64 {
        self.block.len() as u64
    }
}

impl Leaves for Periodic {
    fn leaf(&self, index: u64) -> Fr {
        self.block[(index % self.period()) as usize]
    }

    fn class(&self, span: u64, index: u64) -> u64 {
        // Spans and the period are powers of two: one divides the other.
        if span < self.period() {
            index % (self.period() / span)
        } else {
            0
        }
    }
}

/// SnapDeals' new replica over periodic old replica and data:
/// `old(i) + data(i) * rho(i >> shr)`, periodic within each block of
/// `2^shr` leaves (one `rho` each).
pub struct Encoded {
    old: Periodic,
    data: Periodic,
    rhos: Vec<Fr>,
    shr: u32,
}

impl Encoded {
    pub fn new(old: Periodic, data: Periodic, rhos: Vec<Fr>, shr: u32) -> Result<Encoded> {
        ensure!(
            old.period() == data.period() && old.period() <= 1u64 << shr,
            "the old replica and the data must share a period within one rho block"
        );
        Ok(Encoded {
            old,
            data,
            rhos,
            shr,
        })
    }
}

impl Leaves for Encoded {
    fn leaf(&self, index: u64) -> Fr {
        let rho = self.rhos[(index >> self.shr) as usize];
        self.old.leaf(index) + self.data.leaf(index) * rho
    }

    fn class(&self, span: u64, index: u64) -> u64 {
        let (period, block_len) = (self.old.period(), 1u64 << self.shr);
        let block = (index * span) >> self.shr;
        if span < period {
            block * (period / span) + index % (period / span)
        } else if span <= block_len {
            block
        } else {
            index
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use generic_array::typenum::{U0, U2, U8};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use storage_proofs_core::merkle::{LCTree, MerkleProofTrait};

    /// The root of a full tree over `values`, level by level.
    fn full_root<H: Hasher>(shape: &Shape, values: &[Fr]) -> H::Domain {
        let mut row: Vec<H::Domain> = values.iter().map(|v| (*v).into()).collect();
        for level in 1..=shape.height() {
            let arity = shape.arities[level - 1];
            row = row
                .chunks(arity)
                .map(|c| H::Function::default().multi_node(c, shape.hash_height(level)))
                .collect();
        }
        row[0]
    }

    fn random(rng: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
        (0..n).map(|_| Fr::random(&mut *rng)).collect()
    }

    #[test]
    fn opaque_paths_verify_with_distinct_siblings() {
        type T = LCTree<PoseidonHasher, U8, U2, U2>;
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let shape = Shape::of::<T>(256).unwrap();
        let explicit: BTreeMap<u64, Fr> = [3u64, 64, 65, 255]
            .into_iter()
            .map(|i| (i, Fr::random(&mut rng)))
            .collect();
        let leaves = Opaque::new(Prf::new(1, "opaque test"), explicit.clone());
        let mut tree = VirtualTree::<PoseidonHasher, _>::new(shape, leaves);
        let mut seen = std::collections::HashSet::new();
        for (&i, v) in &explicit {
            let p: MerkleProof<PoseidonHasher, U8, U2, U2> = tree.proof(i);
            assert!(p.validate(i as usize), "leaf {i}");
            assert_eq!(p.leaf(), (*v).into());
            assert_eq!(p.root(), tree.root());
        }
        // Every sibling on leaf 3's path differs from every other.
        for (siblings, _) in tree.path(3) {
            for s in siblings {
                assert!(seen.insert(s), "a repeated sibling on leaf 3's path");
            }
        }
        // Only the explicit leaves' ancestors were hashed: 4 leaves, at most
        // 4 nodes per level, 4 levels.
        assert!(tree.hashes() <= 16, "{} hashes", tree.hashes());
    }

    #[test]
    fn shapes_follow_storage_proofs() {
        type T32G = LCTree<PoseidonHasher, U8, U8, U0>;
        type T64G = LCTree<PoseidonHasher, U8, U8, U2>;
        let s = Shape::of::<T32G>(1 << 30).unwrap();
        assert_eq!(s.height(), 10);
        assert_eq!(s.leaves(), 1 << 30);
        let s = Shape::of::<T64G>(1 << 31).unwrap();
        assert_eq!(s.height(), 11);
        assert_eq!(s.base_levels, 9);
        assert!(Shape::of::<T32G>(1 << 29).is_err());
    }

    #[test]
    fn virtual_roots_equal_full_roots_and_paths_verify() {
        type T = LCTree<PoseidonHasher, U8, U2, U2>;
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let shape = Shape::of::<T>(256).unwrap();
        let default = Fr::random(&mut rng);
        let explicit: BTreeMap<u64, Fr> = [3u64, 64, 65, 255]
            .into_iter()
            .map(|i| (i, Fr::random(&mut rng)))
            .collect();
        let values: Vec<Fr> = (0..256)
            .map(|i| explicit.get(&i).copied().unwrap_or(default))
            .collect();
        let mut tree =
            VirtualTree::<PoseidonHasher, _>::new(shape.clone(), Sparse::new(default, explicit));
        assert_eq!(tree.root(), full_root::<PoseidonHasher>(&shape, &values));
        for i in [0u64, 3, 64, 200, 255] {
            let p: MerkleProof<PoseidonHasher, U8, U2, U2> = tree.proof(i);
            assert!(p.validate(i as usize), "leaf {i}");
            assert_eq!(p.leaf(), values[i as usize].into());
        }

        let block = random(&mut rng, 16);
        let values: Vec<Fr> = (0..256).map(|i| block[i % 16]).collect();
        let mut tree = VirtualTree::<PoseidonHasher, _>::new(
            shape.clone(),
            Periodic::new(block.clone()).unwrap(),
        );
        assert_eq!(tree.root(), full_root::<PoseidonHasher>(&shape, &values));

        let bin = Shape::binary(256).unwrap();
        let mut d =
            VirtualTree::<Sha256Hasher, _>::new(bin.clone(), Periodic::new(block.clone()).unwrap());
        assert_eq!(d.root(), full_root::<Sha256Hasher>(&bin, &values));
        let p: MerkleProof<Sha256Hasher, U2> = d.proof(77);
        assert!(p.validate(77));

        let rhos = random(&mut rng, 4);
        let data = random(&mut rng, 16);
        let values: Vec<Fr> = (0..256)
            .map(|i| block[i % 16] + data[i % 16] * rhos[i >> 6])
            .collect();
        let enc = Encoded::new(
            Periodic::new(block).unwrap(),
            Periodic::new(data).unwrap(),
            rhos,
            6,
        )
        .unwrap();
        let mut tree = VirtualTree::<PoseidonHasher, _>::new(shape.clone(), enc);
        assert_eq!(tree.root(), full_root::<PoseidonHasher>(&shape, &values));
        let p: MerkleProof<PoseidonHasher, U8, U2, U2> = tree.proof(130);
        assert!(p.validate(130));
    }
}
