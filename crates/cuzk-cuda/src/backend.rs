//! [`CudaBackend`]: the [`ProverBackend`] over one CUDA device.
//!
//! Per partition: a, b, c are uploaded, or evaluated on the device from the
//! circuit's constraint matrices kept there when synthesis left them to the
//! backend ([`ProverBackend::evaluates_abc`], `gpus.abc_on_device`,
//! `matrices.rs`), and turned into H coefficients on the device (host
//! vectors then given back and reported through `abc_freed`);
//! the H, L, A-aux, B_G1-aux and B_G2-aux MSMs run on the GPU against the
//! SRS points on the device, when the engine's SRS manager had them
//! prepared there ([`ProverBackend::prepare_srs`], `device_srs.rs`), or
//! streamed from host memory (resident L, A and B MSMs split their scalars:
//! zeros dropped, ones batch-added, Pippenger over the rest only, see
//! `cuda/split01.cuh`); the input MSMs and MSMs below [`GPU_MIN_POINTS`]
//! points run on the CPU. Every backend on a device shares its contexts
//! (`device.rs`): each call takes a worker context of its own, and only
//! the regions that launch kernels hold the device lock, so one call's
//! copies and host work overlap another's kernels. The backend also says
//! how much host memory a partition takes on it and exports its staging
//! counters as metrics (`metrics.rs`).

use blstrs::Scalar;
use cuzk_prover::backend::{
    BackendMetric, HostBytes, ProveStats, ProverBackend, ProverError, SrsPreparation, SrsRef,
};
use cuzk_prover::proof::Proof;
use cuzk_prover::synth::{PartitionWitness, WitnessSize};

use crate::config::SrsPlacement;
use crate::config::{GpuTuning, GpusConfig, DEFAULT_VRAM_MARGIN};
use crate::error::CudaError;
use crate::metrics::{Counters, StagingCounts};
use crate::timeline::Timeline;
#[cfg(feature = "cuda")]
use cuzk_prover::srs::Section;

/// MSMs with fewer points than this run on the CPU (launches cost more).
pub const GPU_MIN_POINTS: usize = 1 << 10;

/// Proves on one CUDA device.
#[derive(Clone)]
pub struct CudaBackend {
    device: usize,
    placement: SrsPlacement,
    /// Device bytes each partition leaves free when choosing its tier.
    vram_margin: u64,
    /// `gpus.vram_limit` (None: the card).
    vram_limit: Option<u64>,
    /// `gpus.abc_on_device`.
    abc_on_device: bool,
    /// `gpus.partitions_per_pass`: partitions sharing each pass over the
    /// streamed SRS sections (1: none share).
    partitions_per_pass: usize,
    /// The failure hook (`gpus.tuning.fail_device`): partitions this
    /// backend proves before every later one fails.
    fail_after: Option<u64>,
    /// Partitions handed to this backend (and its clones) so far.
    calls: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Partitions per staging tier, fallbacks and waits, since start.
    counters: std::sync::Arc<Counters>,
    #[cfg(feature = "cuda")]
    pub(crate) dev: std::sync::Arc<crate::device::Device>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// A backend on CUDA device `device` (0-based among usable devices),
    /// with the SRS kept on the device when it fits ([`SrsPlacement::Auto`]).
    pub fn new(device: usize) -> Result<CudaBackend, CudaError> {
        CudaBackend::with_placement(device, SrsPlacement::Auto)
    }

    /// A backend on `device` as `[gpus]` says: SRS placement, memory
    /// discipline and `[gpus.tuning]` (which, like `vram_limit`, applies to
    /// the device, so to every backend on it).
    pub fn from_config(device: usize, gpus: &GpusConfig) -> Result<CudaBackend, CudaError> {
        let mut b = CudaBackend::with_placement(device, gpus.srs_on_device)?;
        b.abc_on_device = gpus.abc_on_device;
        b.partitions_per_pass = gpus.partitions_per_pass.max(1);
        if let Some(plain) = gpus.tuning.plain_aux {
            tracing::warn!(
                plain_aux = plain,
                pack_aux = gpus.tuning.pack_aux,
                "gpus.tuning.plain_aux is ignored: aux is copied as it is unless gpus.tuning.pack_aux = true"
            );
        }
        if gpus.tuning.fail_device == Some(device) {
            tracing::warn!(
                device,
                after = gpus.tuning.fail_after_partitions,
                "gpus.tuning.fail_device: this device will fail as if lost (a test hook)"
            );
            b.fail_after = Some(gpus.tuning.fail_after_partitions);
        }
        b.with_memory(
            gpus.vram_limit.map(|l| l.as_u64()),
            gpus.vram_safety_margin.as_u64(),
        )?
        .with_tuning(&gpus.tuning)
    }

    /// A backend on `device` with the SRS placed as `placement` says.
    pub fn with_placement(
        device: usize,
        placement: SrsPlacement,
    ) -> Result<CudaBackend, CudaError> {
        #[cfg(feature = "cuda")]
        {
            let count = crate::ffi::device_count()?;
            if device >= count {
                return Err(CudaError::NoDevice { device, count });
            }
            Ok(CudaBackend {
                device,
                placement,
                vram_margin: DEFAULT_VRAM_MARGIN,
                vram_limit: None,
                abc_on_device: true,
                partitions_per_pass: crate::config::DEFAULT_PARTITIONS_PER_PASS,
                fail_after: None,
                calls: Default::default(),
                counters: Default::default(),
                dev: shared_device(device)?,
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (device, placement, DEFAULT_VRAM_MARGIN);
            Err(CudaError::NotBuilt)
        }
    }

    /// Up to `k` partitions of one circuit share each pass over the SRS
    /// sections streamed from host memory (`gpus.partitions_per_pass`; 1:
    /// none share).
    pub fn with_partitions_per_pass(mut self, k: usize) -> Self {
        self.partitions_per_pass = k.max(1);
        self
    }

    /// Device memory discipline: `vram_limit` bytes are all the card is
    /// taken to have (`gpus.vram_limit`; `None`: the whole card; it applies
    /// to the device, so to every backend on it) and each partition leaves
    /// `margin` bytes free when it chooses its staging tier
    /// (`gpus.vram_safety_margin`).
    pub fn with_memory(mut self, vram_limit: Option<u64>, margin: u64) -> Result<Self, CudaError> {
        self.vram_margin = margin;
        self.vram_limit = vram_limit;
        #[cfg(feature = "cuda")]
        {
            let limit = vram_limit.unwrap_or(0);
            self.dev.for_each_ctx(|c| c.set_vram_limit(limit, margin))?;
            Ok(self)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = vram_limit;
            Err(CudaError::NotBuilt)
        }
    }

    /// `[gpus.tuning]` for the device's contexts (every backend on it).
    pub fn with_tuning(self, tuning: &GpuTuning) -> Result<Self, CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.dev.for_each_ctx(|c| c.set_tuning(tuning))?;
            Ok(self)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = tuning;
            Err(CudaError::NotBuilt)
        }
    }

    /// Where this backend keeps the SRS points.
    pub fn placement(&self) -> SrsPlacement {
        self.placement
    }

    /// Partitions this backend (and its clones) proved per staging tier,
    /// with fallbacks and waits, since it was made.
    pub fn staging_counts(&self) -> StagingCounts {
        self.counters.get()
    }

    /// Frees the device buffers kept between calls (a/b/c, aux, picked
    /// scalars); the next call allocates them again. Waits for a running
    /// call on this device to end.
    pub fn release_buffers(&self) -> Result<(), CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.dev.for_each_ctx(|c| c.trim())
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// The device index.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The device's name as CUDA reports it.
    pub fn device_name(&self) -> Result<String, CudaError> {
        #[cfg(feature = "cuda")]
        {
            crate::ffi::device_name(self.device)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }
}

impl CudaBackend {
    /// Free and total VRAM of the device, in bytes.
    pub fn memory(&self) -> Result<(u64, u64), CudaError> {
        #[cfg(feature = "cuda")]
        {
            crate::ffi::mem_info(self.device)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// Total time the device has been held for kernels by the partitions
    /// of every backend on it so far: each region from taking the device
    /// lock to its last kernel's end, timed by CUDA events on the device's
    /// main stream. Over a wall-clock interval, its growth divided by the
    /// interval is the device's busy share.
    pub fn gpu_busy(&self) -> Result<std::time::Duration, CudaError> {
        #[cfg(feature = "cuda")]
        {
            Ok(self.dev.busy())
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// Starts a new GPU timeline for [`CudaBackend::gpu_timeline`] (an
    /// epoch event on the device's main stream).
    pub fn mark_gpu_timeline(&self) -> Result<(), CudaError> {
        #[cfg(feature = "cuda")]
        {
            self.dev.mark_timeline()
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }

    /// The kernel regions of the device since the last
    /// [`CudaBackend::mark_gpu_timeline`], on the GPU's clock: the busy
    /// share over the span from the first region's begin to the last
    /// one's end needs no host clock at all.
    pub fn gpu_timeline(&self) -> Result<Timeline, CudaError> {
        #[cfg(feature = "cuda")]
        {
            Ok(self.dev.timeline())
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(CudaError::NotBuilt)
        }
    }
}

/// The contexts of `device`, shared by every backend on it: sppark's
/// streams and MSM counters are per device, so kernels of two calls must
/// never run on one device at once (the device lock, see `device.rs`).
#[cfg(feature = "cuda")]
fn shared_device(device: usize) -> Result<std::sync::Arc<crate::device::Device>, CudaError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Table = Mutex<HashMap<usize, Arc<crate::device::Device>>>;
    static DEVICES: OnceLock<Table> = OnceLock::new();
    let mut table = DEVICES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(d) = table.get(&device) {
        return Ok(Arc::clone(d));
    }
    let d = Arc::new(crate::device::Device::new(device)?);
    table.insert(device, Arc::clone(&d));
    Ok(d)
}

impl ProverBackend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{}", self.device)
    }

    fn device(&self) -> Option<cuzk_prover::DeviceInfo> {
        let (memory_free, memory_total) = self.memory().unwrap_or((0, 0));
        Some(cuzk_prover::DeviceInfo {
            ordinal: self.device as u32,
            name: self
                .device_name()
                .unwrap_or_else(|e| format!("unknown ({e})")),
            memory_total,
            memory_free,
            memory_limit: self.vram_limit,
            busy: self.gpu_busy().ok(),
        })
    }

    /// a, b, c as synthesized (at most the domain n each): uploaded, or at
    /// the lowest staging tier padded to n for H on the host; the
    /// assignments and densities. No picked scalars (the A and B scalars
    /// are picked on the device at every tier), MSM scalar copies or point
    /// pointers: the MSMs run on the device.
    fn host_bytes(&self, size: &WitnessSize) -> HostBytes {
        let (n, aux, inputs) = (size.constraints as u64, size.aux as u64, size.inputs as u64);
        HostBytes {
            abc: 3 * 32 * n,
            rest: 32 * (aux + inputs) + (2 * aux + inputs) / 8 + 64,
        }
    }

    /// With `gpus.abc_on_device`, when the card (or `gpus.vram_limit`)
    /// can hold the a-only staging tier with a, b and c evaluated on it:
    /// two domain-sized vectors and aux, plus the margin. The MSM scratch
    /// and a resident SRS are not counted here; a partition that finds
    /// too little room waits for memory as at any tier.
    fn evaluates_abc(&self, size: &WitnessSize) -> bool {
        if !self.abc_on_device {
            return false;
        }
        let total = match self.vram_limit {
            Some(l) => l,
            None => match self.memory() {
                Ok((_, total)) => total,
                Err(_) => return false,
            },
        };
        let need = crate::StagingTier::AOnly
            .need_with(size.constraints, size.aux, 0, true)
            .saturating_add(self.vram_margin);
        need <= total
    }

    fn prepare_srs(
        &self,
        srs: &SrsRef<'_>,
        size: &WitnessSize,
    ) -> Result<SrsPreparation, ProverError> {
        #[cfg(feature = "cuda")]
        {
            Ok(crate::device_srs::prepare(
                &self.dev,
                self.device,
                srs,
                (self.placement, self.partitions_per_pass),
                size,
            )?)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (srs, size);
            Err(CudaError::NotBuilt.into())
        }
    }

    fn partitions_per_pass(&self, device: Option<&cuzk_prover::backend::DeviceSrs>) -> usize {
        #[cfg(feature = "cuda")]
        {
            // Only where some witness section streams from host memory.
            let streams = match device.and_then(|d| d.downcast_ref::<crate::device_srs::OnDevice>())
            {
                Some(d) => [Section::L, Section::A, Section::BG1, Section::BG2]
                    .iter()
                    .any(|s| !d.resident(*s)),
                None => true,
            };
            if streams {
                self.partitions_per_pass
            } else {
                1
            }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = device;
            1
        }
    }

    fn metrics(&self) -> Vec<BackendMetric> {
        crate::metrics::samples(&self.counters.get(), self.gpu_busy().ok())
    }

    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        cuzk_prover::backend::check_batch(witnesses.len(), r, s)?;
        let call = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.fail_after.is_some_and(|n| call >= n) {
            return Err(CudaError::DeviceLost(format!(
                "device {}: the failure hook gpus.tuning.fail_device",
                self.device
            ))
            .into());
        }
        #[cfg(feature = "cuda")]
        {
            if shared::applies(self, witnesses, srs) {
                shared::prove(self, &self.counters, witnesses, srs, (r, s), abc_freed)
            } else {
                gpu::prove(self, &self.counters, witnesses, srs, r, s, abc_freed)
            }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (srs, abc_freed);
            Err(CudaError::NotBuilt.into())
        }
    }
}

#[cfg(feature = "cuda")]
mod gpu;
#[cfg(feature = "cuda")]
mod shared;
