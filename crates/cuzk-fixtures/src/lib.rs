//! cuzk-fixtures: everything needed to prove locally, made locally.
//!
//! A fixture set is a directory with the inputs of one proof of each kind —
//! a PoRep C1 output, WinningPoSt and WindowPoSt vanilla proofs, SnapDeals
//! partition proofs — and every public input needed to verify the results
//! independently (`manifest.json`, [`manifest`]), plus a parameter
//! directory with insecure Groth16 parameters for that sector size's four
//! circuits (made by cuzk-setup's fast generator, [`params`]).
//!
//! Two kinds of set:
//! * [`ensure`]: the **sealed** 2 KiB set (default
//!   `~/.cache/cuzk/fixtures-2KiB`): two sectors really sealed with
//!   filecoin-proofs-api ([`sealed`]);
//! * [`ensure_synthetic`]: a **synthetic** set of any sector size (2 KiB to
//!   64 GiB, `~/.cache/cuzk/fixtures-<size>`), made without sealing: real
//!   wherever a proof looks, cheap everywhere else ([`synthetic`]).
//!
//! Steps already done are reused; `manifest.json` is written last and marks
//! a complete set. A lock file serialises concurrent runs (tests, CI jobs).

pub mod manifest;
mod output;
mod params;
mod requests;
mod sealed;
mod sector;
mod size;
pub mod synthetic;
mod vanilla;

pub use manifest::Manifest;
pub(crate) use output::write;
pub use output::Progress;
pub use params::{circuits, seed as params_seed};
pub use size::{SectorSize, UnknownSectorSize};

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use fs2::FileExt;

use manifest::MANIFEST_VERSION;

pub use cuzk_test_support::FIXTURES_DIR_ENV;

/// The sector size of the sealed fixture set.
pub const SECTOR_SIZE: u64 = sector::SECTOR_SIZE;

/// The seed synthetic sets are made from unless told otherwise.
pub const DEFAULT_SYNTHETIC_SEED: u64 = 0x5e_c702;

/// `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`, else `/var/tmp/cuzk`
/// (`cuzk-test-support`, the one fixture-directory lookup).
pub fn cache_root() -> PathBuf {
    cuzk_test_support::cache_root()
}

/// The sealed fixture directory used when none is given:
/// `$CUZK_FIXTURES_DIR`, else `<cache root>/fixtures-2KiB`.
pub fn default_dir() -> PathBuf {
    cuzk_test_support::fixtures_dir()
}

/// The default directory of a synthetic set: `<cache root>/fixtures-<size>`,
/// except 2 KiB, which lives beside the sealed set
/// (`<sealed dir>/synthetic`) and shares its parameters.
pub fn synthetic_dir(size: SectorSize) -> PathBuf {
    match size {
        SectorSize::S2KiB => default_dir().join("synthetic"),
        other => cache_root().join(format!("fixtures-{}", other.name())),
    }
}

/// The parameter directory of the fixture set in `dir`.
pub fn params_dir(dir: &Path) -> PathBuf {
    dir.join("params")
}

/// The default parameter directory of `size`'s sets (the sealed and the
/// synthetic 2 KiB sets share one).
pub fn default_params_dir(size: SectorSize) -> PathBuf {
    match size {
        SectorSize::S2KiB => params_dir(&default_dir()),
        other => params_dir(&synthetic_dir(other)),
    }
}

/// A complete fixture set on disk.
#[derive(Clone, Debug)]
pub struct Fixtures {
    pub dir: PathBuf,
    /// The directory with the set's Groth16 parameters (which may not have
    /// been generated: see [`Fixtures::has_params`]).
    pub params: PathBuf,
    pub manifest: Manifest,
}

/// Serialises fixture generation within this process; the lock file does it
/// across processes.
static IN_PROCESS: Mutex<()> = Mutex::new(());

/// Holds the fixture directory's lock while alive.
struct DirLock {
    file: File,
    _guard: std::sync::MutexGuard<'static, ()>,
}

impl DirLock {
    fn take(dir: &Path) -> Result<DirLock> {
        let guard = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = File::create(dir.join(".lock"))?;
        file.lock_exclusive()
            .context("locking the fixture directory")?;
        Ok(DirLock {
            file,
            _guard: guard,
        })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

/// Makes (or reuses) the sealed 2 KiB fixture set in `dir`, with its
/// parameters in `dir/params`.
///
/// Points this process' Groth16 parameter cache at `dir/params`: call it
/// before any engine starts in the same process.
pub fn ensure(dir: &Path, progress: &mut dyn FnMut(Progress)) -> Result<Fixtures> {
    let _lock = DirLock::take(dir)?;
    let params = params_dir(dir);
    fs::create_dir_all(&params)?;
    cuzk_core::params::init_parameter_cache(&params)?;
    set_parent_cache(dir)?;

    params::ensure_params(SectorSize::S2KiB, &params, progress)?;
    reuse_or_make(
        dir,
        &params,
        "sectors and vanilla proofs",
        2,
        progress,
        &mut || sealed::make_inputs(dir),
    )
}

/// What [`ensure_synthetic`] makes.
#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    pub size: SectorSize,
    pub dir: PathBuf,
    pub params: PathBuf,
    pub seed: u64,
    /// Also generate the Groth16 parameters (without them the set can be
    /// synthesized and checked, not proved).
    pub with_params: bool,
}

impl SyntheticSpec {
    /// The default directories and seed for `size`, parameters included.
    pub fn new(size: SectorSize) -> SyntheticSpec {
        SyntheticSpec {
            size,
            dir: synthetic_dir(size),
            params: default_params_dir(size),
            seed: DEFAULT_SYNTHETIC_SEED,
            with_params: true,
        }
    }
}

/// Makes (or reuses) a synthetic fixture set. With parameters, also points
/// this process' Groth16 parameter cache at `spec.params`.
pub fn ensure_synthetic(
    spec: &SyntheticSpec,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fixtures> {
    let _lock = DirLock::take(&spec.dir)?;
    if spec.with_params {
        fs::create_dir_all(&spec.params)?;
        cuzk_core::params::init_parameter_cache(&spec.params)?;
        params::ensure_params(spec.size, &spec.params, progress)?;
    }
    let fixtures = match load_with(&spec.dir, &spec.params) {
        Ok(f) => {
            progress(Progress::Reused {
                step: format!("synthetic {} sectors and vanilla proofs", spec.size),
            });
            f
        }
        Err(_) => {
            synthetic::make_inputs(&spec.dir, spec.size, spec.seed, progress)?;
            load_with(&spec.dir, &spec.params)?
        }
    };
    let m = &fixtures.manifest;
    if m.synthetic != Some(spec.seed) || m.sector_size != spec.size.bytes() {
        bail!(
            "{} holds another fixture set (sector size {}, synthetic seed {:?}); \
             remove it or choose another directory",
            spec.dir.display(),
            m.sector_size,
            m.synthetic
        );
    }
    Ok(fixtures)
}

/// Loads the set in `dir` when complete, else makes its inputs with `make`.
fn reuse_or_make(
    dir: &Path,
    params: &Path,
    step: &str,
    estimate_secs: u64,
    progress: &mut dyn FnMut(Progress),
    make: &mut dyn FnMut() -> Result<Manifest>,
) -> Result<Fixtures> {
    if let Ok(f) = load_with(dir, params) {
        progress(Progress::Reused { step: step.into() });
        return Ok(f);
    }
    progress(Progress::Started {
        step: step.into(),
        estimate_secs,
    });
    let t = Instant::now();
    make()?;
    progress(Progress::Done {
        step: step.into(),
        secs: t.elapsed().as_secs_f64(),
    });
    load_with(dir, params)
}

/// filecoin-proofs keeps the SDR parent cache in one process-wide place;
/// the fixtures keep theirs with them (unless the caller chose one).
fn set_parent_cache(dir: &Path) -> Result<()> {
    let parents = dir.join("parents");
    fs::create_dir_all(&parents)?;
    cuzk_core::process_env::fix_parent_cache(&parents);
    Ok(())
}

/// Loads a complete fixture set (no generation) with its parameters in
/// `dir/params`.
pub fn load(dir: &Path) -> Result<Fixtures> {
    load_with(dir, &params_dir(dir))
}

/// Loads a complete fixture set whose parameters are in `params`.
pub fn load_with(dir: &Path, params: &Path) -> Result<Fixtures> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "no fixtures at {} (run `cuzk-bench gen-fixtures`)",
            dir.display()
        )
    })?;
    let manifest: Manifest =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if manifest.version != MANIFEST_VERSION {
        bail!(
            "{} is version {}, this build reads version {MANIFEST_VERSION}",
            path.display(),
            manifest.version
        );
    }
    if manifest.synthetic.is_some() && manifest.generator != synthetic::GENERATOR_VERSION {
        bail!(
            "{} was made by synthetic generator {}, this build makes version {} \
             (run `cuzk-bench gen-fixtures` again)",
            path.display(),
            manifest.generator,
            synthetic::GENERATOR_VERSION
        );
    }
    manifest.check_comm_rs()?;
    let f = Fixtures {
        dir: dir.to_path_buf(),
        params: params.to_path_buf(),
        manifest,
    };
    for file in f.all_files() {
        if !dir.join(&file).is_file() {
            bail!("fixture file {} is missing", dir.join(file).display());
        }
    }
    Ok(f)
}

impl Fixtures {
    /// The parameter cache directory of this set.
    pub fn params_dir(&self) -> PathBuf {
        self.params.clone()
    }

    /// The set's sector size.
    pub fn sector_size(&self) -> Result<SectorSize> {
        SectorSize::from_bytes(self.manifest.sector_size)
            .with_context(|| format!("unknown sector size {}", self.manifest.sector_size))
    }

    /// Whether all four circuits' parameter files are in [`Fixtures::params`].
    pub fn has_params(&self) -> bool {
        self.sector_size()
            .is_ok_and(|s| params::complete(s, &self.params))
    }

    fn all_files(&self) -> Vec<String> {
        let m = &self.manifest;
        let mut files = vec![m.porep.c1_file.clone()];
        files.extend(m.winning_post.vanilla_files.iter().cloned());
        files.extend(m.window_post.vanilla_files.iter().cloned());
        files.extend(m.snap.vanilla_files.iter().cloned());
        for d in &m.window_deadlines {
            files.extend(d.partitions.iter().flatten().cloned());
        }
        files
    }
}
