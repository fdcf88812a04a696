//! The Groth16 parameter (SRS) cache on disk.
//!
//! filecoin-proofs finds `.params` / `.vk` files through its process-wide
//! `FIL_PROOFS_PARAMETER_CACHE` setting, read once on first use. This module
//! fixes that directory for the process (through [`crate::process_env`])
//! and names the files each registered
//! proof needs, so a request whose parameters are missing is refused up front
//! instead of failing deep inside a prover.

use std::path::{Path, PathBuf};

use filecoin_proofs::with_shape;
use filecoin_proofs_api::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{
    parameter_cache_params_path, parameter_cache_verifying_key_path, CacheableParameters,
};
use storage_proofs_update::{constants::TreeRHasher, EmptySectorUpdateCompound, PublicParams};

use crate::kinds::ProofType;

pub use crate::process_env::PARAMETER_CACHE_ENV;

/// filecoin-proofs' default cache directory.
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

/// The parameter cache could not be set to the requested directory.
#[derive(Debug, thiserror::Error)]
#[error(
    "the Groth16 parameter cache of this process is already {current}; \
     it cannot be switched to {requested}"
)]
pub struct ParameterCacheConflict {
    pub current: String,
    pub requested: String,
}

/// Points filecoin-proofs at `dir` for the rest of the process.
///
/// Must run before any proving or parameter lookup; afterwards filecoin-proofs
/// has read the setting and a different directory is refused.
pub fn init_parameter_cache(dir: &Path) -> Result<(), ParameterCacheConflict> {
    let requested = dir.to_string_lossy().into_owned();
    crate::process_env::fix_parameter_cache(&requested);
    let current = parameter_cache_dir();
    if normalise(&current) != normalise(Path::new(&requested)) {
        return Err(ParameterCacheConflict {
            current: current.display().to_string(),
            requested,
        });
    }
    Ok(())
}

/// The directory filecoin-proofs reads parameters from in this process.
pub fn parameter_cache_dir() -> PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_dir()
}

fn normalise(p: &Path) -> PathBuf {
    p.components().collect()
}

/// The two files one circuit needs: Groth16 parameters and verifying key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    pub params: PathBuf,
    pub vk: PathBuf,
}

impl ParamFiles {
    /// The first missing file, if any.
    pub fn missing(&self) -> Option<&Path> {
        [&self.params, &self.vk]
            .into_iter()
            .find(|p| !p.is_file())
            .map(PathBuf::as_path)
    }
}

/// filecoin-proofs could not name a registered proof's parameter files.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParamFilesError(pub String);

/// The parameter files for a registered proof, in the current cache directory.
///
/// For SnapDeals the identifier comes from the update circuit itself:
/// `RegisteredUpdateProof::cache_params_path()` names the PoRep file.
pub fn param_files(proof: ProofType) -> Result<ParamFiles, ParamFilesError> {
    let err = |e: anyhow::Error| ParamFilesError(format!("{e:#}"));
    match proof {
        ProofType::Seal(p) => Ok(ParamFiles {
            params: p.cache_params_path().map_err(err)?,
            vk: p.cache_verifying_key_path().map_err(err)?,
        }),
        ProofType::Winning(p) | ProofType::Window(p) => Ok(ParamFiles {
            params: p.cache_params_path().map_err(err)?,
            vk: p.cache_verifying_key_path().map_err(err)?,
        }),
        ProofType::Update(p) => {
            let id = update_cache_identifier(u64::from(p.sector_size()));
            Ok(ParamFiles {
                params: parameter_cache_params_path(&id),
                vk: parameter_cache_verifying_key_path(&id),
            })
        }
    }
}

/// The parameter-cache identifier of the SnapDeals circuit for a sector size.
pub fn update_cache_identifier(sector_size: u64) -> String {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(sector_size: u64) -> String {
        let pp = PublicParams::from_sector_size(sector_size);
        <EmptySectorUpdateCompound<Tree> as CacheableParameters<_, _>>::cache_identifier(&pp)
    }
    with_shape!(sector_size, inner, sector_size)
}
