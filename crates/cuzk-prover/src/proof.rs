//! Groth16 proofs and their assembly from the backend's MSM results.
//!
//! The formulas and the byte layout are bellperson's, so that with the same
//! r and s the same circuit gives the same 192 bytes:
//! A = α + Σa + r·δ, B = β + Σb + s·δ (G2),
//! C = s·(Σa) + r·(Σb₁) + s·α + r·β + r·s·δ + H + L.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve};

use crate::error::ProverError;
use crate::srs::SrsRef;

/// Size of a proof in bytes (compressed A, B, C).
pub const PROOF_BYTES: usize = 192;

/// A Groth16 proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

impl Proof {
    /// Compressed A ‖ B ‖ C, as bellperson's `Proof::write`.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }
}

/// The MSM results of one partition.
#[derive(Clone, Copy, Debug)]
pub struct MsmResults {
    /// Σ over the A query (inputs and aux).
    pub a: G1Projective,
    /// Σ over the B query in G1.
    pub b_g1: G1Projective,
    /// Σ over the B query in G2.
    pub b_g2: G2Projective,
    /// Σ h_i·H_i.
    pub h: G1Projective,
    /// Σ aux_i·L_i.
    pub l: G1Projective,
}

/// Assembles a proof with randomisers `r` and `s`.
pub fn assemble(
    srs: &SrsRef<'_>,
    m: &MsmResults,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, ProverError> {
    if bool::from(srs.delta_g1.is_identity() | srs.delta_g2.is_identity()) {
        return Err(ProverError::Srs("delta is the point at infinity".into()));
    }
    let g_a = srs.delta_g1 * r + srs.alpha_g1 + m.a;
    let g_b = srs.delta_g2 * s + srs.beta_g2 + m.b_g2;
    let g_c = m.a * s
        + m.b_g1 * r
        + srs.delta_g1 * (r * s)
        + srs.alpha_g1 * s
        + srs.beta_g1 * r
        + m.h
        + m.l;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}
