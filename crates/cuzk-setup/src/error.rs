//! Errors of parameter generation.

use std::path::PathBuf;

use crate::shape::Shape;

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
    /// The fixed-base products' [`Accelerator`](crate::Accelerator)
    /// failed or computed a wrong product (nothing is written then).
    #[error("fixed-base products on {name}: {message}")]
    Accelerator { name: String, message: String },
    /// bellperson's generator failed (in [`crate::time_bellperson`]).
    #[error("bellperson's generator failed: {0}")]
    Bellperson(bellpepper_core::SynthesisError),
}
