//! Which fixture set a command uses: `--sector-size`, `--synthetic`,
//! `--fixtures` and `--params` resolved to directories.
//!
//! 2 KiB defaults to the sealed set (`~/.cache/cuzk/fixtures-2KiB`, or
//! `$CUZK_FIXTURES_DIR`); `--synthetic` picks the synthetic 2 KiB set beside
//! it. Every larger size is synthetic (`~/.cache/cuzk/fixtures-<size>`).

use std::path::PathBuf;

use anyhow::Result;
use cuzk_fixtures::{Fixtures, Progress, SectorSize, SyntheticSpec};

/// The fixture flags shared by every command that proves fixtures.
#[derive(clap::Args, Clone, Debug)]
pub struct FixtureArgs {
    /// Sector size of the fixtures: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, default_value = "2KiB")]
    pub sector_size: SectorSize,
    /// At 2 KiB, the synthetic set instead of the sealed one (larger sizes
    /// are always synthetic).
    #[arg(long)]
    pub synthetic: bool,
    /// Fixture directory [default: by sector size, under ~/.cache/cuzk].
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// Parameter directory [default: the set's own].
    #[arg(long)]
    pub params: Option<PathBuf>,
}

/// A resolved fixture set.
#[derive(Clone, Debug)]
pub struct Selection {
    pub size: SectorSize,
    pub synthetic: bool,
    pub dir: PathBuf,
    pub params: PathBuf,
}

impl FixtureArgs {
    pub fn selection(&self) -> Selection {
        let synthetic = self.synthetic || self.sector_size != SectorSize::S2KiB;
        let dir = self.fixtures.clone().unwrap_or_else(|| {
            if synthetic {
                cuzk_fixtures::synthetic_dir(self.sector_size)
            } else {
                cuzk_fixtures::default_dir()
            }
        });
        let params = self.params.clone().unwrap_or_else(|| match &self.fixtures {
            Some(d) => cuzk_fixtures::params_dir(d),
            None => cuzk_fixtures::default_params_dir(self.sector_size),
        });
        Selection {
            size: self.sector_size,
            synthetic,
            dir,
            params,
        }
    }
}

impl Selection {
    /// Makes (or reuses) the set; `with_params` also makes its parameters
    /// (and points this process' parameter cache at them).
    pub fn ensure(
        &self,
        with_params: bool,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Fixtures> {
        if !self.synthetic {
            return cuzk_fixtures::ensure(&self.dir, progress);
        }
        let spec = SyntheticSpec {
            dir: self.dir.clone(),
            params: self.params.clone(),
            with_params,
            ..SyntheticSpec::new(self.size)
        };
        cuzk_fixtures::ensure_synthetic(&spec, progress)
    }

    /// Loads the complete set (no generation).
    pub fn load(&self) -> Result<Fixtures> {
        cuzk_fixtures::load_with(&self.dir, &self.params)
    }
}
