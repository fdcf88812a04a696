//! The SnapDeals partition circuit (storage-proofs-update's
//! `EmptySectorUpdateCircuit`) assigned natively, from the circuit's own
//! inputs: the same walk, the same variables in the same order.
//!
//! The data tree (TreeD, binary SHA-256) is nearly all of a partition's
//! cost: the partition's apex tree, its path to comm_d_new, and each
//! challenge's path up to its apex leaf. Those hashes are
//! [`super::por::sha256_pair`]; the replica-tree paths (TreeROld and
//! TreeRNew) and rho, phi and the challenge digests are
//! [`super::poseidon`]. Everything else calls the gadgets the circuit
//! calls, or (where storage-proofs-update keeps its gadgets private: the
//! challenge bits, their high bits, the new label) allocates what they
//! allocate. Constraints are not written: an assignment-only system keeps
//! none. The first challenge runs alone; the others, which allocate as
//! many variables each, run in parallel into their own ranges.

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_r1cs::AssignmentCs;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::PoseidonArity;
use generic_array::typenum::{Unsigned, U2};
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::{EmptySectorUpdateCircuit, PublicParams};

use super::por::sha256_pair;
use super::poseidon::poseidon_hash;
use super::AssignOnly;

type Num = AllocatedNum<Fr>;

fn value(v: Option<Fr>) -> Result<Fr, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

fn alloc<CS: AssignOnly>(cs: &mut CS, v: Option<Fr>) -> Result<Num, SynthesisError> {
    let v = value(v)?;
    AllocatedNum::alloc(&mut *cs, || Ok(v))
}

fn booleans(bits: &[AllocatedBit]) -> Vec<Boolean> {
    bits.iter().cloned().map(Boolean::from).collect()
}

/// The public inputs as the circuit allocates them, `k_and_h_select` split
/// into its bits.
struct Public {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    partition: Num,
    comm_r_old: Num,
    comm_d_new: Num,
    comm_r_new: Num,
}

/// What every challenge reads: variables allocated before the challenges.
struct Shared<'a> {
    partition_bits: &'a [AllocatedBit],
    h_select_bits: &'a [AllocatedBit],
    hs: &'a [usize],
    phi: &'a Num,
    apex_leafs: &'a [Num],
    /// Challenge bits below the apex leaf (the TreeD path to it).
    to_apex: usize,
    apex_bits: usize,
}

/// Allocates partition circuit `circuit`'s assignment into `cs`, as
/// `EmptySectorUpdateCircuit::synthesize` does.
pub(crate) fn assign<TreeR>(
    cs: &mut AssignmentCs,
    circuit: &EmptySectorUpdateCircuit<TreeR>,
) -> Result<(), SynthesisError>
where
    TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
{
    let p = &circuit.pub_params;
    let private = &circuit.priv_inputs;
    let hs = hs(p.sector_nodes);
    let partition_path = check_shape(p, private)?;
    let public = public_inputs(cs, p, &circuit.pub_inputs, hs.len())?;
    let phi = poseidon_hash(
        cs,
        vec![public.comm_d_new.clone(), public.comm_r_old.clone()],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;
    let comm_c = alloc(cs, private.comm_c)?;
    let root_r_old = alloc(cs, private.root_r_old)?;
    let root_r_new = alloc(cs, private.root_r_new)?;
    let apex_leafs = private
        .apex_leafs
        .iter()
        .map(|leaf| alloc(cs, *leaf))
        .collect::<Result<Vec<_>, _>>()?;
    let partition_path = partition_path
        .iter()
        .map(|siblings| alloc(cs, siblings[0]))
        .collect::<Result<Vec<_>, _>>()?;
    for root in [&root_r_old, &root_r_new] {
        poseidon_hash(
            cs,
            vec![comm_c.clone(), root.clone()],
            <U2 as PoseidonArity>::PARAMETERS(),
        )?;
    }
    let apex_root = apex_root(cs, &apex_leafs)?;
    let partition_bits = booleans(&public.partition_bits);
    tree_d_path(cs, &partition_bits, apex_root, &partition_path)?;

    let free_bits = p.challenge_bit_len - p.partition_bit_len;
    let bits = challenge_bits(cs, &public, p.challenge_count, free_bits)?;
    let shared = Shared {
        partition_bits: &public.partition_bits,
        h_select_bits: &public.h_select_bits,
        hs: &hs,
        phi: &phi,
        apex_leafs: &apex_leafs,
        to_apex: free_bits - p.apex_leaf_bit_len,
        apex_bits: p.apex_leaf_bit_len,
    };
    let challenges: Vec<_> = bits.iter().zip(&private.challenge_proofs).collect();
    let Some((first, rest)) = challenges.split_first() else {
        return Err(SynthesisError::Unsatisfiable);
    };
    let before = cs.counts();
    challenge::<TreeR, _>(cs, &shared, first.0, first.1)?;
    let after = cs.counts();
    let each = (after.0 - before.0, after.1 - before.1);
    cs.assign_parallel(rest, each, |w, (bits, proof)| {
        challenge::<TreeR, _>(w, &shared, bits, proof)
    })
}

/// The sizes the circuit asserts (it panics where they are wrong; here
/// they are an error), and the partition's path above its apex tree.
fn check_shape<TreeR>(
    p: &PublicParams,
    private: &PrivateInputs<TreeR>,
) -> Result<Vec<Vec<Option<Fr>>>, SynthesisError>
where
    TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
{
    let proofs = &private.challenge_proofs;
    let first = proofs.first().ok_or(SynthesisError::Unsatisfiable)?;
    let below = p.partition_bit_len + p.apex_leaf_bit_len;
    let fits = p.challenge_bit_len > below
        && proofs.len() == p.challenge_count
        && private.apex_leafs.len() == p.apex_leaf_count
        && p.apex_leaf_count == 1 << p.apex_leaf_bit_len
        && proofs.iter().all(|c| {
            c.path_d_new.len() == p.challenge_bit_len
                && c.path_d_new.iter().all(|s| s.len() == 1)
                && c.path_d_new[p.challenge_bit_len - p.partition_bit_len..]
                    == first.path_d_new[p.challenge_bit_len - p.partition_bit_len..]
        });
    if !fits {
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok(first.path_d_new[p.challenge_bit_len - p.partition_bit_len..].to_vec())
}

/// `k_and_h_select` (an input) and its low bits, the partition index
/// packed from them, then comm_r_old, comm_d_new and comm_r_new (inputs).
fn public_inputs<CS: AssignOnly>(
    cs: &mut CS,
    p: &PublicParams,
    inputs: &PublicInputs,
    h_len: usize,
) -> Result<Public, SynthesisError> {
    let k_and_h_select = alloc(cs, inputs.k_and_h_select)?;
    k_and_h_select.inputize(&mut *cs)?;
    let le: Vec<bool> = value(inputs.k_and_h_select)?
        .to_le_bits()
        .into_iter()
        .collect();
    let split = p.partition_bit_len;
    let (low, high) = le.split_at(split + h_len);
    if high.iter().any(|b| *b) || low[split..].iter().filter(|b| **b).count() != 1 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut partition_bits = low
        .iter()
        .map(|b| AllocatedBit::alloc(&mut *cs, Some(*b)))
        .collect::<Result<Vec<_>, _>>()?;
    let h_select_bits = partition_bits.split_off(split);
    let partition = multipack::pack_bits(&mut *cs, &booleans(&partition_bits))?;
    let mut input = |v: Option<Fr>| {
        let n = alloc(cs, v)?;
        n.inputize(&mut *cs)?;
        Ok::<_, SynthesisError>(n)
    };
    Ok(Public {
        comm_r_old: input(inputs.comm_r_old)?,
        comm_d_new: input(inputs.comm_d_new)?,
        comm_r_new: input(inputs.comm_r_new)?,
        partition_bits,
        h_select_bits,
        partition,
    })
}

/// The partition's apex tree from its leaves (`apex_por`): its root.
fn apex_root<CS: AssignOnly>(cs: &mut CS, leaves: &[Num]) -> Result<Num, SynthesisError> {
    let mut row = leaves.to_vec();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| sha256_pair(cs, pair))
            .collect::<Result<Vec<_>, _>>()?;
    }
    row.pop().ok_or(SynthesisError::Unsatisfiable)
}

/// A TreeD path (`por_no_challenge_input` of the binary SHA-256 tree):
/// per level the node inserted by its bit among its sibling, then hashed.
/// The computed root (compared with the given one, no variable).
fn tree_d_path<CS: AssignOnly>(
    cs: &mut CS,
    bits: &[Boolean],
    leaf: Num,
    siblings: &[Num],
) -> Result<Num, SynthesisError> {
    if bits.len() != siblings.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut cur = leaf;
    for (bit, sibling) in bits.iter().zip(siblings) {
        let pair = insert(
            &mut *cs,
            &cur,
            std::slice::from_ref(bit),
            std::slice::from_ref(sibling),
        )?;
        cur = sha256_pair(cs, &pair)?;
    }
    Ok(cur)
}

/// `gen_challenge_bits`: per digest its index (`k · digests + j`), the
/// digest `H(comm_r_new ‖ index)` and its 255 bits, cut into each
/// challenge's `free_bits` random bits.
fn challenge_bits<CS: AssignOnly>(
    cs: &mut CS,
    public: &Public,
    challenges: usize,
    free_bits: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let per_digest = Fr::CAPACITY as usize / free_bits;
    if per_digest == 0 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let digests = challenges.div_ceil(per_digest);
    let k = value(public.partition.get_value())?;
    let mut out = Vec::with_capacity(challenges);
    for j in 0..digests {
        let index = k * Fr::from(digests as u64) + Fr::from(j as u64);
        let index = alloc(cs, Some(index))?;
        let digest = poseidon_hash(
            cs,
            vec![public.comm_r_new.clone(), index],
            &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
        )?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        let take = per_digest.min(challenges - out.len());
        out.extend(bits.chunks(free_bits).take(take).map(<[_]>::to_vec));
    }
    Ok(out)
}

/// One challenge, as the circuit's loop body: rho, the new label, both
/// replica-tree paths, the apex leaf and the TreeD path up to it.
fn challenge<TreeR, CS>(
    cs: &mut CS,
    s: &Shared<'_>,
    free_bits: &[AllocatedBit],
    proof: &ChallengeProof<TreeR>,
) -> Result<(), SynthesisError>
where
    TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
    CS: AssignOnly,
{
    let c_bits: Vec<AllocatedBit> = free_bits.iter().chain(s.partition_bits).cloned().collect();
    let c_high = high_bits(cs, &c_bits, s.h_select_bits, s.hs)?;
    let rho = poseidon_hash(
        cs,
        vec![s.phi.clone(), c_high],
        &POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    )?;
    let leaf_r_old = alloc(cs, proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs, proof.leaf_d_new)?;
    let product = leaf_d_new.mul(&mut *cs, &rho)?;
    let label = value(leaf_r_old.get_value())? + value(product.get_value())?;
    if Some(label) != proof.leaf_r_new {
        return Err(SynthesisError::Unsatisfiable);
    }
    let leaf_r_new = alloc(cs, Some(label))?;
    let bits = booleans(&c_bits);
    for (path, leaf) in [
        (&proof.path_r_old, leaf_r_old),
        (&proof.path_r_new, leaf_r_new),
    ] {
        let siblings = path
            .iter()
            .map(|row| row.iter().map(|v| alloc(cs, *v)).collect())
            .collect::<Result<Vec<Vec<_>>, _>>()?;
        tree_r_path::<TreeR, CS>(cs, &bits, leaf, &siblings)?;
    }
    let apex_bits = &bits[s.to_apex..s.to_apex + s.apex_bits];
    select(&mut *cs, s.apex_leafs, apex_bits)?;
    let siblings = proof.path_d_new[..s.to_apex]
        .iter()
        .map(|row| alloc(cs, row[0]))
        .collect::<Result<Vec<_>, _>>()?;
    tree_d_path(cs, &bits[..s.to_apex], leaf_d_new, &siblings)?;
    Ok(())
}

/// `get_challenge_high_bits`: per `h` the challenge's `h` high bits packed
/// and that times its `h_select` bit; then their sum, the one selected.
fn high_bits<CS: AssignOnly>(
    cs: &mut CS,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<Num, SynthesisError> {
    if hs.len() != h_select_bits.len() || hs.iter().any(|h| *h > c_bits.len()) {
        return Err(SynthesisError::Unsatisfiable);
    }
    let c_bits = booleans(c_bits);
    let mut sum = Fr::ZERO;
    for (h, select) in hs.iter().zip(h_select_bits) {
        let high = multipack::pack_bits(&mut *cs, &c_bits[c_bits.len() - h..])?;
        let picked = match select.get_value() {
            Some(true) => value(high.get_value())?,
            Some(false) => Fr::ZERO,
            None => return Err(SynthesisError::AssignmentMissing),
        };
        alloc(cs, Some(picked))?;
        sum += picked;
    }
    alloc(cs, Some(sum))
}

/// A replica-tree path (`por_no_challenge_input` of TreeR): the base
/// levels, then the sub-tree and top-tree levels where the shape has them,
/// each consuming its bits of the challenge.
fn tree_r_path<TreeR: MerkleTreeTrait, CS: AssignOnly>(
    cs: &mut CS,
    mut bits: &[Boolean],
    leaf: Num,
    path: &[Vec<Num>],
) -> Result<(), SynthesisError> {
    let sub = TreeR::SubTreeArity::to_usize() > 0;
    let top = TreeR::TopTreeArity::to_usize() > 0;
    let extra = usize::from(sub) + usize::from(top);
    let base = path
        .len()
        .checked_sub(extra)
        .ok_or(SynthesisError::Unsatisfiable)?;
    let mut cur = leaf;
    for siblings in &path[..base] {
        cur = poseidon_level::<TreeR::Arity, CS>(cs, &cur, &mut bits, siblings)?;
    }
    if sub {
        cur = poseidon_level::<TreeR::SubTreeArity, CS>(cs, &cur, &mut bits, &path[base])?;
    }
    if top {
        poseidon_level::<TreeR::TopTreeArity, CS>(cs, &cur, &mut bits, &path[base + 1])?;
    }
    match bits.is_empty() {
        true => Ok(()),
        false => Err(SynthesisError::Unsatisfiable),
    }
}

fn poseidon_level<A: PoseidonArity, CS: AssignOnly>(
    cs: &mut CS,
    cur: &Num,
    bits: &mut &[Boolean],
    siblings: &[Num],
) -> Result<Num, SynthesisError> {
    let arity = A::to_usize();
    let n = arity.trailing_zeros() as usize;
    if !arity.is_power_of_two() || siblings.len() + 1 != arity || bits.len() < n {
        return Err(SynthesisError::Unsatisfiable);
    }
    let (now, rest) = bits.split_at(n);
    *bits = rest;
    let preimage = insert(&mut *cs, cur, now, siblings)?;
    poseidon_hash(cs, preimage, A::PARAMETERS())
}

#[cfg(test)]
mod tests {
    //! The native assignment against the circuit's own gadgets, on circuits
    //! of every TreeR shape (base levels only, with a sub-tree level, with
    //! sub- and top-tree levels) filled with seeded random values. Only the
    //! new labels are computed (both paths check them); nothing else need
    //! satisfy the constraints, which an assignment-only system ignores.

    use super::*;
    use bellperson::{Circuit, ConstraintSystem};
    use filecoin_hashers::poseidon::PoseidonHasher;
    use generic_array::typenum::{U0, U4, U8};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use storage_proofs_core::merkle::LCTree;
    use storage_proofs_update::constants::{TreeDDomain, TreeRDomain};
    use storage_proofs_update::vanilla::{phi, rho};
    use storage_proofs_update::Challenges;

    fn random_circuit<TreeR>(
        sector_bytes: u64,
        rng: &mut ChaCha8Rng,
    ) -> EmptySectorUpdateCircuit<TreeR>
    where
        TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
    {
        let p = PublicParams::from_sector_size(sector_bytes);
        let mut c = EmptySectorUpdateCircuit::<TreeR>::blank(p.clone());
        let k = rng.gen_range(0..p.partition_count);
        let h_index = rng.gen_range(0..6);
        let mut random = || Some(Fr::random(&mut *rng));
        let h = hs(p.sector_nodes)[h_index];
        let k_and_h_select = (k as u64) | (1 << (p.partition_bit_len + h_index));
        let (comm_r_old, comm_d_new, comm_r_new) = (random(), random(), random());
        c.pub_inputs = PublicInputs {
            k_and_h_select: Some(Fr::from(k_and_h_select)),
            comm_r_old,
            comm_d_new,
            comm_r_new,
        };
        let phi = phi(
            &TreeDDomain::from(comm_d_new.unwrap()),
            &TreeRDomain::from(comm_r_old.unwrap()),
        );
        let challenges: Vec<u32> =
            Challenges::new(p.sector_nodes, comm_r_new.unwrap().into(), k).collect();
        assert_eq!(challenges.len(), p.challenge_count);

        let private = &mut c.priv_inputs;
        private.comm_c = random();
        private.root_r_old = random();
        private.root_r_new = random();
        for leaf in &mut private.apex_leafs {
            *leaf = random();
        }
        let fill = |path: &mut Vec<Vec<Option<Fr>>>, rng: &mut ChaCha8Rng| {
            for v in path.iter_mut().flatten() {
                *v = Some(Fr::random(&mut *rng));
            }
        };
        let shared = p.challenge_bit_len - p.partition_bit_len;
        let mut partition_path = private.challenge_proofs[0].path_d_new.clone();
        fill(&mut partition_path, rng);
        for (proof, c) in private.challenge_proofs.iter_mut().zip(&challenges) {
            fill(&mut proof.path_r_old, rng);
            fill(&mut proof.path_r_new, rng);
            fill(&mut proof.path_d_new, rng);
            proof.path_d_new[shared..].clone_from_slice(&partition_path[shared..]);
            let leaf_r_old = Fr::random(&mut *rng);
            let leaf_d_new = Fr::random(&mut *rng);
            let high = c >> (p.challenge_bit_len - h);
            proof.leaf_r_old = Some(leaf_r_old);
            proof.leaf_d_new = Some(leaf_d_new);
            proof.leaf_r_new = Some(leaf_r_old + leaf_d_new * rho(&phi, high));
        }
        c
    }

    fn clone<TreeR>(c: &EmptySectorUpdateCircuit<TreeR>) -> EmptySectorUpdateCircuit<TreeR>
    where
        TreeR: MerkleTreeTrait<Hasher = TreeRHasher>,
    {
        EmptySectorUpdateCircuit {
            pub_params: c.pub_params.clone(),
            pub_inputs: c.pub_inputs.clone(),
            priv_inputs: PrivateInputs {
                comm_c: c.priv_inputs.comm_c,
                root_r_old: c.priv_inputs.root_r_old,
                root_r_new: c.priv_inputs.root_r_new,
                apex_leafs: c.priv_inputs.apex_leafs.clone(),
                challenge_proofs: c.priv_inputs.challenge_proofs.clone(),
            },
        }
    }

    fn system() -> AssignmentCs {
        let mut cs = AssignmentCs::default();
        cs.alloc_input(|| "one", || Ok(Fr::ONE)).unwrap();
        cs
    }

    fn check<TreeR>(sector_bytes: u64, seed: u64)
    where
        TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
    {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let circuit = random_circuit::<TreeR>(sector_bytes, &mut rng);
        let mut gadget = system();
        clone(&circuit).synthesize(&mut gadget).unwrap();
        let mut native = system();
        assign(&mut native, &circuit).unwrap();
        let what = format!(
            "{sector_bytes} bytes, TreeR {}/{}/{}",
            TreeR::Arity::to_usize(),
            TreeR::SubTreeArity::to_usize(),
            TreeR::TopTreeArity::to_usize()
        );
        assert_eq!(native.input.len(), gadget.input.len(), "{what}: inputs");
        assert_eq!(native.aux.len(), gadget.aux.len(), "{what}: aux values");
        assert!(native.input == gadget.input, "{what}: the inputs differ");
        if let Some(i) = (0..native.aux.len()).find(|&i| native.aux[i] != gadget.aux[i]) {
            panic!("{what}: aux value {i} of {} differs", native.aux.len());
        }
    }

    type Tree<B, S, T> = LCTree<PoseidonHasher, B, S, T>;

    #[test]
    fn same_assignment_as_the_gadgets_for_every_tree_r_shape() {
        for seed in 0..2 {
            check::<Tree<U8, U0, U0>>(2 << 10, seed);
            check::<Tree<U8, U4, U0>>(8 << 10, seed);
            check::<Tree<U8, U8, U0>>(16 << 10, seed);
            check::<Tree<U8, U8, U2>>(32 << 10, seed);
        }
    }

    /// The real 32 GiB shape (86 challenges from 10 digests, hs 7–12, 16
    /// partitions, TreeD 30 levels): a documented command, not part of the
    /// test run (docs/PERF.md has its time):
    /// `cargo test --release -p cuzk-circuits -- --ignored at_32gib`.
    #[test]
    #[ignore = "the real 32 GiB shape: ~45 s and 5 GB on 2 cores"]
    fn same_assignment_as_the_gadgets_at_32gib() {
        check::<Tree<U8, U8, U0>>(32 << 30, 3);
    }
}
