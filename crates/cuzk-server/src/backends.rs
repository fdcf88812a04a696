//! Choosing the prover backends from `[gpus]`: the CPU, or one CUDA backend
//! per configured device, made by `cuzk-cuda` from its own config.

use std::sync::Arc;

use cuzk_cuda::{BackendChoice, CudaBackend, GpusConfig};
use cuzk_prover::{CpuBackend, ProverBackend};
use tracing::{info, warn};

/// Why no backend `[gpus]` asks for could be made.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Cuda(#[from] cuzk_cuda::CudaError),
    #[error("no usable CUDA device")]
    NoDevice,
    #[error("gpus.devices: device {device}: {source}")]
    Device {
        device: usize,
        source: cuzk_cuda::CudaError,
    },
}

/// The backends `[gpus]` asks for, one per device.
pub fn from_config(gpus: &GpusConfig) -> Result<Vec<Arc<dyn ProverBackend>>, BackendError> {
    match gpus.backend {
        BackendChoice::Cpu => Ok(vec![Arc::new(CpuBackend)]),
        BackendChoice::Cuda => cuda(gpus),
        BackendChoice::Auto => match cuda(gpus) {
            Ok(b) => Ok(b),
            Err(e) => {
                if cfg!(feature = "cuda") {
                    warn!("gpus.backend = \"auto\": no CUDA backend ({e}); proving on the CPU");
                } else {
                    info!("built without CUDA: proving on the CPU");
                }
                Ok(vec![Arc::new(CpuBackend)])
            }
        },
    }
}

fn cuda(gpus: &GpusConfig) -> Result<Vec<Arc<dyn ProverBackend>>, BackendError> {
    let count = cuzk_cuda::device_count()?;
    if !cfg!(feature = "cuda") {
        return Err(cuzk_cuda::CudaError::NotBuilt.into());
    }
    if count == 0 {
        return Err(BackendError::NoDevice);
    }
    let chosen: Vec<usize> = if gpus.devices.is_empty() {
        (0..count).collect()
    } else {
        gpus.devices.clone()
    };
    let mut out: Vec<Arc<dyn ProverBackend>> = Vec::new();
    for d in chosen {
        let b = CudaBackend::from_config(d, gpus)
            .map_err(|source| BackendError::Device { device: d, source })?;
        info!(
            device = d,
            name = b.device_name().unwrap_or_default(),
            srs_on_device = ?gpus.srs_on_device,
            vram_limit = gpus.vram_limit.map_or(0, |l| l.as_u64()),
            vram_safety_margin = gpus.vram_safety_margin.as_u64(),
            partitions_per_pass = gpus.partitions_per_pass,
            tuning = ?gpus.tuning,
            "CUDA prover backend"
        );
        out.push(Arc::new(b));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_auto_without_a_device_prove_on_the_cpu() {
        let cpu = from_config(&GpusConfig {
            backend: BackendChoice::Cpu,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(cpu.iter().map(|b| b.name()).collect::<Vec<_>>(), ["cpu"]);
        if cuzk_cuda::device_count().unwrap_or(0) == 0 {
            let auto = from_config(&GpusConfig::default()).unwrap();
            assert_eq!(auto.iter().map(|b| b.name()).collect::<Vec<_>>(), ["cpu"]);
            let e = from_config(&GpusConfig {
                backend: BackendChoice::Cuda,
                ..Default::default()
            })
            .err()
            .expect("cuda without a device is refused")
            .to_string();
            assert!(e.contains("cuda") || e.contains("CUDA"), "{e}");
        }
    }
}
