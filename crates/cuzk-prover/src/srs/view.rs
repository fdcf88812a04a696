//! A borrowed view of one circuit's SRS points ([`SrsRef`]), whatever
//! holds them — decoded in memory ([`Srs`]), a memory-mapped warm file
//! ([`WarmSrs`]), or bellperson's own parameters in tests — with the device
//! copy a prover backend prepared from them, if any.

use std::any::Any;
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};

use super::{Srs, WarmSrs};

/// What a backend made of an SRS on its device ([`ProverBackend::prepare_srs`]):
/// opaque to everyone else. The device copy lives as long as a clone does.
pub type DeviceSrs = Arc<dyn Any + Send + Sync>;

/// Borrowed SRS points of one circuit.
#[derive(Clone, Copy)]
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
    /// The proving backend's device copy of these points, from its
    /// [`ProverBackend::prepare_srs`] (`None`: prove from host memory).
    pub device: Option<&'a (dyn Any + Send + Sync)>,
}

impl std::fmt::Debug for SrsRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SrsRef")
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .field("on_device", &self.device.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> SrsRef<'a> {
    /// The same points, with the device copy `device` a backend prepared
    /// from them.
    pub fn on_device(self, device: &'a DeviceSrs) -> SrsRef<'a> {
        SrsRef {
            device: Some(&**device),
            ..self
        }
    }
}

impl Srs {
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
            device: None,
        }
    }
}

impl WarmSrs {
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
            device: None,
        }
    }
}
