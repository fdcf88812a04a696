//! The engine's sections of the daemon's TOML file: `[daemon]`, `[engine]`,
//! `[memory]`, `[srs]` and `[params]`. The whole file (these and the GPU
//! backend's `[gpus]`, which `cuzk-cuda` owns) is `cuzk_server::Config`.
//!
//! Every key is optional; each section's `Default` holds the documented
//! defaults (see `cuzk.example.toml` at the repository root). Sizes accept
//! `"256MiB"` style strings, durations `"60s"` / `"10m"`.

use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use crate::params::DEFAULT_PARAMETER_CACHE;
pub use crate::sizing::Count;

/// Default gRPC listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9820";

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
    /// Free space on the journal's disk kept for WindowPoSt and
    /// WinningPoSt: a PoRep or SnapDeals request whose payload would leave
    /// less is refused (`RESOURCE_EXHAUSTED`). `0`: none kept.
    pub journal_disk_reserve: ByteSize,
    /// PEM certificate chain for TLS on the gRPC and status listeners.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// File holding the bearer token clients must send
    /// (`authorization: Bearer <token>`); unset: no token.
    pub auth_token_file: Option<PathBuf>,
    /// Serve a non-loopback address without TLS and a token anyway.
    pub insecure_remote: bool,
    /// How long a client may take over its TLS handshake (gRPC and status
    /// listeners; handshakes run concurrently); a slower one is dropped.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
    /// HTTP/2 keepalive of gRPC connections: a ping after this long
    /// without traffic; a peer that does not answer within it is dropped.
    /// `"0s"`: off.
    #[serde(with = "humantime_serde")]
    pub http2_keepalive: Duration,
    /// gRPC connections open at once; one beyond is closed at once (so
    /// idle or abandoned connections cannot use up the file descriptors the
    /// journal needs).
    pub max_connections: usize,
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
            journal_disk_reserve: ByteSize::gib(1),
            tls_cert: None,
            tls_key: None,
            auth_token_file: None,
            insecure_remote: false,
            handshake_timeout: Duration::from_secs(10),
            http2_keepalive: Duration::from_secs(60),
            max_connections: 1024,
        }
    }
}

impl DaemonConfig {
    /// The state directory to use, after the environment fallbacks.
    pub fn resolved_state_dir(&self) -> PathBuf {
        match &self.state_dir {
            Some(d) => d.clone(),
            None => crate::process_env::default_state_dir(),
        }
    }
}

/// `[engine]`: the job queue and the partition pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Synthesis workers: partitions synthesized at once (each also needs
    /// its memory reserved from the budget). `"auto"`: sized from the
    /// machine (`sizing.rs`).
    pub partition_workers: Count,
    /// Prover workers per device (the CPU backend is one device); `"auto"`
    /// as above.
    pub gpu_workers_per_device: Count,
    /// Workers kept for CRITICAL jobs (WinningPoSt): this many synthesis
    /// workers, and this many prover workers per device, take only CRITICAL
    /// partitions, so one never waits for a running partition to end. `0`:
    /// CRITICAL jobs only jump the queues.
    pub critical_workers: usize,
    /// Synthesized partitions that may wait for a prover; synthesis pauses
    /// when this many are waiting. `"auto"` as above.
    pub synthesized_queue: Count,
    /// Jobs accepted and not yet ended (queued or running) beyond which a
    /// submit is refused with `RESOURCE_EXHAUSTED`; CRITICAL jobs
    /// (WinningPoSt) are always admitted. `"auto"`: one per 512 MiB of the
    /// memory budget, at least 8 and at most 1024 (a queued job keeps its
    /// decoded request, ~40 MB for a 32 GiB PoRep, outside the budget).
    pub max_queued_jobs: Count,
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
            partition_workers: Count::Auto,
            gpu_workers_per_device: Count::Auto,
            critical_workers: 1,
            synthesized_queue: Count::Auto,
            max_queued_jobs: Count::Auto,
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
    /// The top of the budget kept for CRITICAL jobs (WinningPoSt), so one
    /// never waits for a large partition to be proved before its memory is
    /// free: `"auto"` (1 GiB, at most an eighth of the budget), a size
    /// (less than half the budget), or `0` for none.
    pub critical_reserve: Amount,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            total_budget: Amount::Auto,
            safety_margin: ByteSize::gib(2),
            critical_reserve: Amount::Auto,
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

    /// The critical reserve in bytes for a budget of `budget` bytes.
    pub fn resolve_critical_reserve(&self, budget: u64) -> Result<u64, ConfigError> {
        match self.critical_reserve {
            Amount::Auto => Ok((1u64 << 30).min(budget / 8)),
            Amount::Bytes(b) if b.as_u64() < budget / 2 => Ok(b.as_u64()),
            Amount::Bytes(b) => Err(ConfigError::Invalid(format!(
                "memory.critical_reserve ({}) must be less than half the memory budget ({budget} bytes)",
                b.as_u64()
            ))),
        }
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
            crate::process_env::parameter_cache()
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

impl EngineConfig {
    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, v) in [
            ("engine.partition_workers", self.partition_workers),
            ("engine.gpu_workers_per_device", self.gpu_workers_per_device),
            ("engine.synthesized_queue", self.synthesized_queue),
            ("engine.max_queued_jobs", self.max_queued_jobs),
        ] {
            if v == Count::Fixed(0) {
                return Err(ConfigError::Invalid(format!(
                    "{name} must be at least 1 (or \"auto\")"
                )));
            }
        }
        if self.max_vanilla_bytes.as_u64() == 0 {
            return Err(ConfigError::Invalid(
                "engine.max_vanilla_bytes must be more than 0".into(),
            ));
        }
        Ok(())
    }
}

impl MemoryConfig {
    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Amount::Bytes(b) = self.total_budget {
            if b.as_u64() <= self.safety_margin.as_u64() {
                return Err(ConfigError::Invalid(
                    "memory.total_budget must be larger than memory.safety_margin".into(),
                ));
            }
        }
        Ok(())
    }
}

impl DaemonConfig {
    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.listen.trim().is_empty() {
            return Err(ConfigError::Invalid("daemon.listen is empty".into()));
        }
        if self.handshake_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "daemon.handshake_timeout must be more than 0s".into(),
            ));
        }
        if self.max_connections == 0 {
            return Err(ConfigError::Invalid(
                "daemon.max_connections must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_parse_with_defaults_and_human_units() {
        let e: EngineConfig = toml::from_str(
            "gpu_workers_per_device = 2\nmax_vanilla_bytes = \"1 MiB\"\njob_retention = \"5m\"\n",
        )
        .unwrap();
        assert_eq!(e.gpu_workers_per_device, Count::Fixed(2));
        assert_eq!(e.max_vanilla_bytes.as_u64(), 1 << 20);
        assert_eq!(e.job_retention, Duration::from_secs(300));
        assert_eq!(e.partition_workers, Count::Auto);
        let m: MemoryConfig =
            toml::from_str("total_budget = \"16GiB\"\nsafety_margin = \"1GiB\"\n").unwrap();
        assert_eq!(m.resolve().unwrap(), 15 << 30);
        let d: DaemonConfig = toml::from_str("shutdown_grace = \"2s\"\n").unwrap();
        assert_eq!(d.shutdown_grace, Duration::from_secs(2));
        assert_eq!(d.listen, DEFAULT_LISTEN);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        let e = toml::from_str::<EngineConfig>("workerz = 2\n").unwrap_err();
        assert!(e.to_string().contains("workerz"), "{e}");
        let e: EngineConfig = toml::from_str("partition_workers = 0\n").unwrap();
        let err = e.validate().unwrap_err();
        assert!(
            err.to_string().contains("engine.partition_workers"),
            "{err}"
        );
        let e = toml::from_str::<MemoryConfig>("total_budget = \"lots\"\n").unwrap_err();
        assert!(e.to_string().contains("lots"), "{e}");
        let m: MemoryConfig =
            toml::from_str("total_budget = \"1GiB\"\nsafety_margin = \"2GiB\"\n").unwrap();
        assert!(m.validate().is_err());
        let auto: MemoryConfig = toml::from_str("total_budget = \"auto\"\n").unwrap();
        assert!(auto.resolve().unwrap() > 0);
        let d = DaemonConfig {
            listen: " ".into(),
            ..Default::default()
        };
        assert!(d.validate().is_err());
    }
}
