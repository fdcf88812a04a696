//! The daemon's one TOML configuration file.
//!
//! Every key is optional; [`Config::default`] holds the documented defaults
//! (see `cuzk.example.toml` at the repository root). Sizes accept `"256MiB"`
//! style strings, durations `"60s"` / `"10m"`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use crate::params::{DEFAULT_PARAMETER_CACHE, PARAMETER_CACHE_ENV};

/// Default gRPC listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9820";

/// The whole configuration file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub engine: EngineConfig,
    pub params: ParamsConfig,
}

/// `[daemon]`: where and how the daemon serves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// `host:port` for TCP, or `unix:///path/to/socket`.
    pub listen: String,
    /// On SIGINT/SIGTERM, how long running jobs may take to finish before the
    /// daemon fails them and exits.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Log filter (tracing `EnvFilter` syntax); `RUST_LOG` overrides it.
    pub log: String,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: DEFAULT_LISTEN.to_string(),
            shutdown_grace: Duration::from_secs(60),
            log: "info".to_string(),
        }
    }
}

/// `[engine]`: the job queue and prover workers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Prover workers; each proves one job at a time using all cores.
    pub workers: usize,
    /// Largest vanilla proof payload (`vanilla_proof` plus all
    /// `vanilla_proofs`) a request may carry. The gRPC message limit is this
    /// plus 16 MiB for the other fields.
    pub max_vanilla_bytes: ByteSize,
    /// How long a finished job (and its request_id) is remembered.
    #[serde(with = "humantime_serde")]
    pub job_retention: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            workers: 1,
            max_vanilla_bytes: ByteSize::mib(256),
            job_retention: Duration::from_secs(3600),
        }
    }
}

/// `[params]`: the Groth16 parameter cache.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParamsConfig {
    /// Directory of `.params` / `.vk` files. Unset: `$FIL_PROOFS_PARAMETER_CACHE`,
    /// else `/var/tmp/filecoin-proof-parameters`.
    pub cache_dir: Option<PathBuf>,
    /// Check that every SRS point is in the prime-order subgroup when loading
    /// (slower; the files are checksummed when fetched).
    pub check_subgroup: bool,
}

impl ParamsConfig {
    /// The directory to use, after the environment fallback.
    pub fn resolved_cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(|| {
            std::env::var_os(PARAMETER_CACHE_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMETER_CACHE))
        })
    }
}

/// The configuration file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config: {0}")]
    Invalid(String),
}

impl Config {
    /// Reads and checks a TOML file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Parses and checks TOML text.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::from("<text>"),
            message: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.engine.workers == 0 {
            return Err(ConfigError::Invalid(
                "engine.workers must be at least 1".into(),
            ));
        }
        if self.engine.max_vanilla_bytes.as_u64() == 0 {
            return Err(ConfigError::Invalid(
                "engine.max_vanilla_bytes must be more than 0".into(),
            ));
        }
        if self.daemon.listen.trim().is_empty() {
            return Err(ConfigError::Invalid("daemon.listen is empty".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.daemon.listen, "127.0.0.1:9820");
        assert_eq!(c.engine.workers, 1);
    }

    #[test]
    fn example_config_parses_and_matches_defaults() {
        let text = include_str!("../../../cuzk.example.toml");
        let c = Config::parse(text).unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn human_sizes_and_durations() {
        let c = Config::parse(
            "[engine]\nworkers = 2\nmax_vanilla_bytes = \"1 MiB\"\njob_retention = \"5m\"\n\
             [daemon]\nlisten = \"unix:///tmp/cuzk.sock\"\nshutdown_grace = \"2s\"\n",
        )
        .unwrap();
        assert_eq!(c.engine.workers, 2);
        assert_eq!(c.engine.max_vanilla_bytes.as_u64(), 1 << 20);
        assert_eq!(c.engine.job_retention, Duration::from_secs(300));
        assert_eq!(c.daemon.shutdown_grace, Duration::from_secs(2));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        let e = Config::parse("[engine]\nworkerz = 2\n").unwrap_err();
        assert!(e.to_string().contains("workerz"), "{e}");
        let e = Config::parse("[engine]\nworkers = 0\n").unwrap_err();
        assert!(e.to_string().contains("engine.workers"), "{e}");
    }
}
