//! The aux assignment copied packed (`src/aux_pack.rs`): two bitmaps and
//! the values of the scalars that are neither 0 nor 1, expanded into the
//! context's aux on its upload stream. Included at the end of
//! `cuzk_cuda.cu`.

#ifndef __CUZK_AUX_PACK_CUH__
#define __CUZK_AUX_PACK_CUH__

// Scalar i of `aux`: the next of `others` where its `other` bit is set
// (offsets[i/64] plus the set bits below it in its word), `one` where its
// `one` bit is, zero otherwise.
__global__ void expand_aux(fr_t* aux, const uint64_t* other,
                           const uint64_t* one, const uint32_t* offsets,
                           const fr_t* others, fr_t one_v, size_t len)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < len;
         i += stride) {
        const size_t w = i / 64;
        const uint64_t bit = (uint64_t)1 << (i % 64);
        const uint64_t ow = other[w];
        fr_t v;
        if (ow & bit)
            v = others[offsets[w] + __popcll(ow & (bit - 1))];
        else if (one[w] & bit)
            v = one_v;
        else
            v.zero();
        aux[i] = v;
    }
}

extern "C" {

// As cuzk_cuda_upload_aux, from the packed form of `aux` (`len` scalars):
// bitmaps `other` and `one` of (len + 63) / 64 words and the `nothers`
// values of `others`; `one_v` is the scalar 1 as the host holds it.
// `*packed` says whether the packed form was used: when the expansion's
// temporary does not fit (admitted under gpus.vram_limit, or refused by
// the device) or the bitmaps and values disagree, `aux` is copied as it
// is. The count, scan and expansion kernels run on the context's upload
// stream, outside the device lock, as the plain copy does (~2 ms at 2^27).
RustError cuzk_cuda_upload_aux_packed(cuzk_cuda_ctx* ctx, const fr_t* aux,
                                      size_t len, const uint64_t* other,
                                      const uint64_t* one, const fr_t* others,
                                      size_t nothers, const fr_t* one_v,
                                      int* packed)
{
    *packed = 0;
    CUZK_TRY
    const gpu_t& gpu = *ctx->gpu;
    gpu.select();
    ctx->aux_len = 0;
    ctx->picked_len = 0;
    if (len == 0 || len >= ((size_t)1 << 32) || nothers > len)
        return cuzk_cuda_upload_aux(ctx, aux, len);
    ctx->aux.reserve(ctx->mem, len);
    const size_t nwords = (len + 63) / 64;
    const stream_t& s = *ctx->upload;
    size_t scan_b = 0;
    CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, scan_b, (uint32_t*)nullptr,
                                          (uint32_t*)nullptr, (int)(nwords + 1),
                                          (cudaStream_t)s));
    // One temporary: CUB's scratch, the counts then offsets, both bitmaps
    // and the others' values, each 256-byte aligned.
    auto up = [](size_t x) { return (x + 255) & ~(size_t)255; };
    const size_t counts_at = up(scan_b);
    const size_t offsets_at = counts_at + up((nwords + 1) * sizeof(uint32_t));
    const size_t other_at = offsets_at + up((nwords + 1) * sizeof(uint32_t));
    const size_t one_at = other_at + up(nwords * sizeof(uint64_t));
    const size_t others_at = one_at + up(nwords * sizeof(uint64_t));
    const size_t bytes = others_at + nothers * sizeof(fr_t);
    std::unique_ptr<dev_ptr_t<uint8_t>> tmp;
    try {
        ctx->mem.admit(bytes, "the packed aux's expansion");
        tmp.reset(new dev_ptr_t<uint8_t>{bytes, s});
    } catch (const cuda_error& e) {
        if (!is_oom(e))
            throw;
        (void)cudaGetLastError();
        return cuzk_cuda_upload_aux(ctx, aux, len);
    }
    uint8_t* t = &(*tmp)[0];
    uint32_t* counts = (uint32_t*)(t + counts_at);
    uint32_t* offsets = (uint32_t*)(t + offsets_at);
    uint64_t* d_other = (uint64_t*)(t + other_at);
    uint64_t* d_one = (uint64_t*)(t + one_at);
    fr_t* d_others = (fr_t*)(t + others_at);
    // Small copies: page-locking them per copy would stall other
    // workers' launches for nothing (host_copy.cuh), so not registered.
    const host_copy_mode m = ctx->copy_mode() == host_copy_mode::registered
                                 ? host_copy_mode::pageable
                                 : ctx->copy_mode();
    copy_to_device(m, ctx->chunks, (cudaStream_t)s, d_other, other,
                   nwords * sizeof(uint64_t));
    copy_to_device(m, ctx->chunks, (cudaStream_t)s, d_one, one,
                   nwords * sizeof(uint64_t));
    if (nothers)
        copy_to_device(m, ctx->chunks, (cudaStream_t)s, d_others, others,
                       nothers * sizeof(fr_t));
    const unsigned block = 256;
    word_popc<<<grid_for(s, nwords + 1, block), block, 0, s>>>(
        counts, d_other, nwords, len);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cub::DeviceScan::ExclusiveSum(t, scan_b, counts, offsets,
                                          (int)(nwords + 1), (cudaStream_t)s));
    uint32_t total = 0;
    s.DtoH(&total, offsets + nwords, 1);
    s.sync();
    if (total != nothers) {
        tmp.reset();
        return cuzk_cuda_upload_aux(ctx, aux, len);
    }
    fr_t one_d;
    memcpy((void*)&one_d, (const void*)one_v, sizeof(fr_t));
    expand_aux<<<grid_for(s, len, block), block, 0, s>>>(
        ctx->aux.ptr, d_other, d_one, offsets, d_others, one_d, len);
    CUDA_OK(cudaGetLastError());
    // The temporary goes back to the pool on `s` after the expansion.
    s.sync();
    ctx->aux_len = len;
    *packed = 1;
    CUZK_CATCH
}

} // extern "C"

#endif
