//! a, b and c evaluated on the device from a recorded constraint system
//! kept there (`cuzk_cuda_matrices`, one per circuit shape and device), so
//! that a partition uploads only its assignment: the H stage of
//! `h_stage.cuh` with an evaluation kernel in place of the a|b|c copies.
//!
//! The matrices are `cuzk_prover::FlatMatrices`: the varint encoding of the
//! recorded rows and a table of chunks, each a run of rows that starts
//! where a row starts (its byte position and aux cursor known), so one
//! thread evaluates one chunk. A row is `cursor_delta nA nB nC term*`, a
//! term `code coeff`; `code & 3` says how `code >> 2` names a variable
//! (0: aux `cursor − v`, 1: aux `v`, 2: input `input_base + v`, 3: input
//! `v`). The input constraints (`input · 0 = 0`) follow the recorded rows.
//! Included at the end of `cuzk_cuda.cu`, after `h_stage.cuh`.

#ifndef __CUZK_ABC_EVAL_CUH__
#define __CUZK_ABC_EVAL_CUH__

// `cuzk_prover::FlatChunk`, field for field.
struct flat_chunk {
    uint64_t row, pos, cursor, input_base;
    uint32_t rows, pad;
};

// Coefficient kinds, computed on the host: multiplications only for the
// coefficients that are neither 1 nor −1.
enum : uint8_t { COEFF_ONE = 0, COEFF_MINUS_ONE = 1, COEFF_OTHER = 2 };

struct cuzk_cuda_matrices {
    int device = 0;
    uint64_t rows = 0, inputs = 0, aux = 0;
    size_t nchunks = 0;
    uint8_t* bytes = nullptr;
    flat_chunk* chunks = nullptr;
    fr_t* coeffs = nullptr;
    uint8_t* kinds = nullptr;
    // Written under the device lock by each evaluation: the partition's
    // inputs, and the first unsatisfied row.
    fr_t* input = nullptr;
    unsigned long long* bad = nullptr;

    ~cuzk_cuda_matrices()
    {
        (void)cudaSetDevice(device);
        for (void* p : {(void*)bytes, (void*)chunks, (void*)coeffs,
                        (void*)kinds, (void*)input, (void*)bad})
            if (p)
                (void)cudaFree(p);
    }
};

__device__ __forceinline__ uint64_t abc_varint(const uint8_t* b, uint64_t& pos)
{
    uint64_t v = 0;
    for (uint32_t shift = 0;; shift += 7) {
        uint32_t x = b[pos++];
        v |= (uint64_t)(x & 0x7f) << shift;
        if (x < 0x80)
            return v;
    }
}

struct abc_view {
    const uint8_t* bytes;
    const fr_t* coeffs;
    const uint8_t* kinds;
    const fr_t* input;
    const fr_t* aux;
};

// One linear combination of `n` terms at `pos`; with `want` false its
// terms are only skipped.
__device__ __forceinline__ fr_t abc_lc(const abc_view& m, uint64_t& pos,
                                       uint64_t n, uint64_t cursor,
                                       uint64_t input_base, bool want)
{
    fr_t acc;
    acc.zero();
    for (uint64_t t = 0; t < n; t++) {
        uint64_t code = abc_varint(m.bytes, pos);
        uint64_t k = abc_varint(m.bytes, pos);
        if (!want)
            continue;
        uint64_t v = code >> 2;
        fr_t x;
        switch (code & 3) {
        case 0: x = m.aux[cursor - v]; break;
        case 1: x = m.aux[v]; break;
        case 2: x = m.input[input_base + v]; break;
        default: x = m.input[v]; break;
        }
        switch (m.kinds[k]) {
        case COEFF_ONE: acc += x; break;
        case COEFF_MINUS_ONE: acc -= x; break;
        default: acc += m.coeffs[k] * x; break;
        }
    }
    return acc;
}

// One thread per chunk: the rows' A·z, B·z, C·z into a, b, c (a null
// vector is skipped); with all three and `bad`, the first row with
// a·b ≠ c is kept there (atomicMin).
__global__ void abc_eval_kernel(abc_view m, const flat_chunk* chunks,
                                size_t nchunks, fr_t* a, fr_t* b, fr_t* c,
                                unsigned long long* bad)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= nchunks)
        return;
    const flat_chunk ch = chunks[i];
    uint64_t pos = ch.pos, cursor = ch.cursor;
    for (uint32_t r = 0; r < ch.rows; r++) {
        cursor += abc_varint(m.bytes, pos);
        uint64_t na = abc_varint(m.bytes, pos);
        uint64_t nb = abc_varint(m.bytes, pos);
        uint64_t nc = abc_varint(m.bytes, pos);
        fr_t va = abc_lc(m, pos, na, cursor, ch.input_base, a != nullptr);
        fr_t vb = abc_lc(m, pos, nb, cursor, ch.input_base, b != nullptr);
        fr_t vc = abc_lc(m, pos, nc, cursor, ch.input_base, c != nullptr);
        uint64_t row = ch.row + r;
        if (a)
            a[row] = va;
        if (b)
            b[row] = vb;
        if (c)
            c[row] = vc;
        if (bad && a && b && c) {
            fr_t d = va * vb;
            d -= vc;
            if (!d.is_zero())
                atomicMin(bad, (unsigned long long)row);
        }
    }
}

// Evaluates the rows of the selected vectors (null: skipped) and fills
// each selected one up to n: a's input rows are the inputs, the rest
// zeros. The inputs must be on the device (m->input).
static void abc_eval(const stream_t& s, const cuzk_cuda_matrices* m,
                     const fr_t* aux, size_t n, fr_t* a, fr_t* b, fr_t* c,
                     bool check)
{
    abc_view v{m->bytes, m->coeffs, m->kinds, m->input, aux};
    const uint32_t threads = 128;
    size_t blocks = (m->nchunks + threads - 1) / threads;
    if (blocks)
        abc_eval_kernel<<<(unsigned)blocks, threads, 0, s>>>(
            v, m->chunks, m->nchunks, a, b, c, check ? m->bad : nullptr);
    CUDA_OK(cudaGetLastError());
    size_t rows = m->rows;
    if (a) {
        if (m->inputs)
            CUDA_OK(cudaMemcpyAsync(a + rows, m->input, m->inputs * sizeof(fr_t),
                                    cudaMemcpyDeviceToDevice, s));
        if (rows + m->inputs < n)
            s.bzero(a + rows + m->inputs, n - rows - m->inputs);
    }
    for (fr_t* d : {b, c})
        if (d && rows < n)
            s.bzero(d + rows, n - rows);
}

extern "C" {

// Copies a shape's flat matrices to device `ctx`'s card (on its upload
// stream) and returns them in `*out` (freed by cuzk_cuda_matrices_free).
RustError cuzk_cuda_matrices_new(cuzk_cuda_ctx* ctx, const uint8_t* bytes,
                                 size_t nbytes, const void* chunks,
                                 size_t nchunks, const fr_t* coeffs,
                                 const uint8_t* kinds, size_t ncoeffs,
                                 uint64_t rows, uint64_t inputs, uint64_t aux,
                                 cuzk_cuda_matrices** out)
{
    CUZK_TRY
    *out = nullptr;
    ctx->gpu->select();
    auto* m = new cuzk_cuda_matrices;
    m->device = ctx->gpu->cid();
    try {
        m->rows = rows;
        m->inputs = inputs;
        m->aux = aux;
        m->nchunks = nchunks;
        m->bytes = (uint8_t*)ctx->mem.get(nbytes);
        m->chunks = (flat_chunk*)ctx->mem.get(nchunks * sizeof(flat_chunk));
        m->coeffs = (fr_t*)ctx->mem.get(ncoeffs * sizeof(fr_t));
        m->kinds = (uint8_t*)ctx->mem.get(ncoeffs);
        m->input = (fr_t*)ctx->mem.get(inputs * sizeof(fr_t));
        m->bad = (unsigned long long*)ctx->mem.get(sizeof(unsigned long long));
        const stream_t& s = *ctx->upload;
        auto up = [&](void* d, const void* h, size_t len) {
            if (len)
                CUDA_OK(cudaMemcpyAsync(d, h, len, cudaMemcpyHostToDevice, s));
        };
        up(m->bytes, bytes, nbytes);
        up(m->chunks, chunks, nchunks * sizeof(flat_chunk));
        up(m->coeffs, coeffs, ncoeffs * sizeof(fr_t));
        up(m->kinds, kinds, ncoeffs);
        s.sync();
    } catch (...) {
        delete m;
        throw;
    }
    *out = m;
    CUZK_CATCH
}

void cuzk_cuda_matrices_free(cuzk_cuda_matrices* m)
{
    delete m;
}

// The H coefficients from matrices `m` at the inputs given and the aux
// uploaded by cuzk_cuda_upload_aux: a, b, c evaluated on the device into
// `vectors` (3: the top staging tier, checked; 2: the a-only tier, b and
// then c in the second buffer, two passes over the matrices), then the
// same H as cuzk_cuda_h_compute.
// `*first_bad` is the first row with a·b ≠ c (UINT64_MAX: none, or not
// checked); H is not marked ready when there is one.
RustError cuzk_cuda_h_eval(cuzk_cuda_ctx* ctx, cuzk_cuda_matrices* m,
                           const fr_t* input, size_t ninputs, uint32_t lg_n,
                           const fr_t* z_inv, int vectors, uint64_t* first_bad)
{
    CUZK_TRY
    *first_bad = UINT64_MAX;
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    if (m->device != gpu.cid())
        return bad_arg("matrices of another device");
    if (ninputs != m->inputs || ctx->aux_len != m->aux)
        return bad_arg("assignment of another shape than the matrices");
    if (vectors != 2 && vectors != 3)
        return bad_arg("two or three vectors");
    abc_reserve(ctx, m->rows + m->inputs, lg_n, vectors == 3 ? 3 : 1);
    size_t n = (size_t)1 << lg_n;
    // aux came on the upload stream.
    ctx->upload->sync();
    const stream_t& s = gpu;
    // The a-only tier's second vector, returned before the H MSM.
    std::unique_ptr<second_vector> second;
    if (vectors == 2)
        second.reset(new second_vector(ctx, s, s, n));
    ntt_trace trace{ctx->tune.ntt_trace != 0};
    trace.mark("start", s);
    if (ninputs)
        CUDA_OK(cudaMemcpyAsync(m->input, input, ninputs * sizeof(fr_t),
                                cudaMemcpyHostToDevice, s));
    const fr_t* aux = ctx->aux.ptr;
    fr_t* d = ctx->abc.ptr;
    unsigned long long bad = ~0ull;
    if (vectors == 3) {
        CUDA_OK(cudaMemsetAsync(m->bad, 0xff, sizeof(bad), s));
        abc_eval(s, m, aux, n, d, d + n, d + 2 * n, true);
        trace.mark("abc_eval", s);
        for (int k = 0; k < 3; k++)
            h_vector(s, d + k * n, k, lg_n, &trace);
        h_finish(ctx, s, lg_n, z_inv, &trace);
    } else if (lg_n > 0) {
        fr_t zi;
        memcpy((void*)&zi, (const void*)z_inv, sizeof(fr_t));
        // a and b in one pass over the matrices (one buffer each), folded
        // into a·b in the first; then c, in a second pass, into the
        // second: two passes, not one per vector.
        fr_t* d2 = second->ptr();
        abc_eval(s, m, aux, n, d, d2, nullptr, false);
        trace.mark("abc_eval_ab", s);
        h_vector(s, d, 0, lg_n, &trace);
        h_vector(s, d2, 1, lg_n, &trace);
        h_fold(s, d, d2, 1, lg_n, zi);
        trace.mark("fold_ab", s);
        abc_eval(s, m, aux, n, nullptr, nullptr, d2, false);
        trace.mark("abc_eval_c", s);
        h_vector(s, d2, 2, lg_n, &trace);
        h_fold(s, d, d2, 2, lg_n, zi);
        trace.mark("fold_c", s);
    }
    s.sync();
    if (vectors == 3) {
        CUDA_OK(cudaMemcpyAsync(&bad, m->bad, sizeof(bad),
                                cudaMemcpyDeviceToHost, s));
        s.sync();
    }
    trace.report(lg_n);
    *first_bad = bad;
    ctx->lg_n = lg_n;
    ctx->h_ready = bad == ~0ull;
    CUZK_CATCH
}

} // extern "C"

#endif
