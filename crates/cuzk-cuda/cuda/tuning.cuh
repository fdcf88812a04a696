//! The CUDA side's settings: `[gpus.tuning]` of the daemon's config file
//! (`src/config.rs`), handed to every context by `cuzk_cuda_set_tuning`.
//! Nothing here reads the environment; every knob that changes what the
//! kernels or copies do is a field below, and `--print-config` shows it.
//!
//! The layout is `RawTuning` in `src/raw_tuning.rs` (repr(C)): keep the two in
//! step.

#ifndef __CUZK_TUNING_CUH__
#define __CUZK_TUNING_CUH__

#include <cstdint>

struct cuzk_cuda_tuning {
    // Window width (10..=22) forced on MSMs of at least 2^26 points, and on
    // those of 2^21 to 2^26 points; 0: the driver's rule (msm_driver.cuh).
    // The scratch estimate Rust sizes the staging tiers with
    // (cuzk_cuda_msm_scratch) applies the same widths.
    uint32_t msm_window_bits;
    uint32_t msm_window_bits_mid;
    // Host-to-device copies (host_copy.cuh): -1 each context's own choice,
    // else a host_copy_mode (0 chunked, 1 registered, 2 pageable) for all.
    int32_t host_copy;
    // Host threads filling a chunked copy's chunks (0: one per core, at
    // most 16).
    uint32_t copy_threads;
    // Traces printed to stderr: each MSM's phases, the H stage's steps, the
    // 0/1 split's phases; and a check of every split MSM against plain
    // Pippenger (slow).
    uint8_t msm_trace;
    uint8_t ntt_trace;
    uint8_t split_trace;
    uint8_t split_check;
    // A streamed split MSM runs Pippenger over each tile's others as soon
    // as they are gathered, beside the next tiles' copies, instead of over
    // all of them after the last tile (split01.cuh).
    uint8_t split_tile_others;
    // A streamed MSM of several batches keeps its buckets' sums from batch
    // to batch and integrates them once, sorting the next batch's digits
    // while this one accumulates (two sets of digits; msm_driver.cuh).
    uint8_t carry_buckets;
    // A streamed split MSM's others go through Pippenger on the context's
    // side streams while the stage goes on to its next MSM (the next
    // section's tiles copied meanwhile); their sums are collected by
    // ticket before the stage ends (deferred.cuh).
    uint8_t overlap_others;
    // Buckets of more points than this are summed by whole blocks of
    // threads, not one thread each (accumulate.cuh); 0: one thread each.
    uint32_t heavy_bucket_points;
    // Points of one tile of an MSM streamed from host memory (0: the
    // driver's choice, at most 2^24; small values test several tiles at a
    // small size).
    uint64_t stream_tile_points;
};

// The defaults: no trace, the rules, each context's copy mode.
static inline cuzk_cuda_tuning default_tuning()
{
    cuzk_cuda_tuning t;
    t.msm_window_bits = 0;
    t.msm_window_bits_mid = 0;
    t.host_copy = -1;
    t.copy_threads = 0;
    t.msm_trace = 0;
    t.ntt_trace = 0;
    t.split_trace = 0;
    t.split_check = 0;
    t.split_tile_others = 0;
    t.carry_buckets = 0;
    t.overlap_others = 0;
    t.heavy_bucket_points = 1024;  // config.rs: DEFAULT_HEAVY_BUCKET_POINTS
    t.stream_tile_points = 0;
    return t;
}

#endif
