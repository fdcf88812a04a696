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
use cuzk_prover::srs::{ParamsFile, Srs};
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

use crate::counting::Shape;
use crate::progress::{no_progress, Progress};
use crate::stream::{generate_streaming_from, Blank};
use crate::writer::remove_stale_temporaries;
use crate::Accelerator;
use crate::{cpu_time, generate, SetupError, SetupStats, ToxicWaste};
use cuzk_r1cs::CompiledCs;

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

    /// The four circuits of a registered sector size (2 KiB, 8 MiB,
    /// 512 MiB, 32 GiB or 64 GiB, in bytes), cheapest first, with the proof
    /// versions [`FilecoinCircuit::all_2kib`] uses: WindowPoSt V1_2,
    /// WinningPoSt V1, SnapDeals V1, PoRep V1_1.
    pub fn all_for_sector_size(bytes: u64) -> Result<[FilecoinCircuit; 4], SetupError> {
        use RegisteredPoStProof as PoSt;
        use RegisteredSealProof as Seal;
        use RegisteredUpdateProof as Update;
        const KIB: u64 = 1 << 10;
        const MIB: u64 = 1 << 20;
        const GIB: u64 = 1 << 30;
        let (window, winning, update, seal) = match bytes {
            b if b == 2 * KIB => (
                PoSt::StackedDrgWindow2KiBV1_2,
                PoSt::StackedDrgWinning2KiBV1,
                Update::StackedDrg2KiBV1,
                Seal::StackedDrg2KiBV1_1,
            ),
            b if b == 8 * MIB => (
                PoSt::StackedDrgWindow8MiBV1_2,
                PoSt::StackedDrgWinning8MiBV1,
                Update::StackedDrg8MiBV1,
                Seal::StackedDrg8MiBV1_1,
            ),
            b if b == 512 * MIB => (
                PoSt::StackedDrgWindow512MiBV1_2,
                PoSt::StackedDrgWinning512MiBV1,
                Update::StackedDrg512MiBV1,
                Seal::StackedDrg512MiBV1_1,
            ),
            b if b == 32 * GIB => (
                PoSt::StackedDrgWindow32GiBV1_2,
                PoSt::StackedDrgWinning32GiBV1,
                Update::StackedDrg32GiBV1,
                Seal::StackedDrg32GiBV1_1,
            ),
            b if b == 64 * GIB => (
                PoSt::StackedDrgWindow64GiBV1_2,
                PoSt::StackedDrgWinning64GiBV1,
                Update::StackedDrg64GiBV1,
                Seal::StackedDrg64GiBV1_1,
            ),
            other => return Err(SetupError::UnsupportedSectorSize(other)),
        };
        Ok([
            FilecoinCircuit::Window(window),
            FilecoinCircuit::Winning(winning),
            FilecoinCircuit::Update(update),
            FilecoinCircuit::Seal(seal),
        ])
    }

    /// The blank circuit's shape, from the streaming generator's cheap
    /// counting pass (seconds at 2 KiB, about a minute at 32 GiB on 2
    /// cores): enough to tell the domain, the memory and the file size
    /// before generating.
    pub fn shape(self) -> Result<Shape, SetupError> {
        struct Count;
        impl Visitor for Count {
            type Output = Result<Shape, SetupError>;
            fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, _: String, blank: F) -> Self::Output {
                Shape::of(blank())
            }
        }
        visit(self, Count)?
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
            fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, identifier: String, _: F) -> String {
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
/// and writes `<dir>/v28-<identifier>.params` and `.vk`: see
/// [`generate_filecoin_with`], here without progress reports.
pub fn generate_filecoin(
    circuit: FilecoinCircuit,
    dir: &Path,
    seed: u64,
    force: bool,
) -> Result<GeneratedFiles, SetupError> {
    generate_filecoin_with(circuit, dir, seed, force, &no_progress)
}

/// Generates `circuit`'s parameters from `ChaCha20Rng::seed_from_u64(seed)`
/// with the streaming generator ([`generate_streaming`], any sector size in
/// bounded memory) and writes `<dir>/v28-<identifier>.params` and `.vk`,
/// `.params` first through a temporary file renamed into place, calling
/// `progress` as it goes. The bytes are bellperson's for the same RNG.
///
/// Unless `force`, an existing pair is kept when complete: the `.params`
/// layout matches its length and the `.vk` equals its verifying key. (Other
/// seeds' files count as complete: the check reads no points.) So a run over
/// several circuits that was interrupted resumes at the first incomplete
/// one; temporaries a dead process left for this circuit are removed.
pub fn generate_filecoin_with(
    circuit: FilecoinCircuit,
    dir: &Path,
    seed: u64,
    force: bool,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<GeneratedFiles, SetupError> {
    generate_filecoin_from(circuit, None, dir, seed, force, progress, None)
}

/// [`generate_filecoin_with`], the matrices read from `recorded` when
/// given: a recording of `circuit` (the constraint system the daemon
/// records for its shape), which spares the blank circuit's two synthesis
/// passes ([`generate_streaming_from`]). Nothing here can tell a
/// recording of another circuit: the caller picks it by its shape's key.
/// The fixed-base products are computed by `accel` when given (a GPU).
pub fn generate_filecoin_from(
    circuit: FilecoinCircuit,
    recorded: Option<&CompiledCs>,
    dir: &Path,
    seed: u64,
    force: bool,
    progress: &(dyn Fn(&Progress) + Sync),
    accel: Option<&dyn Accelerator>,
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
    remove_stale_temporaries(&params);
    remove_stale_temporaries(&vk);
    tracing::warn!(
        %circuit,
        "generating INSECURE Groth16 parameters for testing only (their toxic waste is known)"
    );
    struct Gen<'a> {
        seed: u64,
        recorded: Option<&'a CompiledCs>,
        params: &'a Path,
        vk: &'a Path,
        progress: &'a (dyn Fn(&Progress) + Sync),
        accel: Option<&'a dyn Accelerator>,
    }
    impl Visitor for Gen<'_> {
        type Output = Result<SetupStats, SetupError>;
        fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, _: String, blank: F) -> Self::Output {
            let tw = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(self.seed));
            let (params, vk, progress, accel) = (self.params, self.vk, self.progress, self.accel);
            match self.recorded {
                Some(cs) => generate_streaming_from(cs, &tw, params, vk, progress, accel),
                None => generate_streaming_from(&Blank(blank), &tw, params, vk, progress, accel),
            }
        }
    }
    let gen = Gen {
        seed,
        recorded,
        params: &params,
        vk: &vk,
        progress,
        accel,
    };
    let stats = visit(circuit, gen)??;
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

/// `circuit`'s parameters made in memory by [`crate::generate`] from the RNG
/// [`generate_filecoin`] uses (the reference the streamed files are tested
/// against; needs memory for every matrix entry and point).
pub fn generate_in_memory(
    circuit: FilecoinCircuit,
    seed: u64,
) -> Result<(Srs, SetupStats), SetupError> {
    struct Gen(u64);
    impl Visitor for Gen {
        type Output = Result<(Srs, SetupStats), SetupError>;
        fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, _: String, blank: F) -> Self::Output {
            generate(blank(), &mut ChaCha20Rng::seed_from_u64(self.0))
        }
    }
    visit(circuit, Gen(seed))?
}

/// Whether `circuit`'s files in `dir` are complete (what
/// [`generate_filecoin_with`] keeps without `force`).
pub fn params_complete(circuit: FilecoinCircuit, dir: &Path) -> Result<bool, SetupError> {
    let (_, params, vk) = param_file_names(circuit, dir)?;
    Ok(is_complete(&params, &vk))
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
        fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, _: String, blank: F) -> Self::Output {
            let mut rng = ChaCha20Rng::seed_from_u64(self.0);
            let (wall, cpu) = (Instant::now(), cpu_time());
            let params =
                bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank(), &mut rng)
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

/// Something done with a blank circuit of any type, made by `blank` (as
/// often as needed: the streaming generator synthesizes twice).
pub(crate) trait Visitor {
    type Output;
    fn visit<C: Circuit<Scalar>, F: Fn() -> C>(self, identifier: String, blank: F) -> Self::Output;
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
    Ok(v.visit(id, || {
        <Compound<Tree> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&pp)
    }))
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
    Ok(v.visit(id, || {
        <FallbackPoStCompound<Tree> as CompoundProof<
            FallbackPoSt<'_, Tree>,
            FallbackPoStCircuit<Tree>,
        >>::blank_circuit(&pp)
    }))
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
    Ok(v.visit(id, || {
        <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
        >>::blank_circuit(&pp)
    }))
}
