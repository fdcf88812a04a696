//! Bucket integration over all SMs: the step after `accumulate` that turns
//! each window's buckets into the pairs our host code (`window_sum` in
//! `msm_driver.cuh`) combines.
//!
//! sppark's `integrate` runs one block per window, 256 threads each walking
//! 2^(w−9) buckets: at 20-bit windows that is 13 blocks busy while the
//! other SMs idle (docs/PERF.md). Here each window is cut into
//! `m` times more spans (`integrate_spans`, many blocks per window), and a
//! second small kernel (`integrate_merge`) folds every m consecutive
//! spans' pairs into one, so the result has sppark's layout: per window
//! and thread t < T, at row[2t] the sum of the span's buckets weighted by
//! their index within the span (+1), and at row[2t+1] the span's plain sum.
//!
//! The top window of a scalar narrower than nwins·w bits has its digits'
//! points spread over groups of `stride` = 2^(w − top) buckets, all of a
//! group one weight (sppark's sort and ours spread them so); a bucket's
//! weight counts only whole groups. Every span must hold whole strides,
//! which bounds m (`integrate_fanout`).

#ifndef __CUZK_INTEGRATE_CUH__
#define __CUZK_INTEGRATE_CUH__

// Threads of a level-1 block (each `degree` lanes one logical thread).
#ifndef INTEGRATE_SPAN_THREADS
#define INTEGRATE_SPAN_THREADS 128
#endif

// The stride mask of window y (0 for a full-width window).
__device__ __forceinline__ uint32_t window_mask(uint32_t y, uint32_t wbits,
                                                uint32_t nbits)
{
    if ((y + 1) * wbits <= nbits)
        return 0;
    uint32_t lsbits = nbits - y * wbits;
    return (1U << (wbits - lsbits)) - 1;
}

// Level 1: grid (blocks per window, nwins). Logical thread t1 of window y
// takes buckets [t1·k1, (t1+1)·k1) of its row, k1 = 2^(w−1) / T1, T1 =
// logical threads per window; writes (weighted, plain) to pairs[y][t1].
template<class bucket_T, class bucket_mem = typename bucket_T::mem_t>
__launch_bounds__(INTEGRATE_SPAN_THREADS) __global__
void integrate_spans(const bucket_mem* buckets, bucket_mem* pairs,
                     uint32_t wbits, uint32_t nbits)
{
    const uint32_t degree = bucket_T::degree;
    const uint32_t per_block = INTEGRATE_SPAN_THREADS / degree;
    const uint32_t T1 = per_block * gridDim.x;
    const uint32_t y = blockIdx.y;
    const uint32_t t1 = blockIdx.x * per_block + threadIdx.x / degree;
    const size_t K = (size_t)1 << (wbits - 1);
    const uint32_t k1 = (uint32_t)(K / T1);
    const uint32_t mask = window_mask(y, wbits, nbits);
    const bucket_mem* row = buckets + y * K + (size_t)t1 * k1;

    uint32_t i = k1 - 1;
    bucket_T acc = row[i];
    bucket_T res;
    if (i & mask)
        res.inf();
    else
        res = acc;
    #pragma unroll 1
    while (i--) {
        bucket_T p = row[i];
        acc.add(p);
        if ((i & mask) == 0)
            res.add(acc);
    }
    bucket_mem* out = pairs + ((size_t)y * T1 + t1) * 2;
    out[0] = res;
    out[1] = acc;
}

// Level 2: one block of MSM_NTHREADS per window. Thread u folds spans
// u·m … u·m+m−1 of window y (m = T1 / T) into sppark's pair for its run:
// plain = Σ plain_i, weighted = Σ weighted_i + k1_eff · Σ i·plain_i, with
// k1_eff = k1 / stride real buckets per span (a power of two).
template<class bucket_T, class bucket_mem = typename bucket_T::mem_t>
__launch_bounds__(MSM_NTHREADS) __global__
void integrate_merge(bucket_mem* buckets, const bucket_mem* pairs,
                     uint32_t wbits, uint32_t nbits, uint32_t m)
{
    const uint32_t degree = bucket_T::degree;
    const uint32_t T = MSM_NTHREADS / degree;
    const uint32_t y = blockIdx.x;
    const uint32_t u = threadIdx.x / degree;
    const size_t K = (size_t)1 << (wbits - 1);
    const uint32_t k1 = (uint32_t)(K / ((size_t)T * m));
    const uint32_t mask = window_mask(y, wbits, nbits);
    const uint32_t k1_eff = k1 / (mask + 1);
    const bucket_mem* pr = pairs + ((size_t)y * T * m + (size_t)u * m) * 2;

    bucket_T run, weighted, sum_w;
    run.inf();
    weighted.inf();
    sum_w.inf();
    #pragma unroll 1
    for (uint32_t i = m; i-- > 0;) {
        bucket_T w = pr[2 * i];
        bucket_T p = pr[2 * i + 1];
        weighted.add(w);
        run.add(p);
        if (i)
            sum_w.add(run);  // Σ_{j ≥ i} plain_j, summed over i ≥ 1
    }
    #pragma unroll 1
    for (uint32_t s = k1_eff; s > 1; s >>= 1) {
        bucket_T twice = sum_w;
        sum_w.add(twice);
    }
    weighted.add(sum_w);
    bucket_mem* row = buckets + y * K;
    row[2 * u] = weighted;
    row[2 * u + 1] = run;
}

// How many spans per sppark thread (m, a power of two ≥ 2) the two-level
// integration uses for this MSM, or 0 to keep sppark's `integrate`: enough
// blocks to cover the SMs, every span at least two strides of the top
// window long.
static uint32_t integrate_fanout(uint32_t wbits, uint32_t nwins, uint32_t nbits,
                                 uint32_t degree, int sm_count)
{
    const uint32_t T = MSM_NTHREADS / degree;
    const size_t K = (size_t)1 << (wbits - 1);
    if (K < (size_t)T * 4)
        return 0;
    uint32_t top = nbits - wbits * (nwins - 1);
    size_t stride = (size_t)1 << (wbits - (top < wbits ? top : wbits));
    uint32_t m = 1;
    // Level-1 logical threads: T·m per window, INTEGRATE_SPAN_THREADS /
    // degree per block; aim at two blocks per SM.
    const uint32_t per_block = INTEGRATE_SPAN_THREADS / degree;
    while (m < 16 && (size_t)nwins * T * (m * 2) / per_block <= (size_t)2 * sm_count &&
           K / ((size_t)T * m * 2) >= 2 * stride)
        m *= 2;
    return m >= 2 ? m : 0;
}

#endif
