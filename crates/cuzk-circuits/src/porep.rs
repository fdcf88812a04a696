//! PoRep seal commit (C2): one circuit per partition of the C1 output.

use filecoin_hashers::Domain;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::VanillaSealProof;
use filecoin_proofs::{as_safe_commitment, with_shape, DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::MerkleTreeTrait;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use bellperson::SynthesisError;

use cuzk_r1cs::AssignmentCs;

use crate::assign::{self, porep::PorepPublic};
use crate::{CircuitError, Circuits, ProofCircuits};

struct PorepSource<Tree: 'static + MerkleTreeTrait> {
    public_inputs: stacked::PublicInputs<
        <Tree::Hasher as filecoin_hashers::Hasher>::Domain,
        <DefaultPieceHasher as filecoin_hashers::Hasher>::Domain,
    >,
    vanilla: Vec<Vec<VanillaSealProof<Tree>>>,
    params: stacked::PublicParams<Tree>,
    shape: String,
}

/// The partitions of a PoRep C2 proof, from its C1 output (as
/// `seal_commit_phase2` builds them).
pub fn porep_source(c1: &SealCommitPhase1Output) -> Result<ProofCircuits, CircuitError> {
    let sector_size = u64::from(c1.registered_proof.sector_size());
    with_shape!(sector_size, build, c1)
}

fn build<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
) -> Result<ProofCircuits, CircuitError> {
    let config = c1.registered_proof.as_v1_config();
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> = c1
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e: anyhow::Error| CircuitError::Decode(format!("{e:#}")))?;
    if vanilla.is_empty() || vanilla.iter().any(Vec::is_empty) {
        return Err(CircuitError::Decode(
            "the C1 output holds no vanilla proofs".into(),
        ));
    }
    let want = usize::from(config.partitions);
    if vanilla.len() != want {
        return Err(CircuitError::Decode(format!(
            "the C1 output has {} partitions, {:?} has {want}",
            vanilla.len(),
            c1.registered_proof
        )));
    }
    let comm_r = as_safe_commitment(&c1.comm_r, "comm_r").map_err(CircuitError::build)?;
    let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d).map_err(CircuitError::build)?;
    // As filecoin-proofs-api: the replica id goes through the field element.
    let replica_fr: blstrs::Scalar = c1.replica_id.into();
    let replica_id = <Tree::Hasher as filecoin_hashers::Hasher>::Domain::from(replica_fr);
    let public_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(c1.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).map_err(CircuitError::build)?,
        partitions: Some(want),
        priority: false,
    };
    let params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(CircuitError::build)?
    .vanilla_params;
    Ok(ProofCircuits::new(PorepSource {
        public_inputs,
        vanilla,
        params,
        shape: porep_shape(c1.registered_proof),
    }))
}

/// The shape name of a PoRep's partition circuits (recorded systems are
/// kept under it).
pub fn porep_shape(proof: filecoin_proofs_api::RegisteredSealProof) -> String {
    format!("porep-{proof:?}")
}

impl<Tree: 'static + MerkleTreeTrait> Circuits for PorepSource<Tree> {
    type Circuit = stacked::StackedCircuit<Tree, DefaultPieceHasher>;

    fn count(&self) -> usize {
        self.vanilla.len()
    }

    fn shape(&self) -> &str {
        &self.shape
    }

    fn assigns_natively(&self) -> bool {
        self.public_inputs.tau.is_some()
    }

    fn assign(&self, k: usize, cs: &mut AssignmentCs) -> Option<Result<(), SynthesisError>> {
        let tau = self.public_inputs.tau.as_ref()?;
        let public = PorepPublic::<Tree> {
            replica_id: self.public_inputs.replica_id,
            comm_d: tau.comm_d,
            comm_r: tau.comm_r,
        };
        Some(assign::porep::assign::<Tree>(
            cs,
            &public,
            self.vanilla.get(k)?,
        ))
    }

    fn circuit(&self, k: usize) -> Result<Self::Circuit, CircuitError> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
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
