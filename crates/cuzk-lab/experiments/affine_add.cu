// Experiment (not built by cargo): how fast can an H200 add BLS12-381 G1
// points in the two ways a Pippenger bucket accumulation could?
//
// - xyzz: what sppark's `accumulate` does. Each thread keeps one XYZZ
//   bucket and adds L affine points gathered at random (10 field
//   multiplications a mixed addition).
// - affine<K>: the batched-affine alternative. Each thread adds K pairs of
//   affine points gathered at random, with one shared inversion (sppark's
//   `reciprocal`, a pair of threads per inversion) by Montgomery's trick:
//   ~6 multiplications a pair plus the inversion's share; it writes the K
//   affine sums, as one round of a pairwise bucket reduction would.
//
// The coordinates are random field elements, not curve points: neither
// formula looks at the curve equation, and the timing does not depend on
// it. One addition = one point fewer in a bucket, in both ways, so the
// figure compared is additions per second.
//
// Build (pip CUDA toolchain, see scripts/install-cuda-toolchain.sh; the
// sppark and blst crates' sources from a cargo build of cuzk-cuda):
//   R=$(ls -d ~/.cargo/registry/src/*/ | head -1)
//   $NVCC -std=c++17 -O3 -DFEATURE_BLS12_381 -D__ADX__ \
//       -I$R/sppark-0.1.16/sppark -I$(ls -d $R/blst-*/ | tail -1)blst/src \
//       -gencode arch=compute_90,code=sm_90 -o affine_add affine_add.cu
// Run: ./affine_add [log2 points, default 26]. Results: docs/PERF.md.

#include "bench_util.cuh"

#include <ff/bls12-381.hpp>
#include <ec/xyzz_t.hpp>

typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
// The same layout as affine_t (X, Y), with its coordinates in reach.
struct pt {
    fp_t X, Y;
};

// Random coordinates below the modulus (top limb kept small).
__global__ void fill(fp_t* xy, size_t nlimbs_total)
{
    uint32_t* w = (uint32_t*)xy;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < nlimbs_total;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = mix((uint32_t)i * 0x9e3779b9U + 12345U);
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

template<int K>
__launch_bounds__(256) __global__
void affine_adds(const pt* P, uint32_t mask, uint32_t rounds, pt* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t h = mix(tid + 7);
    #pragma unroll 1
    for (uint32_t r = 0; r < rounds; r++) {
        uint32_t ia[K], ib[K];
        fp_t dx[K], pre[K], acc;
        #pragma unroll
        for (int k = 0; k < K; k++) {
            h = mix(h);
            ia[k] = h & mask;
            h = mix(h);
            ib[k] = h & mask;
            fp_t xa = P[ia[k]].X, xb = P[ib[k]].X;
            dx[k] = xb - xa;
            acc = k ? acc * dx[k] : dx[k];
            pre[k] = acc;
        }
        fp_t inv = acc.reciprocal();
        #pragma unroll
        for (int k = K - 1; k >= 0; k--) {
            fp_t ik = k ? inv * pre[k - 1] : inv;
            if (k)
                inv *= dx[k];
            pt a = P[ia[k]], b = P[ib[k]];
            fp_t lam = (b.Y - a.Y) * ik;
            fp_t x3 = (lam ^ 2) - a.X - b.X;
            fp_t y3 = lam * (a.X - x3) - a.Y;
            out[(size_t)tid * K + k] = pt{x3, y3};
        }
    }
}

template<int K>
static void run_affine(const pt* P, uint32_t mask, int sms)
{
    const uint32_t block = 256, rounds = 16;
    uint32_t grid = sms * 8;
    size_t threads = (size_t)grid * block;
    pt* out;
    CK(cudaMalloc(&out, threads * K * sizeof(pt)));
    timer t;
    affine_adds<K><<<grid, block>>>(P, mask, 1, out);  // warm-up
    CK(cudaDeviceSynchronize());
    t.start();
    affine_adds<K><<<grid, block>>>(P, mask, rounds, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    double adds = (double)threads * rounds * K;
    printf("affine K=%d threads=%zu adds=%.3e ms=%.2f adds_per_s=%.3e\n", K, threads,
           adds, ms, adds / ms * 1e3);
    CK(cudaFree(out));
}

int main(int argc, char** argv)
{
    int lg = argc > 1 ? atoi(argv[1]) : 26;
    size_t n = (size_t)1 << lg;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device=%s sms=%d points=2^%d\n", prop.name, prop.multiProcessorCount, lg);
    pt* P;
    CK(cudaMalloc(&P, n * sizeof(pt)));
    fill<<<prop.multiProcessorCount * 8, 256>>>((fp_t*)P, n * sizeof(pt) / 4);
    CK(cudaDeviceSynchronize());
    uint32_t mask = (uint32_t)(n - 1);

    {
        const uint32_t block = 384, L = 256;
        uint32_t grid = prop.multiProcessorCount * 4;
        size_t threads = (size_t)grid * block;
        bucket_t* out;
        CK(cudaMalloc(&out, threads * sizeof(bucket_t)));
        timer t;
        const affine_t* A = (const affine_t*)P;
        xyzz_adds<<<grid, block>>>(A, mask, 8, out);  // warm-up
        CK(cudaDeviceSynchronize());
        t.start();
        xyzz_adds<<<grid, block>>>(A, mask, L, out);
        CK(cudaGetLastError());
        float ms = t.stop();
        double adds = (double)threads * (L - 1);
        printf("xyzz threads=%zu adds=%.3e ms=%.2f adds_per_s=%.3e\n", threads, adds, ms,
               adds / ms * 1e3);
        CK(cudaFree(out));
    }
    run_affine<4>(P, mask, prop.multiProcessorCount);
    run_affine<8>(P, mask, prop.multiProcessorCount);
    run_affine<16>(P, mask, prop.multiProcessorCount);
    run_affine<32>(P, mask, prop.multiProcessorCount);
    CK(cudaFree(P));
    return 0;
}
