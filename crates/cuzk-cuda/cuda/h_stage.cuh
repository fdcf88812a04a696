//! The H stage of a partition: a, b, c to the device and the H polynomial
//! (iNTT, coset NTT, (a·b − c)·Z⁻¹, coset iNTT) at each staging tier: all
//! three vectors at once, a only (b and c through a second buffer), or H
//! computed on the host and uploaded. Included at the end of `cuzk_cuda.cu`.

#ifndef __CUZK_H_STAGE_CUH__
#define __CUZK_H_STAGE_CUH__

// Enqueues the upload of a, b, c (`len` scalars each, zero-padded to n) on
// `cp`, recording ev[k] when vector k is on the device.
static void enqueue_abc(cuzk_cuda_ctx* ctx, const stream_t& cp,
                        const fr_t* const h[3], size_t len, size_t n,
                        event_t ev[3])
{
    fr_t* base = ctx->abc.ptr;
    for (int k = 0; k < 3; k++) {
        fr_t* d = base + k * n;
        if (len)
            CUDA_OK(cudaMemcpyAsync(d, h[k], len * sizeof(fr_t),
                                    cudaMemcpyHostToDevice, cp));
        if (len < n)
            cp.bzero(d + len, n - len);
        ev[k].record(cp);
    }
}

// One vector's iNTT and coset NTT on `s` (natural order in and out).
static void to_coset(const stream_t& s, fr_t* d, uint32_t lg_n)
{
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d, lg_n,
                      NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                      NTT::Type::standard);
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d, lg_n,
                      NTT::InputOutputOrder::RN, NTT::Direction::forward,
                      NTT::Type::coset);
}

// The H coefficients from a|b|c on `s`, vector k's NTTs waiting for ev[k]
// when given: iNTT, coset NTT (generator 7), (a·b − c)·z_inv, coset iNTT.
static void h_from_abc(cuzk_cuda_ctx* ctx, const stream_t& s, uint32_t lg_n,
                       const fr_t* z_inv, event_t* ev)
{
    size_t n = (size_t)1 << lg_n;
    fr_t* d[3] = {ctx->abc.ptr, ctx->abc.ptr + n, ctx->abc.ptr + 2 * n};
    if (lg_n == 0) {
        if (ev)
            for (int k = 0; k < 3; k++)
                ev[k].wait(s);
        return;
    }
    for (int k = 0; k < 3; k++) {
        if (ev)
            ev[k].wait(s);
        to_coset(s, d[k], lg_n);
    }
    fr_t zi;
    memcpy((void*)&zi, (const void*)z_inv, sizeof(fr_t));
    launch_h_pointwise(s, d[0], d[1], d[2], zi, n);
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d[0], lg_n,
                      NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                      NTT::Type::coset);
}

// Checks the domain and makes room for a|b|c.
static void abc_reserve(cuzk_cuda_ctx* ctx, size_t len, uint32_t lg_n,
                        int vectors = 3)
{
    ctx->h_ready = false;
    ctx->lg_n = 0;
    if (lg_n > MAX_LG_DOMAIN_SIZE)
        throw cuda_error{-5, std::string("domain too large for sppark's NTT")};
    if (len > ((size_t)1 << lg_n))
        throw cuda_error{-5, std::string("more evaluations than the domain holds")};
    ctx->abc.reserve(ctx->mem, vectors * ((size_t)1 << lg_n));
}

extern "C" {

// Uploads a, b, c (`len` scalars each, zero-padded to n = 2^lg_n) into
// the context's a|b|c buffer, from page-locked host memory when CUDA can
// lock it, and waits. On return the host vectors may be freed.
RustError cuzk_cuda_abc_upload(cuzk_cuda_ctx* ctx, const fr_t* a,
                               const fr_t* b, const fr_t* c, size_t len,
                               uint32_t lg_n)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    abc_reserve(ctx, len, lg_n);
    size_t n = (size_t)1 << lg_n;
    // The context's own stream: no sppark kernel waits behind these copies.
    const stream_t& s = *ctx->upload;
    const fr_t* const h[3] = {a, b, c};
    {
        host_pin pa(a, len * sizeof(fr_t), s), pb(b, len * sizeof(fr_t), s),
            pc(c, len * sizeof(fr_t), s);
        event_t ev[3];
        enqueue_abc(ctx, s, h, len, n, ev);
        s.sync();
    }
    ctx->lg_n = lg_n;
    CUZK_CATCH
}

// Turns the uploaded a, b, c into the H coefficients in place.
RustError cuzk_cuda_h_compute(cuzk_cuda_ctx* ctx, uint32_t lg_n,
                              const fr_t* z_inv)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    ctx->h_ready = false;
    if (lg_n != ctx->lg_n || ctx->abc.cap < 3 * ((size_t)1 << lg_n))
        return bad_arg("a, b, c not uploaded for this domain");
    const stream_t& s = gpu;
    h_from_abc(ctx, s, lg_n, z_inv, nullptr);
    s.sync();
    ctx->h_ready = true;
    CUZK_CATCH
}

// Both, overlapped: a, b, c are copied (page-locked when possible) on a
// copy stream while the NTT stream transforms each vector as soon as its
// copy has landed. On return the host vectors may be freed.
RustError cuzk_cuda_h_prepare(cuzk_cuda_ctx* ctx, const fr_t* a, const fr_t* b,
                              const fr_t* c, size_t len, uint32_t lg_n,
                              const fr_t* z_inv)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    abc_reserve(ctx, len, lg_n);
    size_t n = (size_t)1 << lg_n;
    const stream_t& s = gpu;
    const stream_t& cp = gpu[0];
    const fr_t* const h[3] = {a, b, c};
    {
        host_pin pa(a, len * sizeof(fr_t), cp), pb(b, len * sizeof(fr_t), cp),
            pc(c, len * sizeof(fr_t), cp);
        event_t ev[3];
        enqueue_abc(ctx, cp, h, len, n, ev);
        h_from_abc(ctx, s, lg_n, z_inv, ev);
        s.sync();
        cp.sync();
    }
    ctx->lg_n = lg_n;
    ctx->h_ready = true;
    CUZK_CATCH
}

// The a-only staging tier: the same H with room for two vectors, not
// three. a is copied and transformed in the first; b, then c, are copied
// into the second (page-locked when possible, on the copy stream) and
// folded into a once transformed. On return the host vectors may be freed.
RustError cuzk_cuda_h_prepare_a_only(cuzk_cuda_ctx* ctx, const fr_t* a,
                                     const fr_t* b, const fr_t* c, size_t len,
                                     uint32_t lg_n, const fr_t* z_inv)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    abc_reserve(ctx, len, lg_n, 2);
    size_t n = (size_t)1 << lg_n;
    const stream_t& s = gpu;
    const stream_t& cp = gpu[0];
    fr_t* d[2] = {ctx->abc.ptr, ctx->abc.ptr + n};
    fr_t zi;
    memcpy((void*)&zi, (const void*)z_inv, sizeof(fr_t));
    {
        host_pin pa(a, len * sizeof(fr_t), cp), pb(b, len * sizeof(fr_t), cp),
            pc(c, len * sizeof(fr_t), cp);
        const fr_t* h[3] = {a, b, c};
        event_t landed, done;
        for (int k = 0; k < 3; k++) {
            fr_t* dst = d[k == 0 ? 0 : 1];
            if (k == 2)
                done.wait(cp);  // b's buffer is free again
            if (len)
                CUDA_OK(cudaMemcpyAsync(dst, h[k], len * sizeof(fr_t),
                                        cudaMemcpyHostToDevice, cp));
            if (len < n)
                cp.bzero(dst + len, n - len);
            landed.record(cp);
            landed.wait(s);
            if (lg_n > 0)
                to_coset(s, dst, lg_n);
            if (k == 1)
                launch_h_mul(s, d[0], d[1], n);
            if (k == 2)
                launch_h_sub_scale(s, d[0], d[1], zi, n);
            done.record(s);
        }
        if (lg_n > 0)
            NTT::Base_dev_ptr(const_cast<stream_t&>(s), d[0], lg_n,
                              NTT::InputOutputOrder::NN,
                              NTT::Direction::inverse, NTT::Type::coset);
        s.sync();
        cp.sync();
    }
    ctx->lg_n = lg_n;
    ctx->h_ready = true;
    CUZK_CATCH
}

// The no-staging tier: the H coefficients (`len` ≤ n − 1 of them, computed
// on the host) uploaded as the scalar source SRC_H; room for one vector.
RustError cuzk_cuda_h_upload(cuzk_cuda_ctx* ctx, const fr_t* h, size_t len,
                             uint32_t lg_n)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    abc_reserve(ctx, len, lg_n, 1);
    size_t n = (size_t)1 << lg_n;
    const stream_t& s = *ctx->upload;
    if (len)
        copy_to_device((cudaStream_t)s, ctx->abc.ptr, h, len * sizeof(fr_t));
    if (len < n)
        s.bzero(ctx->abc.ptr + len, n - len);
    s.sync();
    ctx->lg_n = lg_n;
    ctx->h_ready = true;
    CUZK_CATCH
}

} // extern "C"

#endif
