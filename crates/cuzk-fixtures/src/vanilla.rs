//! A fixture set's vanilla proofs, read back from disk and checked with
//! filecoin-proofs' own vanilla verifiers: PoRep with
//! `StackedDrg::verify_all_partitions`, WindowPoSt and WinningPoSt through
//! `partition_vanilla_proofs` (the fallback PoSt verifier), SnapDeals with
//! `verify_partition_proofs`.

use std::fs;

use anyhow::{Context, Result};
use filecoin_hashers::Domain;
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, FallbackPoStSectorProof, MerkleTreeTrait, PoStType,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::update::verify_partition_proofs;
use filecoin_proofs_api::{PartitionProofBytes, RegisteredPoStProof, SectorId};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedDrg};
use storage_proofs_post::fallback::{self, PublicSector};

use crate::manifest::PoStFixture;
use crate::Fixtures;
use cuzk_core::kinds::{post_proof_from_wire, prover_id_from_miner, update_proof_from_wire};
use cuzk_core::ProofKind;

impl Fixtures {
    /// Whether the set's vanilla proofs of `kind` pass filecoin-proofs' own
    /// vanilla verifier (`Err`: they could not be read or decoded).
    pub fn verify_vanilla(&self, kind: ProofKind) -> Result<bool> {
        let m = &self.manifest;
        match kind {
            ProofKind::PoRep => {
                let c1: SealCommitPhase1Output =
                    serde_json::from_slice(&self.read(&m.porep.c1_file)?)
                        .context("parsing the C1 output")?;
                let size = u64::from(c1.registered_proof.sector_size());
                with_shape!(size, porep, &c1)
            }
            ProofKind::WindowPost => self.post_vanilla(&m.window_post),
            ProofKind::WinningPost => self.post_vanilla(&m.winning_post),
            ProofKind::SnapDeals => {
                let s = &m.snap;
                let proofs = s
                    .vanilla_files
                    .iter()
                    .map(|f| self.read(f).map(PartitionProofBytes))
                    .collect::<Result<Vec<_>>>()?;
                let update_type = update_proof_from_wire(s.registered_proof)
                    .context("bad SnapDeals registered proof in the manifest")?;
                verify_partition_proofs(
                    update_type,
                    &proofs,
                    s.comm_r_old,
                    s.comm_r_new,
                    s.comm_d_new,
                )
            }
        }
    }

    fn read(&self, name: &str) -> Result<Vec<u8>> {
        fs::read(self.dir.join(name)).with_context(|| format!("reading fixture {name}"))
    }

    fn post_vanilla(&self, p: &PoStFixture) -> Result<bool> {
        let post_type = post_proof_from_wire(p.registered_proof)
            .context("bad PoSt registered proof in the manifest")?;
        let size = u64::from(post_type.sector_size());
        with_shape!(size, post, self, post_type, p)
    }
}

fn porep<Tree: 'static + MerkleTreeTrait>(c1: &SealCommitPhase1Output) -> Result<bool> {
    let config = c1.registered_proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> =
        c1.vanilla_proofs.clone().try_into()?;
    let replica_id: blstrs::Scalar = c1.replica_id.into();
    let inputs = stacked::PublicInputs {
        replica_id: replica_id.into(),
        seed: Some(c1.seed),
        tau: Some(stacked::Tau {
            comm_d: DefaultPieceDomain::try_from_bytes(&c1.comm_d)?,
            comm_r: as_safe_commitment(&c1.comm_r, "comm_r")?,
        }),
        k: None,
    };
    StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&pp, &inputs, &vanilla)
}

fn post<Tree: 'static + MerkleTreeTrait>(
    f: &Fixtures,
    post_type: RegisteredPoStProof,
    p: &PoStFixture,
) -> Result<bool> {
    let config = post_type.as_v1_config();
    let params = match config.typ {
        PoStType::Winning => winning_post_public_params::<Tree>(&config)?,
        PoStType::Window => window_post_public_params::<Tree>(&config)?,
    };
    let proofs = p
        .vanilla_files
        .iter()
        .map(|name| {
            Ok(bincode::deserialize::<FallbackPoStSectorProof<Tree>>(
                &f.read(name)?,
            )?)
        })
        .collect::<Result<Vec<_>>>()?;
    let sectors = p
        .sector_numbers
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let comm_r = p.comm_r_of(i);
            Ok(PublicSector {
                id: SectorId::from(n),
                comm_r: as_safe_commitment(&comm_r, "comm_r")?,
            })
        })
        .collect::<Result<_>>()?;
    let inputs = fallback::PublicInputs {
        randomness: as_safe_commitment(&p.randomness, "randomness")?,
        prover_id: as_safe_commitment(&prover_id_from_miner(f.manifest.miner_id), "prover_id")?,
        sectors,
        k: None,
    };
    let partitions = p.sector_numbers.len().div_ceil(params.sector_count).max(1);
    // `partition_vanilla_proofs` errors unless every partition verifies.
    Ok(partition_vanilla_proofs(&config, &params, &inputs, partitions, &proofs).is_ok())
}
