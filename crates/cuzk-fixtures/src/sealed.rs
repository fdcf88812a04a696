//! The sealed 2 KiB fixture set: two real sectors sealed with
//! filecoin-proofs-api (PC1, PC2, C1), their PoSt vanilla proofs and a
//! SnapDeals update of the second (a committed-capacity sector).

use std::fs;
use std::path::Path;

use anyhow::Result;
use filecoin_proofs_api::{
    RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tracing::info;

use crate::manifest::{
    DeadlineFixture, Manifest, PoRepFixture, PoStFixture, SnapFixture, MANIFEST_VERSION,
};
use crate::sector;
use crate::synthetic::save_all;
use crate::write;
use cuzk_core::kinds::{
    post_proof_to_wire, prover_id_from_miner, seal_proof_to_wire, update_proof_to_wire,
};

const SEAL_PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const WINNING_PROOF: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
const WINDOW_PROOF: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
/// The older WindowPoSt version; same circuit and parameters as V1_2.
const WINDOW_PROOF_V1: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1;
const UPDATE_PROOF: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;

/// Seals the sectors and writes every input and the manifest into `dir`.
pub(crate) fn make_inputs(dir: &Path) -> Result<Manifest> {
    let mut rng = ChaCha20Rng::seed_from_u64(0x2c1f_0001);
    let miner_id = 1000;
    let prover_id = prover_id_from_miner(miner_id);
    let work = dir.join("work");

    info!("sealing a 2 KiB sector with random data");
    let data = sector::random_data(&mut rng);
    let sealed = sector::seal_sector(
        SEAL_PROOF,
        &work.join("sector-1"),
        prover_id,
        SectorId::from(1),
        &data,
        &mut rng,
    )?;
    let seed = sector::random_fr_bytes(&mut rng);
    let c1 = sector::commit_phase1(SEAL_PROOF, &sealed, prover_id, seed)?;
    write(dir, "porep-c1.json", &serde_json::to_vec(&c1)?)?;

    let winning_randomness = sector::random_fr_bytes(&mut rng);
    let winning = sector::post_vanilla(WINNING_PROOF, &sealed, prover_id, &winning_randomness)?;
    let window_randomness = sector::random_fr_bytes(&mut rng);
    let window = sector::post_vanilla(WINDOW_PROOF, &sealed, prover_id, &window_randomness)?;

    let deadline_sectors: Vec<SectorId> = (1..=3).map(SectorId::from).collect();
    let mut deadlines = Vec::new();
    for post_type in [WINDOW_PROOF, WINDOW_PROOF_V1] {
        let randomness = sector::random_fr_bytes(&mut rng);
        let partitions = sector::deadline_vanilla(
            post_type,
            &sealed,
            &deadline_sectors,
            prover_id,
            &randomness,
        )?;
        deadlines.push((post_type, randomness, partitions));
    }

    info!("sealing a 2 KiB CC sector and updating it with SnapDeals");
    let cc = sector::seal_sector(
        SEAL_PROOF,
        &work.join("sector-2"),
        prover_id,
        SectorId::from(2),
        &sector::zero_data(),
        &mut rng,
    )?;
    let new_data = sector::random_data(&mut rng);
    let snap = sector::snap_update(
        UPDATE_PROOF,
        SEAL_PROOF,
        &cc,
        &work.join("sector-2-update"),
        &new_data,
    )?;

    let save_all = |prefix: &str, blobs: &[Vec<u8>]| save_all(dir, prefix, blobs);
    let manifest = Manifest {
        version: MANIFEST_VERSION,
        sector_size: sector::SECTOR_SIZE,
        miner_id,
        synthetic: None,
        generator: 0,
        porep: PoRepFixture {
            registered_proof: seal_proof_to_wire(SEAL_PROOF),
            sector_number: 1,
            c1_file: "porep-c1.json".into(),
            comm_r: sealed.comm_r,
            comm_d: sealed.comm_d,
            ticket: sealed.ticket,
            seed,
        },
        winning_post: PoStFixture {
            registered_proof: post_proof_to_wire(WINNING_PROOF),
            sector_numbers: vec![1],
            comm_r: sealed.comm_r,
            comm_rs: Vec::new(),
            randomness: winning_randomness,
            partition_index: 0,
            vanilla_files: save_all("winning-vanilla", &winning)?,
        },
        window_post: PoStFixture {
            registered_proof: post_proof_to_wire(WINDOW_PROOF),
            sector_numbers: vec![1],
            comm_r: sealed.comm_r,
            comm_rs: Vec::new(),
            randomness: window_randomness,
            partition_index: 0,
            vanilla_files: save_all("window-vanilla", &window)?,
        },
        window_deadlines: deadlines
            .iter()
            .map(|(post_type, randomness, partitions)| {
                let wire = post_proof_to_wire(*post_type);
                Ok(DeadlineFixture {
                    registered_proof: wire,
                    comm_r: sealed.comm_r,
                    comm_rs: Vec::new(),
                    randomness: *randomness,
                    sector_numbers: deadline_sectors.iter().map(|s| u64::from(*s)).collect(),
                    partitions: partitions
                        .iter()
                        .enumerate()
                        .map(|(k, p)| save_all(&format!("deadline-{wire}-p{k}-vanilla"), p))
                        .collect::<Result<_>>()?,
                })
            })
            .collect::<Result<_>>()?,
        snap: SnapFixture {
            registered_proof: update_proof_to_wire(UPDATE_PROOF),
            sector_number: 2,
            comm_r_old: cc.comm_r,
            comm_r_new: snap.comm_r_new,
            comm_d_new: snap.comm_d_new,
            vanilla_files: save_all("snap-vanilla", &snap.vanilla)?,
        },
    };
    write(dir, "manifest.json", &serde_json::to_vec_pretty(&manifest)?)?;
    // The sealed sectors are only needed to make the vanilla proofs.
    fs::remove_dir_all(&work).ok();
    Ok(manifest)
}
