//! The 0/1 split of a witness-shaped MSM: in Filecoin circuits most L, A
//! and B scalars are 0 or 1. Zeros are dropped; the points of the ones are
//! summed by sppark's batch addition over their index list; only the other
//! scalars, gathered with their points, go through Pippenger. One pass
//! counts the three kinds, a second gathers the others and the ones'
//! indices, taking slots a block at a time (per-warp atomics on one
//! counter serialised the first version). Included by `cuzk_cuda.cu`
//! after sppark's MSM headers and `dalloc.cuh`. The batch addition is
//! sppark's (`msm/batch_addition.cuh`).
//!
//! `gpus.tuning.trace_split` times each phase; `check_split` computes the
//! ones' sum and the whole MSM again by plain Pippenger and prints whether
//! they agree (`split_check`).
//!
//! The gather's order depends on the scheduling of blocks, but an MSM is a
//! sum in a group, so the result does not.

#ifndef __CUZK_SPLIT01_CUH__
#define __CUZK_SPLIT01_CUH__

#include <chrono>
#include <cstdio>
#include <cstdlib>

// A point's bytes, copied by one thread. Typed copies will not do: on the
// device sppark spreads an Fp2 element over two threads, so one thread's
// copy of a G2 point holds only its half. Points in device memory are
// `affine_t::mem_t` (on the device `affine_t` of G2 is half a point).
template<size_t N> struct raw_bytes {
    static_assert(N % 16 == 0, "points are whole 16-byte words");
    uint4 w[N / 16];
};

// Scalar i of s[0..n) (zero past the end) and whether it is 1
// (Montgomery) or neither 0 nor 1.
struct scalar01 {
    fr_t x;
    bool one = false, other = false;
    __device__ scalar01(const fr_t* s, size_t i, size_t n)
    {
        if (i < n) {
            x = s[i];
            // (sppark's is_one() trips an nvcc 13 internal error)
            one = (x - fr_t::one()).is_zero();
            other = !one && !x.is_zero();
        }
    }
};

// Copies every scalar s[i] that is 1 (Montgomery) and its point p[i] to
// os/op at a slot taken from counts[0] (zero at launch) with one atomic
// add per warp: the reference gather of `split_check`. blockDim.x must be
// a multiple of 32.
template<class point_mem>
__global__ void split01_gather_ones(const fr_t* s, const point_mem* p, size_t n,
                                   uint32_t* counts, fr_t* os, point_mem* op)
{
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    const size_t rounded = (n + 31) & ~(size_t)31;
    const uint32_t lane = threadIdx.x % 32;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
         i < rounded; i += stride) {
        const scalar01 c{s, i, n};
        const bool one = c.one;
        uint32_t ob = __ballot_sync(0xffffffff, one);
        uint32_t base = 0;
        if (lane == 0 && ob)
            base = atomicAdd(&counts[0], (uint32_t)__popc(ob));
        base = __shfl_sync(0xffffffff, base, 0);
        if (one) {
            uint32_t at = base + __popc(ob & ((1u << lane) - 1));
            typedef raw_bytes<sizeof(point_mem)> raw;
            os[at] = c.x;
            ((raw*)op)[at] = ((const raw*)p)[i];
        }
    }
}

// Counts the scalars s[0..n) that are 1 (Montgomery) in counts[1] and
// those neither 0 nor 1 in counts[0]: per-thread tallies, one atomic add
// per warp at the end. blockDim.x must be a multiple of 32.
__global__ void split01_count(const fr_t* s, size_t n, uint32_t* counts)
{
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    const uint32_t lane = threadIdx.x % 32;
    uint32_t n1 = 0, nx = 0;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += stride) {
        const scalar01 c{s, i, n};
        n1 += c.one;
        nx += c.other;
    }
    for (uint32_t off = 16; off; off >>= 1) {
        n1 += __shfl_down_sync(0xffffffff, n1, off);
        nx += __shfl_down_sync(0xffffffff, nx, off);
    }
    if (lane == 0) {
        if (n1)
            atomicAdd(&counts[1], n1);
        if (nx)
            atomicAdd(&counts[0], nx);
    }
}

// Copies every scalar s[i] neither 0 nor 1 and its point p[i] to os/op,
// and the index i of every scalar 1 to oi, at slots taken from counts[0]
// and counts[1] (zero at launch) one atomic add per block and 256
// scalars; slots past cap_x or cap_1 (the count pass's figures) are not
// written. blockDim.x must be SPLIT_GATHER_BLOCK.
#define SPLIT_GATHER_BLOCK 256
template<class point_mem>
__launch_bounds__(SPLIT_GATHER_BLOCK) __global__
void split01_gather(const fr_t* s, const point_mem* p, size_t n,
                    uint32_t* counts, fr_t* os, point_mem* op, uint32_t cap_x,
                    uint32_t* oi, uint32_t cap_1)
{
    const uint32_t nwarps = SPLIT_GATHER_BLOCK / 32;
    __shared__ uint32_t wx[nwarps], w1[nwarps], bx, b1;
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const uint32_t below = (1u << lane) - 1;
    const size_t stride = (size_t)SPLIT_GATHER_BLOCK * gridDim.x;
    for (size_t tile = (size_t)blockIdx.x * SPLIT_GATHER_BLOCK; tile < n;
         tile += stride) {
        size_t i = tile + threadIdx.x;
        const scalar01 c{s, i, n};
        const fr_t& x = c.x;
        const bool one = c.one, other = c.other;
        uint32_t xb = __ballot_sync(0xffffffff, other);
        uint32_t ob = __ballot_sync(0xffffffff, one);
        if (lane == 0) {
            wx[warp] = __popc(xb);
            w1[warp] = __popc(ob);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t tx = 0, t1 = 0;
            for (uint32_t w = 0; w < nwarps; w++) {
                uint32_t cx = wx[w], c1 = w1[w];
                wx[w] = tx;
                w1[w] = t1;
                tx += cx;
                t1 += c1;
            }
            bx = tx ? atomicAdd(&counts[0], tx) : 0;
            b1 = t1 ? atomicAdd(&counts[1], t1) : 0;
        }
        __syncthreads();
        uint32_t at = bx + wx[warp] + __popc(xb & below);
        if (other && at < cap_x) {
            typedef raw_bytes<sizeof(point_mem)> raw;
            os[at] = x;
            ((raw*)op)[at] = ((const raw*)p)[i];
        }
        at = b1 + w1[warp] + __popc(ob & below);
        if (one && at < cap_1)
            oi[at] = (uint32_t)i;
        __syncthreads();  // wx, w1, bx, b1 are the next tile's
    }
}

// Device scratch of the split, kept across calls like the other buffers.
struct split_scratch {
    dbuf<uint32_t> counts;  // others, ones
    dbuf<fr_t> scalars;     // gathered scalars
    dbuf<uint8_t> points;   // gathered points (G1 or G2)
    dbuf<uint32_t> ones_at; // the ones' indices
    dbuf<uint8_t> sums;     // per-warp sums of the ones

    void release(dalloc& a)
    {
        counts.release(a);
        scalars.release(a);
        points.release(a);
        ones_at.release(a);
        sums.release(a);
    }
    size_t bytes() const
    {
        return counts.bytes() + scalars.bytes() +
               points.bytes() + ones_at.bytes() + sums.bytes();
    }
};

// How one split MSM went (for ProveStats' shape and the benches).
struct split_shape {
    size_t zeros = 0, ones = 0, others = 0;
};

#include "deferred.cuh"

// An allocation that may fail: true when `b` holds `n`, false (the context
// still usable) when the device has no room.
template<class T> static bool try_reserve(dbuf<T>& b, dalloc& a, size_t n)
{
    try {
        b.reserve(a, n);
        return true;
    } catch (const cuda_error& e) {
        if (!is_oom(e))
            throw;
        return false;
    }
}

// Debug (`gpus.tuning.check_split`): the ones' sum again by Pippenger over the
// gathered ones, and the whole MSM by plain Pippenger; prints whether the
// parts agree.
template<class bucket_T, class point_T, class affine_T>
static void split_check(const gpu_t& gpu, int dev, dalloc& mem,
                        split_scratch& sc,
                        const fr_t* s, const affine_T* p, size_t n,
                        size_t ones, const point_T& sum_ones,
                        const point_T& sum_others)
{
    typedef typename affine_T::mem_t affine_mem;
    const stream_t& st = gpu;
    point_T ref_ones, ref_all;
    ref_ones.inf();
    ref_all.inf();
    sc.scalars.reserve(mem, ones ? ones : 1);
    sc.points.reserve(mem, (ones ? ones : 1) * sizeof(affine_mem));
    st.bzero(sc.counts.ptr, 1);
    split01_gather_ones<affine_mem><<<grid_for(st, n, 256), 256, 0, st>>>(
        s, (const affine_mem*)p, n, sc.counts.ptr, sc.scalars.ptr,
        (affine_mem*)sc.points.ptr);
    CUDA_OK(cudaGetLastError());
    st.sync();
    if (ones) {
        msm_t<bucket_T, point_T, affine_T, scalar_t> m1{nullptr, ones,
                                                        sizeof(affine_T), dev};
        m1.invoke(ref_ones, dev_view<affine_T>{(affine_T*)sc.points.ptr}, ones,
                  dev_view<fr_t>{sc.scalars.ptr}, true);
    }
    msm_t<bucket_T, point_T, affine_T, scalar_t> m2{nullptr, n,
                                                    sizeof(affine_T), dev};
    m2.invoke(ref_all, dev_view<affine_T>{p}, n, dev_view<fr_t>{s}, true);
    gpu.sync();
    point_T parts = sum_others;
    parts.add(ref_ones);
    auto same = [](point_T a, point_T b) {
        b.cneg(true);
        a.add(b);
        return a.is_inf();
    };
    fprintf(stderr, "split01_check degree=%u n=%zu ones=%zu ones_ok=%d all_ok=%d\n",
            (unsigned)bucket_T::degree, n, ones, (int)same(ref_ones, sum_ones),
            (int)same(ref_all, parts));
}

// The count pass: how many of s[0..n) are neither 0 nor 1 (`others`) and
// how many are 1; false when the counters do not fit on the device.
static bool split_count(const stream_t& st, dalloc& mem, split_scratch& sc,
                        const fr_t* s, size_t n, size_t* others, size_t* ones)
{
    const unsigned block = 256;
    if (!try_reserve(sc.counts, mem, 2))
        return false;
    st.bzero(sc.counts.ptr, 2);
    split01_count<<<grid_for(st, n, block), block, 0, st>>>(s, n, sc.counts.ptr);
    CUDA_OK(cudaGetLastError());
    uint32_t counts[2];
    st.DtoH(counts, sc.counts.ptr, 2);
    st.sync();
    *others = counts[0];
    *ones = counts[1];
    return true;
}

// Σ s_i·p_i over n device scalars and points, split as above. Returns
// false, having computed nothing, when more than half the scalars are
// neither 0 nor 1 (plain Pippenger is then as fast) or the split's buffers
// do not fit: the caller runs plain Pippenger.
template<class bucket_T, class point_T, class affine_T>
static bool msm_split01(const gpu_t& gpu, int dev, const cuzk_cuda_tuning& tune,
                        dalloc& mem, split_scratch& sc,
                        const fr_t* s, const affine_T* p, size_t n,
                        point_T* out, split_shape* shape)
{
    typedef typename bucket_T::mem_t bucket_mem;
    typedef typename affine_T::mem_t affine_mem;
    const affine_mem* pm = (const affine_mem*)p;
    const stream_t& st = gpu;
    const bool trace = tune.split_trace != 0;
    auto t0 = std::chrono::steady_clock::now();
    // With the trace on, each phase is waited for and timed.
    auto lap = [&](const char* what) {
        if (!trace)
            return;
        st.sync();
        auto t1 = std::chrono::steady_clock::now();
        fprintf(stderr, "split01 n=%zu %s %.2f ms\n", n, what,
                std::chrono::duration<double, std::milli>(t1 - t0).count());
        t0 = t1;
    };
    size_t others = 0, ones = 0;
    if (!split_count(st, mem, sc, s, n, &others, &ones))
        return false;
    lap("classify");
    if (others > n / 2)
        return false;
    if (!try_reserve(sc.scalars, mem, others ? others : 1) ||
        !try_reserve(sc.points, mem, (others ? others : 1) * sizeof(affine_mem)))
        return false;
    // Per-warp sums of the ones.
    size_t nsums = 0;
    if (ones) {
        nsums = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
        if (!try_reserve(sc.sums, mem, nsums * sizeof(bucket_mem)) ||
            !try_reserve(sc.ones_at, mem, ones))
            return false;
    }
    shape->zeros += n - others - ones;
    shape->ones += ones;
    shape->others += others;
    affine_mem* gp = (affine_mem*)sc.points.ptr;

    // Others and the ones' indices in one pass; the ones summed by index
    // (their count is counts[1] after the gather); Pippenger over the
    // others.
    st.bzero(sc.counts.ptr, 2);
    split01_gather<affine_mem><<<grid_for(st, n, SPLIT_GATHER_BLOCK),
                                 SPLIT_GATHER_BLOCK, 0, st>>>(
        s, pm, n, sc.counts.ptr, sc.scalars.ptr, gp, (uint32_t)others,
        sc.ones_at.ptr, (uint32_t)ones);
    CUDA_OK(cudaGetLastError());
    lap("gather");
    if (ones) {
        batch_addition<bucket_T><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(
            (bucket_mem*)sc.sums.ptr, pm, (size_t)n, sc.ones_at.ptr,
            sc.counts.ptr[1]);
        CUDA_OK(cudaGetLastError());
        lap("ones");
    }

    // The others through Pippenger (our driver orders its streams after
    // this one).
    point_T sum_others;
    sum_others.inf();
    if (others) {
        st.sync();
        msm_device<bucket_T>(gpu, tune, (const affine_T*)gp, sc.scalars.ptr,
                             others, &sum_others);
        lap("pippenger");
    }
    point_T sum_ones;
    sum_ones.inf();
    if (ones) {
        std::vector<bucket_T> sums(nsums);
        st.DtoH(sums.data(), sc.sums.ptr, nsums);
        st.sync();
        sum_ones = sum_up(sums);
    }
    st.sync();
    *out = sum_others;
    out->add(sum_ones);
    if (tune.split_check)
        split_check<bucket_T>(gpu, dev, mem, sc, s, p, n, ones, sum_ones,
                             sum_others);
    return true;
}

// One MSM's part in a streamed split (`msm_split01_streamed`): its
// scalars, the split scratch and allocator of the context that holds
// them, where its shape is counted, and its result.
template<class point_T> struct split_part {
    dalloc* mem;
    split_scratch* sc;
    const fr_t* s;
    split_shape* shape;
    point_T* out;
    size_t others = 0, ones = 0;
    // With gpus.tuning.overlap_others: the context's deferral, whose slot
    // `slot` is `sc`; the others' Pippenger is queued there and `*ticket`
    // says which (0: none queued, `*out` is the whole sum).
    deferral* defer = nullptr;
    int slot = 0;
    uint64_t* ticket = nullptr;
};

// The same with the points in host memory (`hp`, see stream_tiles.cuh),
// for `k` MSMs over the same points (partitions of one circuit sharing
// one pass over the bases): the count pass needs only the scalars; then
// the points come up a tile at a time, once for all k, and each MSM's
// others in the tile are gathered (with their points, into one device
// list per MSM for all tiles) and its ones summed by index into per-warp
// sums folded across tiles; each MSM's others then go through Pippenger
// from device memory. Every point is copied once; only the others' stay.
// Returns false, having computed nothing, as `msm_split01` does, when
// any of the k declines.
template<class bucket_T, class point_T, class affine_T>
static bool msm_split01_streamed(const gpu_t& gpu, const cuzk_cuda_tuning& tune,
                                 split_part<point_T>* parts, size_t k,
                                 const host_points& hp, size_t n)
{
    typedef typename bucket_T::mem_t bucket_mem;
    typedef typename affine_T::mem_t affine_mem;
    const stream_t& st = gpu;
    const size_t nsums = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    // `gpus.tuning.trace_split`: each phase waited for and timed (where
    // a shared pass's time goes: the count, the tiles, the others).
    const bool trace = tune.split_trace != 0;
    auto t0 = std::chrono::steady_clock::now();
    auto lap = [&](const char* what, size_t j) {
        if (!trace)
            return;
        st.sync();
        auto t1 = std::chrono::steady_clock::now();
        fprintf(stderr, "split01-streamed n=%zu k=%zu %s %zu %.2f ms\n", n, k, what, j,
                std::chrono::duration<double, std::milli>(t1 - t0).count());
        t0 = t1;
    };
    // One tile's ones at a time: their indices are the tile's.
    size_t tile = hp.tile_points ? hp.tile_points
                                 : msm_driver<bucket_T, point_T, affine_T>::MAX_TILE;
    if (tile > n)
        tile = n;
    for (size_t j = 0; j < k; j++) {
        split_part<point_T>& p = parts[j];
        if (!split_count(st, *p.mem, *p.sc, p.s, n, &p.others, &p.ones) ||
            p.others > n / 2)
            return false;
        const size_t o = p.others ? p.others : 1;
        if (!try_reserve(p.sc->scalars, *p.mem, o) ||
            !try_reserve(p.sc->points, *p.mem, o * sizeof(affine_mem)) ||
            !try_reserve(p.sc->sums, *p.mem, 2 * nsums * sizeof(bucket_mem)))
            return false;
    }
    // The tiles and the k index lists take at most three quarters of
    // what is left (the pool's).
    dalloc& mem = *parts[0].mem;
    size_t room = mem.room();
    if (tune.split_tile_others) {
        // The per-tile Pippenger runs while the tiles are held: its least
        // scratch (for a tile's worth of others) stays out of their room.
        size_t most = 0;
        for (size_t j = 0; j < k; j++)
            most = parts[j].others > most ? parts[j].others : most;
        const size_t need = msm_scratch_bytes(gpu, tune, most < tile ? most : tile, true);
        room = room > need ? room - need : 0;
    }
    size_t fit = room / 4 * 3 / (2 * sizeof(affine_mem) + k * sizeof(uint32_t));
    const size_t floor = (size_t)1 << 16;
    if (fit < tile)
        tile = fit > floor ? fit : floor < n ? floor : n;
    for (size_t j = 0; j < k; j++)
        if (!try_reserve(parts[j].sc->ones_at, *parts[j].mem, tile))
            return false;
    mem.admit(2 * tile * sizeof(affine_mem), "streamed split tiles");
    for (size_t j = 0; j < k; j++) {
        split_part<point_T>& p = parts[j];
        p.shape->zeros += n - p.others - p.ones;
        p.shape->ones += p.ones;
        p.shape->others += p.others;
        st.bzero(p.sc->counts.ptr, 2);
    }
    lap("classify", k);
    // With gpus.tuning.split_tile_others, each MSM's others go through
    // Pippenger tile by tile (the gathered slice [done, now) after each
    // tile, while the copy stream fills the next ones), summed here.
    const bool per_tile = tune.split_tile_others != 0;
    std::vector<point_T> tile_others(k);
    std::vector<uint32_t> done(k, 0);
    for (auto& x : tile_others)
        x.inf();
    auto others_so_far = [&](size_t j) {
        split_part<point_T>& p = parts[j];
        uint32_t now = 0;
        st.DtoH(&now, p.sc->counts.ptr, 1);
        st.sync();
        if (now <= done[j])
            return;
        const affine_mem* from = (const affine_mem*)p.sc->points.ptr + done[j];
        point_T part;
        part.inf();
        msm_device<bucket_T>(gpu, tune, (const affine_T*)from, p.sc->scalars.ptr + done[j],
                             now - done[j], &part, p.mem->room());
        tile_others[j].add(part);
        done[j] = now;
    };
    {
        tile_pair tiles(st, gpu[1], hp, tile);
        const size_t ntiles = (n + tile - 1) / tile;
        auto len = [&](size_t t) { return n - t * tile < tile ? n - t * tile : tile; };
        tiles.fill(0, 0, len(0));
        if (ntiles > 1)
            tiles.fill(1, tile, len(1));
        const uint32_t fold_block = 256;
        for (size_t t = 0; t < ntiles; t++) {
            const size_t t0 = t * tile, num = len(t);
            const affine_mem* tp = (const affine_mem*)tiles.tile(t);
            tiles.wait_landed(t, st);
            for (size_t j = 0; j < k; j++) {
                split_part<point_T>& p = parts[j];
                split_scratch& sc = *p.sc;
                bucket_mem* sums = (bucket_mem*)sc.sums.ptr;
                uint32_t* count1 = sc.counts.ptr + 1;
                CUDA_OK(cudaMemsetAsync(count1, 0, sizeof(uint32_t), st));
                split01_gather<affine_mem><<<grid_for(st, num, SPLIT_GATHER_BLOCK),
                                             SPLIT_GATHER_BLOCK, 0, st>>>(
                    p.s + t0, tp, num, sc.counts.ptr, sc.scalars.ptr,
                    (affine_mem*)sc.points.ptr, (uint32_t)p.others, sc.ones_at.ptr,
                    (uint32_t)tile);
                CUDA_OK(cudaGetLastError());
                if (p.ones) {
                    batch_addition<bucket_T><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(
                        sums, tp, num, sc.ones_at.ptr, *count1);
                    CUDA_OK(cudaGetLastError());
                    const size_t threads = nsums * bucket_T::degree;
                    fold_sums<bucket_T><<<(uint32_t)((threads + fold_block - 1) / fold_block),
                                          fold_block, 0, st>>>(sums + nsums, sums,
                                                               (uint32_t)nsums, t == 0);
                    CUDA_OK(cudaGetLastError());
                }
            }
            tiles.release(t, st);
            if (t + 2 < ntiles)
                tiles.fill(t + 2, (t + 2) * tile, len(t + 2));
            if (per_tile)
                for (size_t j = 0; j < k; j++)
                    others_so_far(j);
        }
        lap("tiles", ntiles);
    }
    for (size_t j = 0; j < k; j++) {
        split_part<point_T>& p = parts[j];
        point_T sum_others;
        sum_others.inf();
        if (per_tile) {
            others_so_far(j);
            sum_others = tile_others[j];
        } else if (p.others && p.defer) {
            // Queued on the side streams after the tiles' kernels; the
            // sum is collected by ticket (deferred.cuh).
            *p.ticket = p.defer->template launch<bucket_T, point_T, affine_T>(
                gpu, tune, st, p.slot, (const affine_T*)p.sc->points.ptr,
                p.sc->scalars.ptr, p.others, p.mem->room());
            lap("others queued", p.others);
        } else if (p.others) {
            st.sync();
            msm_device<bucket_T>(gpu, tune, (const affine_T*)p.sc->points.ptr,
                                 p.sc->scalars.ptr, p.others, &sum_others,
                                 p.mem->room());
            lap("others", p.others);
        }
        point_T sum_ones;
        sum_ones.inf();
        if (p.ones) {
            std::vector<bucket_T> part(nsums);
            st.DtoH(part.data(), (bucket_mem*)p.sc->sums.ptr + nsums, nsums);
            st.sync();
            sum_ones = sum_up(part);
            lap("ones", p.ones);
        }
        st.sync();
        *p.out = sum_others;
        p.out->add(sum_ones);
    }
    return true;
}

#endif
