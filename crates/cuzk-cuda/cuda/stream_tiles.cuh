//! SRS points streamed from host memory: an MSM whose points are not on
//! the device reads them a tile at a time from two device tiles, each
//! filled on a copy stream of its own while the kernels work on the
//! other (double buffering with events: a tile is refilled only once the
//! kernels that read it are done, and read only once its copy has
//! landed). With the host copy page-locked (the SRS section registered
//! once, `cuzk_cuda_host_register`) a fill is one DMA that overlaps the
//! kernels; from pageable memory it goes through the context's chunk
//! ring (`host_copy.cuh`), which keeps the host thread busy while it
//! copies. The resident path's kernels then run on each tile as they do
//! on a resident section (`msm_driver.cuh`, `split01.cuh`).

#ifndef __CUZK_STREAM_TILES_CUH__
#define __CUZK_STREAM_TILES_CUH__

// Makes `later` wait for everything queued on `earlier` so far, without
// throwing (for destructors: an exception may have left work queued);
// synchronises `earlier` when no event can be made.
static void stream_after(cudaStream_t later, cudaStream_t earlier)
{
    cudaEvent_t e;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess) {
        (void)cudaEventRecord(e, earlier);
        (void)cudaStreamWaitEvent(later, e, 0);
        (void)cudaEventDestroy(e);
    } else {
        (void)cudaStreamSynchronize(earlier);
    }
    (void)cudaGetLastError();
}

// Whether host range `p` is page-locked (registered or allocated pinned).
static bool host_pinned(const void* p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

// Points of one MSM in host memory.
struct host_points {
    const uint8_t* base = nullptr;  // the MSM's first point
    size_t elem = 0;                // bytes a point
    bool pinned = false;
    chunk_ring* ring = nullptr;     // for pageable memory
    size_t* copied = nullptr;       // host-to-device bytes, summed (or null)
    size_t* carried = nullptr;      // MSMs that carried buckets, counted (or null)
    // Forced tile size in points (gpus.tuning.stream_tile_points; 0: the
    // driver's choice).
    size_t tile_points = 0;

    host_points(const void* p, size_t elem_bytes, chunk_ring* r, size_t* counter,
                size_t forced_tile)
        : base((const uint8_t*)p), elem(elem_bytes), ring(r), copied(counter),
          tile_points(forced_tile)
    {
        pinned = p && host_pinned(p);
    }
    host_points offset(size_t points) const
    {
        host_points h = *this;
        h.base += points * elem;
        return h;
    }
};

// Two device tiles of `cap` points each (stream-ordered memory of `ms`,
// freed on it), filled on `cs`.
struct tile_pair {
    const stream_t& ms;
    const stream_t& cs;
    const host_points& src;
    size_t cap;
    dev_ptr_t<uint8_t> mem;
    event_t ready, landed[2], consumed[2];
    bool used[2] = {false, false};

    tile_pair(const stream_t& main, const stream_t& copy, const host_points& hp,
              size_t cap_points)
        : ms(main), cs(copy), src(hp), cap(cap_points),
          mem(2 * cap_points * hp.elem, main)
    {
        // The tiles are ms's allocation: cs may copy into them from here.
        ready.record(ms);
        ready.wait(cs);
    }
    // Whatever cs still has queued comes before the tiles' free on ms.
    ~tile_pair() { stream_after(ms, cs); }
    tile_pair(const tile_pair&) = delete;
    tile_pair& operator=(const tile_pair&) = delete;

    uint8_t* tile(size_t k) { return &mem[(k & 1) * cap * src.elem]; }

    // Enqueues the copy of points [off, off + num) (num ≤ cap) into tile
    // k % 2, after the kernels that read it last; returns the tile.
    uint8_t* fill(size_t k, size_t off, size_t num)
    {
        uint8_t* dst = tile(k);
        if (used[k & 1])
            consumed[k & 1].wait(cs);
        const size_t bytes = num * src.elem;
        const uint8_t* from = src.base + off * src.elem;
        if (src.pinned || !src.ring)
            CUDA_OK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyHostToDevice, cs));
        else
            src.ring->copy(cs, dst, from, bytes);
        landed[k & 1].record(cs);
        if (src.copied)
            *src.copied += bytes;
        return dst;
    }
    // Stream `s` waits until tile k % 2 has landed.
    void wait_landed(size_t k, const stream_t& s) { landed[k & 1].wait(s); }
    // The kernels reading tile k % 2 were enqueued on `s` up to here.
    void release(size_t k, const stream_t& s)
    {
        consumed[k & 1].record(s);
        used[k & 1] = true;
    }
};

#endif
