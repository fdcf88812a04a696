//! The H stage of a partition: a, b, c to the device and the H polynomial
//! at each staging tier: all three vectors at once, a only (b and c through
//! a second buffer), or H computed on the host and uploaded. Included at
//! the end of `cuzk_cuda.cu`.
//!
//! H is computed on the half-root coset ζ<ω> (ζ a primitive 2n-th root of
//! unity, ζ^n = −1), as the CPU prover does (`cuzk_prover::ntt`, whose doc
//! has the algebra): with A·B = L + xⁿH, the values of A·B on ζ<ω> are those
//! of L − H and, for a satisfied system, C = L + H. So a and b go to the
//! coset (iNTT, ζ^i, NTT), c only to its coefficients (iNTT), and after the
//! inverse transform of a·b, h_i = (C_i − ζ^-i·coef_i) / 2: six transforms
//! where bellperson's generator coset g<ω> ((a·b − c)·Z⁻¹, 3 + 3 + 1) takes
//! seven, the same h for a satisfied system. The largest domain sppark
//! handles (2^MAX_LG_DOMAIN_SIZE) has no ζ among its roots and keeps the
//! generator coset.

#ifndef __CUZK_H_STAGE_CUH__
#define __CUZK_H_STAGE_CUH__

// Enqueues the upload of vector k of a|b|c (`len` scalars, zero-padded to
// n) on `cp`, recording `landed` when it is on the device.
static void enqueue_vec(cuzk_cuda_ctx* ctx, const stream_t& cp, int k,
                        const fr_t* h, size_t len, size_t n, event_t& landed)
{
    fr_t* d = ctx->abc.ptr + k * n;
    enqueue_host_copy(ctx->copy_mode(), ctx->chunks, cp, d, h,
                      len * sizeof(fr_t));
    if (len < n)
        cp.bzero(d + len, n - len);
    landed.record(cp);
}

// `gpus.tuning.trace_ntt`: the GPU time of each step of
// `cuzk_cuda_h_compute` (the H stage without copies), printed to stderr;
// event records only.
struct ntt_trace {
    bool on;
    std::vector<std::pair<const char*, cudaEvent_t>> ev;
    explicit ntt_trace(bool enabled) : on(enabled) {}
    void mark(const char* what, const stream_t& s)
    {
        cudaEvent_t e;
        if (!on || cudaEventCreate(&e) != cudaSuccess)
            return;
        (void)cudaEventRecord(e, s);
        ev.emplace_back(what, e);
    }
    // After the stream is synchronised.
    void report(uint32_t lg_n)
    {
        for (size_t i = 1; i < ev.size(); i++) {
            float ms = -1;
            (void)cudaEventElapsedTime(&ms, ev[i - 1].second, ev[i].second);
            fprintf(stderr, "ntt-trace lg=%u %s %.2f ms\n", lg_n, ev[i].first, ms);
        }
    }
    ~ntt_trace()
    {
        for (auto& e : ev)
            (void)cudaEventDestroy(e.second);
    }
};

// `d`'s inverse NTT on `s` (natural order in, bit-reversed out).
static void intt_nr(const stream_t& s, fr_t* d, uint32_t lg_n, ntt_trace* t)
{
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d, lg_n,
                      NTT::InputOutputOrder::NR, NTT::Direction::inverse,
                      NTT::Type::standard);
    if (t)
        t->mark("intt", s);
}

// The cosets H is computed on: bellperson's g<ω> (g the field's
// generator) or the half-root coset ζ<ω> (see the top of the file).
enum class coset { generator, half_root };

// One vector's iNTT and coset NTT on `s` (natural order in and out). The
// shift onto the generator coset is sppark's (`LDE_powers`, as its
// Type::coset does), onto ζ<ω> ours; the NTTs are sppark's standard ones,
// in separate calls so that a trace can time each step.
static void to_coset(const stream_t& s, fr_t* d, uint32_t lg_n, coset which,
                     ntt_trace* t = nullptr)
{
    if (lg_n == 0)
        return;
    stream_t& st = const_cast<stream_t&>(s);
    intt_nr(s, d, lg_n, t);
    if (which == coset::generator)
        NTT::LDE_powers(st, d, lg_n);
    else
        launch_half_coset_shift(s, d, lg_n);
    if (t)
        t->mark("coset_shift", s);
    NTT::Base_dev_ptr(st, d, lg_n, NTT::InputOutputOrder::RN,
                      NTT::Direction::forward, NTT::Type::standard);
    if (t)
        t->mark("ntt", s);
}

// Whether H is computed on the half-root coset (see the top of the file).
static bool on_half_coset(uint32_t lg_n)
{
    return lg_n < MAX_LG_DOMAIN_SIZE;
}

// `d` with sppark's bit reversal (protected in its NTT class).
struct ntt_bit_reversal : NTT {
    static void run(const stream_t& s, fr_t* d, uint32_t lg_n)
    {
        bit_rev(d, d, lg_n, const_cast<stream_t&>(s));
    }
};

// Vector k of a|b|c (natural order in) made ready for the H: on the
// half-root coset, a and b evaluated there (natural order) and c turned
// into its bit-reversed coefficients; otherwise each on the generator
// coset.
static void h_vector(const stream_t& s, fr_t* d, int k, uint32_t lg_n,
                     ntt_trace* t = nullptr)
{
    if (lg_n == 0)
        return;
    if (!on_half_coset(lg_n))
        to_coset(s, d, lg_n, coset::generator, t);
    else if (k == 2)
        intt_nr(s, d, lg_n, t);
    else
        to_coset(s, d, lg_n, coset::half_root, t);
}

// The half-root coset's last steps: `p` holds a·b on ζ<ω> and `c` C's
// bit-reversed coefficients; `p` ends with h in natural order.
static void h_from_product(const stream_t& s, fr_t* p, const fr_t* c,
                           uint32_t lg_n, ntt_trace* t = nullptr)
{
    intt_nr(s, p, lg_n, t);
    launch_half_coset_combine(s, p, c, lg_n);
    if (t)
        t->mark("combine", s);
    ntt_bit_reversal::run(s, p, lg_n);
    if (t)
        t->mark("bit_reversal", s);
}

// The two-buffer tiers: vector k (1: b, 2: c) transformed by h_vector in
// `d1` folded into `d0` (a, transformed first); after k = 2 `d0` holds h.
static void h_fold(const stream_t& s, fr_t* d0, fr_t* d1, int k,
                   uint32_t lg_n, const fr_t& z_inv)
{
    size_t n = (size_t)1 << lg_n;
    if (lg_n == 0)
        return;
    if (k == 1)
        return launch_h_mul(s, d0, d1, n);
    if (on_half_coset(lg_n))
        return h_from_product(s, d0, d1, lg_n);
    launch_h_sub_scale(s, d0, d1, z_inv, n);
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d0, lg_n,
                      NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                      NTT::Type::coset);
}

// The H coefficients from a|b|c once each vector went through h_vector, on
// `s`: on the half-root coset a·b, then h_from_product; on the generator
// coset (a·b − c)·z_inv, then the coset iNTT.
static void h_finish(cuzk_cuda_ctx* ctx, const stream_t& s, uint32_t lg_n,
                     const fr_t* z_inv, ntt_trace* t = nullptr)
{
    if (lg_n == 0)
        return;
    size_t n = (size_t)1 << lg_n;
    fr_t* d = ctx->abc.ptr;
    if (on_half_coset(lg_n)) {
        launch_h_mul(s, d, d + n, n);
        if (t)
            t->mark("pointwise", s);
        return h_from_product(s, d, d + 2 * n, lg_n, t);
    }
    fr_t zi;
    memcpy((void*)&zi, (const void*)z_inv, sizeof(fr_t));
    launch_h_pointwise(s, d, d + n, d + 2 * n, zi, n);
    if (t)
        t->mark("pointwise", s);
    NTT::Base_dev_ptr(const_cast<stream_t&>(s), d, lg_n,
                      NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                      NTT::Type::coset);
    if (t)
        t->mark("coset_intt", s);
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

// The a-only tier's second vector (b, then c): stream-ordered memory of
// `s`, usable on `cp` too, admitted under gpus.vram_limit and freed on `s`
// when this goes (after the work queued there).
struct second_vector {
    dev_ptr_t<fr_t> mem;
    second_vector(cuzk_cuda_ctx* ctx, const stream_t& s, const stream_t& cp,
                  size_t n)
        : mem((ctx->mem.admit(n * sizeof(fr_t), "the a-only tier's second vector"), n),
              s)
    {
        event_t ready;
        ready.record(s);
        ready.wait(cp);
    }
    fr_t* ptr() { return &mem[0]; }
};

extern "C" {

// Uploads a, b, c (`len` scalars each, zero-padded to n = 2^lg_n) into
// the context's a|b|c buffer (see host_copy.cuh) and waits. On return the host vectors may be freed.
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
        const host_copy_mode m = ctx->copy_mode();
        const size_t bytes = len * sizeof(fr_t);
        host_pin pa(m, a, bytes, s), pb(m, b, bytes, s), pc(m, c, bytes, s);
        event_t ev[3];
        for (int k = 0; k < 3; k++)
            enqueue_vec(ctx, s, k, h[k], len, n, ev[k]);
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
    size_t n = (size_t)1 << lg_n;
    ntt_trace trace{ctx->tune.ntt_trace != 0};
    trace.mark("start", s);
    for (int k = 0; k < 3; k++)
        h_vector(s, ctx->abc.ptr + k * n, k, lg_n, &trace);
    h_finish(ctx, s, lg_n, z_inv, &trace);
    s.sync();
    trace.report(lg_n);
    ctx->h_ready = true;
    CUZK_CATCH
}

// Both, overlapped: a, b, c are copied (see host_copy.cuh) on a
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
        const host_copy_mode m = ctx->copy_mode();
        const size_t bytes = len * sizeof(fr_t);
        host_pin pa(m, a, bytes, cp), pb(m, b, bytes, cp), pc(m, c, bytes, cp);
        event_t ev[3];
        // Vector k's NTTs are enqueued once its copy is: a chunked copy
        // keeps the host busy until its last chunk is enqueued.
        for (int k = 0; k < 3; k++) {
            enqueue_vec(ctx, cp, k, h[k], len, n, ev[k]);
            ev[k].wait(s);
            h_vector(s, ctx->abc.ptr + k * n, k, lg_n);
        }
        h_finish(ctx, s, lg_n, z_inv);
        s.sync();
        cp.sync();
    }
    ctx->lg_n = lg_n;
    ctx->h_ready = true;
    CUZK_CATCH
}

// The a-only staging tier: the same H with room for two vectors, not
// three. a is copied and transformed in the first; b, then c, are copied
// into the second (on the copy stream) and folded into a once transformed
// (h_fold). On return the host vectors may be freed.
RustError cuzk_cuda_h_prepare_a_only(cuzk_cuda_ctx* ctx, const fr_t* a,
                                     const fr_t* b, const fr_t* c, size_t len,
                                     uint32_t lg_n, const fr_t* z_inv)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    abc_reserve(ctx, len, lg_n, 1);
    size_t n = (size_t)1 << lg_n;
    const stream_t& s = gpu;
    const stream_t& cp = gpu[0];
    // The second vector from the stream-ordered pool, returned before the
    // H MSM, whose scratch takes it over.
    second_vector second{ctx, s, cp, n};
    fr_t* d[2] = {ctx->abc.ptr, second.ptr()};
    fr_t zi;
    memcpy((void*)&zi, (const void*)z_inv, sizeof(fr_t));
    {
        const host_copy_mode m = ctx->copy_mode();
        const size_t bytes = len * sizeof(fr_t);
        host_pin pa(m, a, bytes, cp), pb(m, b, bytes, cp), pc(m, c, bytes, cp);
        const fr_t* h[3] = {a, b, c};
        event_t landed, done;
        for (int k = 0; k < 3; k++) {
            fr_t* dst = d[k == 0 ? 0 : 1];
            if (k == 2)
                done.wait(cp);  // b's buffer is free again
            enqueue_host_copy(m, ctx->chunks, cp, dst, h[k], bytes);
            if (len < n)
                cp.bzero(dst + len, n - len);
            landed.record(cp);
            landed.wait(s);
            h_vector(s, dst, k, lg_n);
            if (k > 0)
                h_fold(s, d[0], d[1], k, lg_n, zi);
            done.record(s);
        }
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
        copy_to_device(ctx->copy_mode(), ctx->chunks, (cudaStream_t)s,
                       ctx->abc.ptr, h, len * sizeof(fr_t));
    if (len < n)
        s.bzero(ctx->abc.ptr + len, n - len);
    s.sync();
    ctx->lg_n = lg_n;
    ctx->h_ready = true;
    CUZK_CATCH
}

} // extern "C"

#endif
