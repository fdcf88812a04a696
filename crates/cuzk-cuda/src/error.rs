//! Why the CUDA backend could not start or prove, and how that reads as
//! a prover error.

/// Why the CUDA backend could not start or prove.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("cuzk was built without the `cuda` feature")]
    NotBuilt,
    #[error("CUDA device {device} does not exist ({count} usable devices)")]
    NoDevice { device: usize, count: usize },
    #[error("cuda: {0}")]
    Cuda(String),
    /// The device (or `gpus.vram_limit`) had no room; the context is intact.
    #[error("cuda: out of device memory: {0}")]
    OutOfMemory(String),
    #[error("cuda: invalid input: {0}")]
    Input(String),
    /// An error that leaves the device's context unusable (an illegal
    /// address, a launch failure, an uncorrectable ECC error...), or the
    /// failure hook `gpus.tuning.fail_device`: nothing more can run on it.
    #[error("cuda: device lost: {0}")]
    DeviceLost(String),
}

impl From<CudaError> for cuzk_prover::ProverError {
    fn from(e: CudaError) -> Self {
        match e {
            CudaError::Input(m) => cuzk_prover::ProverError::Input(m),
            CudaError::Cuda(m) => cuzk_prover::ProverError::Backend(format!("cuda: {m}")),
            CudaError::DeviceLost(m) => cuzk_prover::ProverError::Device(format!("cuda: {m}")),
            CudaError::OutOfMemory(m) => cuzk_prover::ProverError::Memory(format!("cuda: {m}")),
            other => cuzk_prover::ProverError::Backend(other.to_string()),
        }
    }
}
