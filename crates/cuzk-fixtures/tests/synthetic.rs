//! Synthetic fixture sets at 2 KiB and 8 MiB: the vanilla proofs read back
//! from disk pass filecoin-proofs' own vanilla verifiers, and a corrupted one
//! does not.

use std::fs;

use filecoin_hashers::Domain;
use filecoin_proofs::parameters::{public_params, window_post_public_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, FallbackPoStSectorProof, MerkleTreeTrait,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::update::verify_partition_proofs;
use filecoin_proofs_api::{PartitionProofBytes, SectorId};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedDrg};
use storage_proofs_post::fallback::{self, PublicSector};

use cuzk_core::kinds::{post_proof_from_wire, prover_id_from_miner, update_proof_from_wire};
use cuzk_fixtures::{ensure_synthetic, Fixtures, SectorSize, SyntheticSpec};

fn make(size: SectorSize, dir: &std::path::Path) -> Fixtures {
    let spec = SyntheticSpec {
        dir: dir.to_path_buf(),
        params: dir.join("params"),
        with_params: false,
        ..SyntheticSpec::new(size)
    };
    ensure_synthetic(&spec, &mut |_| {}).expect("synthetic fixtures")
}

fn read(f: &Fixtures, name: &str) -> Vec<u8> {
    fs::read(f.dir.join(name)).expect("fixture file")
}

/// The C1 output's vanilla proofs against `StackedDrg::verify_all_partitions`.
fn porep_verifies(f: &Fixtures) -> bool {
    let c1: SealCommitPhase1Output =
        serde_json::from_slice(&read(f, &f.manifest.porep.c1_file)).expect("C1 JSON");
    let size = u64::from(c1.registered_proof.sector_size());
    with_shape!(size, porep_inner, &c1)
}

fn porep_inner<Tree: 'static + MerkleTreeTrait>(c1: &SealCommitPhase1Output) -> bool {
    let config = c1.registered_proof.as_v1_config();
    let pp = public_params::<Tree>(&config).expect("public params");
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = c1
        .vanilla_proofs
        .clone()
        .try_into()
        .expect("the C1's shape");
    let replica_fr: blstrs::Scalar = c1.replica_id.into();
    let inputs = stacked::PublicInputs {
        replica_id: replica_fr.into(),
        seed: Some(c1.seed),
        tau: Some(stacked::Tau {
            comm_d: DefaultPieceDomain::try_from_bytes(&c1.comm_d).expect("comm_d"),
            comm_r: as_safe_commitment(&c1.comm_r, "comm_r").expect("comm_r"),
        }),
        k: None,
    };
    StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&pp, &inputs, &vanilla)
        .expect("verification runs")
}

/// The deadline's vanilla proofs through filecoin-proofs' partitioning,
/// which runs the fallback PoSt verifier.
fn window_verifies(f: &Fixtures) -> bool {
    let post_type =
        post_proof_from_wire(f.manifest.window_deadlines[0].registered_proof).expect("a PoSt type");
    let size = u64::from(post_type.sector_size());
    with_shape!(size, window_inner, f)
}

fn window_inner<Tree: 'static + MerkleTreeTrait>(f: &Fixtures) -> bool {
    let d = &f.manifest.window_deadlines[0];
    let post_type = post_proof_from_wire(d.registered_proof).expect("a PoSt type");
    let config = post_type.as_v1_config();
    let params = window_post_public_params::<Tree>(&config).expect("params");
    let proofs: Vec<FallbackPoStSectorProof<Tree>> = d
        .partitions
        .iter()
        .flatten()
        .map(|name| bincode::deserialize(&read(f, name)).expect("a sector proof"))
        .collect();
    let comm_r = as_safe_commitment(&d.comm_r, "comm_r").expect("comm_r");
    let inputs = fallback::PublicInputs {
        randomness: as_safe_commitment(&d.randomness, "randomness").expect("randomness"),
        prover_id: as_safe_commitment(&prover_id_from_miner(f.manifest.miner_id), "prover")
            .expect("prover id"),
        sectors: d
            .sector_numbers
            .iter()
            .map(|&n| PublicSector {
                id: SectorId::from(n),
                comm_r,
            })
            .collect(),
        k: None,
    };
    partition_vanilla_proofs(&config, &params, &inputs, d.partitions.len(), &proofs).is_ok()
}

fn snap_verifies(f: &Fixtures, corrupt: bool) -> bool {
    let s = &f.manifest.snap;
    let mut proofs: Vec<PartitionProofBytes> = s
        .vanilla_files
        .iter()
        .map(|name| PartitionProofBytes(read(f, name)))
        .collect();
    if corrupt {
        // A byte inside the last challenge's TreeRNew path.
        let p = &mut proofs[0].0;
        let at = p.len() - 40;
        p[at] ^= 1;
    }
    let update_type = update_proof_from_wire(s.registered_proof).expect("an update type");
    verify_partition_proofs(
        update_type,
        &proofs,
        s.comm_r_old,
        s.comm_r_new,
        s.comm_d_new,
    )
    .unwrap_or(false)
}

#[test]
fn synthetic_vanilla_proofs_pass_filecoin_proofs_verifiers() {
    for size in [SectorSize::S2KiB, SectorSize::S8MiB] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let f = make(size, tmp.path());
        assert_eq!(f.manifest.sector_size, size.bytes());
        assert!(porep_verifies(&f), "{size}: PoRep");
        assert!(window_verifies(&f), "{size}: WindowPoSt deadline");
        assert!(snap_verifies(&f, false), "{size}: SnapDeals");
        assert!(
            !snap_verifies(&f, true),
            "{size}: a corrupted SnapDeals proof verified"
        );
        assert_eq!(
            f.manifest.window_post.sector_numbers.len(),
            size.window_proof().sector_count(),
            "{size}: the WindowPoSt fixture is one full partition"
        );
    }
}

#[test]
fn a_set_is_reused_and_rebuilt_identically() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let first = make(SectorSize::S2KiB, tmp.path());
    let c1 = read(&first, &first.manifest.porep.c1_file);
    // Reused as is.
    let again = make(SectorSize::S2KiB, tmp.path());
    assert_eq!(again.manifest.porep.comm_r, first.manifest.porep.comm_r);
    // Rebuilt from the same seed: the same bytes.
    fs::remove_file(tmp.path().join("manifest.json")).expect("remove manifest");
    let rebuilt = make(SectorSize::S2KiB, tmp.path());
    assert_eq!(read(&rebuilt, &rebuilt.manifest.porep.c1_file), c1);
    assert_eq!(
        rebuilt.manifest.snap.comm_r_new,
        first.manifest.snap.comm_r_new
    );
}
