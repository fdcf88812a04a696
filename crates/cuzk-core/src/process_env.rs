//! The one place cuzk's libraries read or write the process environment.
//!
//! Reads: where the job journal lives when `daemon.state_dir` is unset
//! (`$STATE_DIRECTORY` from systemd, `$XDG_STATE_HOME`, `$HOME`), and the
//! parameter cache when `params.cache_dir` is unset
//! (`$FIL_PROOFS_PARAMETER_CACHE`). Nothing else in cuzk changes behaviour
//! by environment: the daemon's knobs are its config file (the CUDA code's
//! are `[gpus.tuning]`), shown by `cuzk-daemon --print-config`; logging
//! takes `RUST_LOG`, and the client's flags have documented `CUZK_*`
//! fallbacks. (Tests and tools find fixtures through `cuzk-test-support`.)
//!
//! Writes: filecoin-proofs reads its settings from the environment, once
//! per process, and offers no other way to set them. So the parameter
//! cache the daemon is configured with ([`fix_parameter_cache`], through
//! `crate::params::init_parameter_cache`) and the SDR parent cache of
//! locally sealed fixtures ([`fix_parent_cache`]) are written here, before
//! filecoin-proofs first reads them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable filecoin-proofs reads the parameter cache directory from.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// The variable filecoin-proofs reads the SDR parent cache directory from.
pub const PARENT_CACHE_ENV: &str = "FIL_PROOFS_PARENT_CACHE";

fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Where the job journal lives when `daemon.state_dir` is unset:
/// `$STATE_DIRECTORY` (the first, as systemd may list several), else
/// `$XDG_STATE_HOME/cuzk`, else `~/.local/state/cuzk`, else `/var/lib/cuzk`.
pub fn default_state_dir() -> PathBuf {
    if let Some(d) = var("STATE_DIRECTORY") {
        let first = d
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or("")
            .to_string();
        if !first.is_empty() {
            return PathBuf::from(first);
        }
    }
    if let Some(d) = var("XDG_STATE_HOME") {
        return PathBuf::from(d).join("cuzk");
    }
    if let Some(h) = var("HOME") {
        return PathBuf::from(h).join(".local/state/cuzk");
    }
    PathBuf::from("/var/lib/cuzk")
}

/// `$FIL_PROOFS_PARAMETER_CACHE`, if set.
pub fn parameter_cache() -> Option<PathBuf> {
    std::env::var_os(PARAMETER_CACHE_ENV).map(PathBuf::from)
}

/// Sets `$FIL_PROOFS_PARAMETER_CACHE` to `dir` (unless it is already),
/// for filecoin-proofs' first read of it.
pub fn fix_parameter_cache(dir: &str) {
    if std::env::var(PARAMETER_CACHE_ENV).ok().as_deref() != Some(dir) {
        std::env::set_var(PARAMETER_CACHE_ENV, dir);
    }
}

/// Sets `$FIL_PROOFS_PARENT_CACHE` to `dir`, unless the caller chose one.
pub fn fix_parent_cache(dir: &Path) {
    if std::env::var_os(PARENT_CACHE_ENV).is_none() {
        std::env::set_var(PARENT_CACHE_ENV, dir);
    }
}
