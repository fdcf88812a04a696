// BLS12-381 base-field Montgomery multiplication on FP64 FMAs (issue 38's
// experiment; host and device, so the host check and the GPU share it).
//
// An element is 8 limbs of 48 bits (384 bits, the same R = 2^384 as
// sppark's fp_t, so the two give the same Montgomery product), each limb an
// integer held in a double and allowed to be negative: |limb| <= 2^47 for
// limbs 0..6 ("signed digits"), the value sum limb_k 2^(48 k) in (-p, p).
//
// One 48 x 48-bit product x * y (x already scaled by 2^-48, exactly) is
// split without error by two FMAs around an accumulator H kept in the
// binade [2^52, 2^53), where one unit in the last place is 1:
//   ph = fma(x, y, H)      H + round(x y): the high part lands in H
//   h  = ph - H            that rounded high part, exactly
//   lo = fma(x, y, -h)     x y - h in [-1/2, 1/2], exact (a multiple of 2^-48)
// so x y 2^48 = h 2^48 + lo 2^48: h belongs to the next column, lo (in
// units of 2^48) to this one. H starts at BIAS = 1.5 * 2^52 and collects a
// column's high parts; L collects its low parts. Every partial sum stays
// far below 2^53 (bounds in docs/perf/2026-12-06-fp64-montgomery.md), so
// nothing is ever rounded: all arithmetic is exact.
//
// The multiplication is product scanning (FIPS Montgomery): column k takes
// a_i b_{k-i} and q_i p_{k-i}; for k < 8 the column's value fixes
// q_k = -value / p mod 2^48 (signed, |q_k| <= 2^47), for k >= 8 it is
// limb k - 8 of the result. Only the FP64 pipe is used: 2 FMAs and 2 adds
// a product, ~660 FP64 operations a multiplication.
#pragma once

#include <cmath>
#ifdef __CUDACC__
#define F64_HD __host__ __device__ __forceinline__
#else
#define F64_HD inline
#endif
#ifdef __CUDA_ARCH__
#define F64_FMA(a, b, c) __fma_rn(a, b, c)
#else
#define F64_FMA(a, b, c) std::fma(a, b, c)
#endif

namespace f64 {

constexpr int N = 8;
constexpr double LIMB = 281474976710656.0;           // 2^48
constexpr double ILIMB = 1.0 / 281474976710656.0;    // 2^-48
constexpr double BIAS = 6755399441055744.0;          // 1.5 * 2^52

struct fe {
    double v[N];
};

// p in signed digits (folded to constants where the loops unroll), and
// -p^-1 mod 2^48 as a signed digit.
F64_HD constexpr double p_limb(int j)
{
    return j == 0   ? -21845.0
           : j == 1 ? -86500641359361.0
           : j == 2 ? -10839982866433.0
           : j == 3 ? 113459389855409.0
           : j == 4 ? 83034393350847.0
           : j == 5 ? 73992301405303.0
           : j == 6 ? -27924617254986.0
                    : 28591897852288.0;
}
constexpr double PINV = -12885098499.0;

// One split product, as in the header: the high part into H, the low
// part (units of 2^48 in this column) added to L.
F64_HD void mac(double x, double y, double& H, double& L)
{
    double ph = F64_FMA(x, y, H);
    double h = ph - H;
    L += F64_FMA(x, y, -h);
    H = ph;
}

// round(v / 2^48) and v - that * 2^48, for |v| < 2^52.
F64_HD double split48(double v, double& r)
{
    double c = F64_FMA(v, ILIMB, BIAS) - BIAS;
    r = F64_FMA(-c, LIMB, v);
    return c;
}

// a * b / 2^384 mod p, in signed digits, for |a|, |b| < p in signed digits.
F64_HD fe mul(const fe& a, const fe& b)
{
    double x[N], q[N];
    fe out;
#pragma unroll
    for (int i = 0; i < N; i++)
        x[i] = a.v[i] * ILIMB;
    double H = BIAS, L = 0.0;  // this column's high and low sums
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        double Hn = BIAS;      // the next column's high sum
        // Fixed trip counts, so that the loops unroll fully once k is known
        // (with k-dependent bounds nvcc kept a loop over local memory).
#pragma unroll
        for (int i = 0; i < N; i++)
            if (k - i >= 0 && k - i < N)
                mac(x[i], b.v[k - i], Hn, L);
#pragma unroll
        for (int i = 0; i < N; i++)
            if (i < k && k - i < N)
                mac(q[i], p_limb(k - i), Hn, L);
        // The column's value, exactly: high sums, low sums, carries.
        double v = F64_FMA(L, LIMB, H - BIAS);
        double r, c = split48(v, r);
        if (k < N) {
            // q_k = r * (-p^-1) mod 2^48, held as q_k / 2^48 in [-1/2, 1/2].
            double xr = r * ILIMB;
            double t = F64_FMA(xr, PINV, BIAS) - BIAS;
            q[k] = F64_FMA(xr, PINV, -t);
            // q_k p_0 clears the column: r + its low part is -2^48, 0 or 2^48.
            double ph = F64_FMA(q[k], p_limb(0), Hn);
            double h = ph - Hn;
            double e = F64_FMA(F64_FMA(q[k], p_limb(0), -h), LIMB, r) * ILIMB;
            Hn = ph + (c + e);
        } else if (k < 2 * N - 1) {
            out.v[k - N] = r;
            Hn += c;
        } else {
            out.v[N - 1] = v;
        }
        H = Hn;
        L = 0.0;
    }
    return out;
}

}  // namespace f64
