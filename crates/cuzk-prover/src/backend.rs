//! The prover backend interface: witnesses and an SRS in, proofs out.
//!
//! The engine drives any [`ProverBackend`] — the CPU backend here, the CUDA
//! backend in `cuzk-cuda` — without knowing which. Whatever depends on the
//! device is the backend's to say: the host memory a partition takes while
//! it proves it ([`ProverBackend::host_bytes`]), how an SRS is made ready on
//! its device ([`ProverBackend::prepare_srs`]; the engine's SRS manager
//! keeps what it returns in its device tier) and its own metrics
//! ([`ProverBackend::metrics`]). An [`SrsRef`] is a borrowed view of the SRS
//! points, whatever holds them (decoded in memory, a memory-mapped warm
//! file, or bellperson's own parameters in tests), with the device copy the
//! backend prepared, if any.

use std::time::Duration;

use blstrs::Scalar;

pub use crate::error::ProverError;
use crate::msm::MsmShape;
use crate::proof::Proof;
pub use crate::srs::{DeviceSrs, SrsRef};
use crate::synth::{PartitionWitness, WitnessSize};

/// Time per stage of one `prove` call, summed over its partitions.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveStats {
    /// The H polynomial's transforms and pointwise steps (see `ntt::compute_h`).
    pub ntt: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub assembly: Duration,
    /// How the L, A and B scalars split into zeros, ones and others.
    pub shape: MsmShape,
    /// Bytes of SRS points copied from host memory to a device (a GPU
    /// backend streaming sections it does not keep there).
    pub streamed_bytes: u64,
}

impl ProveStats {
    pub fn total(&self) -> Duration {
        self.ntt
            + self.msm_h
            + self.msm_l
            + self.msm_a
            + self.msm_b_g1
            + self.msm_b_g2
            + self.assembly
    }
}

/// What a backend's device reports about itself, for status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's index (e.g. the CUDA ordinal).
    pub ordinal: u32,
    pub name: String,
    pub memory_total: u64,
    pub memory_free: u64,
    /// What the process may use of it (`gpus.vram_limit`), when less is
    /// set than the card has.
    pub memory_limit: Option<u64>,
    /// Time the device has spent running this process's kernel regions so
    /// far (CUDA events), if the backend measures it; its rate over time
    /// is the device's busy share.
    pub busy: Option<std::time::Duration>,
}

/// Host memory one partition takes while a backend proves it, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostBytes {
    /// a/b/c and what computing H from them takes: given back when the
    /// backend reports them consumed (`abc_freed`).
    pub abc: u64,
    /// Everything else (assignments, densities, MSM scalars), until the
    /// partition is proved.
    pub rest: u64,
}

impl HostBytes {
    pub fn total(&self) -> u64 {
        self.abc + self.rest
    }
}

/// What [`ProverBackend::prepare_srs`] did.
#[derive(Clone)]
pub enum SrsPreparation {
    /// Ready on the device, taking `bytes` of its memory: pass it with the
    /// points ([`SrsRef::on_device`]); dropping every clone frees it.
    /// `resident`: the sections (of h, l, a, b_g1, b_g2) on the device; the
    /// others are streamed from host memory for every MSM.
    Ready {
        srs: DeviceSrs,
        bytes: u64,
        resident: Vec<crate::srs::Section>,
    },
    /// The device holds another prepared SRS: it must be released first.
    Occupied,
    /// Proved from host memory: this backend keeps nothing on a device, it
    /// is configured not to, or the SRS does not fit.
    Host,
}

/// Whether a [`BackendMetric`] only grows or goes up and down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
}

/// One sample of a backend's own metrics ([`ProverBackend::metrics`]),
/// exported by the engine with a `backend` label added.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendMetric {
    /// Prometheus name and help text; samples of one name share both.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricKind,
    /// Labels besides `backend`.
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// Turns partition witnesses into Groth16 proofs.
pub trait ProverBackend: Send + Sync {
    /// A short name (`cpu`, `cuda:0`).
    fn name(&self) -> String;

    /// The accelerator it drives, if any (`None`: the CPU).
    fn device(&self) -> Option<DeviceInfo> {
        None
    }

    /// Host memory a partition of `size` (`constraints`: the domain size)
    /// takes while this backend proves it: what the engine reserves from
    /// its memory budget before synthesizing one.
    fn host_bytes(&self, size: &WitnessSize) -> HostBytes;

    /// Whether this backend evaluates a, b and c of partitions of `size`
    /// itself, from the constraint matrices the witness points to
    /// ([`crate::AbcAt::Backend`]; host memory then holds only the
    /// assignment). By default it does not: synthesis evaluates them.
    fn evaluates_abc(&self, size: &WitnessSize) -> bool {
        let _ = size;
        false
    }

    /// Makes `srs` ready on this backend's device for partitions of `size`
    /// (for instance its points uploaded to device memory). The engine's
    /// SRS manager calls it and keeps a [`SrsPreparation::Ready`] result in
    /// its device tier for as long as the host copy is resident; by default
    /// there is nothing to prepare.
    fn prepare_srs(
        &self,
        srs: &SrsRef<'_>,
        size: &WitnessSize,
    ) -> Result<SrsPreparation, ProverError> {
        let _ = (srs, size);
        Ok(SrsPreparation::Host)
    }

    /// How many partitions of one circuit the engine may hand this
    /// backend in one call, given the SRS as its device holds it
    /// (`device`: what [`ProverBackend::prepare_srs`] made ready, if
    /// anything): more than one where they share work (a GPU streaming
    /// SRS sections from host memory reads each once for the group). By
    /// default one.
    fn partitions_per_pass(&self, device: Option<&DeviceSrs>) -> usize {
        let _ = device;
        1
    }

    /// The backend's own metrics, read at every scrape (none by default).
    fn metrics(&self) -> Vec<BackendMetric> {
        Vec::new()
    }

    /// Proves a batch of partitions of one circuit with randomisers
    /// `r[i]`, `s[i]` for witness `i`. The a/b/c vectors of each witness are
    /// consumed (emptied) as soon as the H polynomial no longer needs them.
    fn prove(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        self.prove_with(witnesses, srs, r, s, &mut |_| {})
    }

    /// As [`ProverBackend::prove`], calling `abc_freed(i)` as soon as
    /// witness `i`'s a/b/c vectors have been consumed and freed, so their
    /// memory can be given back before the MSMs end.
    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError>;
}

/// Checks that a batch has one r and one s per witness.
pub fn check_batch(witnesses: usize, r: &[Scalar], s: &[Scalar]) -> Result<(), ProverError> {
    if r.len() != witnesses || s.len() != witnesses {
        return Err(ProverError::Input(format!(
            "{witnesses} witnesses but {} r and {} s values",
            r.len(),
            s.len()
        )));
    }
    Ok(())
}

/// Checks that the SRS sizes fit a witness.
pub fn check_srs(
    w: &PartitionWitness,
    srs: &SrsRef<'_>,
    domain_size: usize,
) -> Result<(), ProverError> {
    let need = |what: &str, have: usize, want: usize| {
        if have == want {
            Ok(())
        } else {
            Err(ProverError::Srs(format!(
                "{what} has {have} points, the circuit needs {want}"
            )))
        }
    };
    need("h", srs.h.len(), domain_size - 1)?;
    need("l", srs.l.len(), w.aux.len())?;
    need("a", srs.a.len(), w.input.len() + w.a_aux_density.count())?;
    need(
        "b_g1",
        srs.b_g1.len(),
        w.b_input_density.count() + w.b_aux_density.count(),
    )?;
    need(
        "b_g2",
        srs.b_g2.len(),
        w.b_input_density.count() + w.b_aux_density.count(),
    )?;
    Ok(())
}
