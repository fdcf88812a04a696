//! WinningPoSt and WindowPoSt (one partition) circuits from vanilla proofs.

use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs, with_shape,
    PoStConfig,
};
use filecoin_proofs_api::{
    ChallengeSeed, FallbackPoStSectorProof, MerkleTreeTrait, ProverId, RegisteredPoStProof,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use bellperson::SynthesisError;
use cuzk_r1cs::AssignmentCs;
use filecoin_hashers::poseidon::PoseidonHasher;

use crate::assign::{self, post::PostSector};
use crate::{CircuitError, Circuits, ProofCircuits};

type Compound<Tree> = FallbackPoStCompound<Tree>;

struct PostSource<Tree: 'static + MerkleTreeTrait> {
    public_inputs: fallback::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>,
    params: fallback::PublicParams,
    /// One vanilla proof per partition.
    partitions: Vec<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
    shape: String,
}

/// A WinningPoSt proof's partitions (always one), as
/// `generate_winning_post_with_vanilla` builds them.
pub fn winning_post_source(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
) -> Result<ProofCircuits, CircuitError> {
    with_shape!(
        u64::from(post_type.sector_size()),
        build,
        post_type,
        randomness,
        prover_id,
        vanilla_proofs,
        None
    )
}

/// One WindowPoSt partition, as `generate_single_window_post_with_vanilla`
/// builds it: `vanilla_proofs` are the partition's sectors.
pub fn window_post_source(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
) -> Result<ProofCircuits, CircuitError> {
    with_shape!(
        u64::from(post_type.sector_size()),
        build,
        post_type,
        randomness,
        prover_id,
        vanilla_proofs,
        Some(partition_index)
    )
}

fn build<Tree: 'static + MerkleTreeTrait>(
    post_type: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_bytes: &[Vec<u8>],
    window_partition: Option<usize>,
) -> Result<ProofCircuits, CircuitError> {
    let config: PoStConfig = post_type.as_v1_config();
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = vanilla_bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b)
                .map_err(|e| CircuitError::Decode(format!("vanilla_proofs[{i}]: {e}")))
        })
        .collect::<Result<_, _>>()?;
    if vanilla.is_empty() {
        return Err(CircuitError::Decode("no vanilla proofs".into()));
    }
    let public_inputs = fallback::PublicInputs {
        randomness: as_safe_commitment(randomness, "randomness").map_err(CircuitError::build)?,
        prover_id: as_safe_commitment(&prover_id, "prover_id").map_err(CircuitError::build)?,
        sectors: vanilla
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: window_partition,
    };
    let (vanilla_params, partitions) = match window_partition {
        None => {
            if vanilla.len() != config.sector_count {
                return Err(CircuitError::Decode(format!(
                    "WinningPoSt takes {} vanilla proofs, got {}",
                    config.sector_count,
                    vanilla.len()
                )));
            }
            (
                winning_post_setup_params(&config).map_err(CircuitError::build)?,
                None,
            )
        }
        Some(_) => (window_post_setup_params(&config), Some(1)),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: false,
    };
    let params = <Compound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::setup(&setup)
    .map_err(CircuitError::build)?
    .vanilla_params;
    let partitions = match window_partition {
        None => partition_vanilla_proofs(&config, &params, &public_inputs, 1, &vanilla),
        Some(_) => single_partition_vanilla_proofs(&config, &params, &public_inputs, &vanilla)
            .map(|p| vec![p]),
    }
    .map_err(CircuitError::build)?;
    Ok(ProofCircuits::new(PostSource::<Tree> {
        public_inputs,
        params,
        partitions,
        shape: post_shape(post_type),
    }))
}

/// The shape name of a PoSt's partition circuits (recorded systems are
/// kept under it).
pub fn post_shape(proof: RegisteredPoStProof) -> String {
    format!("post-{proof:?}")
}

impl<Tree: 'static + MerkleTreeTrait> Circuits for PostSource<Tree> {
    type Circuit = FallbackPoStCircuit<Tree>;

    fn count(&self) -> usize {
        self.partitions.len()
    }

    fn shape(&self) -> &str {
        &self.shape
    }

    fn assigns_natively(&self) -> bool {
        <Tree::Hasher as filecoin_hashers::Hasher>::name()
            == <PoseidonHasher as filecoin_hashers::Hasher>::name()
    }

    fn assign(&self, k: usize, cs: &mut AssignmentCs) -> Option<Result<(), SynthesisError>> {
        let vanilla = self.partitions.get(k)?;
        if vanilla.sectors.len() != self.params.sector_count {
            return Some(Err(SynthesisError::Unsatisfiable));
        }
        // As `FallbackPoStCompound::circuit`: this partition's sectors, the
        // last repeated to fill the partition.
        let public = self
            .public_inputs
            .sectors
            .chunks(self.params.sector_count.max(1))
            .nth(k)?;
        let sectors: Vec<PostSector> = vanilla
            .sectors
            .iter()
            .enumerate()
            .map(|(i, proof)| {
                let p = &public[i.min(public.len() - 1)];
                PostSector {
                    comm_r: p.comm_r.into(),
                    comm_c: proof.comm_c.into(),
                    comm_r_last: proof.comm_r_last.into(),
                    challenges: proof
                        .leafs()
                        .into_iter()
                        .map(Into::into)
                        .zip(proof.as_options())
                        .collect(),
                }
            })
            .collect();
        Some(assign::post::assign::<Tree>(cs, &sectors))
    }

    fn circuit(&self, k: usize) -> Result<Self::Circuit, CircuitError> {
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &self.public_inputs,
            Default::default(),
            &self.partitions[k],
            &self.params,
            Some(k),
        )
        .map_err(CircuitError::build)
    }
}
