// An XYZZ mixed addition (a bucket plus an affine point) on fp64_mont.cuh's
// FP64 field, the same formula as sppark's xyzz_t::add (8 multiplications,
// 2 squarings), without its special cases (P = 0), for issue 38's rates.
//
// Signed digits let additions and subtractions run limb by limb with no
// carries. What keeps every multiplication's operands inside the bounds of
// fp64_mont.cuh (limbs within 2^48 on one side and 2^47 on the other,
// values within ~2p) is norm (carries back to |limb| <= 2^47) and reduce
// (subtract round(a / p) * p, then norm; |a| <= p/2 after it). Where each
// goes, with the value bounds, is in docs/perf/2026-12-06-fp64-montgomery.md.
#pragma once

#include "fp64_mont.cuh"

namespace f64 {

constexpr double INV_P7 = 3.49749430823453e-14;  // 2^336 / p

F64_HD fe add(const fe& a, const fe& b)
{
    fe c;
#pragma unroll
    for (int i = 0; i < N; i++)
        c.v[i] = a.v[i] + b.v[i];
    return c;
}

F64_HD fe sub(const fe& a, const fe& b)
{
    fe c;
#pragma unroll
    for (int i = 0; i < N; i++)
        c.v[i] = a.v[i] - b.v[i];
    return c;
}

// Limbs 0..6 back to |limb| <= 2^47, the value unchanged.
F64_HD fe norm(fe a)
{
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
        double r, c = split48(a.v[i], r);
        a.v[i] = r;
        a.v[i + 1] += c;
    }
    return a;
}

// a - round(a / p) * p, normalised: |value| <= p/2 (plus 2^-40 p).
F64_HD fe reduce(fe a)
{
    double est = F64_FMA(a.v[N - 2], ILIMB, a.v[N - 1]);
    double t = F64_FMA(est, INV_P7, BIAS) - BIAS;
#pragma unroll
    for (int i = 0; i < N; i++)
        a.v[i] = F64_FMA(-t, p_limb(i), a.v[i]);
    return norm(a);
}

struct bucket {
    fe X, Y, ZZ, ZZZ;
};

// b += (x2, y2), x2 and y2 normalised with |value| < p.
F64_HD void madd(bucket& b, const fe& x2, const fe& y2)
{
    fe R = norm(sub(mul(y2, b.ZZZ), b.Y));   // S2 - Y1
    fe P = norm(sub(mul(x2, b.ZZ), b.X));    // U2 - X1
    fe PP = mul(P, P);
    fe PPP = mul(P, PP);
    b.ZZ = mul(b.ZZ, PP);
    b.ZZZ = mul(b.ZZZ, PPP);
    fe Q = mul(PP, b.X);
    fe X3 = reduce(sub(sub(mul(R, R), PPP), add(Q, Q)));
    b.Y = reduce(sub(mul(R, sub(Q, X3)), mul(b.Y, PPP)));
    b.X = X3;
}

}  // namespace f64
