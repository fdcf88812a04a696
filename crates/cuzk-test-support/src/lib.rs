//! cuzk-test-support: where cuzk's local fixture sets live, the one
//! fixture-directory lookup of the tests, the client (`cuzk-bench`, through
//! `cuzk-fixtures`) and cuzk-lab. It has no dependencies, so crates below
//! `cuzk-fixtures` (`cuzk-prover`, `cuzk-setup`) use it in their tests too.
//!
//! The environment it reads, all here: `$CUZK_FIXTURES_DIR` (the sealed
//! 2 KiB set), `$XDG_CACHE_HOME` and `$HOME` (the cache root).

use std::path::PathBuf;

/// The environment variable naming the sealed 2 KiB fixture directory.
pub const FIXTURES_DIR_ENV: &str = "CUZK_FIXTURES_DIR";

fn env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`, else `/var/tmp/cuzk`.
pub fn cache_root() -> PathBuf {
    env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/tmp"))
        .join("cuzk")
}

/// The sealed 2 KiB fixture directory: `$CUZK_FIXTURES_DIR`, else
/// `<cache root>/fixtures-2KiB`.
pub fn fixtures_dir() -> PathBuf {
    env(FIXTURES_DIR_ENV).unwrap_or_else(|| cache_root().join("fixtures-2KiB"))
}

/// The sealed 2 KiB set's parameter directory (`<fixtures dir>/params`).
pub fn fixture_params_dir() -> PathBuf {
    fixtures_dir().join("params")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_dirs_are_under_the_cache_root_or_the_override() {
        let dir = fixtures_dir();
        match std::env::var_os(FIXTURES_DIR_ENV).filter(|v| !v.is_empty()) {
            Some(d) => assert_eq!(dir, PathBuf::from(d)),
            None => {
                assert_eq!(dir, cache_root().join("fixtures-2KiB"));
                assert!(cache_root().ends_with("cuzk"));
            }
        }
        assert_eq!(fixture_params_dir(), dir.join("params"));
    }
}
