//! Constraint matrices a backend evaluates a, b and c from.
//!
//! A partition witness normally carries A·z, B·z and C·z per constraint,
//! evaluated on the host during synthesis: three domain-sized vectors
//! (12.9 GB at 2^27) that a GPU backend then copies to the device. When
//! synthesis runs through a recorded constraint system, the witness can
//! instead carry the assignment and a handle to those matrices
//! ([`PartitionWitness::matrices`](crate::PartitionWitness::matrices)),
//! and the backend evaluates a, b and c where it proves: a GPU backend on
//! the device from a resident copy of the matrices (only the assignment
//! crosses the bus), the CPU backend on the host
//! ([`PartitionWitness::evaluate_abc`](crate::PartitionWitness::evaluate_abc)).
//! Which happens is the backend's word ([`crate::ProverBackend::evaluates_abc`]).
//!
//! [`FlatMatrices`] is the form a device evaluates: the byte encoding of
//! the recorded rows (owned by `cuzk-r1cs`, restated here because device
//! code reads it) cut into independent chunks of a few hundred rows.

use std::sync::Arc;

use blstrs::Scalar;

use crate::error::ProverError;

/// Where a partition's a, b and c are evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AbcAt {
    /// During synthesis, on the host (the witness carries them).
    #[default]
    Synthesis,
    /// By the prover backend, from the matrices the witness points to.
    Backend,
}

/// A recorded constraint system that can evaluate a, b, c.
pub trait ConstraintMatrices: Send + Sync + std::fmt::Debug {
    /// Names the matrices: equal keys, equal matrices (device copies are
    /// kept by it).
    fn key(&self) -> &str;

    /// Constraints, the `input · 0 = 0` ones included (the length of a,
    /// b and c).
    fn constraints(&self) -> usize;

    /// a, b, c at the assignment, on the host, each with room for the
    /// domain; an error naming the first constraint with A·B ≠ C.
    fn evaluate(&self, input: &[Scalar], aux: &[Scalar]) -> Result<[Vec<Scalar>; 3], ProverError>;

    /// The device form, in chunks of at most `chunk_rows` rows.
    fn flat(&self, chunk_rows: u32) -> FlatMatrices;
}

/// A shared handle to a witness's matrices (compared by key).
#[derive(Clone, Debug)]
pub struct MatricesRef(pub Arc<dyn ConstraintMatrices>);

impl PartialEq for MatricesRef {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl std::ops::Deref for MatricesRef {
    type Target = dyn ConstraintMatrices;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

/// Where a run of rows starts in [`FlatMatrices::bytes`]; the unit of
/// parallel work on a device (`#[repr(C)]`: device code reads it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlatChunk {
    /// The first row's index in a, b and c.
    pub row: u64,
    /// Byte offset of the first row's encoding.
    pub pos: u64,
    /// The aux cursor before the first row's delta is added (absolute).
    pub cursor: u64,
    /// Added to relative input references.
    pub input_base: u64,
    /// Rows in the chunk.
    pub rows: u32,
    pub _pad: u32,
}

/// A constraint system in the form a device evaluates.
///
/// Each row of `bytes` is `cursor_delta nA nB nC term*` (LEB128 varints);
/// a term is `code coeff`: `coeff` indexes `coeffs`, `code`'s low two
/// bits say how `code >> 2` names a variable: 0 aux `cursor − v`, 1 aux
/// `v`, 2 input `input_base + v`, 3 input `v`. Chunks tile rows
/// `0..rows`; rows `rows..rows + inputs` are the input constraints
/// (a = input, b = c = 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatMatrices {
    pub rows: u64,
    pub inputs: u64,
    pub aux: u64,
    pub bytes: Vec<u8>,
    pub chunks: Vec<FlatChunk>,
    pub coeffs: Vec<Scalar>,
}

impl FlatMatrices {
    /// Device bytes of this form.
    pub fn device_bytes(&self) -> u64 {
        (self.bytes.len()
            + self.chunks.len() * std::mem::size_of::<FlatChunk>()
            + self.coeffs.len() * 32) as u64
    }

    /// Constraints, the input ones included.
    pub fn constraints(&self) -> u64 {
        self.rows + self.inputs
    }
}
