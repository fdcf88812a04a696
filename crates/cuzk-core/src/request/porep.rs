//! PoRep C1 outputs: parsing (raw JSON or Curio's wrapper) and the checks
//! that need no proving.
//!
//! The C1's shape must be the registered proof's (partitions, challenges per
//! partition, layers, parents), its commitments must be what its proofs
//! open, and its replica id must be the one `miner_id`, `sector_number`, the
//! ticket, comm_d and the proof type's porep id give, exactly as the
//! verifier recomputes it. A C1 that fails any of these would be proved in
//! full (ten partitions at 32 GiB) and then fail verification.

use base64::Engine as _;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::constants::DefaultTreeHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::VanillaSealProof as SealProof;
use filecoin_proofs::{
    DefaultPieceDomain, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::MerkleTreeTrait;
use serde::Deserialize;
use storage_proofs_core::drgraph::BASE_DEGREE;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_porep::stacked::{generate_replica_id, EXP_DEGREE};

use super::{canonical, invalid, merkle_canonical, RequestError};
use crate::kinds::prover_id_from_miner;

/// Curio's `c1.json` form: the C1 output JSON, base64 inside a wrapper.
#[derive(Deserialize)]
struct CurioC1Wrapper {
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
}

/// Parses a C1 output: raw `SealCommitPhase1Output` JSON, or Curio's
/// `{"SectorNum", "Phase1Out": base64(JSON), "SectorSize"}` wrapper.
pub fn parse_c1(bytes: &[u8]) -> Result<SealCommitPhase1Output, RequestError> {
    match serde_json::from_slice::<SealCommitPhase1Output>(bytes) {
        Ok(c1) => Ok(c1),
        Err(direct) => {
            let Ok(wrapper) = serde_json::from_slice::<CurioC1Wrapper>(bytes) else {
                return Err(invalid(
                    "vanilla_proof",
                    format!("not a C1 output (SealCommitPhase1Output JSON): {direct}"),
                ));
            };
            let inner = base64::engine::general_purpose::STANDARD
                .decode(wrapper.phase1_out.as_bytes())
                .map_err(|e| invalid("vanilla_proof", format!("Phase1Out is not base64: {e}")))?;
            serde_json::from_slice(&inner).map_err(|e| {
                invalid(
                    "vanilla_proof",
                    format!("Phase1Out is not a SealCommitPhase1Output JSON: {e}"),
                )
            })
        }
    }
}

/// What the C1's proofs must look like for its registered proof.
struct Shape {
    sector_size: u64,
    partitions: usize,
    challenges: usize,
    layers: usize,
}

/// Checks a parsed C1 against its registered proof and against the
/// request's `miner_id` and `sector_number`.
pub fn check_c1(
    c1: &SealCommitPhase1Output,
    miner_id: u64,
    sector_number: u64,
) -> Result<(), RequestError> {
    let config = c1.registered_proof.as_v1_config();
    for (name, value) in [
        ("comm_d", &c1.comm_d),
        ("comm_r", &c1.comm_r),
        ("seed", &c1.seed),
    ] {
        if *value == [0u8; 32] {
            return Err(invalid(
                "vanilla_proof",
                format!("the C1 output's {name} is all zeros"),
            ));
        }
    }
    let setup = setup_params(&config)
        .map_err(|e| RequestError::FailedPrecondition(format!("{:?}: {e}", c1.registered_proof)))?;
    let shape = Shape {
        sector_size: u64::from(config.sector_size),
        partitions: usize::from(config.partitions),
        challenges: setup.challenges.num_challenges_per_partition(),
        layers: setup.num_layers,
    };
    match &c1.vanilla_proofs {
        VanillaSealProof::StackedDrg2KiBV1(p) => {
            check_proofs::<SectorShape2KiB>(p, c1, &shape, 2 << 10)
        }
        VanillaSealProof::StackedDrg8MiBV1(p) => {
            check_proofs::<SectorShape8MiB>(p, c1, &shape, 8 << 20)
        }
        VanillaSealProof::StackedDrg512MiBV1(p) => {
            check_proofs::<SectorShape512MiB>(p, c1, &shape, 512 << 20)
        }
        VanillaSealProof::StackedDrg32GiBV1(p) => {
            check_proofs::<SectorShape32GiB>(p, c1, &shape, 32 << 30)
        }
        VanillaSealProof::StackedDrg64GiBV1(p) => {
            check_proofs::<SectorShape64GiB>(p, c1, &shape, 64 << 30)
        }
    }?;
    check_replica_id(c1, miner_id, sector_number, &config.porep_id)
}

/// The C1's replica id must be `generate_replica_id(prover id of miner_id,
/// sector_number, ticket, comm_d, porep id)`, as `verify_seal` derives it.
fn check_replica_id(
    c1: &SealCommitPhase1Output,
    miner_id: u64,
    sector_number: u64,
    porep_id: &[u8; 32],
) -> Result<(), RequestError> {
    let prover_id = prover_id_from_miner(miner_id);
    let expected = generate_replica_id::<DefaultTreeHasher, _>(
        &prover_id,
        sector_number,
        &c1.ticket,
        c1.comm_d,
        porep_id,
    );
    if expected != c1.replica_id {
        return Err(invalid(
            "sector_number, miner_id",
            format!(
                "the C1 output's replica_id was not derived from sector_number {sector_number} \
                 of miner_id {miner_id} (with the C1's ticket and comm_d): the C1 belongs to \
                 another sector or miner, and its proof could never verify"
            ),
        ));
    }
    Ok(())
}

/// Checks the proofs of a C1 whose variant is for `variant_size` byte
/// sectors (the variant, not the tree type: 2 KiB and 512 MiB sectors
/// share one tree shape).
fn check_proofs<Tree: 'static + MerkleTreeTrait>(
    partitions: &[Vec<SealProof<Tree>>],
    c1: &SealCommitPhase1Output,
    shape: &Shape,
    variant_size: u64,
) -> Result<(), RequestError> {
    let field = "vanilla_proof";
    if variant_size != shape.sector_size {
        return Err(invalid(
            field,
            format!(
                "the C1 output holds proofs for {} byte sectors; {:?} has {} byte sectors",
                variant_size, c1.registered_proof, shape.sector_size
            ),
        ));
    }
    if partitions.len() != shape.partitions {
        return Err(invalid(
            field,
            format!(
                "the C1 output has {} partitions; {:?} has {}",
                partitions.len(),
                c1.registered_proof,
                shape.partitions
            ),
        ));
    }
    let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
        .map_err(|e| invalid(field, format!("comm_d: {e}")))?;
    let comm_r = <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_r)
        .map_err(|e| invalid(field, format!("comm_r: {e}")))?;
    for (k, proofs) in partitions.iter().enumerate() {
        if proofs.len() != shape.challenges {
            return Err(invalid(
                field,
                format!(
                    "partition {k} of the C1 output has {} challenge proofs; {:?} has {} per partition",
                    proofs.len(),
                    c1.registered_proof,
                    shape.challenges
                ),
            ));
        }
        for (j, p) in proofs.iter().enumerate() {
            check_challenge::<Tree>(p, shape, &comm_d, &comm_r)
                .map_err(|m| invalid(field, format!("partition {k}, challenge {j}: {m}")))?;
        }
    }
    Ok(())
}

/// One challenge proof's shape and roots (no Merkle path is hashed here:
/// the circuit checks those).
fn check_challenge<Tree: 'static + MerkleTreeTrait>(
    p: &SealProof<Tree>,
    shape: &Shape,
    comm_d: &DefaultPieceDomain,
    comm_r: &<Tree::Hasher as Hasher>::Domain,
) -> Result<(), String> {
    if p.labeling_proofs.len() != shape.layers {
        return Err(format!(
            "{} labeling proofs; the proof type has {} layers",
            p.labeling_proofs.len(),
            shape.layers
        ));
    }
    let columns = &p.replica_column_proofs;
    if columns.drg_parents.len() != BASE_DEGREE || columns.exp_parents.len() != EXP_DEGREE {
        return Err(format!(
            "{} DRG and {} expander parent columns; {BASE_DEGREE} and {EXP_DEGREE} are required",
            columns.drg_parents.len(),
            columns.exp_parents.len()
        ));
    }
    let column_ok = |c: &storage_proofs_porep::stacked::ColumnProof<_>| {
        canonical(&c.root())
            && (1..=shape.layers).all(|l| c.get_node_at_layer(l).is_ok_and(canonical))
    };
    let elements_ok = merkle_canonical(&p.comm_d_proofs)
        && merkle_canonical(&p.comm_r_last_proof)
        && column_ok(&columns.c_x)
        && columns.drg_parents.iter().all(column_ok)
        && columns.exp_parents.iter().all(column_ok);
    if !elements_ok {
        return Err("a Merkle proof or column holds a value that is not a field element".into());
    }
    if p.comm_d_proofs.root() != *comm_d {
        return Err("its comm_d proof does not open the C1's comm_d".into());
    }
    let comm_c = columns.c_x.root();
    let comm_r_last = p.comm_r_last_proof.root();
    if <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last) != *comm_r {
        return Err("the C1's comm_r is not H(comm_c, comm_r_last) of its proofs".into());
    }
    Ok(())
}
