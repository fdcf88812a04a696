// What fp64_mul.cu checks its FP64 multiplication with (host and device):
// conversions between 12 x 32-bit words (fp_t's layout, little-endian) and
// f64::fe's signed digits, a generator of test values over all of [0, p),
// the edge values, and a plain 64-bit-limb Montgomery product for the host.
#pragma once

#include <cstdint>
#include "fp64_mont.cuh"

namespace f64 {

constexpr uint64_t M48 = (1ULL << 48) - 1;

F64_HD constexpr uint32_t p_word(int k)
{
    return k == 0    ? 0xffffaaabU
           : k == 1  ? 0xb9feffffU
           : k == 2  ? 0xb153ffffU
           : k == 3  ? 0x1eabfffeU
           : k == 4  ? 0xf6b0f624U
           : k == 5  ? 0x6730d2a0U
           : k == 6  ? 0xf38512bfU
           : k == 7  ? 0x64774b84U
           : k == 8  ? 0x434bacd7U
           : k == 9  ? 0x4b1ba7b6U
           : k == 10 ? 0x397fe69aU
                     : 0x1a0111eaU;
}

// Bits [48 k, 48 k + 48) of 12 words.
F64_HD uint64_t limb48(const uint32_t* w, int k)
{
    int b = 48 * k, i = b / 32, s = b % 32;
    uint64_t lo = (uint64_t)w[i] | ((uint64_t)w[i + 1] << 32);
    uint64_t v = lo >> s;
    if (s && i + 2 < 12)
        v |= (uint64_t)w[i + 2] << (64 - s);
    return v & M48;
}

// Words (any value below 2^381) to signed digits.
F64_HD fe to_fe(const uint32_t* w)
{
    fe a;
    int64_t carry = 0;
    for (int k = 0; k < N; k++) {
        int64_t d = (int64_t)limb48(w, k) + carry;
        carry = 0;
        if (k < N - 1 && d >= (1LL << 47)) {
            d -= 1LL << 48;
            carry = 1;
        }
        a.v[k] = (double)d;
    }
    return a;
}

F64_HD constexpr uint64_t limb48_p(int k)
{
    return k == 0   ? 0xffffffffaaabULL
           : k == 1 ? 0xb153ffffb9feULL
           : k == 2 ? 0xf6241eabfffeULL
           : k == 3 ? 0x6730d2a0f6b0ULL
           : k == 4 ? 0x4b84f38512bfULL
           : k == 5 ? 0x434bacd76477ULL
           : k == 6 ? 0xe69a4b1ba7b6ULL
                    : 0x1a0111ea397fULL;
}

// 8 non-negative 48-bit limbs: at least p?
F64_HD bool ge_p(const int64_t* u)
{
    for (int k = N - 1; k >= 0; k--) {
        int64_t pk = (int64_t)limb48_p(k);
        if (u[k] != pk)
            return u[k] > pk;
    }
    return true;
}

// Signed digits of a value in (-p, 2p) to its canonical words in [0, p).
F64_HD void from_fe(const fe& a, uint32_t* w)
{
    int64_t u[N], carry = 0;
    for (int k = 0; k < N; k++) {
        int64_t t = (int64_t)a.v[k] + carry;
        if (k < N - 1) {
            u[k] = t & (int64_t)M48;
            carry = t >> 48;  // floor
        } else {
            u[k] = t;
        }
    }
    int sign = u[N - 1] < 0 ? 1 : (ge_p(u) ? -1 : 0);  // add p, subtract p
    if (sign) {
        carry = 0;
        for (int k = 0; k < N; k++) {
            int64_t t = u[k] + sign * (int64_t)limb48_p(k) + carry;
            if (k < N - 1) {
                u[k] = t & (int64_t)M48;
                carry = t >> 48;
            } else {
                u[k] = t;
            }
        }
    }
    for (int i = 0; i < 12; i++)
        w[i] = 0;
    for (int k = 0; k < N; k++) {
        uint64_t v = (uint64_t)u[k] & M48;
        int b = 48 * k, i = b / 32, s = b % 32;
        w[i] |= (uint32_t)(v << s);
        w[i + 1] |= (uint32_t)(v >> (32 - s));
        if (s && i + 2 < 12)
            w[i + 2] |= (uint32_t)(v >> (64 - s));
    }
}

F64_HD uint32_t hash32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

// A test value below p from (case, salt), over all of [0, p): a quarter
// below 2^380, a quarter with a random top word below p's, a quarter just
// under p (p minus a random 64-bit value), a quarter anywhere below 2^380.
F64_HD void gen(uint64_t idx, uint32_t salt, uint32_t* w)
{
    uint32_t h = hash32((uint32_t)idx ^ hash32((uint32_t)(idx >> 32) + salt * 0x9e3779b9U));
    for (int k = 0; k < 12; k++) {
        h = hash32(h + k + 1);
        w[k] = h;
    }
    switch (hash32(h) & 3) {
    case 2:
        w[11] = w[11] % p_word(11);
        break;
    case 3: {
        uint64_t borrow = 0;
        for (int k = 0; k < 12; k++) {
            uint64_t sub = k < 2 ? w[k] : 0;
            uint64_t t = (uint64_t)p_word(k) - sub - borrow;
            borrow = (t >> 63) & 1;
            w[k] = (uint32_t)t;
        }
        break;
    }
    default:
        w[11] &= 0x0fffffffU;
    }
}

}  // namespace f64
