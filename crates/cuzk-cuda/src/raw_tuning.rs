//! `[gpus.tuning]` as the CUDA side reads it: [`RawTuning`] is `struct
//! cuzk_cuda_tuning` of `cuda/tuning.cuh` (keep the two in step), made from
//! the config's [`GpuTuning`] and handed over by `cuzk_cuda_set_tuning`.

use crate::config::{GpuTuning, HostCopy};

/// `struct cuzk_cuda_tuning` of `cuda/tuning.cuh`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawTuning {
    msm_window_bits: u32,
    msm_window_bits_mid: u32,
    host_copy: i32,
    copy_threads: u32,
    msm_trace: u8,
    ntt_trace: u8,
    split_trace: u8,
    split_check: u8,
    split_tile_others: u8,
    carry_buckets: u8,
    overlap_others: u8,
    heavy_bucket_points: u32,
    stream_tile_points: u64,
}

impl From<&GpuTuning> for RawTuning {
    fn from(t: &GpuTuning) -> RawTuning {
        RawTuning {
            msm_window_bits: t.msm_window_bits,
            msm_window_bits_mid: t.msm_window_bits_mid,
            // host_copy_mode in cuda/host_copy.cuh.
            host_copy: match t.host_copy {
                HostCopy::Auto => -1,
                HostCopy::Chunked => 0,
                HostCopy::Registered => 1,
                HostCopy::Pageable => 2,
            },
            copy_threads: t.copy_threads,
            msm_trace: u8::from(t.trace_msm),
            ntt_trace: u8::from(t.trace_ntt),
            split_trace: u8::from(t.trace_split),
            split_check: u8::from(t.check_split),
            split_tile_others: u8::from(t.split_tile_others),
            carry_buckets: u8::from(t.carry_buckets),
            overlap_others: u8::from(t.overlap_others),
            heavy_bucket_points: t.heavy_bucket_points,
            stream_tile_points: t.stream_tile_points,
        }
    }
}
