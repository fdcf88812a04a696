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
    pub memory: MemoryConfig,
    pub srs: SrsConfig,
    pub params: ParamsConfig,
    pub gpus: GpusConfig,
}

/// Which prover backend the daemon uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA on the configured devices when this build has CUDA and a device
    /// exists; the CPU otherwise.
    #[default]
    Auto,
    Cpu,
    /// CUDA, or refuse to start.
    Cuda,
}

/// `[gpus]`: the accelerators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpusConfig {
    /// `"auto"`, `"cpu"` or `"cuda"`.
    pub backend: BackendChoice,
    /// CUDA device ordinals to use; empty: every usable device.
    pub devices: Vec<usize>,
    /// Where the SRS points live for the GPU MSMs: `"auto"` (in VRAM
    /// across partitions and jobs when they fit beside a partition, else
    /// streamed from host memory), `"always"` (in VRAM; a partition fails
    /// when they do not fit) or `"never"` (streamed every partition).
    pub srs_on_device: SrsOnDevice,
    /// Device memory the CUDA backend may use on each GPU (e.g. `"16GiB"`):
    /// its allocations fail as if the card had only this much, so
    /// small-card behaviour can be run on a large card. Unset: the card.
    pub vram_limit: Option<ByteSize>,
    /// Device memory each partition leaves free when it chooses how much of
    /// its witness to stage on the GPU.
    pub vram_safety_margin: ByteSize,
}

impl Default for GpusConfig {
    fn default() -> Self {
        GpusConfig {
            backend: BackendChoice::default(),
            devices: Vec::new(),
            srs_on_device: SrsOnDevice::default(),
            vram_limit: None,
            vram_safety_margin: ByteSize::mib(512),
        }
    }
}

/// `gpus.srs_on_device`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SrsOnDevice {
    #[default]
    Auto,
    Always,
    Never,
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
    /// HTTP address serving `GET /status` (JSON) and `GET /metrics`
    /// (Prometheus); empty: off.
    pub status_listen: String,
    /// Where the job journal lives. Unset: `$STATE_DIRECTORY` (set by
    /// systemd's `StateDirectory=`), else `$XDG_STATE_HOME/cuzk`, else
    /// `~/.local/state/cuzk`, else `/var/lib/cuzk`.
    pub state_dir: Option<PathBuf>,
    /// Keep the job journal (accepted jobs survive a crash or `kill -9`).
    pub journal: bool,
    /// PEM certificate chain for TLS on the gRPC and status listeners.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// File holding the bearer token clients must send
    /// (`authorization: Bearer <token>`); unset: no token.
    pub auth_token_file: Option<PathBuf>,
    /// Serve a non-loopback address without TLS and a token anyway.
    pub insecure_remote: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: DEFAULT_LISTEN.to_string(),
            shutdown_grace: Duration::from_secs(60),
            log: "info".to_string(),
            status_listen: String::new(),
            state_dir: None,
            journal: true,
            tls_cert: None,
            tls_key: None,
            auth_token_file: None,
            insecure_remote: false,
        }
    }
}

impl DaemonConfig {
    /// The state directory to use, after the environment fallbacks.
    pub fn resolved_state_dir(&self) -> PathBuf {
        if let Some(d) = &self.state_dir {
            return d.clone();
        }
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(d) = env("STATE_DIRECTORY") {
            // systemd may list several, separated by colons.
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
        if let Some(d) = env("XDG_STATE_HOME") {
            return PathBuf::from(d).join("cuzk");
        }
        if let Some(h) = env("HOME") {
            return PathBuf::from(h).join(".local/state/cuzk");
        }
        PathBuf::from("/var/lib/cuzk")
    }
}

/// `[engine]`: the job queue and the partition pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Synthesis workers: partitions synthesized at once (each also needs
    /// its memory reserved from the budget).
    pub partition_workers: usize,
    /// Prover workers per device (the CPU backend is one device).
    pub gpu_workers_per_device: usize,
    /// Synthesized partitions that may wait for a prover; synthesis pauses
    /// when this many are waiting.
    pub synthesized_queue: usize,
    /// Largest vanilla proof payload (`vanilla_proof` plus all
    /// `vanilla_proofs`) a request may carry. The gRPC message limit is this
    /// plus 16 MiB for the other fields.
    pub max_vanilla_bytes: ByteSize,
    /// How long a finished job (and its request_id) is remembered.
    #[serde(with = "humantime_serde")]
    pub job_retention: Duration,
    /// A job not done this long after its submission fails ("0s": no limit).
    #[serde(with = "humantime_serde")]
    pub job_deadline: Duration,
    /// How partitions are synthesized: `"compiled"` (each shape's
    /// constraint matrices recorded once, kept in `<params cache>/r1cs` and
    /// resident; per partition only the assignment is computed and a, b, c
    /// come from the matrices) or `"circuit"` (linear combinations built
    /// per constraint, the reference path).
    pub synthesis: SynthesisPath,
    /// Threads one partition's synthesis may use, shared by the synthesis
    /// workers (0: one per core).
    pub synthesis_threads: usize,
    /// Witness vectors kept after proving for the next partition, whose
    /// pages are then already mapped: `"auto"` (a quarter of the memory
    /// budget), a size, or `0` for none. What is kept is charged to the
    /// budget and freed before any reservation waits for memory.
    pub witness_pool: Amount,
}

/// `engine.synthesis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SynthesisPath {
    Compiled,
    Circuit,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            partition_workers: 1,
            gpu_workers_per_device: 1,
            synthesized_queue: 1,
            max_vanilla_bytes: ByteSize::mib(256),
            job_retention: Duration::from_secs(3600),
            job_deadline: Duration::ZERO,
            synthesis: SynthesisPath::Compiled,
            synthesis_threads: 0,
            witness_pool: Amount::Auto,
        }
    }
}

/// A memory amount that may be `"auto"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amount {
    Auto,
    Bytes(ByteSize),
}

impl Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Amount::Auto => s.serialize_str("auto"),
            Amount::Bytes(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(u64),
        }
        match Raw::deserialize(d)? {
            Raw::Text(t) if t.trim().eq_ignore_ascii_case("auto") => Ok(Amount::Auto),
            Raw::Text(t) => t
                .parse::<ByteSize>()
                .map(Amount::Bytes)
                .map_err(|e| serde::de::Error::custom(format!("{t:?}: {e} (or \"auto\")"))),
            Raw::Number(n) => Ok(Amount::Bytes(ByteSize::b(n))),
        }
    }
}

/// `[memory]`: the host memory budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// `"auto"`: the cgroup memory limit if one is set, else MemTotal; or a
    /// size such as `"96GiB"`. The safety margin is taken off either way.
    pub total_budget: Amount,
    /// Memory left for everything the budget does not track.
    pub safety_margin: ByteSize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            total_budget: Amount::Auto,
            safety_margin: ByteSize::gib(2),
        }
    }
}

impl MemoryConfig {
    /// The budget in bytes.
    pub fn resolve(&self) -> Result<u64, ConfigError> {
        let total = match self.total_budget {
            Amount::Bytes(b) => b.as_u64(),
            Amount::Auto => crate::budget::available_memory().ok_or_else(|| {
                ConfigError::Invalid(
                    "memory.total_budget = \"auto\" but the memory size cannot be read; give a size".into(),
                )
            })?,
        };
        let budget = total.saturating_sub(self.safety_margin.as_u64());
        if budget < 64 << 20 {
            return Err(ConfigError::Invalid(format!(
                "memory.total_budget ({total} bytes) minus memory.safety_margin leaves {budget} bytes; at least 64 MiB are needed"
            )));
        }
        Ok(budget)
    }
}

/// `[srs]`: resident parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SrsConfig {
    /// Directory for warm SRS files (points already in memory layout, mapped
    /// instead of decoded on the next load). Unset: no warm files. Also
    /// where an SRS too large for the memory budget is paged from (written
    /// section by section, mapped, not charged); without it such a job fails.
    pub warm_dir: Option<PathBuf>,
    /// Under memory pressure, an unused SRS is evicted only after being idle
    /// this long.
    #[serde(with = "humantime_serde")]
    pub eviction_min_idle: Duration,
}

impl Default for SrsConfig {
    fn default() -> Self {
        SrsConfig {
            warm_dir: None,
            eviction_min_idle: Duration::from_secs(60),
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
        for (name, v) in [
            ("engine.partition_workers", self.engine.partition_workers),
            (
                "engine.gpu_workers_per_device",
                self.engine.gpu_workers_per_device,
            ),
            ("engine.synthesized_queue", self.engine.synthesized_queue),
        ] {
            if v == 0 {
                return Err(ConfigError::Invalid(format!("{name} must be at least 1")));
            }
        }
        if let Amount::Bytes(b) = self.memory.total_budget {
            if b.as_u64() <= self.memory.safety_margin.as_u64() {
                return Err(ConfigError::Invalid(
                    "memory.total_budget must be larger than memory.safety_margin".into(),
                ));
            }
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
        assert_eq!(c.engine.gpu_workers_per_device, 1);
        assert_eq!(c.memory.total_budget, Amount::Auto);
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
            "[engine]\ngpu_workers_per_device = 2\nmax_vanilla_bytes = \"1 MiB\"\njob_retention = \"5m\"\n\
             [daemon]\nlisten = \"unix:///tmp/cuzk.sock\"\nshutdown_grace = \"2s\"\n\
             [memory]\ntotal_budget = \"16GiB\"\nsafety_margin = \"1GiB\"\n",
        )
        .unwrap();
        assert_eq!(c.engine.gpu_workers_per_device, 2);
        assert_eq!(c.memory.resolve().unwrap(), 15 << 30);
        assert_eq!(c.engine.max_vanilla_bytes.as_u64(), 1 << 20);
        assert_eq!(c.engine.job_retention, Duration::from_secs(300));
        assert_eq!(c.daemon.shutdown_grace, Duration::from_secs(2));
        assert_eq!(c.gpus.vram_limit, None);
        assert_eq!(c.gpus.vram_safety_margin.as_u64(), 512 << 20);
        let g = Config::parse(
            "[gpus]
vram_limit = \"16GiB\"
vram_safety_margin = \"1GiB\"
",
        )
        .unwrap()
        .gpus;
        assert_eq!(g.vram_limit.map(|b| b.as_u64()), Some(16 << 30));
        assert_eq!(g.vram_safety_margin.as_u64(), 1 << 30);
        let e = Config::parse(
            "[gpus]
vram_limit = \"plenty\"
",
        )
        .unwrap_err();
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
        assert!(
            Config::parse("[memory]\ntotal_budget = \"auto\"\n")
                .unwrap()
                .memory
                .resolve()
                .unwrap()
                > 0
        );
    }
}
