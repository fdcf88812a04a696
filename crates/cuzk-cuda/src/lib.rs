//! cuzk-cuda: the CUDA [`ProverBackend`](cuzk_prover::ProverBackend), built
//! on sppark, whose proofs are byte-identical to the CPU backend's; and
//! everything in cuzk that depends on a GPU: `[gpus]` of the config file
//! ([`config`]), the staging tiers and their memory rule ([`staging`]),
//! the SRS on the device (`device_srs.rs`; on a small card the sections
//! that fit, [`residency`], the others streamed from page-locked host
//! memory, `pinned.rs`), the device contexts and their
//! lock (`device.rs`), the backend's metrics ([`metrics`]); and, for
//! parameter generation only, fixed-base products on a GPU
//! (`fixed_base`, with the `cuda` feature).
//!
//! Per partition the GPU computes the H polynomial (sppark's NTT plus our
//! pointwise kernels, on the half-root coset as the CPU backend does: six
//! transforms, the same H as bellperson's seven for a satisfied system;
//! bellperson's generator coset for a 2^28 domain, which has no half root
//! among sppark's roots)
//! and the H, L, A, B_G1 and B_G2 MSMs over the aux variables (our driver
//! around sppark's Pippenger kernels, in G1 and G2; A/B scalars are picked
//! on the GPU by the density bitmaps). The tiny input MSMs run on the CPU
//! with `cuzk_prover::msm`; the proof is assembled by
//! `cuzk_prover::proof::assemble`.
//!
//! Without the `cuda` feature no CUDA code is built and
//! [`CudaBackend::new`] returns [`CudaError::NotBuilt`]. The `lab` feature
//! adds what only cuzk-lab's benches and the GPU tests use
//! (`lab::StageContext`, SRS tiling, the allocation-failure hook); the
//! daemon never enables it.

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod aux_pack;
mod backend;
pub mod config;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod device_srs;
mod error;
#[cfg(feature = "cuda")]
mod ffi;
#[cfg(feature = "cuda")]
pub mod fixed_base;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[cfg(all(feature = "cuda", feature = "lab"))]
pub mod lab;
#[cfg(feature = "cuda")]
mod matrices;
pub mod metrics;
#[cfg(feature = "cuda")]
mod pinned;
#[cfg(feature = "cuda")]
mod raw_tuning;
pub mod residency;
#[cfg(feature = "cuda")]
mod shared_pass;
pub mod staging;
mod timeline;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod urgent_lock;

pub use backend::{CudaBackend, GPU_MIN_POINTS};
pub use config::{
    BackendChoice, GpuTuning, GpusConfig, HostCopy, SrsPlacement, DEFAULT_VRAM_MARGIN,
    SPLIT01_MIN_POINTS,
};
#[cfg(feature = "cuda")]
pub use device_srs::srs_device_bytes;
pub use error::CudaError;
#[cfg(feature = "cuda")]
pub use ffi::{SectionPoint, Source};
pub use metrics::StagingCounts;
pub use staging::StagingTier;
pub use timeline::Timeline;

/// Number of usable CUDA devices; 0 without the `cuda` feature.
pub fn device_count() -> Result<usize, CudaError> {
    #[cfg(feature = "cuda")]
    {
        ffi::device_count()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use blstrs::Scalar;
    use ff::PrimeField;

    /// sppark's NTT uses the 2^32-th root of unity and the coset generator
    /// of its `ntt/parameters/bls12_381.h` (Montgomery limbs copied here);
    /// the H polynomial is bellperson's only if they are blstrs'.
    #[test]
    fn sppark_ntt_constants_are_bellpersons() {
        let mont = |l: [u64; 4]| -> Scalar {
            // SAFETY: Scalar is #[repr(transparent)] over blst_fr, 4 u64
            // limbs in Montgomery form, the layout of sppark's fr_t.
            unsafe { std::mem::transmute::<[u64; 4], Scalar>(l) }
        };
        let root = mont([
            0xb9b58d8c5f0e466a,
            0x5b1b4c801819d7ec,
            0x0af53ae352a31e64,
            0x5bf3adda19e9b27b,
        ]);
        let gen = mont([
            0x0000000efffffff1,
            0x17e363d300189c0f,
            0xff9c57876f8457b0,
            0x351332208fc5a8c4,
        ]);
        assert_eq!(
            root,
            Scalar::ROOT_OF_UNITY,
            "sppark's 2^32-th root of unity"
        );
        assert_eq!(
            gen,
            Scalar::MULTIPLICATIVE_GENERATOR,
            "sppark's coset generator"
        );
        assert_eq!(gen, Scalar::from(7u64));
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_the_backend_says_so() {
        let e = crate::CudaBackend::new(0).expect_err("no CUDA code is built");
        assert_eq!(e.to_string(), "cuzk was built without the `cuda` feature");
        assert_eq!(crate::device_count().ok(), Some(0));
    }
}
