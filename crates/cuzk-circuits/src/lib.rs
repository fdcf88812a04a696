//! cuzk-circuits: the Filecoin circuits, one partition at a time.
//!
//! Each proof kind's inputs (a C1 output, PoSt vanilla proofs, SnapDeals
//! partition proofs) become a [`PartitionSource`]: it knows how many
//! partitions the proof has and synthesizes partition `k` into a
//! `cuzk_prover::PartitionWitness`, building the circuit exactly as
//! filecoin-proofs does (`CompoundProof::circuit` with the same public
//! inputs and parameters), so proofs made from these witnesses verify with
//! filecoin-proofs' verifiers. The kinds' constructors return
//! [`ProofCircuits`]: the engine takes its [`PartitionSource`]; tests and
//! cuzk-lab may also prove the same circuits with bellperson's own prover
//! ([`reference`]). [`chain`] is a synthetic circuit of any size for tests
//! and benchmarks.

pub mod assign;
pub mod chain;
mod porep;
mod post;
pub mod reference;
mod snap;
mod source;

pub use porep::{porep_shape, porep_source};
pub use post::{post_shape, window_post_source, winning_post_source};
pub use reference::{BellpersonReference, ProofCircuits};
pub use snap::{snap_shape, snap_source};
pub(crate) use source::Circuits;
pub use source::{CircuitError, PartitionSource};
