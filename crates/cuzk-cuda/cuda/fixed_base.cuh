// Many products of one fixed base point, for parameter generation
// (cuzk-setup's streaming generator through cuzk-bench `gen-params --gpu`).
//
// The host hands over cuzk-setup's fixed-base table — for each `wbits`-bit
// window `j` of a scalar, the affine multiples `(k + 1) * 2^(wbits j) * P`
// for `k < 2^(wbits-1)` — once, and then chunks of scalars (blst_fr,
// Montgomery). One thread per scalar recodes it into signed digits (as
// `FixedBaseTable::recode` does on the CPU) and adds (or subtracts) one
// table point per non-zero digit into an XYZZ accumulator: no doublings. The products
// go back in Jacobian form (blst_p1 / blst_p2); the host makes them affine
// in batches and encodes them, so the bytes are the CPU path's (an affine
// point has one representation). In G2 two lanes work on each scalar (an
// Fp2 element spans two lanes in sppark).

#ifndef __CUZK_FIXED_BASE_CUH__
#define __CUZK_FIXED_BASE_CUH__

// out[3i..3i+3] = scalars[i] * P for the table of P, Jacobian (X, Y, Z);
// `windows` windows of `wbits` bits (the last absorbs the signed
// recoding's carry). The accumulator is XYZZ (sppark's mixed addition,
// which subtracts too, on the device). In G2 an Fp2 element spans two
// lanes (`degree` 2): both lanes of a pair take the same scalar, so they
// follow the same path, and points and products go through the memory
// types (`mem_t`), each lane reading or writing its half.
template<class bucket_T, class field_T,
         class affine_mem = typename bucket_T::affine_t::mem_t,
         class field_mem = typename field_T::mem_t>
__global__ void fixed_base_products(field_mem* out, const fr_t* scalars, size_t n,
                                    const affine_mem* table, uint32_t wbits,
                                    uint32_t windows)
{
    typedef typename bucket_T::affine_t affine_T;
    // sppark's XYZZ-to-Jacobian conversion is host-only: its fields are
    // read here in declaration order (X, Y, ZZZ, ZZ).
    static_assert(sizeof(bucket_T) == 4 * sizeof(field_T), "xyzz_t is X, Y, ZZZ, ZZ");
    const uint32_t degree = bucket_T::degree;
    const uint32_t half = 1u << (wbits - 1);
    const uint32_t mask = (1u << wbits) - 1;
    const uint32_t limbs = (fr_t::nbits + 31) / 32;  // 32-bit limbs
    const size_t stride = (size_t)gridDim.x * blockDim.x / degree;
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / degree;
    for (; i < n; i += stride) {
        fr_t s = scalars[i];
        s.from();  // canonical limbs
        bucket_T acc;
        {  // the identity, every field zero
            field_T* z = reinterpret_cast<field_T*>(&acc);
            for (int k = 0; k < 4; k++)
                z[k].zero();
        }
        uint32_t carry = 0;
        for (uint32_t j = 0; j < windows; j++) {
            const uint32_t bit = j * wbits, limb = bit / 32, shift = bit % 32;
            uint64_t raw = limb < limbs ? s[limb] : 0;
            if (limb + 1 < limbs)
                raw |= (uint64_t)s[limb + 1] << 32;
            const uint32_t v = ((uint32_t)(raw >> shift) & mask) + carry;
            int32_t d = (int32_t)v;
            carry = 0;
            if (v > half) {
                d -= (int32_t)(2 * half);
                carry = 1;
            }
            if (d != 0) {
                const bool neg = d < 0;
                const affine_T p = table[(size_t)j * half + (uint32_t)(neg ? -d : d) - 1];
                acc.add(p, neg);
            }
        }
        // Jacobian (X·ZZ, Y·ZZZ, ZZ): ZZ^3 = ZZZ^2 holds for XYZZ points;
        // the identity (ZZ = 0) stays Z = 0.
        const field_T* f = reinterpret_cast<const field_T*>(&acc);
        out[3 * i] = f[0] * f[3];
        out[3 * i + 1] = f[1] * f[2];
        out[3 * i + 2] = f[3];
    }
}

// One device's copy of a generator's two tables and the buffers a chunk
// goes through (plain cudaMalloc: all of it is handed back when freed).
struct cuzk_fixed_base {
    const gpu_t* gpu = nullptr;
    affine_t::mem_t* g1 = nullptr;
    uint32_t g1_wbits = 0, g1_windows = 0;
    affine_fp2_t::mem_t* g2 = nullptr;
    uint32_t g2_wbits = 0, g2_windows = 0;
    fr_t* scalars = nullptr;
    size_t scalars_cap = 0;
    void* out = nullptr;
    size_t out_cap = 0;

    // Never throws (a destructor that did would end the process after a
    // sticky CUDA error).
    ~cuzk_fixed_base()
    {
        if (!gpu)
            return;
        gpu->select();  // cudaSetDevice, errors ignored
        (void)cudaDeviceSynchronize();
        for (void* p : {(void*)g1, (void*)g2, (void*)scalars, out})
            if (p)
                (void)cudaFree(p);
    }

    static void* alloc(size_t bytes)
    {
        void* p = nullptr;
        CUDA_OK(cudaMalloc(&p, bytes));
        return p;
    }

    // On the stream the kernels run on (a copy from pageable memory on
    // another stream could still be in flight when they start).
    template<class T> T* table(const void* host, size_t len)
    {
        auto* d = (T*)alloc(len * sizeof(T));
        CUDA_OK(cudaMemcpyAsync(d, host, len * sizeof(T), cudaMemcpyHostToDevice, *gpu));
        gpu->sync();
        return d;
    }

    // Device buffers for n scalars and n products of `point_bytes` each.
    void reserve(size_t n, size_t point_bytes)
    {
        if (n > scalars_cap) {
            if (scalars)
                (void)cudaFree(scalars);
            scalars = nullptr;
            scalars_cap = 0;
            scalars = (fr_t*)alloc(n * sizeof(fr_t));
            scalars_cap = n;
        }
        if (n * point_bytes > out_cap) {
            if (out)
                (void)cudaFree(out);
            out = nullptr;
            out_cap = 0;
            out = alloc(n * point_bytes);
            out_cap = n * point_bytes;
        }
    }

    // Jacobian products into `host_out` (3 field elements each, blst's
    // layout).
    template<class bucket_T, class field_T, class affine_mem>
    void products(void* host_out, const fr_t* host_scalars, size_t n, const affine_mem* tab,
                  uint32_t wbits, uint32_t windows)
    {
        typedef typename field_T::mem_t field_mem;
        if (n == 0)
            return;
        gpu->select();
        const size_t point_bytes = 3 * sizeof(field_mem);
        reserve(n, point_bytes);
        CUDA_OK(cudaMemcpyAsync(scalars, host_scalars, n * sizeof(fr_t),
                                cudaMemcpyHostToDevice, *gpu));
        const uint32_t block = 128;  // a multiple of every degree
        const size_t threads = n * bucket_T::degree;
        const size_t blocks = (threads + block - 1) / block;
        const uint32_t grid = (uint32_t)(blocks < (1u << 20) ? blocks : (1u << 20));
        fixed_base_products<bucket_T, field_T><<<grid, block, 0, *gpu>>>(
            (field_mem*)out, scalars, n, tab, wbits, windows);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync(host_out, out, n * point_bytes, cudaMemcpyDeviceToHost, *gpu));
        gpu->sync();
    }
};

// A table of `len` points can be `windows` windows of `wbits` bits.
static bool fb_table_shape(size_t len, uint32_t wbits, uint32_t windows)
{
    return wbits >= 2 && wbits <= 24 && ((size_t)windows << (wbits - 1)) == len
        && (size_t)windows * wbits >= 256 && windows <= 128;
}

extern "C" {

// Copies the G1 and G2 tables (`*_len` affine points each, `*_wbits`-bit
// windows, `*_windows` of them) to device `id`.
RustError cuzk_cuda_fb_new(size_t id, const void* g1, size_t g1_len, uint32_t g1_wbits,
                           uint32_t g1_windows, const void* g2, size_t g2_len,
                           uint32_t g2_wbits, uint32_t g2_windows, cuzk_fixed_base** out)
{
    CUZK_TRY
    *out = nullptr;
    if (id >= ngpus())
        return bad_arg("no such CUDA device");
    if (!fb_table_shape(g1_len, g1_wbits, g1_windows)
        || !fb_table_shape(g2_len, g2_wbits, g2_windows))
        return bad_arg("fixed-base table: its length is not windows * 2^(wbits-1), "
                       "or its windows do not cover 256 bits");
    // blst_p1_affine and blst_p2_affine.
#ifndef __CUDA_ARCH__
    static_assert(sizeof(affine_t::mem_t) == 96 && sizeof(affine_fp2_t::mem_t) == 192,
                  "affine points are blst's");
#endif
    auto* fb = new cuzk_fixed_base;
    try {
        fb->gpu = &select_gpu((int)id);
        fb->g1 = fb->table<affine_t::mem_t>(g1, g1_len);
        fb->g1_wbits = g1_wbits;
        fb->g1_windows = g1_windows;
        fb->g2 = fb->table<affine_fp2_t::mem_t>(g2, g2_len);
        fb->g2_wbits = g2_wbits;
        fb->g2_windows = g2_windows;
    } catch (...) {
        delete fb;
        throw;
    }
    *out = fb;
    CUZK_CATCH
}

// out[i] = scalars[i] * (the G1 table's base), Jacobian (blst_p1).
RustError cuzk_cuda_fb_g1(cuzk_fixed_base* fb, const fr_t* scalars, size_t n, point_t* out)
{
    CUZK_TRY
#ifndef __CUDA_ARCH__  // host sizes (on the device an Fp2 element is half)
    static_assert(sizeof(point_t) == 144 && sizeof(fp_t::mem_t) == 48, "blst_p1 is X, Y, Z");
#endif
    fb->products<bucket_t, fp_t>(out, scalars, n, fb->g1, fb->g1_wbits, fb->g1_windows);
    CUZK_CATCH
}

// out[i] = scalars[i] * (the G2 table's base), Jacobian (blst_p2).
RustError cuzk_cuda_fb_g2(cuzk_fixed_base* fb, const fr_t* scalars, size_t n,
                          point_fp2_t* out)
{
    CUZK_TRY
#ifndef __CUDA_ARCH__
    static_assert(sizeof(point_fp2_t) == 288 && sizeof(fp2_t::mem_t) == 96,
                  "blst_p2 is X, Y, Z");
#endif
    fb->products<bucket_fp2_t, fp2_t>(out, scalars, n, fb->g2, fb->g2_wbits, fb->g2_windows);
    CUZK_CATCH
}

void cuzk_cuda_fb_free(cuzk_fixed_base* fb)
{
    try {
        delete fb;
    } catch (...) {
    }
}

} // extern "C"

#endif
