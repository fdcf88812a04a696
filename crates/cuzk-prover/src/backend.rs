//! The prover backend interface: witnesses and an SRS in, proofs out.
//!
//! The engine drives any [`ProverBackend`] — the CPU backend here, a CUDA
//! backend elsewhere — without knowing which. An [`SrsRef`] is a borrowed
//! view of the SRS points, whatever holds them (decoded in memory, a
//! memory-mapped warm file, or bellperson's own parameters in tests).

use std::time::Duration;

use blstrs::{G1Affine, G2Affine, Scalar};

use crate::msm::MsmShape;
use crate::proof::Proof;
use crate::synth::PartitionWitness;

/// Borrowed SRS points of one circuit.
#[derive(Clone, Copy, Debug)]
pub struct SrsRef<'a> {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    /// n−1 points for the H polynomial (n = domain size).
    pub h: &'a [G1Affine],
    /// One point per aux variable.
    pub l: &'a [G1Affine],
    /// Inputs, then aux variables with A density.
    pub a: &'a [G1Affine],
    /// Inputs with B density, then aux variables with B density.
    pub b_g1: &'a [G1Affine],
    pub b_g2: &'a [G2Affine],
}

impl crate::srs::Srs {
    /// A view of the decoded points.
    pub fn as_srs_ref(&self) -> SrsRef<'_> {
        SrsRef {
            alpha_g1: self.vk.alpha_g1,
            beta_g1: self.vk.beta_g1,
            beta_g2: self.vk.beta_g2,
            delta_g1: self.vk.delta_g1,
            delta_g2: self.vk.delta_g2,
            h: &self.h,
            l: &self.l,
            a: &self.a,
            b_g1: &self.b_g1,
            b_g2: &self.b_g2,
        }
    }
}

impl crate::srs::WarmSrs {
    /// A view of the memory-mapped points.
    pub fn as_srs_ref(&self) -> SrsRef<'_> {
        let vk = self.vk();
        SrsRef {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            h: self.h(),
            l: self.l(),
            a: self.a(),
            b_g1: self.b_g1(),
            b_g2: self.b_g2(),
        }
    }
}

/// Why a backend could not prove.
#[derive(Debug, thiserror::Error)]
pub enum ProverError {
    #[error("SRS does not fit the circuit: {0}")]
    Srs(String),
    #[error("invalid input: {0}")]
    Input(String),
    #[error("backend failure: {0}")]
    Backend(String),
}

/// Time per stage of one `prove` call, summed over its partitions.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveStats {
    /// iNTT, coset NTT, pointwise product, coset iNTT (the H polynomial).
    pub ntt: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub assembly: Duration,
    /// How the L, A and B scalars split into zeros, ones and others.
    pub shape: MsmShape,
    /// How a GPU backend staged the partitions (all zero on the CPU).
    pub staging: StagingCounts,
}

/// Partitions per device-memory staging tier of a GPU backend, and the
/// tiers abandoned after an allocation failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingCounts {
    /// a, b and c on the device at once.
    pub all: u32,
    /// a on the device, b and c through a second buffer.
    pub a_only: u32,
    /// Nothing staged: H computed on the host.
    pub none: u32,
    /// Attempts that ran out of device memory and fell back a tier.
    pub fallbacks: u32,
    /// Times a partition found no room even for the lowest tier (or ran out
    /// in its MSM stage) and waited for other partitions on the device to
    /// give memory back, instead of failing.
    pub waits: u32,
}

impl std::ops::AddAssign for StagingCounts {
    fn add_assign(&mut self, o: StagingCounts) {
        self.all += o.all;
        self.a_only += o.a_only;
        self.none += o.none;
        self.fallbacks += o.fallbacks;
        self.waits += o.waits;
    }
}

impl StagingCounts {
    /// `(label, count)` per tier, in the order all, a_only, none.
    pub fn by_tier(&self) -> [(&'static str, u32); 3] {
        [
            ("all", self.all),
            ("a_only", self.a_only),
            ("none", self.none),
        ]
    }
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
    /// Time the device has spent running this process's kernel regions so
    /// far (CUDA events), if the backend measures it; its rate over time
    /// is the device's busy share.
    pub busy: Option<std::time::Duration>,
}

/// Turns partition witnesses into Groth16 proofs.
pub trait ProverBackend: Send + Sync {
    /// A short name (`cpu`, `cuda:0`).
    fn name(&self) -> String;

    /// The accelerator it drives, if any (`None`: the CPU).
    fn device(&self) -> Option<DeviceInfo> {
        None
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
