//! Sealing 2 KiB sectors and producing the vanilla proofs the daemon proves.
//!
//! Two sectors are sealed: one with random data (its C1 output feeds PoRep,
//! its replica the PoSt vanilla proofs) and one committed-capacity sector
//! that a SnapDeals update fills with new data.

use std::fs::{self, File, OpenOptions};
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    post, Commitment, PieceInfo, PrivateReplicaInfo, ProverId, RegisteredPoStProof,
    RegisteredSealProof, RegisteredUpdateProof, SectorId, UnpaddedBytesAmount,
};
use rand::{Rng, RngCore};

pub(crate) const SECTOR_SIZE: u64 = 2048;
/// Unpadded capacity of a 2 KiB sector (fr32: 254 of every 256 bits).
const UNPADDED: u64 = SECTOR_SIZE / 128 * 127;

/// A sealed sector on disk.
pub(crate) struct Sealed {
    pub sector_id: SectorId,
    pub replica: PathBuf,
    pub cache: PathBuf,
    pub comm_r: Commitment,
    pub comm_d: Commitment,
    pub ticket: [u8; 32],
    pub piece: PieceInfo,
}

/// 32 random bytes that are a canonical field element (top two bits clear),
/// as the chain's randomness is before it reaches the proofs.
pub(crate) fn random_fr_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b: [u8; 32] = rng.gen();
    b[31] &= 0x3f;
    b
}

fn write_piece(proof: RegisteredSealProof, data: &[u8], staged: &Path) -> Result<PieceInfo> {
    let mut target = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(staged)
        .with_context(|| format!("creating {}", staged.display()))?;
    let (piece, _) = add_piece(
        proof,
        Cursor::new(data),
        &mut target,
        UnpaddedBytesAmount(data.len() as u64),
        &[],
    )?;
    Ok(piece)
}

/// Seals one sector holding `data` (zeros make a CC sector).
pub(crate) fn seal_sector(
    proof: RegisteredSealProof,
    dir: &Path,
    prover_id: ProverId,
    sector_id: SectorId,
    data: &[u8],
    rng: &mut impl RngCore,
) -> Result<Sealed> {
    ensure!(
        data.len() as u64 == UNPADDED,
        "sector data must be {UNPADDED} bytes"
    );
    fs::create_dir_all(dir)?;
    let staged = dir.join("staged");
    let replica = dir.join("sealed");
    let cache = dir.join("cache");
    if cache.exists() {
        fs::remove_dir_all(&cache)?;
    }
    fs::create_dir_all(&cache)?;
    File::create(&replica)?;
    let piece = write_piece(proof, data, &staged)?;
    let ticket = random_fr_bytes(rng);
    let pc1 = seal_pre_commit_phase1(
        proof,
        &cache,
        &staged,
        &replica,
        prover_id,
        sector_id,
        ticket,
        std::slice::from_ref(&piece),
    )
    .context("PC1")?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &replica).context("PC2")?;
    Ok(Sealed {
        sector_id,
        replica,
        cache,
        comm_r: pc2.comm_r,
        comm_d: pc2.comm_d,
        ticket,
        piece,
    })
}

/// Commit phase 1: the vanilla PoRep proof (the C1 output) for `seed`.
pub(crate) fn commit_phase1(
    proof: RegisteredSealProof,
    sealed: &Sealed,
    prover_id: ProverId,
    seed: [u8; 32],
) -> Result<SealCommitPhase1Output> {
    let pre_commit = filecoin_proofs_api::seal::SealPreCommitPhase2Output {
        registered_proof: proof,
        comm_r: sealed.comm_r,
        comm_d: sealed.comm_d,
    };
    seal_commit_phase1(
        sealed.cache.clone(),
        sealed.replica.clone(),
        prover_id,
        sealed.sector_id,
        sealed.ticket,
        seed,
        pre_commit,
        std::slice::from_ref(&sealed.piece),
    )
    .context("C1")
}

/// The vanilla proofs of one PoSt over one sector, as a PoSt worker makes them.
pub(crate) fn post_vanilla(
    post_type: RegisteredPoStProof,
    sealed: &Sealed,
    prover_id: ProverId,
    randomness: &[u8; 32],
) -> Result<Vec<Vec<u8>>> {
    let sectors = [sealed.sector_id];
    if post_type.typ() == filecoin_proofs_api::PoStType::Winning {
        let picked =
            post::generate_winning_post_sector_challenge(post_type, randomness, 1, prover_id)?;
        ensure!(
            picked == vec![0],
            "winning PoSt over one sector must pick it, got {picked:?}"
        );
    }
    let challenges =
        post::generate_fallback_sector_challenges(post_type, randomness, &sectors, prover_id)?;
    let replica = PrivateReplicaInfo::new(
        post_type,
        sealed.comm_r,
        sealed.cache.clone(),
        sealed.replica.clone(),
    );
    let sector_challenges = challenges
        .get(&sealed.sector_id)
        .context("no challenges for the sector")?;
    Ok(vec![post::generate_single_vanilla_proof(
        post_type,
        sealed.sector_id,
        &replica,
        sector_challenges,
    )?])
}

/// WindowPoSt vanilla proofs for a whole deadline of `sector_ids`, all backed
/// by one sealed replica (PoSt checks inclusion in the replica's trees, not
/// the replica id, so one replica can stand for several sectors). Returns
/// one list of vanilla proofs per partition.
pub(crate) fn deadline_vanilla(
    post_type: RegisteredPoStProof,
    sealed: &Sealed,
    sector_ids: &[SectorId],
    prover_id: ProverId,
    randomness: &[u8; 32],
) -> Result<Vec<Vec<Vec<u8>>>> {
    let challenges =
        post::generate_fallback_sector_challenges(post_type, randomness, sector_ids, prover_id)?;
    let replica = PrivateReplicaInfo::new(
        post_type,
        sealed.comm_r,
        sealed.cache.clone(),
        sealed.replica.clone(),
    );
    sector_ids
        .chunks(post_type.sector_count())
        .map(|chunk| {
            chunk
                .iter()
                .map(|id| {
                    let c = challenges.get(id).context("no challenges for a sector")?;
                    post::generate_single_vanilla_proof(post_type, *id, &replica, c)
                })
                .collect()
        })
        .collect()
}

/// The SnapDeals update of a CC sector with `data`: new commitments and the
/// per-partition vanilla proofs.
pub(crate) struct SnapUpdate {
    pub comm_r_new: Commitment,
    pub comm_d_new: Commitment,
    pub vanilla: Vec<Vec<u8>>,
}

pub(crate) fn snap_update(
    update_type: RegisteredUpdateProof,
    seal_type: RegisteredSealProof,
    sector_key: &Sealed,
    dir: &Path,
    data: &[u8],
) -> Result<SnapUpdate> {
    fs::create_dir_all(dir)?;
    let staged = dir.join("staged");
    let replica = dir.join("updated");
    let cache = dir.join("cache");
    if cache.exists() {
        fs::remove_dir_all(&cache)?;
    }
    fs::create_dir_all(&cache)?;
    File::create(&replica)?.set_len(SECTOR_SIZE)?;
    let piece = write_piece(seal_type, data, &staged)?;
    let encoded = empty_sector_update_encode_into(
        update_type,
        &replica,
        &cache,
        &sector_key.replica,
        &sector_key.cache,
        &staged,
        std::slice::from_ref(&piece),
    )
    .context("encoding the update")?;
    let proofs = generate_partition_proofs(
        update_type,
        sector_key.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector_key.replica,
        &sector_key.cache,
        &replica,
        &cache,
    )
    .context("update vanilla proofs")?;
    Ok(SnapUpdate {
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla: proofs.into_iter().map(|p| p.0).collect(),
    })
}

/// `UNPADDED` random bytes.
pub(crate) fn random_data(rng: &mut impl RngCore) -> Vec<u8> {
    let mut data = vec![0u8; UNPADDED as usize];
    rng.fill_bytes(&mut data);
    data
}

/// `UNPADDED` zero bytes (committed capacity).
pub(crate) fn zero_data() -> Vec<u8> {
    vec![0u8; UNPADDED as usize]
}
