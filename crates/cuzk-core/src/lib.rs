//! cuzk-core: the proving engine behind the cuzk daemon.
//!
//! It owns everything between a decoded gRPC request and a verified proof:
//! checking requests ([`request`]), the job table, priority queue and worker
//! pool ([`engine`], [`job`]), the provers ([`prover`]), verification of every
//! proof before it is returned ([`verify`]), the resident SRS ([`srs_cache`]),
//! the parameter cache ([`params`]),
//! metrics ([`metrics`]) and the daemon's configuration file ([`config`]).
//! It knows nothing of gRPC; `cuzk-server` maps it onto the wire.

pub mod config;
pub mod engine;
pub mod job;
pub mod kinds;
pub mod metrics;
pub mod params;
pub mod prover;
pub mod reference;
pub mod request;
pub mod srs_cache;
pub mod verify;

pub use config::Config;
pub use engine::{AwaitOutcome, Engine, EngineStatus, JobError, SubmitError, Submission};
pub use job::{JobOutcome, JobStatus, JobTimings};
pub use kinds::{Priority, ProofKind, ProofType};
pub use prover::{CuzkProver, ProveOutput, Prover};
pub use reference::FilecoinApiProver;
pub use srs_cache::SrsCache;
pub use request::{ProofInput, ProofRequest, RawRequest, RequestError};
