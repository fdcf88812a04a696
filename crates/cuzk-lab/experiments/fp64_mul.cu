// Experiment (not built by cargo; issue 38): can the FP64 units multiply
// in BLS12-381's base field beside the integer ones? fp64_mont.cuh holds a
// Montgomery multiplication on FP64 FMAs only; this program checks it and
// measures it.
//
// - check: the FP64 product against sppark's fp_t (the same R = 2^384) on
//   N random cases over all of [0, p), on every pair of edge values (0, 1,
//   2, p-1, p-2, (p+-1)/2, R mod p, powers of two around the limb size,
//   2^380 - 1, ...), and along chains of products whose inputs are earlier
//   outputs (non-canonical signed digits). On the host too (--host N),
//   against a plain 64-bit-limb Montgomery product: no GPU needed.
// - rates: chains of x = x * y with nothing read from memory, as fp_rate.cu:
//   integer (fp_t) alone, FP64 alone, both in one thread (CI integer and
//   CF FP64 chains a round), half the warps each way, and the two kernels
//   on two streams at once, each sized so that the other's blocks fit on
//   the same SMs. A multiplication of either kind counts one. Every
//   chain's end is written out: a chain nobody reads is dead code, and the
//   compiler drops it (the first run on 2026-12-06 lost three of every
//   four integer chains that way; docs/perf/2026-12-06-fp64-montgomery.md).
// - mixed additions: fp64_xyzz.cuh's madd against xyzz_t::add, bucket by
//   bucket after 256 additions, then timed alone and beside the integer one.
//
// Build (pip CUDA toolchain, see scripts/install-cuda-toolchain.sh; the
// sppark and blst crates' sources from a cargo build of cuzk-cuda):
//   R=$(ls -d ~/.cargo/registry/src/*/ | head -1)
//   $NVCC -std=c++17 -O3 -DFEATURE_BLS12_381 -D__ADX__ \
//       -I$R/sppark-0.1.16/sppark -I$(ls -d $R/blst-*/ | tail -1)blst/src \
//       -gencode arch=compute_90,code=sm_90 -o fp64_mul fp64_mul.cu
// Run: ./fp64_mul [random cases on the GPU, default 2^27]; ./fp64_mul
// --host N checks on the CPU only. It ends with one
// `fp64_mul_summary key=value ...` line. Results: docs/PERF.md.

#include "bench_util.cuh"

#include <ff/bls12-381.hpp>
#include <ec/xyzz_t.hpp>

#include "fp64_check.cuh"
#include "fp64_host.hpp"
#include "fp64_xyzz.cuh"

typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
struct pt {
    fp_t X, Y;
};

using f64::fe;

// ---- check on the device -------------------------------------------------

// fp_t from 12 words and back (canonical), by copy: fp_t is 16-aligned.
__device__ fp_t fp_from(const uint32_t* w)
{
    fp_t a;
    memcpy(&a, w, 48);
    return a;
}

__device__ void fp_canon(const fp_t& x, uint32_t* w)
{
    uint32_t t[12];
    memcpy(t, &x, 48);
    f64::from_fe(f64::to_fe(t), w);
}

__device__ bool same_product(const uint32_t* wa, const uint32_t* wb)
{
    fp_t A = fp_from(wa), B = fp_from(wb);
    uint32_t e[12], g[12];
    fp_canon(A * B, e);
    f64::from_fe(f64::mul(f64::to_fe(wa), f64::to_fe(wb)), g);
    for (int i = 0; i < 12; i++)
        if (e[i] != g[i])
            return false;
    return true;
}

__global__ void check_random(uint64_t n, unsigned long long* bad)
{
    for (uint64_t i = threadIdx.x + (uint64_t)blockIdx.x * blockDim.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t wa[12], wb[12];
        f64::gen(i, 1, wa);
        f64::gen(i, 2, wb);
        if (!same_product(wa, wb))
            atomicAdd(bad, 1ULL);
    }
}

__global__ void check_pairs(const uint32_t* E, uint32_t ne, unsigned long long* bad)
{
    uint32_t i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= ne * ne)
        return;
    if (!same_product(E + 12 * (i / ne), E + 12 * (i % ne)))
        atomicAdd(bad, 1ULL);
}

// x = x * y, L times, both ways from the same start; the ends must agree.
__global__ void check_chains(uint32_t L, unsigned long long* bad)
{
    uint32_t i = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t wx[12], wy[12], e[12], g[12];
    f64::gen(i, 3, wx);
    f64::gen(i, 4, wy);
    fp_t X = fp_from(wx), Y = fp_from(wy);
    fe x = f64::to_fe(wx), y = f64::to_fe(wy);
    for (uint32_t j = 0; j < L; j++) {
        X *= Y;
        x = f64::mul(x, y);
    }
    fp_canon(X, e);
    f64::from_fe(x, g);
    for (int k = 0; k < 12; k++)
        if (e[k] != g[k]) {
            atomicAdd(bad, 1ULL);
            return;
        }
}

// Where the timed kernels leave their ends.
constexpr uint32_t SLOTS = 6;

__device__ void store(uint32_t* out, uint32_t tid, uint32_t slot, const uint32_t* w)
{
    for (int k = 0; k < 12; k++)
        out[12 * ((size_t)tid * SLOTS + slot) + k] = w[k];
}

// ---- mixed additions -------------------------------------------------------

// One thread's bucket both ways: start at a point, then L times nudge the
// point's X by a step and add it (as fp_rate.cu's xyzz_reg).
struct xyzz_pair {
    bucket_t acc;
    pt p;
    fp_t step;
    f64::bucket b;
    f64::fe x, y, s;
};

__device__ void xyzz_start(xyzz_pair& z, const uint32_t* wx, const uint32_t* wy,
                           const uint32_t* ws)
{
    z.p.X = fp_from(wx);
    z.p.Y = fp_from(wy);
    z.step = fp_from(ws);
    z.acc = *(const affine_t*)&z.p;
    z.x = f64::to_fe(wx);
    z.y = f64::to_fe(wy);
    z.s = f64::to_fe(ws);
    uint32_t one[12];
    fp_canon(fp_t::one(), one);
    z.b = {z.x, z.y, f64::to_fe(one), f64::to_fe(one)};
}

__device__ __forceinline__ void xyzz_step_int(xyzz_pair& z)
{
    z.p.X += z.step;
    z.acc.add(*(const affine_t*)&z.p);
}

__device__ __forceinline__ void xyzz_step_fp(xyzz_pair& z)
{
    z.x = f64::reduce(f64::add(z.x, z.s));
    f64::madd(z.b, z.x, z.y);
}

__device__ bool same(const fp_t& a, const f64::fe& b)
{
    uint32_t e[12], g[12];
    fp_canon(a, e);
    f64::from_fe(b, g);
    for (int i = 0; i < 12; i++)
        if (e[i] != g[i])
            return false;
    return true;
}

__global__ void check_xyzz(uint32_t L, unsigned long long* bad)
{
    uint32_t i = threadIdx.x + blockIdx.x * blockDim.x;
    uint32_t wx[12], wy[12], ws[12];
    f64::gen(i, 5, wx);
    f64::gen(i, 6, wy);
    f64::gen(i, 7, ws);
    xyzz_pair z;
    xyzz_start(z, wx, wy, ws);
    for (uint32_t j = 0; j < L; j++) {
        xyzz_step_int(z);
        xyzz_step_fp(z);
    }
    fp_t c[4];  // xyzz_t's X, Y, ZZZ, ZZ (private members, in that order)
    static_assert(sizeof c == sizeof z.acc, "xyzz_t is four field elements");
    memcpy(c, &z.acc, sizeof c);
    if (!same(c[0], z.b.X) || !same(c[1], z.b.Y) || !same(c[2], z.b.ZZZ) || !same(c[3], z.b.ZZ))
        atomicAdd(bad, 1ULL);
}

// Mixed additions a second: integer buckets, FP64 buckets, one of each a
// thread, or half the warps each way (RI and RF additions).
template<bool I, bool F, bool SPLIT>
__launch_bounds__(256) __global__ void xyzz_chains(const uint32_t* in, uint32_t RI, uint32_t RF,
                                                   uint32_t* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    bool odd = (threadIdx.x / 32) & 1;
    bool do_i = I && (!SPLIT || !odd), do_f = F && (!SPLIT || odd);
    xyzz_pair z;
    xyzz_start(z, in + 12 * (tid % 4096), in + 12 * ((tid + 1) % 4096),
               in + 12 * ((tid + 2) % 4096));
    uint32_t R = SPLIT ? (do_i ? RI : RF) : RI;
#pragma unroll 1
    for (uint32_t r = 0; r < R; r++) {
        if (do_i)
            xyzz_step_int(z);
        if (do_f)
            xyzz_step_fp(z);
    }
    uint32_t w[12];
    if (do_i) {
        fp_canon(*(const fp_t*)&z.acc, w);  // X
        store(out, tid, 0, w);
    }
    if (do_f) {
        f64::from_fe(z.b.X, w);
        store(out, tid, 1, w);
    }
}

// ---- rates ----------------------------------------------------------------

// CI integer chains and CF FP64 chains a thread, R rounds; with SPLIT the
// even warps run only the integer chains and the odd warps only the FP64
// ones (RI and RF rounds).
template<int CI, int CF, bool SPLIT>
__launch_bounds__(256) __global__
void chains(const uint32_t* in, uint32_t RI, uint32_t RF, uint32_t* out)
{
    uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
    bool do_i = !SPLIT || ((threadIdx.x / 32) & 1) == 0;
    bool do_f = !SPLIT || ((threadIdx.x / 32) & 1) == 1;
    fp_t xi[CI > 0 ? CI : 1], yi = fp_from(in + 12 * (tid % 4096));
    fe xf[CF > 0 ? CF : 1], yf = f64::to_fe(in + 12 * (tid % 4096));
#pragma unroll
    for (int c = 0; c < CI; c++)
        xi[c] = fp_from(in + 12 * ((tid * 4 + c + 1) % 4096));
#pragma unroll
    for (int c = 0; c < CF; c++)
        xf[c] = f64::to_fe(in + 12 * ((tid * 4 + c + 1) % 4096));
    uint32_t R = SPLIT ? (do_i ? RI : RF) : RI;
#pragma unroll 1
    for (uint32_t r = 0; r < R; r++) {
        if (do_i) {
#pragma unroll
            for (int c = 0; c < CI; c++)
                xi[c] *= yi;
        }
        if (do_f) {
#pragma unroll
            for (int c = 0; c < CF; c++)
                xf[c] = f64::mul(xf[c], yf);
        }
    }
    // Every chain's end, canonical (so none is dead code), in SLOTS slots a
    // thread: slot 0 of an integer-only run and of an FP64-only run must agree.
    uint32_t w[12], slot = 0;
    if (do_i)
        for (int c = 0; c < CI; c++) {
            fp_canon(xi[c], w);
            store(out, tid, slot++, w);
        }
    if (do_f)
        for (int c = 0; c < CF; c++) {
            f64::from_fe(xf[c], w);
            store(out, tid, slot++, w);
        }
}

struct rate_cfg {
    const char* name;
    void (*kernel)(const uint32_t*, uint32_t, uint32_t, uint32_t*);
    int ci, cf;
    bool split;
};

static double run_rate(const rate_cfg& k, const uint32_t* in, uint32_t ri, uint32_t rf,
                       int sms, uint32_t* out)
{
    const uint32_t block = 256, grid = sms * 8;
    size_t threads = (size_t)grid * block;
    timer t;
    k.kernel<<<grid, block>>>(in, 4, 4, out);  // warm-up
    CK(cudaDeviceSynchronize());
    t.start();
    k.kernel<<<grid, block>>>(in, ri, rf, out);
    CK(cudaGetLastError());
    float ms = t.stop();
    double muls = k.split ? (double)threads / 2 * ((double)ri * k.ci + (double)rf * k.cf)
                          : (double)threads * ri * (k.ci + k.cf);
    printf("%s ci=%d cf=%d split=%d rounds=%u/%u muls=%.3e ms=%.2f muls_per_s=%.4e\n", k.name,
           k.ci, k.cf, (int)k.split, ri, rf, muls, ms, muls / ms * 1e3);
    return muls / ms * 1e3;
}

// The integer-only kernel (GI blocks) and the FP64-only one (GF blocks) on
// two streams at once, each sized to leave room on every SM for the
// other's blocks; FP64 rounds set so that both take the same time alone.
// Prints both alone and together; returns multiplications a second together.
static double co_resident(const uint32_t* in, uint32_t gi, uint32_t gf, uint32_t* o1,
                          uint32_t* o2)
{
    const uint32_t block = 256, ri = 1024;
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    timer t;
    auto run = [&](bool i, bool f, uint32_t rf) {
        CK(cudaDeviceSynchronize());
        t.start();
        if (i)
            chains<4, 0, false><<<gi, block, 0, s1>>>(in, ri, ri, o1);
        if (f)
            chains<0, 2, false><<<gf, block, 0, s2>>>(in, rf, rf, o2);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        return t.stop();
    };
    run(true, true, 4);  // warm-up
    float ti = run(true, false, 0), tf64 = run(false, true, 64);
    uint32_t rf = (uint32_t)(64.0 * ti / tf64) + 1;
    float tf = run(false, true, rf), both = run(true, true, rf);
    double muls = (double)gi * block * ri * 4 + (double)gf * block * rf * 2;
    printf("co_resident int_blocks=%u fp_blocks=%u int_rounds=%u fp_rounds=%u int_ms=%.2f "
           "fp_ms=%.2f both_ms=%.2f overlap=%.3f muls_per_s=%.4e\n",
           gi, gf, ri, rf, ti, tf, both, (ti + tf) / both, muls / both * 1e3);
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    return muls / both * 1e3;
}

static unsigned long long count(unsigned long long* d)
{
    unsigned long long h;
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaMemset(d, 0, sizeof h));
    return h;
}

int main(int argc, char** argv)
{
    if (argc > 2 && std::string(argv[1]) == "--host")
        return host_check(strtoull(argv[2], nullptr, 0));
    uint64_t n = argc > 1 ? strtoull(argv[1], nullptr, 0) : (1ULL << 27);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    printf("device=%s sms=%d\n", prop.name, sms);

    unsigned long long* bad;
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMemset(bad, 0, sizeof *bad));
    auto E = edge_values();
    uint32_t ne = (uint32_t)(E.size() / 12), *dE;
    CK(cudaMalloc(&dE, E.size() * 4));
    CK(cudaMemcpy(dE, E.data(), E.size() * 4, cudaMemcpyHostToDevice));
    timer t;
    t.start();
    check_random<<<sms * 16, 256>>>(n, bad);
    CK(cudaGetLastError());
    float check_ms = t.stop();
    unsigned long long bad_random = count(bad);
    check_pairs<<<(ne * ne + 255) / 256, 256>>>(dE, ne, bad);
    CK(cudaDeviceSynchronize());
    unsigned long long bad_edges = count(bad);
    const uint32_t chain_threads = sms * 256, chain_len = 1024;
    check_chains<<<sms, 256>>>(chain_len, bad);
    CK(cudaDeviceSynchronize());
    unsigned long long bad_chains = count(bad);
    printf("check random=%llu bad=%llu ms=%.1f edges=%u pairs=%u bad=%llu chains=%u len=%u "
           "bad=%llu\n",
           (unsigned long long)n, bad_random, check_ms, ne, ne * ne, bad_edges, chain_threads,
           chain_len, bad_chains);

    // Inputs of the rate kernels: 4096 values below p.
    std::vector<uint32_t> in(4096 * 12);
    for (uint32_t i = 0; i < 4096; i++)
        f64::gen(i, 9, &in[12 * i]);
    uint32_t *din, *o1, *o2;
    size_t threads = (size_t)sms * 8 * 256;
    CK(cudaMalloc(&din, in.size() * 4));
    CK(cudaMemcpy(din, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&o1, threads * 48 * SLOTS));
    CK(cudaMalloc(&o2, threads * 48 * SLOTS));

    const uint32_t RI = 1024;
    double r_int = run_rate({"int", chains<4, 0, false>, 4, 0, false}, din, RI, RI, sms, o1);
    std::vector<uint32_t> h1(threads * 12 * SLOTS), h2(threads * 12 * SLOTS);
    CK(cudaMemcpy(h1.data(), o1, threads * 48 * SLOTS, cudaMemcpyDeviceToHost));
    double r_f1 = run_rate({"fp64", chains<0, 1, false>, 0, 1, false}, din, RI / 4, RI / 4, sms, o2);
    double r_f2 = run_rate({"fp64", chains<0, 2, false>, 0, 2, false}, din, RI / 4, RI / 4, sms, o2);
    // Chain 0 of the integer run did RI products; the FP64 run RI / 4:
    // compare on a run with equal rounds instead.
    run_rate({"fp64", chains<0, 1, false>, 0, 1, false}, din, RI, RI, sms, o2);
    CK(cudaMemcpy(h2.data(), o2, threads * 48 * SLOTS, cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (size_t i = 0; i < h1.size(); i += 12 * SLOTS)
        differ += memcmp(&h1[i], &h2[i], 48) != 0;
    double r_fp = r_f1 > r_f2 ? r_f1 : r_f2;
    printf("rate_ends_differ=%zu of %zu\n", differ, threads);

    // Both kinds at once; FP64 rounds sized so the two finish together.
    double best = 0;
    const rate_cfg mixed[] = {
        {"mixed", chains<2, 1, false>, 2, 1, false}, {"mixed", chains<4, 1, false>, 4, 1, false},
        {"mixed", chains<1, 1, false>, 1, 1, false}, {"mixed", chains<4, 2, false>, 4, 2, false},
        {"split", chains<4, 2, true>, 4, 2, true}, {"split", chains<4, 1, true>, 4, 1, true},
    };
    for (const auto& k : mixed) {
        // Split: the FP64 warps' rounds sized to their CF chains.
        uint32_t rfk = (uint32_t)(RI * 4.0 * r_fp / r_int / k.cf + 1);
        double r = run_rate(k, din, k.split ? RI : RI / 4, rfk, sms, o1);
        best = r > best ? r : best;
    }
    // Blocks a kernel on every SM: 2 + 1 leave room for both by registers.
    for (uint32_t gi : {2u, 4u})
        for (uint32_t gf : {1u, 2u}) {
            double r = co_resident(din, gi * sms, gf * sms, o1, o2);
            best = r > best ? r : best;
        }
    // Mixed additions: checked against xyzz_t::add, then timed.
    check_xyzz<<<sms, 256>>>(256, bad);
    CK(cudaDeviceSynchronize());
    unsigned long long bad_xyzz = count(bad);
    printf("check xyzz buckets=%u len=256 bad=%llu\n", sms * 256, bad_xyzz);
    const uint32_t RA = 256;
    double a_int = run_rate({"xyzz_int", xyzz_chains<true, false, false>, 1, 0, false}, din, RA,
                            RA, sms, o1);
    double a_fp = run_rate({"xyzz_fp64", xyzz_chains<false, true, false>, 0, 1, false}, din, RA,
                           RA, sms, o2);
    uint32_t raf = (uint32_t)(RA * a_fp / a_int + 1);
    double a_both = run_rate({"xyzz_both", xyzz_chains<true, true, false>, 1, 1, false}, din,
                             RA / 2, RA / 2, sms, o1);
    double a_split = run_rate({"xyzz_split", xyzz_chains<true, true, true>, 1, 1, true}, din, RA,
                              raf, sms, o1);
    double a_best = a_both > a_split ? a_both : a_split;
    printf("fp64_mul_summary random=%llu random_bad=%llu edge_pairs=%u edge_bad=%llu "
           "chain_bad=%llu rate_ends_differ=%zu xyzz_bad=%llu int_muls_per_s=%.4e "
           "fp64_muls_per_s=%.4e fp64_over_int=%.3f best_combined_per_s=%.4e "
           "combined_over_int=%.3f xyzz_int_per_s=%.4e xyzz_fp64_per_s=%.4e "
           "xyzz_best_combined_per_s=%.4e xyzz_combined_over_int=%.3f\n",
           (unsigned long long)n, bad_random, ne * ne, bad_edges, bad_chains, differ, bad_xyzz,
           r_int, r_fp, r_fp / r_int, best, best / r_int, a_int, a_fp, a_best, a_best / a_int);
    return 0;
}
