//! Host-to-device copies from pageable host memory (witness vectors, H
//! from the host, SRS points). Three ways, chosen per context
//! (`cuzk_cuda_set_chunked_copies`, set by the backend before each
//! partition's H stage: chunked while several worker contexts share the
//! device, registered otherwise; the owner context, which uploads the
//! resident SRS, keeps `registered`) unless `gpus.tuning.host_copy` forces
//! one (`cuzk_cuda_tuning::host_copy`):
//!
//! - `chunked`: each context keeps a small ring of page-locked chunk
//!   buffers, allocated once; a copy memcpys the source into a free chunk
//!   (pieces of at least 4 MiB, at most `gpus.tuning.copy_threads` host
//!   threads)
//!   and enqueues that chunk's DMA while the next chunk is filled. No
//!   page-locking per call, so one worker's copy never holds the driver
//!   while another worker launches kernels, and the source may be freed
//!   as soon as the copy is enqueued.
//! - `registered`: the source range is page-locked (`cudaHostRegister`) for
//!   the copy and unlocked after it.
//! - `pageable`: plain `cudaMemcpyAsync` from pageable memory (the driver
//!   stages it itself, and the host waits).

#ifndef __CUZK_HOST_COPY_CUH__
#define __CUZK_HOST_COPY_CUH__

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

enum class host_copy_mode { chunked, registered, pageable };

// The mode `forced` (gpus.tuning.host_copy: a host_copy_mode, or -1)
// names for every context, or `fallback` (the context's own choice, see
// cuzk_cuda_set_chunked_copies).
static host_copy_mode host_copy(int32_t forced, host_copy_mode fallback)
{
    if (forced < 0 || forced > (int32_t)host_copy_mode::pageable)
        return fallback;
    return (host_copy_mode)forced;
}

// Runs f(i) for i < n: f(0) on this thread, the others on new threads,
// all joined before it returns (also when starting a thread or f(0)
// throws; the exception is then rethrown).
template<class F> static void fork_join(size_t n, const F& f)
{
    std::vector<std::thread> helpers;
    try {
        helpers.reserve(n > 1 ? n - 1 : 0);
        for (size_t i = 1; i < n; i++)
            helpers.emplace_back(f, i);
        if (n > 0)
            f((size_t)0);
    } catch (...) {
        for (auto& t : helpers)
            t.join();
        throw;
    }
    for (auto& t : helpers)
        t.join();
}

// Copies `bytes` with up to `threads` host threads (the caller's
// included), in pieces of at least 4 MiB.
static void par_memcpy(char* dst, const char* src, size_t bytes,
                       unsigned threads)
{
    const size_t min_part = (size_t)4 << 20;
    size_t parts = bytes / min_part;
    if (parts > threads)
        parts = threads;
    if (parts <= 1) {
        memcpy(dst, src, bytes);
        return;
    }
    // Pieces of ⌈bytes/parts⌉ rounded up to a page: at most `parts` of
    // them cover every byte.
    size_t step = ((bytes + parts - 1) / parts + 4095) & ~(size_t)4095;
    size_t pieces = (bytes + step - 1) / step;
    fork_join(pieces, [=](size_t i) {
        size_t off = i * step;
        size_t k = bytes - off < step ? bytes - off : step;
        memcpy(dst + off, src + off, k);
    });
}

// A context's page-locked chunk buffers for `chunked` copies.
struct chunk_ring {
    static constexpr int SLOTS = 3;
    static constexpr size_t CHUNK = (size_t)64 << 20;
    char* buf[SLOTS] = {};
    cudaEvent_t freed[SLOTS] = {};
    bool pending[SLOTS] = {};
    int next = 0;
    // Host threads filling a chunk (gpus.tuning.copy_threads; 0: one per
    // core up to 16, since fewer lose to busy host threads: docs/PERF.md).
    unsigned threads = 0;

    size_t bytes() const { return buf[0] ? SLOTS * CHUNK : 0; }

    void ensure()
    {
        if (buf[SLOTS - 1])
            return;
        for (int i = 0; i < SLOTS; i++) {
            if (!freed[i])
                CUDA_OK(cudaEventCreateWithFlags(&freed[i],
                                                 cudaEventDisableTiming));
            if (!buf[i])
                CUDA_OK(cudaHostAlloc((void**)&buf[i], CHUNK,
                                      cudaHostAllocDefault));
        }
    }

    // Enqueues on `s` the copy of `bytes` from pageable `src` to device
    // `dst`; on return `src` is no longer read.
    void copy(cudaStream_t s, void* dst, const void* src, size_t bytes)
    {
        long cores = (long)std::thread::hardware_concurrency();
        long want = threads ? (long)threads : cores < 16 ? cores : 16;
        const unsigned nthreads = (unsigned)(want < 1 ? 1 : want > 64 ? 64 : want);
        ensure();
        for (size_t off = 0; off < bytes; off += CHUNK) {
            size_t k = bytes - off < CHUNK ? bytes - off : CHUNK;
            int i = next;
            next = (next + 1) % SLOTS;
            if (pending[i]) {
                CUDA_OK(cudaEventSynchronize(freed[i]));
                pending[i] = false;
            }
            par_memcpy(buf[i], (const char*)src + off, k, nthreads);
            CUDA_OK(cudaMemcpyAsync((char*)dst + off, buf[i], k,
                                    cudaMemcpyHostToDevice, s));
            CUDA_OK(cudaEventRecord(freed[i], s));
            pending[i] = true;
        }
    }

    ~chunk_ring()
    {
        for (int i = 0; i < SLOTS; i++) {
            if (pending[i])
                (void)cudaEventSynchronize(freed[i]);
            if (buf[i])
                (void)cudaFreeHost(buf[i]);
            if (freed[i])
                (void)cudaEventDestroy(freed[i]);
        }
    }
};

// Page-locks a host range while it lives in `registered` mode (else does
// nothing); before unlocking it waits for `stream`, the one copying from
// it (also when an exception unwinds).
struct host_pin {
    void* p = nullptr;
    cudaStream_t stream;

    host_pin(host_copy_mode mode, const void* ptr, size_t bytes,
             cudaStream_t s)
        : stream(s)
    {
        if (bytes == 0 || mode != host_copy_mode::registered)
            return;
        if (cudaHostRegister(const_cast<void*>(ptr), bytes,
                             cudaHostRegisterReadOnly) == cudaSuccess)
            p = const_cast<void*>(ptr);
        else
            (void)cudaGetLastError();
    }
    ~host_pin()
    {
        if (p) {
            (void)cudaStreamSynchronize(stream);
            (void)cudaHostUnregister(p);
        }
    }
    host_pin(const host_pin&) = delete;
    host_pin& operator=(const host_pin&) = delete;
};

// Enqueues on `s` a copy from host memory (pinned by a live `host_pin` in
// `registered` mode) to the device, through `ring` in `chunked` mode.
static void enqueue_host_copy(host_copy_mode mode, chunk_ring& ring,
                              cudaStream_t s, void* dst, const void* src,
                              size_t bytes)
{
    if (bytes == 0)
        return;
    if (mode == host_copy_mode::chunked)
        ring.copy(s, dst, src, bytes);
    else
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
}

// Copies `bytes` from host memory to the device on `s` and waits for it.
static void copy_to_device(host_copy_mode mode, chunk_ring& ring,
                           cudaStream_t s, void* dst, const void* src,
                           size_t bytes)
{
    host_pin pin(mode, src, bytes, s);
    enqueue_host_copy(mode, ring, s, dst, src, bytes);
    CUDA_OK(cudaStreamSynchronize(s));
}

#endif
