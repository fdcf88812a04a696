//! Bucket accumulation in affine coordinates with batched inversions, for
//! the G1 MSMs of our driver: the same job as `accumulate_ordered`
//! (`accumulate.cuh`), the same inputs (the sorted digits, the histogram,
//! the buckets' size order) and the same output (each bucket's sum in
//! `buckets[g]`), with cheaper additions.
//!
//! An XYZZ mixed addition costs 8M + 2S. An affine addition costs 1M + 1S
//! + 1M once the slope's denominator is inverted, and Montgomery's trick
//! inverts many denominators with one inversion and 3M each. So each
//! thread keeps B buckets (`AFFINE_SLOTS`) as affine points in device
//! scratch and, a round at a time, adds the next point of each: it loads
//! the round's digit of every slot (several loads in flight), pass 1
//! multiplies the B denominators into running products (stored), one
//! inversion (sppark's `reciprocal`, ~30M), pass 2 walks back peeling one
//! inverse a slot and adds. About 6M + 30M/B an addition against 10; an
//! H200 ran 1.44× more additions a second this way than with XYZZ with
//! random pairs (`crates/cuzk-lab/experiments/affine_batch.cu`,
//! docs/PERF.md).
//!
//! A thread's B buckets are consecutive in the size order, so their sizes
//! (the rounds) nearly agree; a warp takes 32·B of them at once and runs
//! as many rounds as its largest bucket has points, or, past a bound,
//! sums them one a lane in XYZZ. Every case of the affine law is handled
//! in the batch: the denominator is x₂ − x₁, or 2y when the point equals
//! the bucket (a doubling), or 1 when nothing is to be inverted (the point
//! is −bucket and the sum is infinity, either is infinity, or the slot has
//! no point this round). Infinity is (0, 0), as sppark's affine points
//! have it. `plan_affine` says which MSMs take this way.

#ifndef __CUZK_ACCUMULATE_AFFINE_CUH__
#define __CUZK_ACCUMULATE_AFFINE_CUH__

// Buckets a thread adds at once (one inversion a round for all).
static const uint32_t AFFINE_SLOTS = 64;
static const uint32_t AFFINE_BLOCK = 256;
// Points a bucket on average, at least, for the affine way (plan_affine).
static const size_t AFFINE_MIN_MEAN = 32;

// A slot in device scratch: where its digits start (window row included)
// and how many there are.
struct affine_meta {
    uint32_t at, len;
};

// The slots of every thread (slot b of thread i at b·T + i, T threads):
// the running sum (x, y), pass 1's running product, the bucket's run of
// digits and this round's digit.
struct affine_scratch {
    fp_t *acc_x, *acc_y, *pre;
    affine_meta* meta;
    uint32_t* digit;
};

// One slot's point this round: the denominator of the slope to invert
// (one() when none is) and which law applies.
struct affine_case {
    enum { none, add, dbl } law;
    fp_t d;
};

// (x, y) is infinity. (The device's fp_t tests both at once; the host
// pass of nvcc sees blst's type, which cannot, and never runs this.)
__device__ __forceinline__ bool affine_inf(const fp_t& x, const fp_t& y)
{
#ifdef __CUDA_ARCH__
    return (bool)x.is_zero(y);
#else
    return (bool)x.is_zero() && (bool)y.is_zero();
#endif
}

// The slot's next point: its affine coordinates, negated when the digit
// says so (infinity stays (0, 0)).
template<class affine_mem>
__device__ __forceinline__ void affine_point(const affine_mem* points, uint32_t dg,
                                             fp_t& x, fp_t& y)
{
    static_assert(sizeof(affine_mem) == 2 * sizeof(fp_t), "affine layout");
    const fp_t* p = (const fp_t*)&points[dg & 0x7fffffffU];
    x = p[0];
    y = p[1];
    if (!affine_inf(x, y))
        y.cneg(dg >> 31);
}

// Denominator of acc + p: x_p − x_acc, 2·y_acc for a doubling, or one when
// the sum needs no inversion (either is infinity, or p = −acc).
__device__ __forceinline__ affine_case affine_denominator(const fp_t& ax, const fp_t& ay,
                                                         const fp_t& px, const fp_t& py)
{
    affine_case c;
    c.law = affine_case::none;
    c.d = fp_t::one();
    if (affine_inf(px, py) || affine_inf(ax, ay))
        return c;
    fp_t d = px - ax;
    if (!(bool)d.is_zero()) {
        c.d = d;
        c.law = affine_case::add;
    } else if ((bool)(py - ay).is_zero()) {
        c.d = ay + ay;
        c.law = affine_case::dbl;
    }  // else p = −acc: no inversion, the sum is infinity
    return c;
}

// Where the digits of the bucket order[t] are (window row included) and
// how many: none past the end of `order` or for window 0's bucket 0.
__device__ __forceinline__ affine_meta bucket_run(const uint32_t* order, uint32_t total,
                                                  uint32_t t, const uint32_t* hist,
                                                  uint32_t row_bits, uint32_t digits_stride)
{
    affine_meta m{0, 0};
    if (t < total) {
        uint32_t g = order[t];
        uint32_t y = g >> row_bits, x = g & ((1U << row_bits) - 1);
        uint32_t end = hist[g], beg = x ? hist[g - 1] : 0;
        if (g != 0)
            m = affine_meta{y * digits_stride + beg, end - beg};
    }
    return m;
}

// A digit that is no point: the slot has none this round (a real digit's
// index is below 2^31 − 1, msm_resident's bound).
static const uint32_t NO_DIGIT = 0xffffffffU;

// Sums bucket order[t] for t < total into buckets[g] (g = order[t]; bucket
// g = y·row + x holds digits[y][hist[g−1] .. hist[g]), window 0's bucket 0
// left at infinity), warps taking 32·AFFINE_SLOTS entries of `order` at a
// time from `*next` (zero at launch). A warp whose largest bucket has more
// than `max_rounds` points (skewed scalars: many equal digits) leaves its
// buckets alone and raises `*skipped` past them: a round of the affine way
// costs the warp all its slots however few are left, so those go to
// `accumulate_ordered` after this (with `order` sorted largest first they
// are a prefix of it). (The XYZZ sums are a kernel of their own: inside
// this one their registers made these loops spill.) Scratch `sc` for
// gridDim.x·blockDim.x threads (`affine_scratch_bytes`). With `carry` each
// sum is added to what buckets[g] holds (an earlier batch's).
template<bool carry, class bucket_T, class affine_mem,
         class bucket_mem = typename bucket_T::mem_t,
         class affine_T = typename bucket_T::affine_t>
__launch_bounds__(AFFINE_BLOCK, 2) __global__
void accumulate_affine(bucket_mem* buckets, uint32_t row_bits, const affine_mem* points,
                       const uint32_t* digits, uint32_t digits_stride,
                       const uint32_t* hist, const uint32_t* order, uint32_t total,
                       uint32_t* next, uint32_t max_rounds, uint32_t* skipped,
                       affine_scratch sc)
{
    const size_t T = (size_t)gridDim.x * blockDim.x;
    const size_t tid = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    const uint32_t lane = threadIdx.x % WARP_SZ;
    const uint32_t B = AFFINE_SLOTS;
    for (;;) {
        uint32_t base = 0;
        if (lane == 0)
            base = atomicAdd(next, WARP_SZ * B);
        base = __shfl_sync(0xffffffffU, base, 0);
        if (base >= total)
            break;
        const uint32_t first = base + lane * B;
        uint32_t longest = 0;
        #pragma unroll 1
        for (uint32_t b = 0; b < B; b++) {
            affine_meta m = bucket_run(order, total, first + b, hist, row_bits, digits_stride);
            longest = max(longest, m.len);
        }
        longest = __reduce_max_sync(0xffffffffU, longest);
        if (longest > max_rounds) {
            if (lane == 0)
                atomicMax(skipped, min(base + WARP_SZ * B, total));
            continue;
        }
        // Round 0: each slot takes its bucket's first point.
        #pragma unroll 1
        for (uint32_t b = 0; b < B; b++) {
            const size_t s = b * T + tid;
            affine_meta m = bucket_run(order, total, first + b, hist, row_bits, digits_stride);
            fp_t px, py;
            if (m.len) {
                affine_point(points, digits[m.at], px, py);
            } else {
                px.zero();
                py.zero();
            }
            sc.acc_x[s] = px;
            sc.acc_y[s] = py;
            sc.meta[s] = m;
        }
        #pragma unroll 1
        for (uint32_t r = 1; r < longest; r++) {
            // This round's digit of every slot, the loads of several slots
            // in flight at once (passes 1 and 2 then wait on one load less).
            #pragma unroll 4
            for (uint32_t b = 0; b < B; b++) {
                const size_t s = b * T + tid;
                const affine_meta m = sc.meta[s];
                sc.digit[s] = r < m.len ? digits[m.at + r] : NO_DIGIT;
            }
            // Pass 1: running products of the denominators.
            fp_t prod = fp_t::one();
            #pragma unroll 1
            for (uint32_t b = 0; b < B; b++) {
                const size_t s = b * T + tid;
                const uint32_t dg = sc.digit[s];
                if (dg != NO_DIGIT) {
                    fp_t px, py;
                    affine_point(points, dg, px, py);
                    affine_case c = affine_denominator(sc.acc_x[s], sc.acc_y[s], px, py);
                    if (c.law != affine_case::none)
                        prod *= c.d;
                }
                sc.pre[s] = prod;
            }
            // One inversion for the thread's slots (all lanes take part:
            // sppark pairs lanes).
            fp_t inv = prod.reciprocal();
            // Pass 2: back through the slots, each inverse peeled off.
            #pragma unroll 1
            for (uint32_t b = B; b-- > 0;) {
                const size_t s = b * T + tid;
                const uint32_t dg = sc.digit[s];
                if (dg == NO_DIGIT)
                    continue;
                fp_t px, py;
                affine_point(points, dg, px, py);
                const fp_t ax = sc.acc_x[s], ay = sc.acc_y[s];
                affine_case c = affine_denominator(ax, ay, px, py);
                if (c.law != affine_case::none) {
                    fp_t ik = b ? inv * sc.pre[s - T] : inv;
                    inv *= c.d;
                    // Slope: (y_p − y_acc)/(x_p − x_acc), or 3x²/(2y).
                    fp_t num;
                    if (c.law == affine_case::dbl) {
                        num = ax ^ 2;
                        num = num + num + num;
                    } else {
                        num = py - ay;
                    }
                    fp_t lam = num * ik;
                    fp_t x3 = (lam ^ 2) - ax - px;
                    sc.acc_y[s] = lam * (ax - x3) - ay;
                    sc.acc_x[s] = x3;
                } else if (affine_inf(ax, ay)) {
                    sc.acc_x[s] = px;  // acc was infinity
                    sc.acc_y[s] = py;
                } else if (!affine_inf(px, py)) {
                    sc.acc_x[s].zero();  // p = −acc
                    sc.acc_y[s].zero();
                }
            }
        }
        #pragma unroll 1
        for (uint32_t b = 0; b < B && first + b < total; b++) {
            const size_t s = b * T + tid;
            const uint32_t g = order[first + b];
            bucket_T out;
            out = affine_T{sc.acc_x[s], sc.acc_y[s]};
            if constexpr (carry) {
                bucket_T prev;
                prev = buckets[g];
                out.add(prev);
            }
            buckets[g] = out;
        }
    }
}

// Bytes of scratch a thread of accumulate_affine takes.
static const size_t AFFINE_BYTES_PER_THREAD =
    AFFINE_SLOTS * (3 * sizeof(fp_t) + sizeof(affine_meta) + sizeof(uint32_t));

// `threads` threads' slots carved from `base` (affine_scratch_bytes).
static affine_scratch carve_affine_scratch(uint8_t* base, size_t threads)
{
    const size_t slots = threads * AFFINE_SLOTS;
    affine_scratch sc;
    sc.acc_x = (fp_t*)base;
    sc.acc_y = sc.acc_x + slots;
    sc.pre = sc.acc_y + slots;
    sc.meta = (affine_meta*)(sc.pre + slots);
    sc.digit = (uint32_t*)(sc.meta + slots);
    return sc;
}

static size_t affine_scratch_bytes(size_t threads)
{
    return threads * AFFINE_BYTES_PER_THREAD;
}

// How a G1 MSM's accumulation goes: `threads` threads of accumulate_affine
// (0: accumulate_ordered's XYZZ) and the rounds past which a warp falls
// back to XYZZ. The affine way wins where buckets are long (a 2^27 H MSM:
// ~64 points a bucket) and many (every thread's slots filled); short
// buckets leave its per-round costs unpaid (the split L and A MSMs, ~13
// points a bucket, ran 1.8× slower: docs/PERF.md).
struct affine_plan {
    uint32_t threads, max_rounds;
};

static affine_plan plan_affine(size_t npoints, uint32_t nwins, uint32_t total,
                               uint32_t sm_count)
{
    const size_t full = (size_t)sm_count * 2 * AFFINE_BLOCK;
    const size_t mean = total ? npoints * nwins / total : 0;
    if (mean < AFFINE_MIN_MEAN || total < full * AFFINE_SLOTS)
        return affine_plan{0, 0};
    return affine_plan{(uint32_t)full, (uint32_t)(8 * mean)};
}

#endif
