//! cuzk-prover: cuzk's own Groth16 prover over BLS12-381.
//!
//! Synthesis of one circuit into a partition witness ([`synth`]) is kept
//! apart from the prover backend that turns witnesses into proofs
//! ([`backend`]: the trait, and everything about a backend that depends on
//! its device), so synthesis and proving (on the CPU here, on a GPU in
//! `cuzk-cuda`) overlap and memory stays bounded. Nothing here is
//! specific to a GPU. The CPU backend ([`cpu`]) computes the H polynomial
//! with [`ntt`] and the multi-scalar multiplications with [`msm`]; [`proof`]
//! assembles proofs exactly as bellperson does; [`srs`] reads and writes the
//! parameters; [`density`] holds the A/B query bitmaps.

pub mod backend;
pub mod check;
pub mod cpu;
pub mod cs_parts;
pub mod density;
pub mod error;
pub mod matrices;
pub mod msm;
pub mod ntt;
pub mod pool;
pub mod proof;
pub mod raw;
pub mod srs;
pub mod synth;

pub use backend::{
    BackendMetric, DeviceInfo, DeviceSrs, HostBytes, MetricKind, ProveStats, ProverBackend,
    ProverError, SrsPreparation, SrsRef,
};
pub use cpu::CpuBackend;
pub use density::Density;
pub use matrices::{AbcAt, ConstraintMatrices, FlatChunk, FlatMatrices, MatricesRef};
pub use proof::{Proof, PROOF_BYTES};
pub use synth::{
    synthesize, synthesize_sized, PartitionWitness, SynthError, Synthesized, WitnessSize,
};
