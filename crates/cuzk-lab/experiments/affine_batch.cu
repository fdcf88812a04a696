// Experiment (not built by cargo): the ceiling of batched-affine bucket
// additions on one GPU, beside the XYZZ mixed additions our `accumulate`
// makes, in one process. affine_add.cu's first try kept its batch in
// per-thread arrays, which spilled; here a thread's batch lives in global
// memory, so the batch can be long enough to pay for its inversion.
//
// - xyzz: one XYZZ bucket a thread, 256 affine points gathered at random
//   (what `accumulate` does; 8M + 2S an addition).
// - inv: sppark's `reciprocal` (a pair of lanes an inversion) in a chain,
//   to state an inversion's cost in multiplications.
// - affine<B>: each thread adds B independent pairs of affine points
//   gathered at random, with one inversion for all B (Montgomery's trick):
//   pass 1 gathers the pairs' x, multiplies the differences into running
//   products and stores each product (48 bytes, coalesced: element k of
//   every thread side by side); after the inversion pass 2 walks back,
//   gathers the pairs again (x and y), peels one difference's inverse a
//   step (2M), and adds (1M for the slope, 1S, 1M for y) writing the sum
//   where a next round of a pairwise bucket reduction would read it.
//   ~6 multiplications an addition plus inversion / B, and ~480 bytes of
//   memory traffic an addition.
//
// The random pairs make this an upper bound for a bucket reduction built
// on it: a real one also walks its buckets' runs in levels (odd points
// carried, log2 of a bucket's size rounds of writes and reads), which this
// does not count. One addition = one point fewer, as in affine_add.cu.
// Coordinates are random field elements, not curve points: no formula
// here looks at the curve equation.
//
// Build: as fp_rate.cu (same includes), `-o affine_batch affine_batch.cu`.
// Run: ./affine_batch [log2 points, default 26]. It ends with one
// `affine_batch_summary key=value ...` line. Results: docs/PERF.md.

#include "bench_util.cuh"

#include <ff/bls12-381.hpp>
#include <ec/xyzz_t.hpp>

typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
struct pt {
    fp_t X, Y;
};

__global__ void fill(uint32_t* w, size_t nwords)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < nwords;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = mix((uint32_t)i * 0x9e3779b9U + 4242U);
        if (i % 12 == 11)
            v &= 0x0fffffffU;
        w[i] = v;
    }
}

__launch_bounds__(384) __global__
void xyzz_adds(const affine_t* P, uint32_t mask, uint32_t L, bucket_t* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t h = mix(tid + 1);
    affine_t p = P[h & mask];
    bucket_t acc;
    acc = p;
    #pragma unroll 1
    for (uint32_t j = 1; j < L; j++) {
        h = mix(h);
        p = P[h & mask];
        acc.add(p);
    }
    out[tid] = acc;
}

__launch_bounds__(256) __global__
void inv_chain(const pt* P, uint32_t rounds, fp_t* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    fp_t x = P[tid % 4096].X, y = P[(tid + 1) % 4096].Y;
    #pragma unroll 1
    for (uint32_t r = 0; r < rounds; r++)
        x = (x + y).reciprocal();
    out[tid] = x;
}

// The pair (a, b) of addition k of thread t: stateless, so pass 2 finds
// it again walking backwards.
__device__ __forceinline__ void pair_of(size_t t, uint32_t k, uint32_t B, uint32_t mask,
                                        uint32_t& ia, uint32_t& ib)
{
    uint32_t s = (uint32_t)(t * B + k) * 2U;
    ia = mix(s + 0x51ed27U) & mask;
    ib = mix(s + 0x51ed28U) & mask;
}

__launch_bounds__(256) __global__
void affine_adds(const pt* P, uint32_t mask, uint32_t B, fp_t* pre, pt* out)
{
    size_t T = (size_t)gridDim.x * blockDim.x;
    size_t tid = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    uint32_t ia, ib;
    fp_t acc;
    #pragma unroll 1
    for (uint32_t k = 0; k < B; k++) {
        pair_of(tid, k, B, mask, ia, ib);
        fp_t dx = P[ib].X - P[ia].X;
        acc = k ? acc * dx : dx;
        pre[k * T + tid] = acc;
    }
    fp_t inv = acc.reciprocal();
    #pragma unroll 1
    for (uint32_t k = B; k-- > 0;) {
        pair_of(tid, k, B, mask, ia, ib);
        pt a = P[ia], b = P[ib];
        fp_t ik = k ? inv * pre[(k - 1) * T + tid] : inv;
        if (k)
            inv *= b.X - a.X;
        fp_t lam = (b.Y - a.Y) * ik;
        fp_t x3 = (lam ^ 2) - a.X - b.X;
        fp_t y3 = lam * (a.X - x3) - a.Y;
        out[k * T + tid] = pt{x3, y3};
    }
}

static double xyzz_rate(const affine_t* P, uint32_t mask, int sms)
{
    const uint32_t block = 384, L = 256;
    uint32_t grid = sms * 4;
    size_t threads = (size_t)grid * block;
    bucket_t* out;
    CK(cudaMalloc(&out, threads * sizeof(bucket_t)));
    timer t;
    xyzz_adds<<<grid, block>>>(P, mask, 8, out);  // warm-up
    CK(cudaDeviceSynchronize());
    t.start();
    xyzz_adds<<<grid, block>>>(P, mask, L, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    double adds = (double)threads * (L - 1);
    printf("xyzz mask=%u threads=%zu adds=%.3e ms=%.2f adds_per_s=%.3e\n", mask, threads,
           adds, ms, adds / ms * 1e3);
    CK(cudaFree(out));
    return adds / ms * 1e3;
}

static double inv_rate(const pt* P, int sms)
{
    const uint32_t block = 256, rounds = 64;
    uint32_t grid = sms * 8;
    size_t threads = (size_t)grid * block;
    fp_t* out;
    CK(cudaMalloc(&out, threads * sizeof(fp_t)));
    timer t;
    inv_chain<<<grid, block>>>(P, 2, out);
    CK(cudaDeviceSynchronize());
    t.start();
    inv_chain<<<grid, block>>>(P, rounds, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    // A pair of lanes makes one inversion for both (each gets its own).
    double invs = (double)threads * rounds;
    printf("inv threads=%zu invs=%.3e ms=%.2f invs_per_s=%.3e\n", threads, invs, ms,
           invs / ms * 1e3);
    CK(cudaFree(out));
    return invs / ms * 1e3;
}

// Batched-affine additions a second with B pairs a thread, blocks of 256
// threads, `per_sm` blocks an SM.
static double affine_rate(const pt* P, uint32_t mask, int sms, uint32_t B, uint32_t per_sm)
{
    const uint32_t block = 256;
    uint32_t grid = sms * per_sm;
    size_t threads = (size_t)grid * block;
    fp_t* pre;
    pt* out;
    CK(cudaMalloc(&pre, threads * B * sizeof(fp_t)));
    CK(cudaMalloc(&out, threads * B * sizeof(pt)));
    timer t;
    affine_adds<<<grid, block>>>(P, mask, B, pre, out);  // warm-up (same size)
    CK(cudaDeviceSynchronize());
    t.start();
    affine_adds<<<grid, block>>>(P, mask, B, pre, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    double adds = (double)threads * B;
    printf("affine mask=%u B=%u blocks_per_sm=%u threads=%zu adds=%.3e ms=%.2f "
           "adds_per_s=%.3e\n",
           mask, B, per_sm, threads, adds, ms, adds / ms * 1e3);
    CK(cudaFree(out));
    CK(cudaFree(pre));
    return adds / ms * 1e3;
}

int main(int argc, char** argv)
{
    int lg = argc > 1 ? atoi(argv[1]) : 26;
    size_t n = (size_t)1 << lg;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    printf("device=%s sms=%d points=2^%d\n", prop.name, sms, lg);
    pt* P;
    CK(cudaMalloc(&P, n * sizeof(pt)));
    fill<<<sms * 8, 256>>>((uint32_t*)P, n * sizeof(pt) / 4);
    CK(cudaDeviceSynchronize());
    uint32_t mask = (uint32_t)(n - 1), l2 = (1U << 18) - 1;  // 2^18 points: 24 MiB, in L2

    double x_hbm = xyzz_rate((const affine_t*)P, mask, sms);
    double x_l2 = xyzz_rate((const affine_t*)P, l2, sms);
    double inv = inv_rate(P, sms);
    double best = 0, best_l2 = 0;
    uint32_t best_b = 0;
    for (uint32_t B : {32U, 64U, 128U, 256U, 512U}) {
        for (uint32_t per_sm : {4U, 8U}) {
            double r = affine_rate(P, mask, sms, B, per_sm);
            if (r > best) {
                best = r;
                best_b = B;
            }
        }
    }
    for (uint32_t per_sm : {4U, 8U})
        best_l2 = fmax(best_l2, affine_rate(P, l2, sms, best_b, per_sm));
    printf("affine_batch_summary xyzz_per_s=%.4e xyzz_l2_per_s=%.4e inv_per_s=%.4e "
           "affine_best_per_s=%.4e affine_best_b=%u affine_l2_per_s=%.4e "
           "affine_over_xyzz=%.3f\n",
           x_hbm, x_l2, inv, best, best_b, best_l2, best / x_hbm);
    CK(cudaFree(P));
    return 0;
}
