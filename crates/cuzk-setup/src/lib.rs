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
//!   affine additions; [`curve`]: the G1/G2 view of blst it runs on;
//!   [`accelerator`]: the hook for those products off this CPU (a GPU).

pub mod accelerator;
pub mod assembly;
pub mod counting;
pub mod curve;
mod error;
pub mod evaluating;
pub mod filecoin;
pub mod fixed_base;
pub mod generate;
pub mod progress;
pub mod recorded;
mod shape;
pub mod stream;
pub mod writer;

pub use accelerator::Accelerator;
pub use error::SetupError;
pub use filecoin::{
    bellperson_params, generate_filecoin, generate_filecoin_from, generate_filecoin_with,
    generate_in_memory, param_file_names, params_complete, time_bellperson, FilecoinCircuit,
    GeneratedFiles, Timing,
};
pub use generate::{generate, generate_with, SetupStats, ToxicWaste};
pub use progress::{cpu_time, no_progress, peak_rss, Progress, Stage};
pub use shape::Shape;
pub use stream::{generate_streaming, generate_streaming_from, Blank, Matrices};
