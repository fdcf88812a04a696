//! `gen-params --gpu`: the parameter generator's fixed-base products on a
//! CUDA device (cuzk-cuda's `FixedBaseDevice` behind cuzk-setup's
//! [`Accelerator`]); without the `cuda` feature, a clear error.

use cuzk_setup::Accelerator;

/// The accelerator for CUDA device `device`.
pub fn on_device(device: usize) -> anyhow::Result<Box<dyn Accelerator>> {
    imp::on_device(device)
}

#[cfg(feature = "cuda")]
mod imp {
    use std::sync::Mutex;

    use blst::{blst_p1, blst_p2};
    use blstrs::Scalar;
    use cuzk_cuda::fixed_base::{FixedBaseDevice, FixedBaseTable};
    use cuzk_setup::curve::{G1, G2};
    use cuzk_setup::Accelerator;

    /// One circuit's tables at a time (each circuit has its own bases).
    struct Gpu {
        device: usize,
        tables: Mutex<Option<FixedBaseDevice>>,
    }

    pub fn on_device(device: usize) -> anyhow::Result<Box<dyn Accelerator>> {
        let count = cuzk_cuda::device_count()?;
        if device >= count {
            anyhow::bail!("--gpu {device}: no such CUDA device ({count} usable)");
        }
        Ok(Box::new(Gpu {
            device,
            tables: Mutex::new(None),
        }))
    }

    impl Gpu {
        fn with<T>(
            &self,
            f: impl FnOnce(&FixedBaseDevice) -> Result<T, cuzk_cuda::CudaError>,
        ) -> Result<T, String> {
            let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
            let t = tables.as_ref().ok_or("no fixed-base tables loaded")?;
            f(t).map_err(|e| e.to_string())
        }
    }

    impl Accelerator for Gpu {
        fn name(&self) -> String {
            format!("CUDA device {}", self.device)
        }

        fn load(
            &self,
            g1: &cuzk_setup::fixed_base::FixedBaseTable<G1>,
            g2: &cuzk_setup::fixed_base::FixedBaseTable<G2>,
        ) -> Result<(), String> {
            let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
            // The previous circuit's tables go first.
            *tables = None;
            let window = |w: usize| u32::try_from(w).map_err(|e| e.to_string());
            let device = FixedBaseDevice::new(
                self.device,
                FixedBaseTable {
                    points: g1.points(),
                    window: window(g1.window())?,
                },
                FixedBaseTable {
                    points: g2.points(),
                    window: window(g2.window())?,
                },
            )
            .map_err(|e| e.to_string())?;
            *tables = Some(device);
            Ok(())
        }

        fn g1(&self, scalars: &[Scalar], out: &mut [blst_p1]) -> Result<(), String> {
            self.with(|t| t.g1(scalars, out))
        }

        fn g2(&self, scalars: &[Scalar], out: &mut [blst_p2]) -> Result<(), String> {
            self.with(|t| t.g2(scalars, out))
        }
    }
}

#[cfg(not(feature = "cuda"))]
mod imp {
    pub fn on_device(device: usize) -> anyhow::Result<Box<dyn cuzk_setup::Accelerator>> {
        anyhow::bail!(
            "--gpu {device}: this cuzk-bench was built without the `cuda` feature \
             (cargo build --release -p cuzk-bench --features cuda)"
        )
    }
}
