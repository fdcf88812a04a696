// Experiment (not built by cargo): the arithmetic ceiling under our MSMs
// and NTTs on one GPU. How many field multiplications, and how many XYZZ
// mixed additions, can the card do a second with sppark's field types
// when nothing is read from memory?
//
// - fp_mul / fr_mul: each thread runs CHAINS independent chains of
//   x = x * y over BLS12-381's base field (381 bits, what point additions
//   use) or its scalar field (255 bits, what the NTTs use).
// - xyzz_reg: each thread adds one affine point into an XYZZ bucket again
//   and again (the point nudged each time so no step repeats): a mixed
//   addition with its operands in registers, the arithmetic of
//   `accumulate` without its gathers.
// - xyzz_gather: the same with the point gathered at random from 2^lg
//   points (as affine_add.cu's xyzz), to show what the loads cost.
//
// Coordinates are random field elements, not curve points: no formula
// here looks at the curve equation (see affine_add.cu).
//
// Build (pip CUDA toolchain, see scripts/install-cuda-toolchain.sh; the
// sppark and blst crates' sources from a cargo build of cuzk-cuda):
//   R=$(ls -d ~/.cargo/registry/src/*/ | head -1)
//   $NVCC -std=c++17 -O3 -DFEATURE_BLS12_381 -D__ADX__ \
//       -I$R/sppark-0.1.16/sppark -I$(ls -d $R/blst-*/ | tail -1)blst/src \
//       -gencode arch=compute_90,code=sm_90 -o fp_rate fp_rate.cu
// Run: ./fp_rate [log2 points for xyzz_gather, default 26]. It ends with
// one `fp_rate_summary key=value ...` line. Results: docs/PERF.md.

#include "bench_util.cuh"

#include <ff/bls12-381.hpp>
#include <ec/xyzz_t.hpp>

typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
struct pt {
    fp_t X, Y;
};

// Random words with each element's top limb kept small (below either
// modulus), LIMBS 32-bit limbs an element.
__global__ void fill(uint32_t* w, size_t nwords, uint32_t limbs)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < nwords;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = mix((uint32_t)i * 0x9e3779b9U + 777U);
        if (i % limbs == limbs - 1)
            v &= 0x0fffffffU;
        w[i] = v;
    }
}

constexpr int CHAINS = 4;

template<class F>
__launch_bounds__(256) __global__ void mul_chains(const F* in, uint32_t rounds, F* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    F x[CHAINS];
    F y = in[tid % 4096];
    #pragma unroll
    for (int c = 0; c < CHAINS; c++)
        x[c] = in[(tid * CHAINS + c + 1) % 4096];
    #pragma unroll 1
    for (uint32_t r = 0; r < rounds; r++) {
        #pragma unroll
        for (int c = 0; c < CHAINS; c++)
            x[c] *= y;
    }
    F s = x[0];
    #pragma unroll
    for (int c = 1; c < CHAINS; c++)
        s += x[c];
    out[tid] = s;
}

__launch_bounds__(384) __global__
void xyzz_reg(const affine_t* P, uint32_t L, bucket_t* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    pt p = ((const pt*)P)[tid % 4096];
    const fp_t step = ((const pt*)P)[(tid + 1) % 4096].X;
    bucket_t acc;
    acc = *(const affine_t*)&p;
    #pragma unroll 1
    for (uint32_t j = 1; j < L; j++) {
        p.X += step;
        acc.add(*(const affine_t*)&p);
    }
    out[tid] = acc;
}

__launch_bounds__(384) __global__
void xyzz_gather(const affine_t* P, uint32_t mask, uint32_t L, bucket_t* out)
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

// Multiplications a second over F, CHAINS chains a thread.
template<class F>
static double mul_rate(const char* name, const void* words, int sms)
{
    const uint32_t block = 256, rounds = 4096;
    uint32_t grid = sms * 8;
    size_t threads = (size_t)grid * block;
    F* out;
    CK(cudaMalloc(&out, threads * sizeof(F)));
    timer t;
    mul_chains<F><<<grid, block>>>((const F*)words, 16, out);  // warm-up
    CK(cudaDeviceSynchronize());
    t.start();
    mul_chains<F><<<grid, block>>>((const F*)words, rounds, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    double muls = (double)threads * rounds * CHAINS;
    printf("%s threads=%zu muls=%.3e ms=%.2f muls_per_s=%.3e\n", name, threads, muls, ms,
           muls / ms * 1e3);
    CK(cudaFree(out));
    return muls / ms * 1e3;
}

// XYZZ mixed additions a second, in registers (mask 0) or gathered.
static double xyzz_rate(const affine_t* P, uint32_t mask, int sms)
{
    const uint32_t block = 384, L = 256;
    uint32_t grid = sms * 4;
    size_t threads = (size_t)grid * block;
    bucket_t* out;
    CK(cudaMalloc(&out, threads * sizeof(bucket_t)));
    timer t;
    if (mask) {
        xyzz_gather<<<grid, block>>>(P, mask, 8, out);
        CK(cudaDeviceSynchronize());
        t.start();
        xyzz_gather<<<grid, block>>>(P, mask, L, out);
    } else {
        xyzz_reg<<<grid, block>>>(P, 8, out);
        CK(cudaDeviceSynchronize());
        t.start();
        xyzz_reg<<<grid, block>>>(P, L, out);
    }
    CK(cudaGetLastError());
    float ms = t.stop();
    double adds = (double)threads * (L - 1);
    printf("%s threads=%zu adds=%.3e ms=%.2f adds_per_s=%.3e\n",
           mask ? "xyzz_gather" : "xyzz_reg", threads, adds, ms, adds / ms * 1e3);
    CK(cudaFree(out));
    return adds / ms * 1e3;
}

int main(int argc, char** argv)
{
    int lg = argc > 1 ? atoi(argv[1]) : 26;
    size_t n = (size_t)1 << lg;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    printf("device=%s sms=%d clock_khz=%d points=2^%d\n", prop.name, sms, khz, lg);
    pt* P;
    CK(cudaMalloc(&P, n * sizeof(pt)));
    fill<<<sms * 8, 256>>>((uint32_t*)P, n * sizeof(pt) / 4, 12);
    uint32_t* S;  // scalar-field words: 4096 elements of 8 limbs
    CK(cudaMalloc(&S, 4096 * 32));
    fill<<<sms, 256>>>(S, 4096 * 8, 8);
    CK(cudaDeviceSynchronize());

    double fp = mul_rate<fp_t>("fp_mul", P, sms);
    double fr = mul_rate<fr_t>("fr_mul", S, sms);
    double reg = xyzz_rate((const affine_t*)P, 0, sms);
    double gat = xyzz_rate((const affine_t*)P, (uint32_t)(n - 1), sms);
    printf("fp_rate_summary fp_mul_per_s=%.4e fr_mul_per_s=%.4e xyzz_reg_per_s=%.4e "
           "xyzz_gather_per_s=%.4e gather_over_reg=%.3f\n",
           fp, fr, reg, gat, gat / reg);
    CK(cudaFree(S));
    CK(cudaFree(P));
    return 0;
}
