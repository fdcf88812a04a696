//! cuzk-setup: fast, local, INSECURE Groth16 parameter generation.
//!
//! Parameters made here have a known toxic waste (it comes from a seeded
//! RNG): they are for tests only. They are byte-compatible with bellperson
//! 0.27's `generate_random_parameters` — same sections, same order, same
//! filtering of points at infinity, and for the same RNG state the same
//! bytes — so filecoin-proofs' verifiers and bellperson's prover accept
//! proofs made with them.
//!
//! * [`generate_streaming`] ([`stream`]): a blank circuit of any size to
//!   `.params` / `.vk` files in bounded memory (two synthesis passes,
//!   [`counting`] then [`evaluating`], and chunked sections through a
//!   [`writer`]), reporting [`Progress`] ([`progress`]);
//!   [`generate_streaming_from`] reads the matrices from a recorded
//!   constraint system instead ([`recorded`]: no synthesis pass);
//! * [`fn@generate`] / [`generate_with`] ([`mod@generate`]): a blank circuit to a
//!   [`Srs`](cuzk_prover::srs::Srs) in memory, with per-stage [`SetupStats`]
//!   (the reference the streaming generator is tested against);
//! * [`generate_filecoin`] / [`generate_filecoin_with`] ([`filecoin`]): one
//!   Filecoin circuit, any sector size, streamed to `v28-<identifier>.params`
//!   / `.vk` files in a directory, as the parameter cache names them;
//!   [`time_bellperson`] times bellperson's generator on the same circuit;
//! * [`assembly`]: synthesis into flat QAP matrices and their evaluation at
//!   `tau`; [`fixed_base`]: batched fixed-base scalar multiplication with
//!   affine additions; [`curve`]: the G1/G2 view of blst it runs on.

pub mod assembly;
pub mod counting;
pub mod curve;
pub mod evaluating;
pub mod filecoin;
pub mod fixed_base;
pub mod generate;
pub mod progress;
pub mod recorded;
pub mod stream;
pub mod writer;

use std::path::PathBuf;
use std::time::Duration;

pub use counting::Shape;
pub use filecoin::{
    bellperson_params, generate_filecoin, generate_filecoin_from, generate_filecoin_with,
    generate_in_memory, param_file_names, params_complete, time_bellperson, FilecoinCircuit,
    GeneratedFiles, Timing,
};
pub use generate::{generate, generate_with, SetupStats, ToxicWaste};
pub use progress::{no_progress, peak_rss, Progress, Stage};
pub use stream::{generate_streaming, generate_streaming_from, Matrices};

/// Errors of parameter generation.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The circuit failed to synthesize.
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
    /// More constraints or variables than the flat matrix format indexes.
    #[error("circuit too large: {constraints} constraints, {variables} variables")]
    TooLarge {
        constraints: usize,
        variables: usize,
    },
    /// The second synthesis pass saw another circuit shape than the first
    /// (a circuit whose synthesis is not deterministic).
    #[error("the circuit synthesized to {second:?} after {first:?}")]
    ShapeChanged { first: Shape, second: Shape },
    /// The evaluation domain cannot be built.
    #[error(transparent)]
    Domain(#[from] cuzk_prover::ntt::NttError),
    /// Aux variable `index` appears in no constraint (its L point would be
    /// the identity), which bellperson refuses too.
    #[error("aux variable {index} is unconstrained")]
    UnconstrainedVariable { index: usize },
    /// gamma or delta is zero, or a generator is the identity.
    #[error("degenerate toxic waste (zero gamma/delta or identity generator)")]
    Degenerate,
    /// Reading or writing parameter files failed.
    #[error(transparent)]
    Srs(#[from] cuzk_prover::srs::SrsError),
    /// A file system operation on `path` failed.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// filecoin-proofs could not build the circuit's public parameters.
    #[error("filecoin public parameters for {circuit}: {message}")]
    Filecoin { circuit: String, message: String },
    /// No registered proof has sectors of this many bytes.
    #[error("no registered proof has {0}-byte sectors (2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB do)")]
    UnsupportedSectorSize(u64),
    /// A PoSt circuit asked for with a proof of the other PoSt kind.
    #[error("{0}")]
    WrongProofKind(String),
    /// A recorded constraint system could not be read or used.
    #[error("recorded constraint system: {0}")]
    Recorded(String),
    /// bellperson's generator failed (in [`time_bellperson`]).
    #[error("bellperson's generator failed: {0}")]
    Bellperson(bellpepper_core::SynthesisError),
}

/// CPU time this process has used so far, all threads together.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
