//! Why a prover backend could not prove.

/// Why a backend could not prove.
#[derive(Debug, thiserror::Error)]
pub enum ProverError {
    #[error("SRS does not fit the circuit: {0}")]
    Srs(String),
    #[error("invalid input: {0}")]
    Input(String),
    #[error("backend failure: {0}")]
    Backend(String),
    /// The device itself failed (a CUDA error that poisons its context, a
    /// lost card): nothing more can be proved on it. The engine takes it
    /// out of service and proves the partition on another device.
    #[error("device failure: {0}")]
    Device(String),
    /// The device had no room for the partition this time: every staging
    /// tier failed and waiting for other partitions' memory did not help.
    /// Nothing is wrong with the input or the device; the engine proves
    /// the partition again (a bounded number of times).
    #[error("out of device memory: {0}")]
    Memory(String),
}
