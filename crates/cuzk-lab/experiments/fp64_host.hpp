// fp64_mul.cu's host side: the edge values, a plain Montgomery product over
// 6 x 64-bit limbs (R = 2^384, as fp_t and f64::mul), and the CPU check
// of f64::mul and f64::madd against it (`fp64_mul --host N`, no GPU
// needed).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fp64_check.cuh"
#include "fp64_xyzz.cuh"

typedef unsigned __int128 u128;

static void words_to_u64(const uint32_t* w, uint64_t* a)
{
    for (int i = 0; i < 6; i++)
        a[i] = (uint64_t)w[2 * i] | ((uint64_t)w[2 * i + 1] << 32);
}

// p as 6 x 64-bit limbs.
static void p_u64(uint64_t* p)
{
    uint32_t pw[12];
    for (int k = 0; k < 12; k++)
        pw[k] = f64::p_word(k);
    words_to_u64(pw, p);
}

// t (below 2p; `over` when it carried past 2^384) less p if it is at least
// p, as canonical words.
static void sub_p_once(uint64_t* t, bool over, const uint64_t* p, uint32_t* out)
{
    bool ge = over;
    if (!ge) {
        ge = true;
        for (int j = 5; j >= 0; j--)
            if (t[j] != p[j]) {
                ge = t[j] > p[j];
                break;
            }
    }
    if (ge) {
        u128 borrow = 0;
        for (int j = 0; j < 6; j++) {
            u128 d = (u128)t[j] - p[j] - borrow;
            t[j] = (uint64_t)d;
            borrow = (d >> 64) & 1;
        }
    }
    for (int i = 0; i < 6; i++) {
        out[2 * i] = (uint32_t)t[i];
        out[2 * i + 1] = (uint32_t)(t[i] >> 32);
    }
}

// a * b / 2^384 mod p for a, b < p (CIOS), as canonical words.
static void ref_mont(const uint32_t* wa, const uint32_t* wb, uint32_t* out)
{
    uint64_t a[6], b[6], p[6], t[8] = {0};
    words_to_u64(wa, a);
    words_to_u64(wb, b);
    p_u64(p);
    const uint64_t n0 = 0x89f3fffcfffcfffdULL;
    for (int i = 0; i < 6; i++) {
        u128 c = 0;
        for (int j = 0; j < 6; j++) {
            c += (u128)a[j] * b[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[6];
        t[6] = (uint64_t)c;
        t[7] = (uint64_t)(c >> 64);
        uint64_t m = t[0] * n0;
        c = (u128)m * p[0] + t[0];
        c >>= 64;
        for (int j = 1; j < 6; j++) {
            c += (u128)m * p[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[6];
        t[5] = (uint64_t)c;
        t[6] = t[7] + (uint64_t)(c >> 64);
    }
    sub_p_once(t, t[6] != 0, p, out);
}

// p - d (d small) and 2^k, as words.
static std::vector<uint32_t> p_minus(uint64_t d)
{
    std::vector<uint32_t> w(12);
    u128 borrow = 0;
    for (int k = 0; k < 12; k++) {
        u128 sub = k < 2 ? (uint32_t)(d >> (32 * k)) : 0;
        u128 t = (u128)f64::p_word(k) - sub - borrow;
        w[k] = (uint32_t)t;
        borrow = (t >> 64) & 1;
    }
    return w;
}

static std::vector<uint32_t> pow2(int k)
{
    std::vector<uint32_t> w(12);
    w[k / 32] = 1U << (k % 32);
    return w;
}

// The edge values, 12 words each, concatenated.
static std::vector<uint32_t> edge_values()
{
    std::vector<std::vector<uint32_t>> e;
    for (uint64_t small : {0ULL, 1ULL, 2ULL, 3ULL, 0xffffffffULL, (1ULL << 47) - 1, 1ULL << 47,
                           (1ULL << 48) - 1, 1ULL << 48}) {
        std::vector<uint32_t> w(12);
        w[0] = (uint32_t)small;
        w[1] = (uint32_t)(small >> 32);
        e.push_back(w);
    }
    for (uint64_t d : {1ULL, 2ULL, 3ULL, 1ULL << 47, 1ULL << 48, (1ULL << 48) + 1})
        e.push_back(p_minus(d));
    for (int k : {95, 96, 191, 192, 335, 336, 379, 380})
        e.push_back(pow2(k));
    // (p - 1) / 2 and (p + 1) / 2, 2^380 - 1, R mod p, all 48-bit limbs
    // 2^47 - 1 (below 2^381) and all 2^47.
    std::vector<uint32_t> half = p_minus(1), ones(12, 0xffffffffU), rmodp = {
        0x0002fffdU, 0x76090000U, 0xc40c0002U, 0xebf4000bU, 0x53c758baU, 0x5f489857U,
        0x70525745U, 0x77ce5853U, 0xa256ec6dU, 0x5c071a97U, 0xfa80e493U, 0x15f65ec3U};
    for (int k = 0; k < 12; k++)
        half[k] = (half[k] >> 1) | (k < 11 ? half[k + 1] << 31 : 0);
    e.push_back(half);
    std::vector<uint32_t> half1 = half;
    half1[0] += 1;  // (p + 1) / 2 (the low word of (p - 1) / 2 is ...5555: no carry)
    e.push_back(half1);
    ones[11] = 0x0fffffffU;
    e.push_back(ones);
    e.push_back(rmodp);
    for (uint64_t limb : {(1ULL << 47) - 1, 1ULL << 47}) {
        std::vector<uint32_t> w(12, 0);
        for (int k = 0; k < 7; k++)
            for (int b = 0; b < 48; b++)
                if ((limb >> b) & 1) {
                    int bit = 48 * k + b;
                    w[bit / 32] |= 1U << (bit % 32);
                }
        e.push_back(w);
    }
    std::vector<uint32_t> flat;
    for (auto& w : e)
        flat.insert(flat.end(), w.begin(), w.end());
    return flat;
}

// a + b and a - b mod p, canonical words in and out.
static void ref_addsub(const uint32_t* a, const uint32_t* b, bool sub, uint32_t* out)
{
    uint64_t x[6], y[6], p[6], r[6];
    words_to_u64(a, x);
    words_to_u64(b, y);
    p_u64(p);
    // sub: a + (p - b); then subtract p once if the sum is at least p.
    if (sub) {
        u128 br = 0;
        for (int j = 0; j < 6; j++) {
            u128 d = (u128)p[j] - y[j] - br;
            y[j] = (uint64_t)d;
            br = (d >> 64) & 1;
        }
    }
    u128 c = 0;
    for (int j = 0; j < 6; j++) {
        c += (u128)x[j] + y[j];
        r[j] = (uint64_t)c;
        c >>= 64;
    }
    sub_p_once(r, false, p, out);  // a + b < 2p < 2^384: no carry
}

struct W {
    uint32_t w[12];
};
static W rm(const W& a, const W& b) { W r; ref_mont(a.w, b.w, r.w); return r; }
static W ra(const W& a, const W& b) { W r; ref_addsub(a.w, b.w, false, r.w); return r; }
static W rs(const W& a, const W& b) { W r; ref_addsub(a.w, b.w, true, r.w); return r; }

// The same steps as check_xyzz on the device, against a word-level bucket.
static uint64_t host_xyzz(uint32_t threads, uint32_t L)
{
    const W one = {{0x0002fffdU, 0x76090000U, 0xc40c0002U, 0xebf4000bU, 0x53c758baU, 0x5f489857U,
                    0x70525745U, 0x77ce5853U, 0xa256ec6dU, 0x5c071a97U, 0xfa80e493U, 0x15f65ec3U}};
    uint64_t bad = 0;
    for (uint32_t t = 0; t < threads; t++) {
        W x, y, s;
        f64::gen(t, 5, x.w);
        f64::gen(t, 6, y.w);
        f64::gen(t, 7, s.w);
        W X = x, Y = y, ZZ = one, ZZZ = one;
        f64::bucket b = {f64::to_fe(x.w), f64::to_fe(y.w), f64::to_fe(one.w), f64::to_fe(one.w)};
        f64::fe fx = f64::to_fe(x.w), fy = f64::to_fe(y.w), fs = f64::to_fe(s.w);
        for (uint32_t j = 0; j < L; j++) {
            x = ra(x, s);
            W R = rs(rm(y, ZZZ), Y), P = rs(rm(x, ZZ), X);
            W PP = rm(P, P), PPP = rm(P, PP);
            ZZ = rm(ZZ, PP);
            ZZZ = rm(ZZZ, PPP);
            W Q = rm(PP, X);
            W X3 = rs(rs(rs(rm(R, R), PPP), Q), Q);
            Y = rs(rm(R, rs(Q, X3)), rm(Y, PPP));
            X = X3;
            fx = f64::reduce(f64::add(fx, fs));
            f64::madd(b, fx, fy);
        }
        uint32_t g[4][12];
        f64::from_fe(b.X, g[0]);
        f64::from_fe(b.Y, g[1]);
        f64::from_fe(b.ZZ, g[2]);
        f64::from_fe(b.ZZZ, g[3]);
        bad += memcmp(g[0], X.w, 48) || memcmp(g[1], Y.w, 48) || memcmp(g[2], ZZ.w, 48) ||
               memcmp(g[3], ZZZ.w, 48);
    }
    return bad;
}

static bool host_same(const uint32_t* a, const uint32_t* b)
{
    uint32_t e[12], g[12];
    ref_mont(a, b, e);
    f64::from_fe(f64::mul(f64::to_fe(a), f64::to_fe(b)), g);
    return memcmp(e, g, 48) == 0;
}

// f64::mul against ref_mont on the CPU: n random cases, every pair of edge
// values, and 64 chains of 1,000 products.
static int host_check(uint64_t n)
{
    uint64_t bad = 0;
    uint32_t a[12], b[12];
    for (uint64_t i = 0; i < n; i++) {
        f64::gen(i, 1, a);
        f64::gen(i, 2, b);
        bad += !host_same(a, b);
    }
    auto E = edge_values();
    size_t ne = E.size() / 12;
    uint64_t bad_edges = 0;
    for (size_t i = 0; i < ne; i++)
        for (size_t j = 0; j < ne; j++)
            bad_edges += !host_same(&E[12 * i], &E[12 * j]);
    uint64_t bad_chains = 0;
    for (uint32_t c = 0; c < 64; c++) {
        uint32_t x[12], y[12], g[12];
        f64::gen(c, 3, x);
        f64::gen(c, 4, y);
        f64::fe xf = f64::to_fe(x), yf = f64::to_fe(y);
        for (int j = 0; j < 1000; j++) {
            ref_mont(x, y, g);
            memcpy(x, g, 48);
            xf = f64::mul(xf, yf);
        }
        f64::from_fe(xf, g);
        bad_chains += memcmp(x, g, 48) != 0;
    }
    uint64_t bad_xyzz = host_xyzz(256, 256);
    printf("fp64_mul_host_summary random=%llu random_bad=%llu edge_pairs=%zu edge_bad=%llu "
           "chains=64 chain_len=1000 chain_bad=%llu xyzz_buckets=256 xyzz_len=256 "
           "xyzz_bad=%llu\n",
           (unsigned long long)n, (unsigned long long)bad, ne * ne,
           (unsigned long long)bad_edges, (unsigned long long)bad_chains,
           (unsigned long long)bad_xyzz);
    return bad || bad_edges || bad_chains || bad_xyzz;
}
