//! Insecure local Groth16 parameters for the four 2 KiB circuits.
//!
//! Generated with a seeded RNG through storage-proofs' own parameter cache
//! (`CompoundProof::groth_params(Some(rng), ..)`), so the files have the
//! names and layout filecoin-proofs looks for. The toxic waste is known:
//! these parameters are for tests only.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{DefaultPieceHasher, SectorShape2KiB};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};
use tracing::{info, warn};

use cuzk_core::params::param_files;
use cuzk_core::ProofType;

use crate::Progress;

type Tree = SectorShape2KiB;

/// One circuit whose parameters the fixtures need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Circuit {
    pub name: &'static str,
    pub proof_type: ProofType,
    /// Rough generation time on 2 cores with filecoin-proofs' generator.
    pub estimate_secs: u64,
}

/// The circuits, cheapest first.
pub(crate) fn circuits() -> [Circuit; 4] {
    [
        Circuit {
            name: "window-post",
            proof_type: ProofType::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
            estimate_secs: 10,
        },
        Circuit {
            name: "winning-post",
            proof_type: ProofType::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1),
            estimate_secs: 45,
        },
        Circuit {
            name: "snap",
            proof_type: ProofType::Update(RegisteredUpdateProof::StackedDrg2KiBV1),
            estimate_secs: 600,
        },
        Circuit {
            name: "porep",
            proof_type: ProofType::Seal(RegisteredSealProof::StackedDrg2KiBV1_1),
            estimate_secs: 1020,
        },
    ]
}

/// Makes sure `.params` and `.vk` exist for every circuit, generating the
/// missing ones into the process' parameter cache.
pub(crate) fn ensure_params(progress: &mut dyn FnMut(Progress)) -> Result<()> {
    for c in circuits() {
        let files = param_files(c.proof_type).map_err(anyhow::Error::msg)?;
        let step = format!("parameters {}", c.name);
        if files.missing().is_none() {
            progress(Progress::Reused { step });
            continue;
        }
        // The generator writes .params, then derives .vk from it: a .params
        // without .vk may be the remains of an interrupted run.
        if files.params.exists() && !files.vk.exists() {
            warn!(path = %files.params.display(), "removing parameters without a verifying key (interrupted generation?)");
            std::fs::remove_file(&files.params)
                .with_context(|| format!("removing {}", files.params.display()))?;
        }
        warn!(
            circuit = c.name,
            "generating INSECURE Groth16 parameters for local testing only (their toxic waste is known)"
        );
        progress(Progress::Started {
            step: step.clone(),
            estimate_secs: c.estimate_secs,
        });
        let t = Instant::now();
        generate(c.proof_type).with_context(|| format!("generating {} parameters", c.name))?;
        info!(circuit = c.name, secs = t.elapsed().as_secs(), "parameters written");
        progress(Progress::Done {
            step,
            secs: t.elapsed().as_secs_f64(),
        });
    }
    write_warning(&cuzk_core::params::parameter_cache_dir())?;
    Ok(())
}

fn write_warning(dir: &Path) -> Result<()> {
    std::fs::write(
        dir.join("INSECURE-TEST-PARAMETERS.txt"),
        "The Groth16 parameters in this directory were generated locally by \
         `cuzk-bench gen-fixtures` from a fixed seed.\nThey are INSECURE and for \
         testing only: never use them to prove anything that matters.\n",
    )?;
    Ok(())
}

fn rng_for(proof_type: ProofType) -> ChaCha20Rng {
    // Fixed seeds: regenerated parameters are byte-identical.
    let seed = match proof_type {
        ProofType::Seal(_) => 1,
        ProofType::Update(_) => 2,
        ProofType::Winning(_) => 3,
        ProofType::Window(_) => 4,
    };
    ChaCha20Rng::seed_from_u64(0xc0_2c00_0000 + seed)
}

fn generate(proof_type: ProofType) -> Result<()> {
    let mut rng = rng_for(proof_type);
    match proof_type {
        ProofType::Seal(p) => {
            let pp = public_params::<Tree>(&p.as_v1_config())?;
            type C<'a> = StackedCompound<Tree, DefaultPieceHasher>;
            <C<'_> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::groth_params(
                Some(&mut rng),
                &pp,
            )?;
            <C<'_> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::verifying_key(
                Some(&mut rng),
                &pp,
            )?;
        }
        ProofType::Winning(p) | ProofType::Window(p) => {
            let config = p.as_v1_config();
            let pp = if matches!(proof_type, ProofType::Winning(_)) {
                winning_post_public_params::<Tree>(&config)?
            } else {
                window_post_public_params::<Tree>(&config)?
            };
            type C = FallbackPoStCompound<Tree>;
            <C as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::groth_params(
                Some(&mut rng),
                &pp,
            )?;
            <C as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::verifying_key(
                Some(&mut rng),
                &pp,
            )?;
        }
        ProofType::Update(p) => {
            let pp = PublicParams::from_sector_size(u64::from(p.sector_size()));
            type C = EmptySectorUpdateCompound<Tree>;
            <C as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::groth_params(
                Some(&mut rng),
                &pp,
            )?;
            <C as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::verifying_key(
                Some(&mut rng),
                &pp,
            )?;
        }
    }
    Ok(())
}
