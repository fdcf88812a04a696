//! The MSM entry points' common part: where an MSM's scalars are on a
//! context (`source_scalars`) and the two ways its points come: streamed
//! from host memory, one pass shared by several partitions (`msm_shared`;
//! `msm_from_source` for one), or from a resident SRS section
//! (`msm_resident`). Included by `cuzk_cuda.cu` after the context and
//! before its `extern "C"` surface.

#ifndef __CUZK_MSM_ENTRY_CUH__
#define __CUZK_MSM_ENTRY_CUH__

// Where an MSM's scalars come from (see cuzk_cuda_msm_g1).
enum scalar_source : int { SRC_H = 0, SRC_AUX = 1, SRC_PICKED = 2 };

// The device scalars of `source` and how many there are.
static const fr_t* source_scalars(const cuzk_cuda_ctx* ctx, int source,
                                  size_t* len)
{
    switch (source) {
    case SRC_H:
        if (!ctx->h_ready)
            throw cuda_error{-5, std::string("H coefficients not prepared")};
        // H has n - 1 coefficients (the top one is zero).
        *len = ((size_t)1 << ctx->lg_n) - 1;
        return ctx->abc.ptr;
    case SRC_AUX:
        *len = ctx->aux_len;
        return ctx->aux.ptr;
    case SRC_PICKED:
        *len = ctx->picked_len;
        return ctx->picked.ptr;
    default:
        throw cuda_error{-5, std::string("unknown scalar source")};
    }
}

// `k` MSMs against the same `npoints` host points, one for each context
// (of one device; its scalars from `sources[j]`), sharing each pass over
// the points: the resident path's kernels on points streamed a tile at a
// time (`stream_tiles.cuh`; page-locked host memory is copied by DMA
// beside the kernels, pageable memory through the chunk ring). Witness
// scalars are split as on the device, a tile copied once serving all k
// (`msm_split01_streamed`); H's scalars, or a split that declines, make
// each MSM stream the points itself. The bytes copied are shared out
// evenly among the contexts' counters. Given `tickets` and with
// gpus.tuning.overlap_others, a split's others are left queued on each
// context's side streams (deferred.cuh): tickets[j] names them, 0 where
// outs[j] is whole.
template<class bucket_T, class point_T, class affine_T>
static RustError msm_shared(cuzk_cuda_ctx* const* ctxs, const int* sources, size_t k,
                            const affine_T* points, size_t npoints, point_T* outs,
                            uint64_t* tickets = nullptr)
{
    CUZK_TRY
    if (k == 0)
        return RustError{0};
    cuzk_cuda_ctx* first = ctxs[0];
    first->gpu->select();
    if (npoints >= ((size_t)1 << 31))
        return bad_arg("too many points for one MSM");
    bool split = npoints >= first->split_min;
    std::vector<split_part<point_T>> parts;
    parts.reserve(k);
    for (size_t j = 0; j < k; j++) {
        cuzk_cuda_ctx* ctx = ctxs[j];
        outs[j].inf();
        if (ctx->gpu != first->gpu)
            return bad_arg("a shared pass over contexts of different devices");
        size_t len = 0;
        const fr_t* scalars = source_scalars(ctx, sources[j], &len);
        if (npoints != len)
            return bad_arg("MSM points and scalars differ in number");
        split = split && sources[j] != SRC_H;
        parts.push_back(split_part<point_T>{&ctx->mem, &ctx->split, scalars,
                                            &ctx->shape, &outs[j]});
        if (tickets)
            tickets[j] = 0;
        // Nothing else of this context is on its upload stream now.
        ctx->upload->sync();
    }
    if (npoints == 0)
        return RustError{0};
    typedef typename affine_T::mem_t affine_mem;
    size_t copied = 0;
    host_points hp{points, sizeof(affine_mem), &first->chunks, &copied,
                   first->tune.stream_tile_points};
    hp.carried = &first->carried_msms;
    struct share_out {
        cuzk_cuda_ctx* const* ctxs;
        size_t k;
        const size_t& copied;
        ~share_out()
        {
            for (size_t j = 0; j < k; j++)
                ctxs[j]->streamed_bytes += copied / k + (j == 0 ? copied % k : 0);
        }
    } share{ctxs, k, copied};
    if (split && tickets && first->tune.overlap_others)
        for (size_t j = 0; j < k; j++) {
            // A slot no queued Pippenger of this context reads.
            split_part<point_T>& p = parts[j];
            p.defer = &ctxs[j]->defer;
            p.slot = p.defer->free_slot();
            p.sc = &p.defer->slots[p.slot];
            p.ticket = &tickets[j];
        }
    if (split &&
        msm_split01_streamed<bucket_T, point_T, affine_T>(*first->gpu, first->tune,
                                                          parts.data(), k, hp, npoints))
        return RustError{0};
    for (size_t j = 0; j < k; j++)
        msm_device<bucket_T>(*first->gpu, first->tune, (const affine_T*)nullptr,
                             parts[j].s, npoints, &outs[j], ctxs[j]->mem.room(), &hp);
    CUZK_CATCH
}

// The same for one partition (`source` may be H's).
template<class bucket_T, class point_T, class affine_T>
static RustError msm_from_source(cuzk_cuda_ctx* ctx, int source,
                                 const affine_T* points, size_t npoints,
                                 point_T* out)
{
    return msm_shared<bucket_T, point_T, affine_T>(&ctx, &source, 1, points, npoints, out);
}

// The same against `npoints` points of a resident SRS section from `offset`.
template<class bucket_T, class point_T, class affine_T>
static RustError msm_resident(cuzk_cuda_ctx* ctx, int source, int sec,
                              size_t offset, size_t npoints, point_T* out)
{
    CUZK_TRY
    ctx->gpu->select();
    out->inf();
    if (sec < 0 || sec >= SRS_SECTIONS)
        return bad_arg("unknown SRS section");
    const auto& s = ctx->srs_sections()[sec];
    if (s.elem != sizeof(affine_T))
        return bad_arg("SRS section of another group");
    if (offset > s.npoints || npoints > s.npoints - offset)
        return bad_arg("MSM past the end of the resident SRS section");
    size_t len = 0;
    const fr_t* scalars = source_scalars(ctx, source, &len);
    if (npoints != len)
        return bad_arg("MSM points and scalars differ in number");
    if (npoints >= ((size_t)1 << 31))
        return bad_arg("too many points for one MSM");
    if (npoints == 0)
        return RustError{0};
    const affine_T* points = (const affine_T*)s.ptr + offset;
    // Witness scalars (not H's) are mostly 0 or 1: split them.
    if (source != SRC_H && npoints >= ctx->split_min &&
        msm_split01<bucket_T>(*ctx->gpu, ctx->id, ctx->tune, ctx->mem, ctx->split,
                              scalars, points, npoints, out, &ctx->shape))
        return RustError{0};
    msm_device<bucket_T>(*ctx->gpu, ctx->tune, points, scalars, npoints, out,
                         ctx->mem.room());
    CUZK_CATCH
}

#endif
