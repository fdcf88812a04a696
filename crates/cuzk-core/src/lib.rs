//! cuzk-core: the proving engine behind the cuzk daemon.
//!
//! It owns everything between a decoded gRPC request and a verified proof:
//! checking requests ([`request`]), the job table and the partition pipeline
//! with its priority queues and workers ([`engine`], [`job`]), the memory
//! budget ([`budget`]), the resident SRS and its tiers ([`srs_manager`],
//! with the device tier in [`device_tier`]), the
//! Filecoin circuits and verifiers as the engine sees them ([`prover`]),
//! verification of every proof before it is returned ([`verify`]), the
//! job journal that survives restarts ([`journal`]), the parameter cache
//! ([`params`]), the one module that touches the process environment
//! ([`process_env`]),
//! metrics ([`metrics`]) and its sections of the daemon's configuration
//! file ([`config`]). It knows nothing of gRPC (`cuzk-server` maps it onto
//! the wire) and nothing of GPUs: whatever depends on a device is the
//! prover backend's to say (`cuzk_prover::ProverBackend`).

pub mod budget;
pub mod clock;
pub mod config;
pub mod device_tier;
pub mod engine;
pub mod job;
pub mod journal;
pub mod kinds;
pub mod metrics;
pub mod params;
pub mod process_env;
pub mod prover;
pub mod r1cs_manager;
pub mod request;
pub mod sizing;
pub mod srs_manager;
pub mod verify;

pub use engine::{
    AwaitOutcome, Engine, EngineParts, EngineStatus, JobError, ProofSystem, Submission, SubmitError,
};
pub use job::{JobOutcome, JobStatus, JobTimings};
pub use kinds::{Priority, ProofKind, ProofType};
pub use prover::{FilecoinProofs, ProofSystemError};
pub use request::{ProofInput, ProofRequest, RawRequest, RequestError};
pub use srs_manager::{SrsManager, Tier};
