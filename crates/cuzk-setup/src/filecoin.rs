//! Parameters for the Filecoin circuits, as parameter-cache files.
//!
//! A [`FilecoinCircuit`] names one circuit: PoRep, WinningPoSt, WindowPoSt
//! or SnapDeals of a registered proof, any supported sector size. Its blank
//! circuit comes from `CompoundProof::blank_circuit` and its file names from
//! `CacheableParameters::cache_identifier`, both over the public parameters
//! filecoin-proofs itself derives (`public_params`,
//! `winning_post_public_params`, `window_post_public_params`,
//! `PublicParams::from_sector_size`), so the files are the ones
//! filecoin-proofs looks for: `v28-<identifier>.params` and `.vk`.
//!
//! The SnapDeals identifier is the update circuit's own
//! (`EmptySectorUpdateCompound`): `RegisteredUpdateProof::cache_params_path`
//! names the PoRep file instead.
//!
//! The RNG is `ChaCha20Rng::seed_from_u64(seed)`. The seeds cuzk-fixtures
//! has used with filecoin-proofs' generator (`0xc0_2c00_0000` plus 1 for
//! PoRep, 2 SnapDeals, 3 WinningPoSt, 4 WindowPoSt) give the same bytes here.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk_prover::srs::{write_params, write_vk, ParamsFile};
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, PoStType};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id, CacheableParameters};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};

use crate::{cpu_time, generate, SetupError, SetupStats};

/// A Filecoin circuit parameters can be generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilecoinCircuit {
    /// PoRep (C2) of a seal proof.
    Seal(RegisteredSealProof),
    /// WinningPoSt; the proof must be a winning one.
    Winning(RegisteredPoStProof),
    /// WindowPoSt; the proof must be a window one.
    Window(RegisteredPoStProof),
    /// SnapDeals (empty sector update).
    Update(RegisteredUpdateProof),
}

impl FilecoinCircuit {
    /// The four 2 KiB circuits of the local fixtures, cheapest first.
    pub fn all_2kib() -> [FilecoinCircuit; 4] {
        [
            FilecoinCircuit::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
            FilecoinCircuit::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1),
            FilecoinCircuit::Update(RegisteredUpdateProof::StackedDrg2KiBV1),
            FilecoinCircuit::Seal(RegisteredSealProof::StackedDrg2KiBV1_1),
        ]
    }

    /// The sector size in bytes.
    pub fn sector_size(self) -> u64 {
        match self {
            FilecoinCircuit::Seal(p) => u64::from(p.sector_size()),
            FilecoinCircuit::Winning(p) | FilecoinCircuit::Window(p) => u64::from(p.sector_size()),
            FilecoinCircuit::Update(p) => u64::from(p.sector_size()),
        }
    }

    /// The parameter-cache identifier (file names without `v28-` and the
    /// extension).
    pub fn identifier(self) -> Result<String, SetupError> {
        struct Id;
        impl Visitor for Id {
            type Output = String;
            fn visit<C: Circuit<Scalar>>(self, identifier: String, _: C) -> String {
                identifier
            }
        }
        visit(self, Id)
    }
}

impl fmt::Display for FilecoinCircuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilecoinCircuit::Seal(p) => write!(f, "PoRep {p:?}"),
            FilecoinCircuit::Winning(p) => write!(f, "WinningPoSt {p:?}"),
            FilecoinCircuit::Window(p) => write!(f, "WindowPoSt {p:?}"),
            FilecoinCircuit::Update(p) => write!(f, "SnapDeals {p:?}"),
        }
    }
}

/// The `.params` and `.vk` paths of `circuit` in `dir`, and its identifier.
pub fn param_file_names(
    circuit: FilecoinCircuit,
    dir: &Path,
) -> Result<(String, PathBuf, PathBuf), SetupError> {
    let id = circuit.identifier()?;
    let params = dir.join(parameter_id(&id));
    let vk = dir.join(verifying_key_id(&id));
    Ok((id, params, vk))
}

/// The files [`generate_filecoin`] made or found.
#[derive(Clone, Debug)]
pub struct GeneratedFiles {
    /// The parameter-cache identifier.
    pub identifier: String,
    pub params: PathBuf,
    pub vk: PathBuf,
    /// The generation's statistics; `None` when complete files were kept.
    pub stats: Option<SetupStats>,
}

/// Generates `circuit`'s parameters from `ChaCha20Rng::seed_from_u64(seed)`
/// and writes `<dir>/v28-<identifier>.params` and `.vk`, each through a
/// temporary file renamed into place (`.params` first).
///
/// Unless `force`, an existing pair is kept when complete: the `.params`
/// layout matches its length and the `.vk` equals its verifying key. (Other
/// seeds' files count as complete: the check reads no points.)
pub fn generate_filecoin(
    circuit: FilecoinCircuit,
    dir: &Path,
    seed: u64,
    force: bool,
) -> Result<GeneratedFiles, SetupError> {
    let (identifier, params, vk) = param_file_names(circuit, dir)?;
    if !force && is_complete(&params, &vk) {
        tracing::info!(%circuit, path = %params.display(), "keeping existing parameters");
        return Ok(GeneratedFiles {
            identifier,
            params,
            vk,
            stats: None,
        });
    }
    fs::create_dir_all(dir).map_err(|source| SetupError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    tracing::warn!(
        %circuit,
        "generating INSECURE Groth16 parameters for testing only (their toxic waste is known)"
    );
    struct Gen(u64);
    impl Visitor for Gen {
        type Output = Result<(cuzk_prover::srs::Srs, SetupStats), SetupError>;
        fn visit<C: Circuit<Scalar>>(self, _: String, circuit: C) -> Self::Output {
            generate(circuit, &mut ChaCha20Rng::seed_from_u64(self.0))
        }
    }
    let (srs, stats) = visit(circuit, Gen(seed))??;
    write_params(&srs, &params)?;
    write_vk(&srs.vk, &vk)?;
    tracing::info!(
        %circuit,
        path = %params.display(),
        secs = stats.total.as_secs_f64(),
        "parameters written"
    );
    Ok(GeneratedFiles {
        identifier,
        params,
        vk,
        stats: Some(stats),
    })
}

fn is_complete(params: &Path, vk: &Path) -> bool {
    let Ok(file) = ParamsFile::open(params) else {
        return false;
    };
    fs::read(vk).is_ok_and(|bytes| bytes == file.vk_bytes())
}

/// Wall-clock and process CPU time of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    pub wall: Duration,
    /// CPU time of the whole process (all threads) during the run.
    pub cpu: Duration,
}

/// Runs bellperson's `generate_random_parameters` on `circuit` with the RNG
/// [`generate_filecoin`] would use, and times it. Writes nothing.
pub fn time_bellperson(circuit: FilecoinCircuit, seed: u64) -> Result<Timing, SetupError> {
    bellperson_params(circuit, seed).map(|(_, timing)| timing)
}

/// bellperson's parameters for `circuit` with the RNG [`generate_filecoin`]
/// would use (the reference our output must equal), and their timing.
pub fn bellperson_params(
    circuit: FilecoinCircuit,
    seed: u64,
) -> Result<(bellperson::groth16::Parameters<Bls12>, Timing), SetupError> {
    struct Bell(u64);
    impl Visitor for Bell {
        type Output = Result<(bellperson::groth16::Parameters<Bls12>, Timing), SetupError>;
        fn visit<C: Circuit<Scalar>>(self, _: String, circuit: C) -> Self::Output {
            let mut rng = ChaCha20Rng::seed_from_u64(self.0);
            let (wall, cpu) = (Instant::now(), cpu_time());
            let params =
                bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng)
                    .map_err(SetupError::Bellperson)?;
            let timing = Timing {
                wall: wall.elapsed(),
                cpu: cpu_time().saturating_sub(cpu),
            };
            Ok((params, timing))
        }
    }
    visit(circuit, Bell(seed))?
}

/// Something done with a blank circuit of any type.
pub(crate) trait Visitor {
    type Output;
    fn visit<C: Circuit<Scalar>>(self, identifier: String, circuit: C) -> Self::Output;
}

/// Calls `$f::<Shape, $v>($args)` with the tree shape of `$size`.
macro_rules! with_tree {
    ($size:expr, $f:ident::<$v:ty>($($args:expr),*)) => {{
        use filecoin_proofs::constants::*;
        match $size {
            SECTOR_SIZE_2_KIB => $f::<SectorShape2KiB, $v>($($args),*),
            SECTOR_SIZE_4_KIB => $f::<SectorShape4KiB, $v>($($args),*),
            SECTOR_SIZE_16_KIB => $f::<SectorShape16KiB, $v>($($args),*),
            SECTOR_SIZE_32_KIB => $f::<SectorShape32KiB, $v>($($args),*),
            SECTOR_SIZE_8_MIB => $f::<SectorShape8MiB, $v>($($args),*),
            SECTOR_SIZE_16_MIB => $f::<SectorShape16MiB, $v>($($args),*),
            SECTOR_SIZE_512_MIB => $f::<SectorShape512MiB, $v>($($args),*),
            SECTOR_SIZE_1_GIB => $f::<SectorShape1GiB, $v>($($args),*),
            SECTOR_SIZE_32_GIB => $f::<SectorShape32GiB, $v>($($args),*),
            SECTOR_SIZE_64_GIB => $f::<SectorShape64GiB, $v>($($args),*),
            other => Err(anyhow::anyhow!("unsupported sector size {other}")),
        }
    }};
}

/// Builds `circuit`'s public parameters, identifier and blank circuit and
/// hands the last two to `v`.
fn visit<V: Visitor>(circuit: FilecoinCircuit, v: V) -> Result<V::Output, SetupError> {
    let size = circuit.sector_size();
    if let FilecoinCircuit::Winning(p) | FilecoinCircuit::Window(p) = circuit {
        let want = match circuit {
            FilecoinCircuit::Winning(_) => PoStType::Winning,
            _ => PoStType::Window,
        };
        if p.as_v1_config().typ != want {
            return Err(SetupError::WrongProofKind(format!(
                "{p:?} is not a {want:?} PoSt proof"
            )));
        }
    }
    let result = match circuit {
        FilecoinCircuit::Seal(p) => with_tree!(size, seal::<V>(p, v)),
        FilecoinCircuit::Winning(p) => with_tree!(size, post::<V>(p, PoStType::Winning, v)),
        FilecoinCircuit::Window(p) => with_tree!(size, post::<V>(p, PoStType::Window, v)),
        FilecoinCircuit::Update(_) => with_tree!(size, update::<V>(size, v)),
    };
    result.map_err(|e| SetupError::Filecoin {
        circuit: circuit.to_string(),
        message: format!("{e:#}"),
    })
}

fn seal<Tree: 'static + MerkleTreeTrait, V: Visitor>(
    proof: RegisteredSealProof,
    v: V,
) -> anyhow::Result<V::Output> {
    let pp = public_params::<Tree>(&proof.as_v1_config())?;
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    let id = <Compound<Tree> as CacheableParameters<
        StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >>::cache_identifier(&pp);
    let circuit = <Compound<Tree> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pp);
    Ok(v.visit(id, circuit))
}

fn post<Tree: 'static + MerkleTreeTrait, V: Visitor>(
    proof: RegisteredPoStProof,
    kind: PoStType,
    v: V,
) -> anyhow::Result<V::Output> {
    let config = proof.as_v1_config();
    let pp = match kind {
        PoStType::Winning => winning_post_public_params::<Tree>(&config)?,
        PoStType::Window => window_post_public_params::<Tree>(&config)?,
    };
    let id = <FallbackPoStCompound<Tree> as CacheableParameters<
        FallbackPoStCircuit<Tree>,
        _,
    >>::cache_identifier(&pp);
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&pp);
    Ok(v.visit(id, circuit))
}

fn update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>, V: Visitor>(
    sector_size: u64,
    v: V,
) -> anyhow::Result<V::Output> {
    let pp = PublicParams::from_sector_size(sector_size);
    let id = <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        _,
    >>::cache_identifier(&pp);
    let circuit = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&pp);
    Ok(v.visit(id, circuit))
}

/// The constraint, input and aux counts of `circuit`'s blank circuit, as
/// filecoin-proofs builds it for parameter generation (input constraints
/// included).
pub fn blank_shape(
    circuit: FilecoinCircuit,
) -> Result<cuzk_prover::check::CircuitShape, SetupError> {
    struct Shape;
    impl Visitor for Shape {
        type Output = Result<cuzk_prover::check::CircuitShape, SetupError>;
        fn visit<C: Circuit<Scalar>>(self, _: String, circuit: C) -> Self::Output {
            Ok(cuzk_prover::check::count(circuit)?)
        }
    }
    visit(circuit, Shape)?
}
