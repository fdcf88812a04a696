//! cuzk's own small kernels: the pointwise steps of the H polynomial (the
//! product, the generator coset's (a·b − c)·Z⁻¹ in one kernel or two for the
//! a-only staging tier, the half-root coset's shift and final combination)
//! and the compaction of
//! scalars by a density bitmap (set bits counted per word, then scanned by
//! CUB on the device). Included by `cuzk_cuda.cu`
//! after sppark's field types.

#ifndef __CUZK_KERNELS_CUH__
#define __CUZK_KERNELS_CUH__

// a_i ← (a_i·b_i − c_i)·z_inv on the coset (z_inv = 1/(g^n − 1)).
__global__ void h_pointwise(fr_t* a, const fr_t* b, const fr_t* c,
                            fr_t z_inv, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += stride) {
        fr_t x = a[i];
        x *= b[i];
        x -= c[i];
        x *= z_inv;
        a[i] = x;
    }
}

// a_i ← a_i·b_i (the a-only staging tier: b streamed through a second
// buffer).
__global__ void h_mul(fr_t* a, const fr_t* b, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += stride)
        a[i] *= b[i];
}

// a_i ← (a_i − c_i)·z_inv, after h_mul: the same field operations, in the
// same order, as h_pointwise.
__global__ void h_sub_scale(fr_t* a, const fr_t* c, fr_t z_inv, size_t n)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += stride) {
        fr_t x = a[i];
        x -= c[i];
        x *= z_inv;
        a[i] = x;
    }
}

static inline unsigned grid_for(const stream_t& s, size_t n, unsigned block)
{
    size_t want = (n + block - 1) / block;
    size_t cap = (size_t)s.sm_count() * 16;
    if (want > cap)
        want = cap;
    return want ? (unsigned)want : 1;
}

static void launch_h_pointwise(const stream_t& s, fr_t* a, const fr_t* b,
                               const fr_t* c, const fr_t& z_inv, size_t n)
{
    const unsigned block = 256;
    h_pointwise<<<grid_for(s, n, block), block, 0, s>>>(a, b, c, z_inv, n);
    CUDA_OK(cudaGetLastError());
}

static void launch_h_mul(const stream_t& s, fr_t* a, const fr_t* b, size_t n)
{
    const unsigned block = 256;
    h_mul<<<grid_for(s, n, block), block, 0, s>>>(a, b, n);
    CUDA_OK(cudaGetLastError());
}

static void launch_h_sub_scale(const stream_t& s, fr_t* a, const fr_t* c,
                               const fr_t& z_inv, size_t n)
{
    const unsigned block = 256;
    h_sub_scale<<<grid_for(s, n, block), block, 0, s>>>(a, c, z_inv, n);
    CUDA_OK(cudaGetLastError());
}

// The half-root coset of the H stage (h_stage.cuh): ζ = ω_{2n}, a primitive
// 2^(lg_n+1)-th root of unity, taken from sppark's partial twiddles of
// ω_{2^MAX_LG_DOMAIN_SIZE} (forward roots for ζ, inverse roots for ζ^-1), so
// lg_n < MAX_LG_DOMAIN_SIZE.
__device__ __forceinline__ fr_t half_coset_power(size_t i, uint32_t lg_n,
                                                 const fr_t (*roots)[WINDOW_SIZE])
{
    return get_intermediate_root((index_t)i << (MAX_LG_DOMAIN_SIZE - lg_n - 1),
                                 roots);
}

// d[j] ← d[j]·ζ^i for a bit-reversed vector (i = rev(j)): bit-reversed
// coefficients shifted onto the coset ζ<ω>.
__global__ void half_coset_shift(fr_t* d, uint32_t lg_n,
                                 const fr_t (*roots)[WINDOW_SIZE])
{
    size_t n = (size_t)1 << lg_n;
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t j = threadIdx.x + (size_t)blockIdx.x * blockDim.x; j < n;
         j += stride) {
        fr_t x = d[j];
        x *= half_coset_power(bit_rev((index_t)j, lg_n), lg_n, roots);
        d[j] = x;
    }
}

// p[j] ← (c[j] − ζ^-i·p[j]) / 2 (i = rev(j)), both bit-reversed: p the
// coefficients of a·b's values on ζ<ω> (ζ^i·(L_i − H_i)), c those of C
// (L_i + H_i); the result is h_i, bit-reversed.
__global__ void half_coset_combine(fr_t* p, const fr_t* c, uint32_t lg_n,
                                   const fr_t (*inv_roots)[WINDOW_SIZE])
{
    size_t n = (size_t)1 << lg_n;
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t j = threadIdx.x + (size_t)blockIdx.x * blockDim.x; j < n;
         j += stride) {
        fr_t x = p[j];
        x *= half_coset_power(bit_rev((index_t)j, lg_n), lg_n, inv_roots);
        fr_t y = c[j];
        y -= x;
        y >>= 1;
        p[j] = y;
    }
}

// `kernel<<<…>>>(args…)` over n = 2^lg_n elements on `s`, 256 threads a
// block.
template<class... P, class... A>
static void launch_over(const stream_t& s, uint32_t lg_n, void (*kernel)(P...),
                        A... args)
{
    const unsigned block = 256;
    kernel<<<grid_for(s, (size_t)1 << lg_n, block), block, 0, s>>>(args...);
    CUDA_OK(cudaGetLastError());
}

static void launch_half_coset_shift(const stream_t& s, fr_t* d, uint32_t lg_n)
{
    launch_over(s, lg_n, half_coset_shift, d, lg_n,
                NTTParameters::all(false)[s].partial_twiddles);
}

static void launch_half_coset_combine(const stream_t& s, fr_t* p,
                                      const fr_t* c, uint32_t lg_n)
{
    launch_over(s, lg_n, half_coset_combine, p, c, lg_n,
                NTTParameters::all(true)[s].partial_twiddles);
}

// counts[w] = set bits of words[w] (of the first nbits bits) for w < nwords,
// counts[nwords] = 0: scanned, the offsets of `compact_by_bits`.
__global__ void word_popc(uint32_t* counts, const uint64_t* words,
                          size_t nwords, size_t nbits)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w <= nwords;
         w += stride) {
        uint64_t bits = w < nwords ? words[w] : 0;
        if (w == nwords - 1 && nbits % 64)
            bits &= ((uint64_t)1 << (nbits % 64)) - 1;
        counts[w] = (uint32_t)__popcll(bits);
    }
}

// The scalars of set bits in order, a thread a scalar: bit i (first <= i
// < last) sends in[i - first] to offsets[i/64] plus the set bits below it
// in its word. `first` is a multiple of 64.
__global__ void compact_by_bits(fr_t* out, const fr_t* in,
                                const uint64_t* words,
                                const uint32_t* offsets, size_t first,
                                size_t last)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = first + threadIdx.x + (size_t)blockIdx.x * blockDim.x;
         i < last; i += stride) {
        uint64_t word = words[i / 64];
        uint32_t b = i % 64;
        if ((word >> b) & 1)
            out[offsets[i / 64] + __popcll(word & (((uint64_t)1 << b) - 1))] =
                in[i - first];
    }
}

#endif
