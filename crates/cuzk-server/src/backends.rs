//! Choosing the prover backends from `[gpus]`: the CPU, or one CUDA backend
//! per configured device.

use std::sync::Arc;

use cuzk_core::config::{BackendChoice, GpusConfig, SrsOnDevice};
use cuzk_cuda::{CudaBackend, SrsPlacement};
use cuzk_prover::{CpuBackend, ProverBackend};
use tracing::{info, warn};

/// The backends `[gpus]` asks for, one per device.
pub fn from_config(gpus: &GpusConfig) -> Result<Vec<Arc<dyn ProverBackend>>, String> {
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

fn cuda(gpus: &GpusConfig) -> Result<Vec<Arc<dyn ProverBackend>>, String> {
    let devices = &gpus.devices;
    let placement = match gpus.srs_on_device {
        SrsOnDevice::Auto => SrsPlacement::Auto,
        SrsOnDevice::Always => SrsPlacement::Always,
        SrsOnDevice::Never => SrsPlacement::Never,
    };
    let count = cuzk_cuda::device_count().map_err(|e| e.to_string())?;
    if !cfg!(feature = "cuda") {
        return Err(cuzk_cuda::CudaError::NotBuilt.to_string());
    }
    if count == 0 {
        return Err("no usable CUDA device".into());
    }
    let chosen: Vec<usize> = if devices.is_empty() {
        (0..count).collect()
    } else {
        devices.to_vec()
    };
    let mut out: Vec<Arc<dyn ProverBackend>> = Vec::new();
    for d in chosen {
        if out.iter().any(|b| b.name() == format!("cuda:{d}")) {
            return Err(format!("gpus.devices lists device {d} twice"));
        }
        let b =
            CudaBackend::with_placement(d, placement).map_err(|e| format!("gpus.devices: {e}"))?;
        let limit = gpus.vram_limit.map(|l| l.as_u64());
        let margin = gpus.vram_safety_margin.as_u64();
        let b = b
            .with_memory(limit, margin)
            .map_err(|e| format!("gpus.vram_limit: {e}"))?;
        let name = b.device_name().unwrap_or_default();
        info!(
            device = d,
            name,
            srs_on_device = ?placement,
            vram_limit = limit.unwrap_or(0),
            vram_safety_margin = margin,
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
            .expect("cuda without a device is refused");
            assert!(e.contains("cuda") || e.contains("CUDA"), "{e}");
        }
    }
}
