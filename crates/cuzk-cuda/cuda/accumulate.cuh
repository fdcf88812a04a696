//! Bucket accumulation with balanced warps, for our MSM driver: the step
//! after the sort (`bucket_sort.cuh`) that sums each bucket's points.
//!
//! sppark's `accumulate` hands each warp 32 consecutive buckets, one per
//! thread, and a warp takes new ones only when its longest bucket is done.
//! Bucket sizes vary (about ±√m around m points), so lanes idle (measured
//! against a warp of equal lanes, `crates/cuzk-lab/experiments/affine_add.cu`:
//! docs/PERF.md).
//! Here the buckets are first ordered by size, largest first (CUB's radix
//! sort on the clamped sizes), and the warps take them in that order from
//! a counter, so the lanes of a warp walk buckets of nearly one length.
//! The sums land where sppark's kernel puts them, for the integration.
//! G1 MSMs with long buckets take the same order through `accumulate_affine.cuh`
//! (batched-affine additions; `plan_affine` says which); the rest stay here
//! (XYZZ), as do the long buckets that kernel leaves.

#ifndef __CUZK_ACCUMULATE_CUH__
#define __CUZK_ACCUMULATE_CUH__

#include "accumulate_affine.cuh"

// keys[g] = 0xffff − min(size of bucket g, 0xffff) (so an ascending sort
// puts the largest first), vals[g] = g, for the buckets g = y·row + x of
// all windows; window 0's bucket 0 (summed by `batch_addition`) gets size 0.
__launch_bounds__(256) __global__
void bucket_sizes(const uint32_t* hist, uint32_t row_bits, uint32_t total,
                  uint32_t* keys, uint32_t* vals)
{
    const uint32_t row = 1U << row_bits;
    for (uint32_t g = threadIdx.x + blockIdx.x * blockDim.x; g < total;
         g += gridDim.x * blockDim.x) {
        uint32_t x = g & (row - 1);
        uint32_t size = hist[g] - (x ? hist[g - 1] : 0);
        if (g == 0)
            size = 0;
        keys[g] = 0xffffU - min(size, 0xffffU);
        vals[g] = g;
    }
}

// The sum of the points that digits d[from], d[from + step], ... (below
// `end`) name, each negated when its digit's bit 31 says so; infinity when
// there are none. One thread's chain, in `accumulate_ordered` (a whole
// bucket) and `accumulate_heavy` (a strided share of one).
template<class bucket_T, class affine_mem, class affine_T = typename bucket_T::affine_t>
__device__ __forceinline__ bucket_T chain_sum(const affine_mem* points, const uint32_t* d,
                                              uint32_t from, uint32_t end, uint32_t step)
{
    bucket_T acc;
    if (from < end) {
        uint32_t dg = d[from];
        affine_T p = points[dg & 0x7fffffffU];
        acc = p;
        acc.cneg(dg >> 31);
        for (uint32_t i = from + step; i < end; i += step) {
            dg = d[i];
            p = points[dg & 0x7fffffffU];
            acc.add(p, dg >> 31);
        }
    } else {
        acc.inf();
    }
    return acc;
}

// acc += buckets[g]: the sum earlier batches left there (`carry`).
template<class bucket_T, class bucket_mem>
__device__ __forceinline__ void add_carried(bucket_T& acc, const bucket_mem* buckets,
                                            uint32_t g)
{
    bucket_T prev;
    prev = buckets[g];
    if (bucket_T::degree == 1)
        acc.add(prev);
    else
        acc.uadd(prev);
}

// Sums bucket order[t] for t < total (and < *bound if given), warps taking the next
// WARP_SZ/degree entries of `order` from `*next` (zero at launch). Bucket g = y·row + x
// holds the points digits[y][hist[y][x−1] .. hist[y][x]) (sign in bit 31),
// its sum goes to buckets[g]; window 0's bucket 0 is left at infinity, and
// so are buckets of more than `cap` points when `cap` is not 0
// (`accumulate_heavy` sums those). With `carry` each sum is added to what
// buckets[g] holds (an earlier batch's), and an empty bucket keeps it.
template<bool carry, class bucket_T, class affine_mem,
         class bucket_mem = typename bucket_T::mem_t>
__launch_bounds__(384) __global__
void accumulate_ordered(bucket_mem* buckets, uint32_t row_bits,
                        const affine_mem* points, const uint32_t* digits,
                        uint32_t digits_stride, const uint32_t* hist,
                        const uint32_t* order, uint32_t total, uint32_t* next,
                        const uint32_t* bound, uint32_t cap)
{
    if (bound)
        total = min(total, *bound);
    const uint32_t degree = bucket_T::degree;
    const uint32_t per_warp = WARP_SZ / degree;
    const uint32_t lane = (threadIdx.x % WARP_SZ) / degree;
    const uint32_t row = 1U << row_bits;
    for (;;) {
        uint32_t base = 0;
        if (threadIdx.x % WARP_SZ == 0)
            base = atomicAdd(next, per_warp);
        base = __shfl_sync(0xffffffffU, base, 0);
        if (base >= total)
            break;
        uint32_t t = base + lane;
        if (t >= total)
            continue;
        uint32_t g = order[t];
        uint32_t y = g >> row_bits, x = g & (row - 1);
        uint32_t end = hist[g], beg = x ? hist[g - 1] : 0;
        if (cap && end - beg > cap && g != 0)
            continue;  // accumulate_heavy's
        if constexpr (carry)
            if (g == 0 || end == beg)
                continue;  // keeps the earlier batches' sum
        bucket_T acc;
        if (g != 0)
            acc = chain_sum<bucket_T>(points, digits + (size_t)y * digits_stride, beg, end, 1);
        else
            acc.inf();
        if constexpr (carry)
            add_carried(acc, buckets, g);
        buckets[g] = acc;
    }
}

// Threads of an `accumulate_heavy` block.
static const uint32_t HEAVY_BLOCK = 256;

// Device scratch of `accumulate_heavy` on `sm_count` blocks: one partial
// sum a logical thread.
template<class bucket_T>
static size_t heavy_scratch_bytes(uint32_t sm_count)
{
    const size_t per = HEAVY_BLOCK / bucket_T::degree;
    return ((size_t)sm_count * per * sizeof(typename bucket_T::mem_t) + 255) & ~(size_t)255;
}

// The buckets of more than `cap` points, which `accumulate_ordered` (one
// thread a bucket) leaves: a repeated scalar value puts all its points
// into one bucket of every window, and one thread's chain of thousands of
// additions then runs alone after the rest are done. `order` lists the
// buckets largest first, so they are its first entries; block b takes
// entries b, b + gridDim.x, ... while they are over `cap`. Each logical
// thread adds a strided share of the bucket's points, the shares are
// folded pairwise through `scratch` (HEAVY_BLOCK / degree a block), and
// the sum goes to buckets[g] (added to it with `carry`).
template<bool carry, class bucket_T, class affine_mem,
         class bucket_mem = typename bucket_T::mem_t>
__launch_bounds__(HEAVY_BLOCK) __global__
void accumulate_heavy(bucket_mem* buckets, uint32_t row_bits, const affine_mem* points,
                      const uint32_t* digits, uint32_t digits_stride, const uint32_t* hist,
                      const uint32_t* order, uint32_t total, uint32_t cap,
                      bucket_mem* scratch)
{
    const uint32_t degree = bucket_T::degree;
    const uint32_t per = HEAVY_BLOCK / degree;
    const uint32_t lane = threadIdx.x / degree;
    const uint32_t row = 1U << row_bits;
    bucket_mem* part = scratch + (size_t)blockIdx.x * per;
    for (uint32_t t = blockIdx.x; t < total; t += gridDim.x) {
        const uint32_t g = order[t];
        const uint32_t y = g >> row_bits, x = g & (row - 1);
        const uint32_t end = hist[g], beg = x ? hist[g - 1] : 0;
        if (g == 0 || end - beg <= cap)
            break;  // largest first (cap < 0xffff, the sort's clamp): none heavier follows
        bucket_T acc = chain_sum<bucket_T>(points, digits + (size_t)y * digits_stride,
                                           beg + lane, end, per);
        part[lane] = acc;
        __syncthreads();
        for (uint32_t half = per / 2; half > 0; half /= 2) {
            if (lane < half) {
                bucket_T a, b;
                a = part[lane];
                b = part[lane + half];
                if (degree == 1)
                    a.add(b);
                else
                    a.uadd(b);
                part[lane] = a;
            }
            __syncthreads();
        }
        if (lane == 0) {
            bucket_T a;
            a = part[0];
            if constexpr (carry)
                add_carried(a, buckets, g);
            buckets[g] = a;
        }
        __syncthreads();
    }
}

// The order of one batch's buckets and their accumulation, on `s`; with
// `carry` the sums are added to the buckets' (an earlier batch's).
// Scratch at `tmp`: `order_bytes()` (four words a bucket, a counter and
// CUB's scratch, `cub_size`, queried once per MSM; with `affine` threads of
// `accumulate_affine`, their slots after that). Three counters: the affine
// kernel's next bucket, the XYZZ kernel's, and the end of the buckets the
// affine kernel left to the XYZZ kernel.
struct ordered_accumulate {
    uint32_t row_bits, total;
    size_t cub_size;
    affine_plan affine;  // threads of accumulate_affine; 0: XYZZ accumulation
    // Buckets of more points go to accumulate_heavy (0: none; XYZZ only),
    // its scratch after the affine kernel's.
    uint32_t heavy_cap;
    size_t heavy_bytes;

    ordered_accumulate(uint32_t row_bits_, uint32_t total_, affine_plan affine_ = {0, 0},
                       uint32_t heavy_cap_ = 0, size_t heavy_bytes_ = 0)
        : row_bits(row_bits_), total(total_), cub_size(radix_sort_bytes(total_, 16)),
          affine(affine_),
          // At most 0xfffe: the sort clamps sizes at 0xffff, so past it
          // `order` is not largest first and accumulate_heavy's early
          // stop could leave a bucket to neither kernel.
          heavy_cap(affine_.threads ? 0 : heavy_cap_ < 0xfffeU ? heavy_cap_ : 0xfffeU),
          heavy_bytes(affine_.threads || !heavy_cap_ ? 0 : heavy_bytes_)
    {}
    size_t sort_bytes() const
    {
        return ((size_t)total * 16 + 256 + cub_size + 255) & ~(size_t)255;
    }
    size_t order_bytes() const
    {
        return sort_bytes() + affine_scratch_bytes(affine.threads) + heavy_bytes;
    }

    template<class bucket_T, class affine_mem, class bucket_mem>
    void run(const stream_t& s, uint8_t* tmp, bucket_mem* buckets,
             const affine_mem* points, vec2d_t<uint32_t> digits, uint32_t stride,
             vec2d_t<uint32_t> hist, bool carry = false) const
    {
        // Carrying is a template argument: the kernels without it stay as
        // they were (the affine one spills with more XYZZ code in it).
        if (carry)
            run_as<true, bucket_T>(s, tmp, buckets, points, digits, stride, hist);
        else
            run_as<false, bucket_T>(s, tmp, buckets, points, digits, stride, hist);
    }

    template<bool carry, class bucket_T, class affine_mem, class bucket_mem>
    void run_as(const stream_t& s, uint8_t* tmp, bucket_mem* buckets,
                const affine_mem* points, vec2d_t<uint32_t> digits, uint32_t stride,
                vec2d_t<uint32_t> hist) const
    {
        uint32_t* keys0 = (uint32_t*)tmp;
        uint32_t* keys1 = keys0 + total;
        uint32_t* vals0 = keys1 + total;
        uint32_t* vals1 = vals0 + total;
        uint32_t* next = vals1 + total;
        uint8_t* cub_tmp = tmp + (size_t)total * 16 + 256;
        const uint32_t threads = 256;
        uint32_t blocks = (total + threads - 1) / threads;
        const uint32_t cap = s.sm_count() * 8;
        if (blocks > cap)
            blocks = cap;
        bucket_sizes<<<blocks, threads, 0, s>>>(hist[0], row_bits, total, keys0, vals0);
        CUDA_OK(cudaGetLastError());
        cub::DoubleBuffer<uint32_t> k{keys0, keys1}, v{vals0, vals1};
        size_t bytes = cub_size;
        CUDA_OK(cub::DeviceRadixSort::SortPairs(cub_tmp, bytes, k, v, (int)total, 0, 16,
                                                (cudaStream_t)s));
        uint32_t* bound = next + 2;
        CUDA_OK(cudaMemsetAsync(next, 0, 3 * sizeof(uint32_t), s));
        if constexpr (bucket_T::degree == 1) {
            if (affine.threads) {
                const affine_scratch sc =
                    carve_affine_scratch(tmp + sort_bytes(), affine.threads);
                accumulate_affine<carry, bucket_T, affine_mem>
                    <<<affine.threads / AFFINE_BLOCK, AFFINE_BLOCK, 0, s>>>(
                        buckets, row_bits, points, (const uint32_t*)digits[0], stride,
                        (const uint32_t*)hist[0], (const uint32_t*)v.Current(), total,
                        next, affine.max_rounds, bound, sc);
                CUDA_OK(cudaGetLastError());
            }
        }
        if (heavy_cap) {
            bucket_mem* part = (bucket_mem*)(tmp + sort_bytes() +
                                             affine_scratch_bytes(affine.threads));
            accumulate_heavy<carry, bucket_T, affine_mem>
                <<<s.sm_count(), HEAVY_BLOCK, 0, s>>>(
                    buckets, row_bits, points, (const uint32_t*)digits[0], stride,
                    (const uint32_t*)hist[0], (const uint32_t*)v.Current(), total,
                    heavy_cap, part);
            CUDA_OK(cudaGetLastError());
        }
        s.launch_coop(accumulate_ordered<carry, bucket_T, affine_mem>, {s.sm_count(), 0},
                      buckets, row_bits, points, (const uint32_t*)digits[0], stride,
                      (const uint32_t*)hist[0], (const uint32_t*)v.Current(), total,
                      next + 1, affine.threads ? (const uint32_t*)bound : nullptr,
                      heavy_cap);
    }
};

#endif
