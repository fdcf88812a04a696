//! One owner for a device context's own allocations (`dalloc`) and the
//! grow-only device buffers that use it (`dbuf`).
//!
//! Every buffer of a context — a|b|c, aux, the picked and split scratch, the
//! resident SRS sections — is taken with plain `cudaMalloc` through
//! `dalloc::get`, so memory we free is at once visible to the next
//! allocation and to `cudaMemGetInfo`. The MSMs allocate their
//! temporaries from the device's stream-ordered pool, which keeps them
//! between MSMs (`keep_pool`); `dalloc::available` trims that pool first
//! so the free figure is true, and `get` trims it and retries once when
//! the card seems full.
//!
//! `dalloc` also implements `gpus.vram_limit` (the card is taken to have only
//! that many bytes: an allocation that would take the device's use past it
//! fails as if the card were full) and, built with `CUZK_LAB`, a test hook
//! that makes the next allocations fail. A failed allocation throws a `cuda_error` with code
//! `CUZK_OOM` and leaves the context usable.

#ifndef __CUZK_DALLOC_CUH__
#define __CUZK_DALLOC_CUH__

#include <string>

// The code of an out-of-device-memory error (sppark negates CUDA's codes).
#define CUZK_OOM (-(int)cudaErrorMemoryAllocation)

static inline bool is_oom(const cuda_error& e)
{
    return e.code() == CUZK_OOM;
}

struct dalloc {
    int device = 0;
    // gpus.vram_limit in bytes (0: the whole card).
    size_t limit = 0;
    // gpus.vram_safety_margin: what `room` leaves free.
    size_t reserve = 0;
#ifdef CUZK_LAB
    // Test hook: this many of the next allocations fail.
    int fail_next = 0;
#endif

    void* get(size_t bytes)
    {
#ifdef CUZK_LAB
        if (fail_next > 0) {
            fail_next--;
            throw cuda_error{CUZK_OOM,
                             std::string("injected allocation failure (test hook)")};
        }
#endif
        if (limit) {
            trim_pool();
            size_t free_b = 0, total = 0;
            CUDA_OK(cudaMemGetInfo(&free_b, &total));
            size_t used = total - free_b;
            if (used + bytes > limit)
                throw cuda_error{CUZK_OOM,
                                 "allocating " + std::to_string(bytes) +
                                     " bytes would pass gpus.vram_limit (" +
                                     std::to_string(limit) + " bytes; " +
                                     std::to_string(used) + " in use)"};
        }
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
        if (e == cudaErrorMemoryAllocation) {
            // The stream-ordered pool may hold freed MSM scratch (see
            // keep_pool): once the frees queued on streams are done, give
            // it back and try once more.
            (void)cudaGetLastError();
            (void)cudaDeviceSynchronize();
            trim_pool();
            e = cudaMalloc(&p, bytes ? bytes : 1);
        }
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            throw cuda_error{-(int)e, "cudaMalloc of " + std::to_string(bytes) +
                                          " bytes: " + cudaGetErrorString(e)};
        }
        return p;
    }

    // The device's stream-ordered pool (MSM scratch, many GB at 2^27)
    // keeps what is freed instead of unmapping it at every
    // synchronisation and mapping it again for the next MSM (what that
    // costs: docs/PERF.md); `get`, `available` and cuzk_cuda_mem_info trim it when
    // they need the room or a true free figure (the backend reads the room
    // before every partition, so what the pool holds goes back to the card
    // at least that often; other processes on the card see it as used
    // until then).
    static void keep_pool(int device)
    {
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
            uint64_t keep = UINT64_MAX;
            (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        }
        (void)cudaGetLastError();
    }

    // Returns the memory the device's stream-ordered pool caches (freed
    // MSM scratch) to the device.
    void trim_pool() const
    {
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
        (void)cudaGetLastError();
    }

    void put(void* p)
    {
        if (p)
            (void)cudaFree(p);
    }

    // Device memory the stream-ordered pool holds but does not use (freed
    // MSM scratch it keeps for the next MSM).
    size_t pool_cached() const
    {
        cudaMemPool_t pool;
        uint64_t reserved = 0, used = 0;
        if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                                    &reserved) != cudaSuccess ||
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent,
                                    &used) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        return reserved > used ? (size_t)(reserved - used) : 0;
    }

    // What an MSM may still take from the stream-ordered pool for its
    // scratch (tiles, buckets, digits): free memory plus what the pool
    // caches, within the limit, less `reserve` (gpus.vram_safety_margin).
    // Unlike `available` it does not trim the pool, so the next MSM reuses
    // what the last one freed (trimming costs 15-25 ms a 2^27 MSM).
    size_t room() const
    {
        size_t free_b = 0, total = 0;
        CUDA_OK(cudaMemGetInfo(&free_b, &total));
        free_b += pool_cached();
        if (free_b > total)
            free_b = total;
        if (limit) {
            size_t used = total - free_b;
            size_t in_limit = limit > used ? limit - used : 0;
            if (in_limit < free_b)
                free_b = in_limit;
        }
        return free_b > reserve ? free_b - reserve : 0;
    }

    // Throws the out-of-memory error unless `bytes` more fit in `room()`:
    // for stream-ordered allocations, which `get` does not see, under
    // gpus.vram_limit.
    void admit(size_t bytes, const char* what) const
    {
        size_t r = room();
        if (bytes > r)
            throw cuda_error{CUZK_OOM, std::string(what) + ": " +
                                           std::to_string(bytes) +
                                           " bytes of device memory wanted, " +
                                           std::to_string(r) + " free"};
    }

    // Bytes this allocator could still hand out: the device's free memory
    // once the stream-ordered pool has returned what it caches (sppark's
    // MSM temporaries), within the limit. The device must be idle.
    size_t available() const
    {
        trim_pool();
        size_t free_b = 0, total = 0;
        CUDA_OK(cudaMemGetInfo(&free_b, &total));
        if (limit) {
            size_t used = total - free_b;
            size_t room = limit > used ? limit - used : 0;
            if (room < free_b)
                free_b = room;
        }
        return free_b;
    }
};

// A device buffer that only grows; freed with the context.
template<class T> struct dbuf {
    T* ptr = nullptr;
    size_t cap = 0;

    void reserve(dalloc& a, size_t n)
    {
        if (n <= cap)
            return;
        release(a);
        ptr = (T*)a.get(n * sizeof(T));
        cap = n;
    }
    void release(dalloc& a)
    {
        a.put(ptr);
        ptr = nullptr;
        cap = 0;
    }
    size_t bytes() const { return cap * sizeof(T); }
};

#endif
