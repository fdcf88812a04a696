//! What fixture generation reports ([`Progress`]) and how it writes its
//! files (atomically).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

/// A step of fixture generation, for progress displays.
#[derive(Clone, Debug)]
pub enum Progress {
    /// A step found done and reused.
    Reused {
        step: String,
    },
    /// A step begins; `estimate_secs` is its rough cost on 2 cores.
    Started {
        step: String,
        estimate_secs: u64,
    },
    /// Part of a long step is done: `done` of `total` units (points, ...).
    Advanced {
        step: String,
        done: u64,
        total: u64,
    },
    Done {
        step: String,
        secs: f64,
    },
}

/// Writes a file atomically (temporary name, then rename).
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, dir.join(name))?;
    Ok(())
}
