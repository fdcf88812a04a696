//! Sorting one batch's digits by bucket with CUB's radix sort, for our MSM
//! driver: the step between sppark's `breakdown` and its `accumulate`.
//!
//! sppark's `sort` runs at most 32 blocks per window (it asserts
//! gridDim.x ≤ 32) and two windows per launch, so on a large card about
//! half the SMs sort while the rest idle (the timings: docs/PERF.md). Here
//! each window is sorted by
//! `cub::DeviceRadixSort` over all SMs. The result has sppark's layout, so
//! `accumulate`, `batch_addition` and the integration read it unchanged:
//! - `digits[y]`: the window's point indices (sign in bit 31) grouped by
//!   bucket, zero digits dropped;
//! - `hist[y][x]`: how many of them sit in buckets 0..=x.
//!
//! A digit d ≠ 0 goes to bucket |d| − 1. The top window of a scalar
//! narrower than nwins·w bits has only 2^(top − 1) digits for as many
//! points, so, as sppark's sort does, each digit's points are spread over
//! 2^(w − top) buckets of one weight by the low bits of the point index
//! (`integrate.cuh`'s stride mask weighs them so); one bucket per digit
//! would leave a few threads of `accumulate` with 2^(w − top) times the
//! work.

#ifndef __CUZK_BUCKET_SORT_CUH__
#define __CUZK_BUCKET_SORT_CUH__

// Window digits (sppark's `breakdown`: booth digit, sign in bit 31) to
// radix-sort pairs: key = bucket (for the top window (|d| − 1)·2^shift
// plus the index's low `shift` bits), or `row` (past every bucket) for a
// zero digit; value = point index | sign.
__launch_bounds__(256) __global__
void digit_keys(const uint32_t* digits, uint32_t* keys, uint32_t* vals,
                uint32_t n, uint32_t lsbits, uint32_t shift, uint32_t row)
{
    const uint32_t lmask = (1U << lsbits) - 1;
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < n;
         i += gridDim.x * blockDim.x) {
        uint32_t v = digits[i];
        keys[i] = v ? ((v - 1) & lmask) << shift | (i & ((1U << shift) - 1)) : row;
        vals[i] = (i & 0x7fffffffU) | (v & 0x80000000U);
    }
}

// hist[x] = how many of the n sorted keys are ≤ x, for x < row: the thread
// of position j fills the buckets from its key up to the next key.
__launch_bounds__(256) __global__
void bucket_ends(const uint32_t* keys, uint32_t n, uint32_t* hist, uint32_t row)
{
    for (uint32_t j = threadIdx.x + blockIdx.x * blockDim.x; j < n;
         j += gridDim.x * blockDim.x) {
        uint32_t k = min(keys[j], row);
        uint32_t next = j + 1 < n ? min(keys[j + 1], row) : row;
        if (j == 0)
            for (uint32_t x = 0; x < k; x++)
                hist[x] = 0;
        for (uint32_t x = k; x < next; x++)
            hist[x] = j + 1;
    }
}

// CUB's scratch for sorting `n` pairs of 32-bit keys and values on bits
// [0, end_bit) through double buffers, rounded up to 256 bytes.
static size_t radix_sort_bytes(size_t n, uint32_t end_bit)
{
    size_t bytes = 0;
    cub::DoubleBuffer<uint32_t> k{nullptr, nullptr}, v{nullptr, nullptr};
    CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, (int)n, 0,
                                            (int)end_bit));
    return (bytes + 255) & ~(size_t)255;
}

// One batch's windows sorted on `s`. Scratch `temps` holds 3·stride words
// (two key buffers and one value buffer; the sorted values land in
// `digits[y]`, taken as the other value buffer) and `cub_size` bytes of
// CUB's own at `cub_tmp` (`radix_sort_bytes(stride, wbits)`).
struct bucket_sorter {
    uint32_t wbits, nwins, top;

    void run(const stream_t& s, vec2d_t<uint32_t> digits, vec2d_t<uint32_t> hist,
             uint32_t* temps, size_t stride, void* cub_tmp, size_t cub_size,
             size_t num) const
    {
        const uint32_t row = 1U << (wbits - 1);
        uint32_t* keys0 = temps;
        uint32_t* keys1 = temps + stride;
        uint32_t* vals0 = temps + 2 * stride;
        const uint32_t threads = 256;
        uint32_t blocks = (uint32_t)((num + threads - 1) / threads);
        const uint32_t cap = s.sm_count() * 8;
        if (blocks > cap)
            blocks = cap;
        for (uint32_t y = 0; y < nwins; y++) {
            uint32_t* out = digits[y];
            if (num == 0) {
                CUDA_OK(cudaMemsetAsync(hist[y], 0, row * sizeof(uint32_t), s));
                continue;
            }
            uint32_t lsbits = y == nwins - 1 ? top - 1 : wbits - 1;
            digit_keys<<<blocks, threads, 0, s>>>(out, keys0, vals0, (uint32_t)num,
                                                  lsbits, wbits - 1 - lsbits, row);
            CUDA_OK(cudaGetLastError());
            cub::DoubleBuffer<uint32_t> k{keys0, keys1}, v{vals0, out};
            size_t bytes = cub_size;
            CUDA_OK(cub::DeviceRadixSort::SortPairs(cub_tmp, bytes, k, v, (int)num,
                                                    0, (int)wbits, (cudaStream_t)s));
            if (v.Current() != out)
                CUDA_OK(cudaMemcpyAsync(out, v.Current(), num * sizeof(uint32_t),
                                        cudaMemcpyDeviceToDevice, s));
            bucket_ends<<<blocks, threads, 0, s>>>(k.Current(), (uint32_t)num,
                                                   hist[y], row);
            CUDA_OK(cudaGetLastError());
        }
    }
};

#endif
