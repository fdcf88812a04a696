//! cuzk's CUDA kernels and host logic for one Groth16 partition (BLS12-381).
//!
//! Built on sppark: its field and curve types (`fr_t`, `fp_t`, `xyzz_t`,
//! `jacobian_t`), its NTT (`ntt/ntt.cuh`), its Pippenger MSM
//! (`msm/pippenger.cuh`) and batch addition. Our own kernels are
//! small: the pointwise steps of the H polynomial (`h_stage.cuh`), the compaction of
//! scalars by a density bitmap (`kernels.cuh`; offsets scanned with CUB),
//! the 0/1 split of the witness MSMs (`split01.cuh`) and, in our MSM driver
//! (`msm_driver.cuh`), the sort by bucket around CUB's radix sort
//! (`bucket_sort.cuh`), the bucket accumulation in size order
//! (`accumulate.cuh`) and the bucket integration (`integrate.cuh`). The
//! H stage's entry points are in `h_stage.cuh`, the MSMs' common entry
//! (scalar sources; streamed, shared and resident points) in
//! `msm_entry.cuh`, the context's allocator in
//! `dalloc.cuh`, host-to-device copies in `host_copy.cuh`, the settings
//! (`[gpus.tuning]`) in `tuning.cuh`; the fixed-base products of parameter
//! generation (not the prover's) in `fixed_base.cuh`. Memory layouts are
//! blst's, which are blstrs': `fr_t` is blst_fr (Montgomery, 4×u64 LE), an affine point is
//! blst_p1_affine (Montgomery x, y; identity = all zero),
//! `jacobian_t<fp_t>` is blst_p1.
//!
//! The `extern "C"` surface (see `src/ffi.rs`) works on a per-device context
//! holding device buffers that live across calls. Every function catches all
//! C++ exceptions (sppark throws `cuda_error`) and returns a `RustError`
//! whose message Rust frees: nothing unwinds into Rust, nothing aborts.
//! The functions for cuzk-lab's benches and the tests' allocation-failure
//! hook exist only when built with `CUZK_LAB` (the crate's `lab` feature).

#include <cuda.h>
// CUB (with the toolkit) before sppark's headers, whose macros it need not see.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cstdint>
#include <cstring>
#include <vector>
#include <new>
#include <exception>

#include <ff/bls12-381.hpp>
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

#include "kernels.cuh"

// A device pointer for msm_t::invoke: sppark takes scalars (or points)
// already on the device when their pointer type is marked as such.
template<class T> struct dev_view {
    const T* p;
    const T& operator[](size_t i) const { return p[i]; }
};
template<class T> struct is_device_ptr<dev_view<T>> {
    static const bool value{true};
};

#include "tuning.cuh"
#include "dalloc.cuh"
#include "host_copy.cuh"
#include "msm_driver.cuh"
#include "split01.cuh"

// Sections of a resident SRS: h, l, a, b_g1 (G1) and b_g2 (G2).
#define SRS_SECTIONS 5
static size_t srs_elem(int sec)
{
    return sec == 4 ? sizeof(affine_fp2_t) : sizeof(affine_t);
}

struct cuzk_cuda_ctx {
    int id;
    const gpu_t* gpu;
    // A worker context (cuzk_cuda_ctx_new_worker) reads the resident SRS of
    // its device's owner context; the owner's is null.
    cuzk_cuda_ctx* owner = nullptr;
    // This context's own stream for host-to-device copies of its buffers:
    // sppark's kernels never use it, so one worker's uploads overlap
    // another worker's kernels.
    stream_t* upload = nullptr;
    // Page-locked chunks for host-to-device copies (host_copy.cuh) and
    // whether to use them (else page-lock each source per copy).
    chunk_ring chunks;
    bool chunked_copies = false;
    host_copy_mode copy_mode() const
    {
        return host_copy(tune.host_copy, chunked_copies ? host_copy_mode::chunked
                                                       : host_copy_mode::registered);
    }
    // gpus.tuning (cuzk_cuda_set_tuning; a worker takes its owner's).
    cuzk_cuda_tuning tune = default_tuning();
    // Kernel-region timing (owner context): events recorded on the
    // device's main stream when the device lock is taken and released.
    cudaEvent_t span[2] = {nullptr, nullptr};
    // Recorded by cuzk_cuda_span_mark: regions are placed on the GPU's
    // timeline relative to it.
    cudaEvent_t epoch = nullptr;
    // Owner of every buffer below (vram_limit, test hook).
    dalloc mem;
    // a | b | c, n scalars each; H coefficients end up in the first n.
    dbuf<fr_t> abc;
    uint32_t lg_n = 0;
    bool h_ready = false;
    // The aux assignment and the compacted (density-filtered) scalars.
    dbuf<fr_t> aux;
    size_t aux_len = 0;
    dbuf<fr_t> picked;
    size_t picked_len = 0;
    // Density bitmap words and the exclusive prefix count of set bits.
    dbuf<uint64_t> words;
    dbuf<uint32_t> offsets;
    // The 0/1 split of L/A/B MSMs of at least split_min points (set by
    // Rust) and the shape of the scalars it saw since cuzk_cuda_take_shape.
    size_t split_min = SIZE_MAX;  // MSMs of fewer points run plain
    split_scratch split;
    split_shape shape;
    // Streamed split MSMs whose others' Pippenger is still queued
    // (gpus.tuning.overlap_others, deferred.cuh), their scratch slots.
    deferral defer;
    // Bytes of SRS points streamed from host memory since the last
    // cuzk_cuda_take_shape.
    size_t streamed_bytes = 0;
    // Streamed MSMs that carried their buckets across batches
    // (gpus.tuning.carry_buckets), for the tests (cuzk_cuda_carried_msms).
    size_t carried_msms = 0;
    // Resident SRS points, one raw buffer per section (h, l, a, b_g1:
    // affine G1; b_g2: affine G2), kept until cuzk_cuda_srs_free.
    struct section {
        void* ptr = nullptr;
        size_t npoints = 0;
        size_t elem = 0;
    } srs[SRS_SECTIONS];

    // The resident SRS this context's MSMs read.
    section* srs_sections() { return owner ? owner->srs : srs; }

    void free_srs()
    {
        gpu->select();
        for (auto& sec : srs) {
            mem.put(sec.ptr);
            sec = section{};
        }
    }

    // Frees the buffers, aux too unless `keep_aux`.
    void trim(bool keep_aux = false)
    {
        gpu->select();
        defer.release(mem);
        h_ready = false;
        picked_len = 0;
        abc.release(mem);
        if (!keep_aux) {
            aux_len = 0;
            aux.release(mem);
        }
        picked.release(mem);
        words.release(mem);
        offsets.release(mem);
        split.release(mem);
        mem.trim_pool();
    }
    ~cuzk_cuda_ctx()
    {
        trim();
        free_srs();
        delete upload;
        for (auto& e : span)
            if (e)
                (void)cudaEventDestroy(e);
        if (epoch)
            (void)cudaEventDestroy(epoch);
    }
};

#define CUZK_TRY try {
#define CUZK_CATCH                                                  \
    } catch (const cuda_error& e) {                                 \
        return RustError{e.code() ? e.code() : -1, e.what()};       \
    } catch (const std::bad_alloc&) {                               \
        return RustError{-7, "host out of memory"};                 \
    } catch (const std::exception& e) {                             \
        return RustError{-3, e.what()};                             \
    } catch (...) {                                                 \
        return RustError{-4, "unknown C++ exception"};              \
    }                                                               \
    return RustError{0};

static RustError bad_arg(const char* what)
{
    return RustError{-5, what};
}

#include "msm_entry.cuh"

extern "C" {

RustError cuzk_cuda_device_count(size_t* out)
{
    CUZK_TRY
    *out = ngpus();
    CUZK_CATCH
}

RustError cuzk_cuda_device_name(size_t id, char* buf, size_t len)
{
    CUZK_TRY
    if (id >= ngpus())
        return bad_arg("no such CUDA device");
    const auto& props = gpu_props((int)id);
    if (len > 0) {
        strncpy(buf, props.name, len - 1);
        buf[len - 1] = 0;
    }
    CUZK_CATCH
}

RustError cuzk_cuda_mem_info(size_t id, size_t* free_bytes, size_t* total_bytes)
{
    CUZK_TRY
    if (id >= ngpus())
        return bad_arg("no such CUDA device");
    select_gpu((int)id);
    dalloc{(int)id}.trim_pool();
    CUDA_OK(cudaMemGetInfo(free_bytes, total_bytes));
    CUZK_CATCH
}

RustError cuzk_cuda_ctx_new(size_t id, cuzk_cuda_ctx** out)
{
    CUZK_TRY
    *out = nullptr;
    if (id >= ngpus())
        return bad_arg("no such CUDA device");
    const gpu_t& gpu = select_gpu((int)id);
    dalloc::keep_pool((int)id);
    auto* ctx = new cuzk_cuda_ctx;
    ctx->id = (int)id;
    ctx->mem.device = (int)id;
    ctx->gpu = &gpu;
    try {
        ctx->upload = new stream_t((int)id);
    } catch (...) {
        delete ctx;
        throw;
    }
    *out = ctx;
    CUZK_CATCH
}

// A worker context on the owner's device: its own buffers, allocator and
// upload stream; its resident MSMs read the owner's SRS. The owner must
// outlive it.
RustError cuzk_cuda_ctx_new_worker(cuzk_cuda_ctx* owner, cuzk_cuda_ctx** out)
{
    CUZK_TRY
    *out = nullptr;
    if (owner->owner)
        return bad_arg("a worker context cannot own workers");
    owner->gpu->select();
    auto* ctx = new cuzk_cuda_ctx;
    ctx->id = owner->id;
    ctx->gpu = owner->gpu;
    ctx->owner = owner;
    ctx->mem.device = owner->id;
    ctx->mem.limit = owner->mem.limit;
    ctx->mem.reserve = owner->mem.reserve;
    ctx->split_min = owner->split_min;
    ctx->tune = owner->tune;
    ctx->chunks.threads = owner->chunks.threads;
    try {
        ctx->upload = new stream_t(owner->id);
    } catch (...) {
        delete ctx;
        throw;
    }
    *out = ctx;
    CUZK_CATCH
}

void cuzk_cuda_ctx_free(cuzk_cuda_ctx* ctx)
{
    try {
        delete ctx;
    } catch (...) {
    }
}

// Frees the context's device buffers (but the aux scalars when
// `keep_aux`); they are allocated again when needed.
RustError cuzk_cuda_ctx_trim(cuzk_cuda_ctx* ctx, int keep_aux)
{
    CUZK_TRY
    ctx->gpu->sync();
    ctx->trim(keep_aux != 0);
    CUZK_CATCH
}

// Bytes the context's allocator could still take (`*free`: device free
// memory after trimming the stream-ordered pool, within gpus.vram_limit)
// and bytes its scratch buffers hold now (`*held`, reusable by the next
// partition; the resident SRS is not included).
RustError cuzk_cuda_mem_room(cuzk_cuda_ctx* ctx, size_t* free_b, size_t* held)
{
    CUZK_TRY
    ctx->gpu->select();
    ctx->upload->sync();
    *free_b = ctx->mem.available();
    *held = ctx->abc.bytes() + ctx->aux.bytes() + ctx->picked.bytes() +
            ctx->words.bytes() + ctx->offsets.bytes() + ctx->split.bytes() +
            ctx->defer.bytes();
    CUZK_CATCH
}

// Kernel-region timing: `begin` records an event on the device's main
// stream (idle between calls: every entry point syncs before returning);
// `end` records a second one, waits for it and writes the milliseconds
// between the two as the GPU timed them, and where they lie after the
// epoch (cuzk_cuda_span_mark; -1 without one).
RustError cuzk_cuda_span_begin(cuzk_cuda_ctx* ctx)
{
    CUZK_TRY
    ctx->gpu->select();
    for (auto& e : ctx->span)
        if (!e)
            CUDA_OK(cudaEventCreate(&e));
    CUDA_OK(cudaEventRecord(ctx->span[0], (cudaStream_t)*ctx->gpu));
    CUZK_CATCH
}

RustError cuzk_cuda_span_end(cuzk_cuda_ctx* ctx, float* ms, float* begin,
                             float* end)
{
    CUZK_TRY
    *ms = 0;
    *begin = *end = -1;
    if (!ctx->span[0] || !ctx->span[1])
        return bad_arg("span_end without span_begin");
    ctx->gpu->select();
    CUDA_OK(cudaEventRecord(ctx->span[1], (cudaStream_t)*ctx->gpu));
    CUDA_OK(cudaEventSynchronize(ctx->span[1]));
    CUDA_OK(cudaEventElapsedTime(ms, ctx->span[0], ctx->span[1]));
    if (ctx->epoch) {
        CUDA_OK(cudaEventElapsedTime(begin, ctx->epoch, ctx->span[0]));
        CUDA_OK(cudaEventElapsedTime(end, ctx->epoch, ctx->span[1]));
    }
    CUZK_CATCH
}

// Records the epoch on the device's main stream: later span_end calls
// also give their region's begin and end in ms after it.
RustError cuzk_cuda_span_mark(cuzk_cuda_ctx* ctx)
{
    CUZK_TRY
    ctx->gpu->select();
    if (!ctx->epoch)
        CUDA_OK(cudaEventCreate(&ctx->epoch));
    CUDA_OK(cudaEventRecord(ctx->epoch, (cudaStream_t)*ctx->gpu));
    CUDA_OK(cudaEventSynchronize(ctx->epoch));
    CUZK_CATCH
}

// gpus.vram_limit: the context's allocations behave as if the card had
// only `limit` bytes (0: the whole card); MSM scratch leaves `margin`
// bytes free (gpus.vram_safety_margin).
RustError cuzk_cuda_set_vram_limit(cuzk_cuda_ctx* ctx, size_t limit, size_t margin)
{
    CUZK_TRY
    ctx->mem.limit = limit;
    ctx->mem.reserve = margin;
    CUZK_CATCH
}

// gpus.tuning for this context's kernels and copies (a worker context
// made later takes its owner's).
RustError cuzk_cuda_set_tuning(cuzk_cuda_ctx* ctx, const cuzk_cuda_tuning* tune)
{
    CUZK_TRY
    ctx->tune = *tune;
    ctx->chunks.threads = tune->copy_threads;
    CUZK_CATCH
}

// Device scratch bytes of one MSM of `npoints` points on this context's
// device with its tuning (the larger of G1 and G2; see msm_driver::plan):
// at the rule's windows over device points (`least` 0), or the least the
// driver fits itself into with the points streamed (`least` 1: what the
// staging tiers are sized with).
RustError cuzk_cuda_msm_scratch(cuzk_cuda_ctx* ctx, size_t npoints, int least,
                                size_t* bytes)
{
    CUZK_TRY
    *bytes = 0;
    ctx->gpu->select();
    *bytes = msm_scratch_bytes(*ctx->gpu, ctx->tune, npoints, least != 0);
    CUZK_CATCH
}

#ifdef CUZK_LAB
// Test hook: the context's next `count` allocations fail as if the device
// were full.
RustError cuzk_cuda_fail_next_allocs(cuzk_cuda_ctx* ctx, int count)
{
    CUZK_TRY
    ctx->mem.fail_next = count;
    CUZK_CATCH
}

// How many streamed MSMs of this context carried their buckets across
// batches (gpus.tuning.carry_buckets).
RustError cuzk_cuda_carried_msms(cuzk_cuda_ctx* ctx, size_t* out)
{
    CUZK_TRY
    *out = ctx->carried_msms;
    CUZK_CATCH
}
#endif

// Allocates resident SRS section `sec` for `npoints` points (freeing what
// it held); its content is undefined until uploaded or tiled.
RustError cuzk_cuda_srs_alloc(cuzk_cuda_ctx* ctx, int sec, size_t npoints)
{
    CUZK_TRY
    if (ctx->owner)
        return bad_arg("the resident SRS belongs to the owner context");
    ctx->gpu->select();
    if (sec < 0 || sec >= SRS_SECTIONS)
        return bad_arg("unknown SRS section");
    auto& s = ctx->srs[sec];
    ctx->mem.put(s.ptr);
    s = cuzk_cuda_ctx::section{};
    size_t elem = srs_elem(sec);
    s.ptr = ctx->mem.get((npoints ? npoints : 1) * elem);
    s.npoints = npoints;
    s.elem = elem;
    CUZK_CATCH
}

// Copies `npoints` host points into section `sec` from point `offset` on.
RustError cuzk_cuda_srs_upload(cuzk_cuda_ctx* ctx, int sec, size_t offset,
                               const void* points, size_t npoints)
{
    CUZK_TRY
    ctx->gpu->select();
    if (sec < 0 || sec >= SRS_SECTIONS)
        return bad_arg("unknown SRS section");
    auto& s = ctx->srs[sec];
    if (offset > s.npoints || npoints > s.npoints - offset)
        return bad_arg("upload past the end of the SRS section");
    if (npoints)
        copy_to_device(ctx->copy_mode(), ctx->chunks, (cudaStream_t)*ctx->gpu,
                       (char*)s.ptr + offset * s.elem, points,
                       npoints * s.elem);
    CUZK_CATCH
}

#ifdef CUZK_LAB
// Fills section `sec` with `npattern` host points repeated (for benches:
// valid points without a real SRS): one upload, then doubling copies on the
// device.
RustError cuzk_cuda_srs_tile(cuzk_cuda_ctx* ctx, int sec, const void* pattern,
                             size_t npattern)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    if (sec < 0 || sec >= SRS_SECTIONS)
        return bad_arg("unknown SRS section");
    auto& s = ctx->srs[sec];
    if (npattern == 0)
        return bad_arg("empty tile pattern");
    size_t first = npattern < s.npoints ? npattern : s.npoints;
    char* base = (char*)s.ptr;
    if (first)
        copy_to_device(ctx->copy_mode(), ctx->chunks, (cudaStream_t)gpu, base,
                       pattern, first * s.elem);
    for (size_t done = first; done < s.npoints;) {
        size_t k = done < s.npoints - done ? done : s.npoints - done;
        CUDA_OK(cudaMemcpyAsync(base + done * s.elem, base, k * s.elem,
                                cudaMemcpyDeviceToDevice, (cudaStream_t)gpu));
        done += k;
    }
    gpu.sync();
    CUZK_CATCH
}
#endif

// Frees every resident SRS section.
RustError cuzk_cuda_srs_free(cuzk_cuda_ctx* ctx)
{
    CUZK_TRY
    if (ctx->owner)
        return bad_arg("the resident SRS belongs to the owner context");
    ctx->gpu->sync();
    ctx->free_srs();
    CUZK_CATCH
}

// Uploads the aux assignment (scalar source SRC_AUX).
RustError cuzk_cuda_upload_aux(cuzk_cuda_ctx* ctx, const fr_t* aux, size_t len)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    ctx->aux_len = 0;
    ctx->picked_len = 0;
    ctx->aux.reserve(ctx->mem, len ? len : 1);
    if (len)
        copy_to_device(ctx->copy_mode(), ctx->chunks,
                       (cudaStream_t)*ctx->upload, ctx->aux.ptr, aux,
                       len * sizeof(fr_t));
    ctx->aux_len = len;
    CUZK_CATCH
}

// Compacts the scalars of set bits to the front of `aux` itself, chunk by
// chunk in order: a chunk is copied aside first, and its scalars land at
// or below their own index, on chunks already copied, never on a later one.
static void compact_in_place(const gpu_t& gpu, fr_t* aux, const uint64_t* words,
                             const uint32_t* offsets, size_t nbits)
{
    const size_t chunk = (size_t)1 << 21;  // 64 MiB aside, a multiple of 64
    const stream_t& s = gpu;
    dev_ptr_t<fr_t> aside{std::min(chunk, nbits), s};
    const unsigned block = 256;
    for (size_t first = 0; first < nbits; first += chunk) {
        size_t last = std::min(first + chunk, nbits);
        CUDA_OK(cudaMemcpyAsync(&aside[0], aux + first, (last - first) * sizeof(fr_t),
                                cudaMemcpyDeviceToDevice, s));
        compact_by_bits<<<grid_for(s, last - first, block), block, 0, s>>>(
            aux, &aside[0], words, offsets, first, last);
        CUDA_OK(cudaGetLastError());
    }
    s.sync();
}

// Picks the aux scalars whose bit is set in the bitmap `words` (`nbits` =
// aux length), in order, into the scalar source SRC_PICKED, or, `in_place`,
// over aux itself (SRC_AUX then holds the picked scalars and aux is gone:
// no second vector on a small card; SRC_PICKED keeps the last pick that was
// not in place); `*count` is how many. The bitmap is
// copied up, its words' bits counted and scanned by CUB and the scalars
// compacted, a thread each.
RustError cuzk_cuda_pick(cuzk_cuda_ctx* ctx, const uint64_t* words,
                         size_t nbits, int in_place, size_t* count)
{
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    // An in-place pick leaves the last pick to its own vector alone.
    if (!in_place)
        ctx->picked_len = 0;
    *count = 0;
    if (nbits != ctx->aux_len)
        return bad_arg("density bitmap and aux scalars differ in length");
    if (nbits >= ((size_t)1 << 32))
        return bad_arg("density bitmap too long");
    if (nbits == 0)
        return RustError{0};
    size_t nwords = (nbits + 63) / 64;
    size_t total = 0;
    ctx->words.reserve(ctx->mem, nwords);
    ctx->offsets.reserve(ctx->mem, nwords + 1);
    {
        const stream_t& s = gpu;
        copy_to_device(ctx->copy_mode(), ctx->chunks, s, ctx->words.ptr, words,
                       nwords * sizeof(uint64_t));
        size_t scan_b = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_b, (uint32_t*)nullptr,
                                              (uint32_t*)nullptr, (int)(nwords + 1),
                                              (cudaStream_t)s));
        // CUB's scratch first (the pool's alignment), then the counts.
        const size_t counts_at = (scan_b + 255) & ~(size_t)255;
        dev_ptr_t<uint8_t> tmp{counts_at + (nwords + 1) * sizeof(uint32_t), s};
        uint32_t* counts = (uint32_t*)(&tmp[0] + counts_at);
        const unsigned block = 256;
        word_popc<<<grid_for(s, nwords + 1, block), block, 0, s>>>(
            counts, ctx->words.ptr, nwords, nbits);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cub::DeviceScan::ExclusiveSum(&tmp[0], scan_b, counts,
                                              ctx->offsets.ptr, (int)(nwords + 1),
                                              (cudaStream_t)s));
        uint32_t t = 0;
        s.DtoH(&t, ctx->offsets.ptr + nwords, 1);
        s.sync();
        total = t;
    }
    if (total >= ((size_t)1 << 31))
        return bad_arg("too many scalars for one MSM");
    if (in_place) {
        compact_in_place(gpu, ctx->aux.ptr, ctx->words.ptr, ctx->offsets.ptr,
                         nbits);
        ctx->aux_len = total;
        *count = total;
        return RustError{0};
    }
    if (total > 0) {
        ctx->picked.reserve(ctx->mem, total);
        const unsigned block = 256;
        compact_by_bits<<<grid_for(gpu, nbits, block), block, 0, gpu>>>(
            ctx->picked.ptr, ctx->aux.ptr, ctx->words.ptr, ctx->offsets.ptr,
            0, nbits);
        CUDA_OK(cudaGetLastError());
        gpu.sync();
    }
    ctx->picked_len = total;
    *count = total;
    CUZK_CATCH
}

// Σ scalar_i·points_i in G1 over all scalars of `source` (SRC_H: the n − 1
// H coefficients; SRC_AUX: the aux assignment; SRC_PICKED: the last pick),
// `npoints` equal to their number; points on the host.
RustError cuzk_cuda_msm_g1(cuzk_cuda_ctx* ctx, int source,
                           const affine_t* points, size_t npoints,
                           point_t* out)
{
    return msm_from_source<bucket_t>(ctx, source, points, npoints, out);
}

// The same in G2.
RustError cuzk_cuda_msm_g2(cuzk_cuda_ctx* ctx, int source,
                           const affine_fp2_t* points, size_t npoints,
                           point_fp2_t* out)
{
    return msm_from_source<bucket_fp2_t>(ctx, source, points, npoints, out);
}

// Σ scalar_i·points_i in G1 over all scalars of `source` against
// `npoints` points of resident SRS section `sec` (0..3) from `offset` on.
RustError cuzk_cuda_msm_g1_resident(cuzk_cuda_ctx* ctx, int source, int sec,
                                    size_t offset, size_t npoints,
                                    point_t* out)
{
    return msm_resident<bucket_t, point_t, affine_t>(ctx, source, sec, offset, npoints, out);
}

// The same in G2 (section 4).
RustError cuzk_cuda_msm_g2_resident(cuzk_cuda_ctx* ctx, int source, int sec,
                                    size_t offset, size_t npoints,
                                    point_fp2_t* out)
{
    return msm_resident<bucket_fp2_t, point_fp2_t, affine_fp2_t>(ctx, source, sec, offset, npoints, out);
}

// k MSMs in G1 against the same `npoints` host points, context j's
// scalars from `sources[j]` (SRC_AUX or SRC_PICKED), sharing each pass
// over the points (see msm_shared); results in outs[0..k). With
// gpus.tuning.overlap_others, where tickets[j] is not 0, outs[j] holds
// only the ones' part and the others' Pippenger is still queued
// (deferred.cuh): its sum comes from cuzk_cuda_deferred_g1(ctxs[j],
// tickets[j]).
RustError cuzk_cuda_msm_g1_shared(cuzk_cuda_ctx* const* ctxs, const int* sources,
                                  size_t k, const affine_t* points, size_t npoints,
                                  point_t* outs, uint64_t* tickets)
{
    return msm_shared<bucket_t, point_t, affine_t>(ctxs, sources, k, points, npoints, outs,
                                                   tickets);
}

// The same in G2.
RustError cuzk_cuda_msm_g2_shared(cuzk_cuda_ctx* const* ctxs, const int* sources,
                                  size_t k, const affine_fp2_t* points, size_t npoints,
                                  point_fp2_t* outs, uint64_t* tickets)
{
    return msm_shared<bucket_fp2_t, point_fp2_t, affine_fp2_t>(ctxs, sources, k, points,
                                                               npoints, outs, tickets);
}

// The others' sum of a deferred MSM (`ticket` of this context), waited
// for; the ticket is used up.
RustError cuzk_cuda_deferred_g1(cuzk_cuda_ctx* ctx, uint64_t ticket, point_t* out)
{
    CUZK_TRY
    ctx->gpu->select();
    if (!ctx->defer.take(ticket, false, out))
        return bad_arg("no deferred G1 MSM of that ticket");
    CUZK_CATCH
}

RustError cuzk_cuda_deferred_g2(cuzk_cuda_ctx* ctx, uint64_t ticket, point_fp2_t* out)
{
    CUZK_TRY
    ctx->gpu->select();
    if (!ctx->defer.take(ticket, true, out))
        return bad_arg("no deferred G2 MSM of that ticket");
    CUZK_CATCH
}

// Waits for this context's deferred MSMs and drops their sums (a stage
// that failed part-way).
RustError cuzk_cuda_deferred_drop(cuzk_cuda_ctx* ctx)
{
    CUZK_TRY
    ctx->gpu->select();
    ctx->defer.discard();
    CUZK_CATCH
}

// Host copies of this context through its page-locked chunks (`on`) or
// by page-locking each source per copy (host_copy.cuh).
RustError cuzk_cuda_set_chunked_copies(cuzk_cuda_ctx* ctx, int on)
{
    CUZK_TRY
    ctx->chunked_copies = on != 0;
    CUZK_CATCH
}

// The 0/1 split applies to witness MSMs of at least `min_points` points
// (SIZE_MAX: never).
RustError cuzk_cuda_set_split01(cuzk_cuda_ctx* ctx, size_t min_points)
{
    CUZK_TRY
    ctx->split_min = min_points;
    CUZK_CATCH
}

// Zeros, ones and other scalars the split MSMs saw since the last call,
// and the bytes of SRS points streamed from host memory.
RustError cuzk_cuda_take_shape(cuzk_cuda_ctx* ctx, size_t* zeros, size_t* ones,
                               size_t* others, size_t* streamed)
{
    CUZK_TRY
    *zeros = ctx->shape.zeros;
    *ones = ctx->shape.ones;
    *others = ctx->shape.others;
    *streamed = ctx->streamed_bytes;
    ctx->shape = split_shape{};
    ctx->streamed_bytes = 0;
    CUZK_CATCH
}

// Page-locks `bytes` of host memory from `p` (an SRS section streamed to
// the devices) for DMA copies, read-only, for every device; undone by
// cuzk_cuda_host_unregister before the memory is freed.
RustError cuzk_cuda_host_register(const void* p, size_t bytes)
{
    CUZK_TRY
    if (bytes == 0)
        return RustError{0};
    CUDA_OK(cudaHostRegister(const_cast<void*>(p), bytes,
                             cudaHostRegisterPortable | cudaHostRegisterReadOnly));
    CUZK_CATCH
}

RustError cuzk_cuda_host_unregister(const void* p)
{
    CUZK_TRY
    CUDA_OK(cudaHostUnregister(const_cast<void*>(p)));
    CUZK_CATCH
}

} // extern "C"

#include "h_stage.cuh"
#include "aux_pack.cuh"
#include "abc_eval.cuh"
#include "fixed_base.cuh"
