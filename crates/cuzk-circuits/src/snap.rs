//! SnapDeals (empty sector update): one circuit per partition proof.

use filecoin_hashers::Domain;
use filecoin_proofs::types::SectorUpdateConfig;
use filecoin_proofs::{with_shape, DefaultPieceDomain, PartitionProof};
use filecoin_proofs_api::{Commitment, MerkleTreeTrait, RegisteredUpdateProof};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs,
    PublicParams, SetupParams,
};

use bellperson::SynthesisError;
use cuzk_r1cs::AssignmentCs;

use crate::{assign, CircuitError, Circuits, ProofCircuits};

struct SnapSource<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    public_inputs: PublicInputs,
    params: PublicParams,
    vanilla: Vec<PartitionProof<Tree>>,
    shape: String,
}

/// A SnapDeals proof's partitions, as
/// `generate_empty_sector_update_proof_with_vanilla` builds them.
pub fn snap_source(
    update_type: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: &Commitment,
    comm_r_new: &Commitment,
    comm_d_new: &Commitment,
) -> Result<ProofCircuits, CircuitError> {
    with_shape!(
        u64::from(update_type.sector_size()),
        build,
        update_type,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new
    )
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    update_type: RegisteredUpdateProof,
    vanilla_bytes: &[Vec<u8>],
    comm_r_old: &Commitment,
    comm_r_new: &Commitment,
    comm_d_new: &Commitment,
) -> Result<ProofCircuits, CircuitError> {
    let config = SectorUpdateConfig::from_porep_config(&update_type.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    let vanilla: Vec<PartitionProof<Tree>> = vanilla_bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b)
                .map_err(|e| CircuitError::Decode(format!("vanilla_proofs[{i}]: {e}")))
        })
        .collect::<Result<_, _>>()?;
    if vanilla.len() != partitions {
        return Err(CircuitError::Decode(format!(
            "SnapDeals takes {partitions} partition proofs, got {}",
            vanilla.len()
        )));
    }
    let domain = |c: &Commitment| {
        <TreeRHasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(c)
            .map_err(CircuitError::build)
    };
    let public_inputs = PublicInputs {
        k: partitions,
        comm_r_old: domain(comm_r_old)?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(comm_d_new).map_err(CircuitError::build)?,
        comm_r_new: domain(comm_r_new)?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let params = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&setup)
    .map_err(CircuitError::build)?
    .vanilla_params;
    Ok(ProofCircuits::new(SnapSource {
        public_inputs,
        params,
        vanilla,
        shape: snap_shape(update_type),
    }))
}

/// The shape name of a SnapDeals proof's partition circuits (recorded
/// systems are kept under it).
pub fn snap_shape(proof: RegisteredUpdateProof) -> String {
    format!("snap-{proof:?}")
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Circuits for SnapSource<Tree> {
    type Circuit = EmptySectorUpdateCircuit<Tree>;

    fn count(&self) -> usize {
        self.vanilla.len()
    }

    fn shape(&self) -> &str {
        &self.shape
    }

    fn assigns_natively(&self) -> bool {
        true
    }

    /// The circuit's own inputs (cheap to build: the vanilla proof's
    /// values as field elements), assigned natively.
    fn assign(&self, k: usize, cs: &mut AssignmentCs) -> Option<Result<(), SynthesisError>> {
        if self.vanilla.get(k)?.challenge_proofs.is_empty() {
            return Some(Err(SynthesisError::Unsatisfiable));
        }
        Some(match self.circuit(k) {
            Ok(circuit) => assign::snap::assign(cs, &circuit),
            Err(e) => {
                // SynthesisError carries no text: the reason goes to the log.
                tracing::warn!(partition = k, error = %e, "SnapDeals circuit not built");
                Err(SynthesisError::AssignmentMissing)
            }
        })
    }

    fn circuit(&self, k: usize) -> Result<Self::Circuit, CircuitError> {
        <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
        >>::circuit(
            &self.public_inputs,
            (),
            &self.vanilla[k],
            &self.params,
            Some(k),
        )
        .map_err(CircuitError::build)
    }
}
