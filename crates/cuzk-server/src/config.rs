//! The daemon's one TOML configuration file: the engine's sections
//! (`[daemon]`, `[engine]`, `[memory]`, `[srs]`, `[params]`, defined in
//! `cuzk_core::config`) and `[gpus]` with `[gpus.tuning]`, defined by the
//! GPU backend (`cuzk_cuda::config`), which alone reads them.
//!
//! Every key is optional; [`Config::default`] holds the documented defaults
//! (see `cuzk.example.toml` at the repository root; a test keeps the two in
//! step), unknown keys are errors, and `cuzk-daemon --print-config` prints
//! the whole effective file.

use std::path::{Path, PathBuf};

use cuzk_core::config::{
    ConfigError, DaemonConfig, EngineConfig, MemoryConfig, ParamsConfig, SrsConfig,
};
use cuzk_cuda::GpusConfig;
use serde::{Deserialize, Serialize};

/// The whole configuration file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub engine: EngineConfig,
    pub memory: MemoryConfig,
    pub srs: SrsConfig,
    pub params: ParamsConfig,
    pub gpus: GpusConfig,
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
        self.engine.validate()?;
        self.memory.validate()?;
        self.daemon.validate()?;
        self.gpus
            .validate()
            .map_err(|e| ConfigError::Invalid(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_core::config::{Amount, Count};
    use std::time::Duration;

    #[test]
    fn empty_file_gives_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.daemon.listen, "127.0.0.1:9820");
        assert_eq!(c.engine.gpu_workers_per_device, Count::Auto);
        assert_eq!(c.memory.total_budget, Amount::Auto);
        assert_eq!(c.gpus.tuning, cuzk_cuda::GpuTuning::default());
    }

    #[test]
    fn example_config_parses_and_matches_defaults() {
        let text = include_str!("../../../cuzk.example.toml");
        let c = Config::parse(text).unwrap();
        assert_eq!(c, Config::default());
        // Every key of the printed defaults is in the example, so none is
        // undocumented (unset optional keys print nothing).
        let printed = toml::to_string_pretty(&Config::default()).unwrap();
        let mut section = String::new();
        for line in printed.lines() {
            if let Some(name) = line.strip_prefix('[') {
                section = name.trim_end_matches(']').to_string();
                assert!(
                    text.contains(line),
                    "[{section}] is not in cuzk.example.toml"
                );
            } else if let Some((key, _)) = line.split_once(" = ") {
                let found = text.lines().any(|l| l.starts_with(&format!("{key} = ")));
                assert!(found, "{section}.{key} is not in cuzk.example.toml");
            }
        }
    }

    #[test]
    fn human_sizes_and_durations() {
        let c = Config::parse(
            "[engine]\ngpu_workers_per_device = 2\nmax_vanilla_bytes = \"1 MiB\"\njob_retention = \"5m\"\n\
             [daemon]\nlisten = \"unix:///tmp/cuzk.sock\"\nshutdown_grace = \"2s\"\n\
             [memory]\ntotal_budget = \"16GiB\"\nsafety_margin = \"1GiB\"\n",
        )
        .unwrap();
        assert_eq!(c.engine.gpu_workers_per_device, Count::Fixed(2));
        assert_eq!(c.memory.resolve().unwrap(), 15 << 30);
        assert_eq!(c.engine.max_vanilla_bytes.as_u64(), 1 << 20);
        assert_eq!(c.engine.job_retention, Duration::from_secs(300));
        assert_eq!(c.daemon.shutdown_grace, Duration::from_secs(2));
        assert_eq!(c.gpus.vram_limit, None);
        assert_eq!(c.gpus.vram_safety_margin.as_u64(), 512 << 20);
        let g = Config::parse("[gpus]\nvram_limit = \"16GiB\"\nvram_safety_margin = \"1GiB\"\n")
            .unwrap()
            .gpus;
        assert_eq!(g.vram_limit.map(|b| b.as_u64()), Some(16 << 30));
        assert_eq!(g.vram_safety_margin.as_u64(), 1 << 30);
        let e = Config::parse("[gpus]\nvram_limit = \"plenty\"\n").unwrap_err();
        assert!(e.to_string().contains("plenty"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        let e = Config::parse("[engine]\nworkerz = 2\n").unwrap_err();
        assert!(e.to_string().contains("workerz"), "{e}");
        let e = Config::parse("[engine]\npartition_workers = 0\n").unwrap_err();
        assert!(e.to_string().contains("engine.partition_workers"), "{e}");
        let e = Config::parse("[memory]\ntotal_budget = \"lots\"\n").unwrap_err();
        assert!(e.to_string().contains("lots"), "{e}");
        let e = Config::parse("[gpus.tuning]\nmsm_window_bits = 30\n").unwrap_err();
        assert!(e.to_string().contains("gpus.tuning.msm_window_bits"), "{e}");
        let e = Config::parse("[gpus.tuning]\ncuzk_msm = \"sppark\"\n").unwrap_err();
        assert!(e.to_string().contains("cuzk_msm"), "{e}");
        let e = Config::parse("[daemon]\nhandshake_timeout = \"0s\"\n").unwrap_err();
        assert!(e.to_string().contains("daemon.handshake_timeout"), "{e}");
        let e = Config::parse("[daemon]\nmax_connections = 0\n").unwrap_err();
        assert!(e.to_string().contains("daemon.max_connections"), "{e}");
    }

    #[test]
    fn the_printed_config_shows_the_gpu_tuning_and_parses_back() {
        let mut c = Config::default();
        c.gpus.tuning.msm_window_bits = 20;
        c.gpus.tuning.trace_msm = true;
        let printed = toml::to_string_pretty(&c).unwrap();
        for line in [
            "[gpus.tuning]",
            "msm_window_bits = 20",
            "msm_window_bits_mid = 0",
            "host_copy = \"auto\"",
            "copy_threads = 0",
            "trace_msm = true",
            "check_split = false",
        ] {
            assert!(
                printed.lines().any(|l| l == line),
                "{line:?} in:\n{printed}"
            );
        }
        assert_eq!(Config::parse(&printed).unwrap(), c);
    }
}
