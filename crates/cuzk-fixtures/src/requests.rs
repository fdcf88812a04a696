//! Requests and independent verification from a fixture set: a complete,
//! valid `RawRequest` for one proof of each kind (or any WindowPoSt
//! partition of a deadline), and filecoin-proofs-api's verifiers run against
//! the public inputs the manifest recorded.

use std::collections::BTreeMap;
use std::fs;

use anyhow::{Context, Result};
use filecoin_proofs_api::{post, seal, update, PublicReplicaInfo, RegisteredPoStProof, SectorId};

use crate::manifest::PoStFixture;
use crate::Fixtures;
use cuzk_core::kinds::{self, prover_id_from_miner};
use cuzk_core::request::kind_to_wire;
use cuzk_core::{ProofKind, RawRequest};

impl Fixtures {
    fn read_all(&self, files: &[String]) -> Result<Vec<Vec<u8>>> {
        files
            .iter()
            .map(|f| fs::read(self.dir.join(f)).with_context(|| format!("reading fixture {f}")))
            .collect()
    }

    /// A complete, valid request for one proof of `kind` (no request_id,
    /// default priority).
    pub fn request(&self, kind: ProofKind) -> Result<RawRequest> {
        let m = &self.manifest;
        let base = RawRequest {
            proof_kind: kind_to_wire(kind),
            sector_size: m.sector_size,
            miner_id: m.miner_id,
            ..Default::default()
        };
        Ok(match kind {
            ProofKind::PoRep => RawRequest {
                registered_proof: m.porep.registered_proof,
                sector_number: m.porep.sector_number,
                vanilla_proof: fs::read(self.dir.join(&m.porep.c1_file))?,
                ..base
            },
            ProofKind::WinningPost | ProofKind::WindowPost => {
                let p = self.post(kind);
                RawRequest {
                    registered_proof: p.registered_proof,
                    sector_number: p.sector_numbers.first().copied().unwrap_or(0),
                    randomness: p.randomness.to_vec(),
                    partition_index: p.partition_index,
                    vanilla_proofs: self.read_all(&p.vanilla_files)?,
                    ..base
                }
            }
            ProofKind::SnapDeals => RawRequest {
                registered_proof: m.snap.registered_proof,
                sector_number: m.snap.sector_number,
                comm_r_old: m.snap.comm_r_old.to_vec(),
                comm_r_new: m.snap.comm_r_new.to_vec(),
                comm_d_new: m.snap.comm_d_new.to_vec(),
                vanilla_proofs: self.read_all(&m.snap.vanilla_files)?,
                ..base
            },
        })
    }

    /// A WindowPoSt request for partition `k` of deadline fixture `d`.
    pub fn deadline_request(&self, d: usize, k: usize) -> Result<RawRequest> {
        let dl = self.manifest.window_deadlines.get(d).with_context(|| {
            format!(
                "there are {} deadline fixtures",
                self.manifest.window_deadlines.len()
            )
        })?;
        let files = dl
            .partitions
            .get(k)
            .with_context(|| format!("the deadline has {} partitions", dl.partitions.len()))?;
        Ok(RawRequest {
            proof_kind: kind_to_wire(ProofKind::WindowPost),
            sector_size: self.manifest.sector_size,
            miner_id: self.manifest.miner_id,
            registered_proof: dl.registered_proof,
            randomness: dl.randomness.to_vec(),
            partition_index: k as u32,
            vanilla_proofs: self.read_all(files)?,
            ..Default::default()
        })
    }

    /// Verifies the partition proofs of deadline fixture `d`, in partition
    /// order, with filecoin-proofs-api's `verify_window_post`.
    pub fn verify_deadline(&self, d: usize, partition_proofs: &[Vec<u8>]) -> Result<bool> {
        let dl = self
            .manifest
            .window_deadlines
            .get(d)
            .context("no such deadline fixture")?;
        let post_type = post_type(dl.registered_proof)?;
        let replicas = dl
            .sector_numbers
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let comm_r = dl.comm_r_of(i);
                (
                    SectorId::from(*n),
                    PublicReplicaInfo::new(post_type, comm_r),
                )
            })
            .collect();
        let proof: Vec<u8> = partition_proofs.concat();
        post::verify_window_post(
            &dl.randomness,
            &[(post_type, &proof)],
            &replicas,
            prover_id_from_miner(self.manifest.miner_id),
        )
    }

    fn post(&self, kind: ProofKind) -> &PoStFixture {
        if kind == ProofKind::WinningPost {
            &self.manifest.winning_post
        } else {
            &self.manifest.window_post
        }
    }

    /// Verifies a proof of `kind` with filecoin-proofs-api's verifier against
    /// the public inputs recorded when the inputs were made, independently
    /// of the daemon's own checks.
    pub fn verify(&self, kind: ProofKind, proof: &[u8]) -> Result<bool> {
        let m = &self.manifest;
        let prover_id = prover_id_from_miner(m.miner_id);
        match kind {
            ProofKind::PoRep => {
                let seal_type = kinds::seal_proof_from_wire(m.porep.registered_proof)
                    .context("bad PoRep registered proof in the manifest")?;
                seal::verify_seal(
                    seal_type,
                    m.porep.comm_r,
                    m.porep.comm_d,
                    prover_id,
                    SectorId::from(m.porep.sector_number),
                    m.porep.ticket,
                    m.porep.seed,
                    proof,
                )
            }
            ProofKind::WinningPost => {
                let p = &m.winning_post;
                let replicas = self.replicas(p)?;
                post::verify_winning_post(&p.randomness, proof, &replicas, prover_id)
            }
            ProofKind::WindowPost => {
                let p = &m.window_post;
                let post_type = post_type(p.registered_proof)?;
                let replicas = self.replicas(p)?;
                post::verify_window_post(&p.randomness, &[(post_type, proof)], &replicas, prover_id)
            }
            ProofKind::SnapDeals => {
                let update_type = kinds::update_proof_from_wire(m.snap.registered_proof)
                    .context("bad SnapDeals registered proof in the manifest")?;
                update::verify_empty_sector_update_proof(
                    update_type,
                    proof,
                    m.snap.comm_r_old,
                    m.snap.comm_r_new,
                    m.snap.comm_d_new,
                )
            }
        }
    }

    /// The public replica info of a PoSt fixture's sectors.
    fn replicas(&self, p: &PoStFixture) -> Result<BTreeMap<SectorId, PublicReplicaInfo>> {
        let post_type = post_type(p.registered_proof)?;
        Ok(p.sector_numbers
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let comm_r = p.comm_r_of(i);
                (
                    SectorId::from(*n),
                    PublicReplicaInfo::new(post_type, comm_r),
                )
            })
            .collect())
    }
}

fn post_type(wire: u64) -> Result<RegisteredPoStProof> {
    kinds::post_proof_from_wire(wire).context("bad PoSt registered proof in the manifest")
}
