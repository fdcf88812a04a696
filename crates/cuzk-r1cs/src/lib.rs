//! cuzk-r1cs: pre-compiled constraint systems.
//!
//! A Filecoin partition circuit has the same A, B and C matrices for every
//! proof of one shape (kind × registered proof); only the assignment
//! changes. This crate records those matrices once ([`record`]) by running
//! the circuit into a [`RecordingCs`], keeps them compactly as a
//! [`CompiledCs`], stores them on disk ([`file`]), and then, per proof,
//! turns an assignment into the a, b, c vectors and densities the prover
//! backends consume ([`witness`]) without building one linear combination.
//!
//! Compactness comes from the circuits' structure: a partition is the same
//! sub-circuit repeated (per challenge, per sector) with its variables
//! shifted by a constant. Constraints are grouped into *segments* (one per
//! top-level namespace or extended sub-circuit), each encoded relative to
//! where it starts, and equal segments are stored once with a list of the
//! places (*instances*) where they occur.

mod columns;
pub mod compiled;
mod encode;
pub mod file;
mod flat;
pub mod record;
pub mod window;
pub mod witness;

pub use columns::Columns;
pub use compiled::{CompiledCs, CompiledStats};
pub use file::{load, load_or_record, save, FileError};
pub use record::{record, RecordingCs};
pub use window::WindowCs;
pub use witness::{
    synthesize_compiled, synthesize_compiled_at, synthesize_compiled_with, AssignOnly,
    AssignmentCs, CompiledSynthError,
};
