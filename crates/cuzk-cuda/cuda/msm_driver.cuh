//! Our host driver around sppark's Pippenger kernels (`breakdown`,
//! `batch_addition`, and `integrate` where ours does not apply, from
//! `msm/pippenger.cuh`), for MSMs whose points and scalars are already on
//! the device.
//!
//! sppark's own `msm_t::invoke` copies each batch's window sums to the host
//! and waits for them before it launches the next batch, so the GPU idles
//! whenever the host thread is late (another worker's host work, the
//! driver busy elsewhere). Here the batches run back to back: each
//! batch's window sums are folded into an accumulator on the device
//! (`fold_sums`, our kernel), and the host copies and combines them once,
//! after the last batch. The host never waits between batches.
//!
//! The window width follows sppark's rule, except 17 bits for the middle
//! sizes and 22 for the largest G1 MSMs (see `WIDE_WBITS`);
//! `gpus.tuning.msm_window_bits` forces it for MSMs of at least 2^26
//! points and `msm_window_bits_mid` for those of 2^21 to 2^26: wider
//! windows mean fewer windows and batches but more buckets to integrate.
//! Buckets are integrated by `integrate.cuh` where it applies, and each
//! batch's digits are sorted by `bucket_sort.cuh` (CUB's radix sort over
//! all SMs) and accumulated bucket by bucket in size order by
//! `accumulate.cuh`. The device scratch of one MSM is `plan(n).bytes()`,
//! which `cuzk_cuda_msm_scratch` exports for the staging tiers: the one
//! copy of the window rule and the scratch bound.

#ifndef __CUZK_MSM_DRIVER_CUH__
#define __CUZK_MSM_DRIVER_CUH__

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "host_copy.cuh"  // fork_join
#include "stream_tiles.cuh"
#include "integrate.cuh"
#include "bucket_sort.cuh"
#include "accumulate.cuh"

// acc[i] = first ? sums[i] : acc[i] + sums[i] for i < n (buckets; `degree`
// threads per element, every lane of a warp taking part).
template<class bucket_T, class bucket_mem = typename bucket_T::mem_t>
__launch_bounds__(256) __global__
void fold_sums(bucket_mem* acc, const bucket_mem* sums, uint32_t n, bool first)
{
    const uint32_t degree = bucket_T::degree;
    uint32_t i = (threadIdx.x + blockIdx.x * blockDim.x) / degree;
    uint32_t j = i < n ? i : n - 1;
    bucket_T a, b;
    b = sums[j];
    if (first) {
        a = b;
    } else {
        a = acc[j];
        if (degree == 1)
            a.add(b);
        else
            a.uadd(b);
    }
    if (i < n)
        acc[i] = a;
}

// `gpus.tuning.trace_msm`: per batch of MSMs of 2^20 points or more, the GPU
// time of each phase, printed to stderr (for tuning; it adds event records
// only). Phases: on the sort stream breakdown and sort; on the main stream
// the wait for the sort, batch_addition, accumulate, integrate and fold.
struct msm_trace {
    enum { B0, B1, S1, M0, M1, M2, M3, M4, N };
    bool on;
    std::vector<cudaEvent_t> ev;  // N per batch
    // Host side of `run`: start, scratch allocated, batches enqueued,
    // streams synchronised, window sums done.
    std::chrono::steady_clock::time_point host[5];
    void at(int k)
    {
        if (on)
            host[k] = std::chrono::steady_clock::now();
    }

    msm_trace(bool enabled, size_t npoints)
    {
        on = enabled && npoints >= ((size_t)1 << 20);
    }
    void mark(size_t batch, int what, cudaStream_t s)
    {
        if (!on)
            return;
        while (ev.size() < (batch + 1) * N) {
            cudaEvent_t e;
            if (cudaEventCreate(&e) != cudaSuccess) {
                on = false;
                return;
            }
            ev.push_back(e);
        }
        (void)cudaEventRecord(ev[batch * N + what], s);
    }
    float gap(size_t batch, int a, int b) const
    {
        float ms = -1;
        (void)cudaEventElapsedTime(&ms, ev[batch * N + a], ev[batch * N + b]);
        return ms;
    }
    // After both streams are synchronised.
    void report(size_t npoints, uint32_t wbits, uint32_t nwins, uint32_t fanout,
                size_t cub_bytes)
    {
        if (!on)
            return;
        size_t nb = ev.size() / N;
        for (size_t i = 0; i < nb; i++)
            fprintf(stderr,
                    "msm-trace n=%zu w=%u wins=%u m=%u batch %zu/%zu: breakdown %.2f "
                    "sort %.2f | wait %.2f batch_add %.2f accumulate %.2f "
                    "integrate %.2f fold %.2f ms\n",
                    npoints, wbits, nwins, fanout, i, nb, gap(i, B0, B1), gap(i, B1, S1),
                    gap(i, B0, M0) < 0 ? 0.f : gap(i, B0, M0), gap(i, M0, M1),
                    gap(i, M1, M2), gap(i, M2, M3), gap(i, M3, M4));
        float total = -1;
        if (nb)
            (void)cudaEventElapsedTime(&total, ev[B0], ev[(nb - 1) * N + M4]);
        fprintf(stderr, "msm-trace n=%zu total %.2f ms (CUB sort scratch %zu bytes)\n",
                npoints, total, cub_bytes);
    }
    // After the window sums.
    void report_host(size_t npoints) const
    {
        if (!on)
            return;
        auto ms = [&](int a, int b) {
            return std::chrono::duration<double, std::milli>(host[b] - host[a]).count();
        };
        fprintf(stderr,
                "msm-trace n=%zu host: scratch %.2f enqueue %.2f wait %.2f "
                "window_sums %.2f ms\n",
                npoints, ms(0, 1), ms(1, 2), ms(2, 3), ms(3, 4));
    }
    ~msm_trace()
    {
        for (auto e : ev)
            (void)cudaEventDestroy(e);
    }
};

template<class bucket_T, class point_T, class affine_T>
struct msm_driver {
    typedef typename bucket_T::mem_t bucket_mem;
    typedef typename affine_T::mem_t affine_mem;
    // Threads of sppark's `integrate` per window and what each leaves: a
    // weighted sum and a plain sum of its run of buckets.
    static const uint32_t T = MSM_NTHREADS / bucket_T::degree;

    // The window of G1 MSMs with lg2(1.5·n) ≥ WIDE_LG (the Rust side's
    // `staging::msm_temp` bounds the scratch this takes).
    static const uint32_t WIDE_LG = 27, WIDE_WBITS = 22;

    const gpu_t& gpu;
    const cuzk_cuda_tuning& tune;
    uint32_t wbits, nwins;
    // Batches at least (`fit`: fewer points a batch, less scratch).
    size_t min_batch = 1;
    // `gpus.tuning.carry_buckets` for this MSM (set by `fit` for streamed
    // points): see `layout::carry`.
    bool carry_on = false;

    // Points of one streamed tile at most (8 or more batches for a 2^27
    // MSM, so the first tile's copy is the only one not overlapped).
    static const size_t MAX_TILE = (size_t)1 << 24;
    // Fewer points a batch than this only when nothing else fits.
    static const size_t MIN_STRIDE = (size_t)1 << 16;

    static int lg2(size_t n)
    {
        int r = 0;
        while (n >>= 1)
            r++;
        return r;
    }

    msm_driver(const gpu_t& g, size_t npoints, const cuzk_cuda_tuning& t)
        : gpu(g), tune(t)
    {
        // sppark's choice for this many points.
        wbits = 10;
        if (npoints > 192) {
            int w = lg2(npoints + npoints / 2) - 8;
            wbits = w > 18 ? 18 : w < 10 ? 10 : w;
        }
        // With CUB's sort (`bucket_sort.cuh`) a window costs less, so the
        // middle sizes take 17-bit windows where sppark's rule says 14–16
        // (faster on an H200, docs/PERF.md; 14-bit windows also left a
        // 3-bit top window, too narrow for our integration).
        int lg = lg2(npoints + npoints / 2);
        if (lg >= 22 && lg <= 24)
            wbits = 17;
        // The largest G1 MSMs (a 2^27 partition's H) run faster with
        // 22-bit windows: 12 windows in one batch instead of sppark's 15
        // in 8, for more scratch; 21 bits still need 13 windows
        // (docs/PERF.md). Smaller MSMs lose.
        if (bucket_T::degree == 1 && lg >= (int)WIDE_LG)
            wbits = WIDE_WBITS;
        const uint32_t forced = t.msm_window_bits;
        if (forced >= 10 && forced <= 22 && npoints >= ((size_t)1 << 26))
            wbits = forced;
        const uint32_t forced_mid = t.msm_window_bits_mid;
        if (forced_mid >= 10 && forced_mid <= 22 && npoints >= ((size_t)1 << 21) &&
            npoints < ((size_t)1 << 26))
            wbits = forced_mid;
        nwins = (scalar_t::bit_length() - 1) / wbits + 1;
    }

    void set_width(uint32_t w)
    {
        wbits = w;
        nwins = (scalar_t::bit_length() - 1) / wbits + 1;
    }

    // Device bytes `run` takes for `n` points: its scratch and, for points
    // of `host_elem` bytes streamed from the host, two tiles.
    size_t need(size_t n, size_t host_elem) const
    {
        const layout L = plan(n);
        return L.bytes() + 2 * L.stride * host_elem;
    }

    // A relative cost of `n` points at the current width and batches:
    // accumulation per point and window, integration per bucket and batch
    // (per-operation times measured on an H200, docs/PERF.md: ~0.39 ns a
    // point-window, ~0.52 ns a bucket); carried buckets are integrated
    // once, for one addition a bucket and later batch (half an
    // integration's two).
    double cost(size_t n) const
    {
        const layout L = plan(n);
        const double rows = (double)nwins * (double)L.row_sz;
        if (L.carry)
            return 0.39 * nwins * (double)n + 0.52 * rows +
                   0.26 * (double)(L.batch - 1) * rows;
        return 0.39 * nwins * (double)n + 0.52 * (double)L.batch * rows;
    }

    // Fits the MSM of `n` points (streamed from the host when `host_elem`
    // is not 0, tiles of at most `tile` points) into `budget` device
    // bytes: the rule's width and batches when they fit, else the
    // cheapest narrower width and more batches that fit, else the
    // smallest (whose allocation then fails as out of memory).
    void fit(size_t n, size_t budget, size_t host_elem, size_t tile = 0)
    {
        if (n == 0)
            return;
        carry_on = host_elem && tune.carry_buckets;
        if (host_elem) {
            const size_t cap = tile ? tile : MAX_TILE;
            min_batch = (n + cap - 1) / cap;
        }
        // Device points that fit keep the rule; streamed ones weigh the
        // tiles' batches against narrower windows.
        if (!host_elem && need(n, host_elem) <= budget)
            return;
        const uint32_t rule = wbits;
        const size_t first_batch = min_batch;
        // With carry_buckets: the cheaper of the best carried fit and the
        // best fit without (carrying takes a second set of digits).
        choice pick = search(n, budget, host_elem, rule, first_batch);
        if (carry_on) {
            carry_on = false;
            const choice plain = search(n, budget, host_elem, rule, first_batch);
            const bool carried = pick.fits && (!plain.fits || pick.cost <= plain.cost);
            carry_on = carried;
            if (!carried)
                pick = plain;
        }
        set_width(pick.w);
        min_batch = pick.b;
    }

    // A width and a number of batches `search` found, and their cost.
    struct choice {
        uint32_t w;
        size_t b;
        bool fits;
        double cost;
    };

    // `fit`'s search from the rule's width `rule` and `first_batch`
    // batches (carrying as `carry_on` says): the cheapest width that fits
    // `budget` (`fits`), else the smallest.
    choice search(size_t n, size_t budget, size_t host_elem, uint32_t rule,
                  size_t first_batch)
    {
        static const uint32_t widths[] = {0, 22, 20, 17, 16, 13, 10};
        uint32_t best_w = 0, small_w = rule;
        size_t best_b = 0, small_b = first_batch, small_need = SIZE_MAX;
        double best_cost = 0;
        for (uint32_t w : widths) {
            if (w == 0)
                w = rule;  // the rule's own width first
            else if (w >= rule)
                continue;
            set_width(w);
            for (size_t b = first_batch; b <= first_batch << 12; b <<= 1) {
                min_batch = b;
                const layout L = plan(n);
                if (L.stride < MIN_STRIDE && b > first_batch)
                    break;
                const size_t bytes = need(n, host_elem);
                if (bytes < small_need) {
                    small_need = bytes;
                    small_w = w;
                    small_b = b;
                }
                if (bytes <= budget) {
                    const double c = cost(n);
                    if (!best_w || c < best_cost) {
                        best_w = w;
                        best_b = b;
                        best_cost = c;
                    }
                    break;  // more batches only cost more
                }
            }
        }
        if (best_w)
            return choice{best_w, best_b, true, best_cost};
        return choice{small_w, small_b, false, 0};
    }

    // Where `run` puts its device scratch for `npoints` points: one blob
    // holding the buckets, the histogram, the sort's temporaries (16 bytes
    // a point, or 12 and CUB's scratch), the digits, the accumulated window
    // sums, the integration's span pairs and, after `before_order`, the
    // buckets' size order (`accumulate.cuh`).
    //
    // `carry` (`gpus.tuning.carry_buckets`, streamed MSMs of several
    // batches): the buckets keep their sums from batch to batch and are
    // integrated once, after the last, instead of once a batch; the
    // histogram and digits are two sets (`hist_b`, `digits_b` are one
    // set's), so the next batch's digits are sorted while this batch
    // accumulates.
    struct layout {
        size_t batch, stride, row_sz, nsums, nacc;
        uint32_t fanout;
        size_t cub_b, temps_b, buckets_b, hist_b, digits_b, acc_b, pairs_b;
        size_t before_order, order_b;
        ordered_accumulate ordered;
        bool carry;

        size_t sets() const { return carry ? 2 : 1; }
        size_t bytes() const { return before_order + order_b; }
    };

    layout plan(size_t npoints) const
    {
        uint32_t lg = lg2(npoints + npoints / 2);
        size_t batch = ((size_t)1 << ((lg > wbits ? lg : wbits) - wbits)) >> 6;
        if (batch < min_batch)
            batch = min_batch;
        if (batch > npoints)
            batch = npoints ? npoints : 1;
        size_t stride = (npoints + batch - 1) / batch;
        stride = (stride + WARP_SZ - 1) & ~(size_t)(WARP_SZ - 1);
        // Rounding the stride up may leave the last batches empty.
        if (npoints && stride)
            batch = (npoints + stride - 1) / stride;
        size_t row_sz = (size_t)1 << (wbits - 1);
        size_t nsums = gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
        // Spans per integrate thread (0: sppark's one block per window).
        const uint32_t fanout = integrate_fanout(wbits, nwins, scalar_t::bit_length(),
                                                 bucket_T::degree, gpu.sm_count());
        size_t npairs = fanout ? (size_t)nwins * 2 * T * fanout : 0;
        size_t cub_b = radix_sort_bytes(stride, wbits);
        size_t temps_b = stride * 2 * sizeof(uint2);
        if (temps_b < stride * 12 + cub_b)
            temps_b = stride * 12 + cub_b;
        size_t nacc = nwins * 2 * T + nsums;
        size_t buckets_b = (nwins * row_sz + nsums) * sizeof(bucket_mem);
        size_t hist_b = nwins * row_sz * sizeof(uint32_t);
        size_t digits_b = nwins * stride * sizeof(uint32_t);
        size_t acc_b = nacc * sizeof(bucket_mem);
        size_t pairs_b = npairs * sizeof(bucket_mem);
        // Large G1 MSMs add in affine coordinates (its digit offsets are
        // 32-bit: every window's digits must be in reach).
        const uint32_t total = nwins * (uint32_t)row_sz;
        const bool wide = (size_t)nwins * stride >= ((size_t)1 << 32);
        const affine_plan affine = bucket_T::degree == 1 && !wide
                                       ? plan_affine(stride, nwins, total, gpu.sm_count())
                                       : affine_plan{0, 0};
        // `gpus.tuning.heavy_bucket_points`: long buckets summed by blocks.
        const uint32_t heavy = tune.heavy_bucket_points;
        const ordered_accumulate ordered{
            wbits - 1, total, affine, heavy,
            heavy ? heavy_scratch_bytes<bucket_T>((uint32_t)gpu.sm_count()) : 0};
        // Carried sums need each bucket written once a batch: past the
        // sort's clamp (0xffff) the affine kernel's skipped prefix is not
        // sure to be one (`accumulate_affine.cuh`).
        const bool carry = carry_on && batch > 1 &&
                           (!affine.threads || affine.max_rounds < 0xffffU);
        const size_t sets = carry ? 2 : 1;
        size_t before_order = (buckets_b + sets * hist_b + temps_b + sets * digits_b +
                               acc_b + pairs_b + 255) & ~(size_t)255;
        return layout{batch,     stride,    row_sz,   nsums,        nacc,
                      fanout,    cub_b,     temps_b,  buckets_b,    hist_b,
                      digits_b,  acc_b,     pairs_b,  before_order, ordered.order_bytes(),
                      ordered,   carry};
    }

    // The sum of one window, `bits` wide, from integrate's T pairs: thread
    // t's plain sum counts (t·k) more times than its own buckets' indices
    // say, k = 2^(bits-1-lg T) buckets per thread (cheaper on the host than
    // multiplying each running sum by k, as a first version did).
    point_T window_sum(const bucket_T* row, uint32_t bits) const
    {
        const uint32_t tbits = lg2(T);
        size_t t = T - 1;
        if (bits - 1 <= tbits) {
            // A narrow top window: several threads share one bucket.
            size_t mask = ((size_t)1 << (tbits - (bits - 1))) - 1;
            bucket_T res, acc = row[2 * t + 1];
            if (mask)
                res.inf();
            else
                res = acc;
            while (t--) {
                acc.add(row[2 * t + 1]);
                if ((t & mask) == 0)
                    res.add(acc);
            }
            point_T out = res;
            return out;
        }
        // Σ_t row[2t] + k·Σ_t t·row[2t+1]: the weighted sum as a sum of
        // running sums (two additions a thread), then k by doublings once.
        bucket_T plain = row[2 * t], run = row[2 * t + 1], weighted = run;
        while (t--) {
            plain.add(row[2 * t]);
            if (t) {
                run.add(row[2 * t + 1]);
                weighted.add(run);
            }
        }
        point_T res = weighted;
        for (uint32_t d = 0; d < bits - 1 - tbits; d++)
            res.dbl();
        res.add(point_T{plain});
        return res;
    }

    // Integrates every window's row of buckets on `ms` (the first 2T
    // buckets of each row then hold integrate's pairs).
    void integrate_rows(bucket_mem* buckets, bucket_mem* pairs, uint32_t fanout,
                        const stream_t& ms) const
    {
        if (fanout) {
            dim3 grid1{(uint32_t)(T * fanout * bucket_T::degree / INTEGRATE_SPAN_THREADS),
                       nwins};
            integrate_spans<bucket_T><<<grid1, INTEGRATE_SPAN_THREADS, 0, ms>>>(
                buckets, pairs, wbits, scalar_t::bit_length());
            CUDA_OK(cudaGetLastError());
            integrate_merge<bucket_T><<<nwins, MSM_NTHREADS, 0, ms>>>(
                buckets, pairs, wbits, scalar_t::bit_length(), fanout);
        } else {
            integrate<bucket_T><<<nwins, MSM_NTHREADS,
                                  sizeof(bucket_T) * MSM_NTHREADS / bucket_T::degree, ms>>>(
                buckets, nwins, wbits, scalar_t::bit_length());
        }
        CUDA_OK(cudaGetLastError());
    }

    // Σ scalars[i]·points[i], scalars on the device (Montgomery form),
    // points on the device or, given `hp`, in host memory (streamed into
    // two tiles, one batch a tile, see `stream_tiles.cuh`; `points` is then
    // unused). Device scratch comes from the stream-ordered pool and is
    // returned before this returns.
    void run(point_T* out, const affine_T* points, const fr_t* scalars,
             size_t npoints, const host_points* hp = nullptr)
    {
        out->inf();
        if (npoints == 0)
            return;
        launched l = launch(points, scalars, npoints, hp);
        finish(l, out);
    }

    // Streams of `set_streams` (an MSM beside other work on the device's
    // own streams: `deferred.cuh`); unset, the device's main stream and
    // its stream 2.
    const stream_t* ms_own = nullptr;
    const stream_t* ss_own = nullptr;
    void set_streams(const stream_t& m, const stream_t& s)
    {
        ms_own = &m;
        ss_own = &s;
    }
    // Accumulate, integrate and fold run here; the sort stream ends
    // ordered before it (`launch`).
    const stream_t& main_stream() const
    {
        return ms_own ? *ms_own : static_cast<const stream_t&>(gpu);
    }
    const stream_t& sort_stream() const { return ss_own ? *ss_own : gpu[2]; }

    // What `launch` leaves queued for `finish`: the scratch (freed on the
    // main stream once the sums are read) and where the sums are.
    struct launched {
        std::unique_ptr<dev_ptr_t<uint8_t>> blob;
        const bucket_mem* acc = nullptr;
        size_t nacc = 0, nsums = 0, npoints = 0, cub_b = 0;
        uint32_t top = 0, fanout = 0;
        std::unique_ptr<msm_trace> trace;
        // On streams of `set_streams`: recorded after this MSM's last
        // kernel, so `finish` waits for it alone, not for MSMs queued on
        // the same streams after it.
        std::unique_ptr<event_t> done;
    };

    // `run`'s first part: every kernel and copy queued on the streams, the
    // sort stream's end ordered before the main stream's; returns without
    // waiting for them. `npoints` > 0.
    launched launch(const affine_T* points, const fr_t* scalars, size_t npoints,
                    const host_points* hp = nullptr)
    {
        launched out;
        out.npoints = npoints;
        out.trace.reset(new msm_trace{tune.msm_trace != 0, npoints});
        msm_trace& trace = *out.trace;
        trace.at(0);
        const affine_mem* d_points = (const affine_mem*)points;
        const stream_t& ms = main_stream();  // accumulate, integrate, fold
        const stream_t& ss = sort_stream();  // breakdown and sort

        const layout L = plan(npoints);
        const size_t batch = L.batch, stride = L.stride, row_sz = L.row_sz;
        const size_t nsums = L.nsums, nacc = L.nacc;
        const uint32_t fanout = L.fanout;
        const uint32_t top = scalar_t::bit_length() - wbits * (nwins - 1);
        const bucket_sorter sorter{wbits, nwins, top};
        const size_t cub_b = L.cub_b, temps_b = L.temps_b;
        const size_t buckets_b = L.buckets_b, hist_b = L.hist_b;
        const size_t digits_b = L.digits_b, acc_b = L.acc_b;
        const ordered_accumulate& ordered = L.ordered;
        const size_t before_order = L.before_order;
        out.blob.reset(new dev_ptr_t<uint8_t>{L.bytes(), ms});
        out.nacc = nacc;
        out.nsums = nsums;
        out.cub_b = cub_b;
        out.top = top;
        out.fanout = fanout;
        // Destroyed when this returns or throws: whatever the sort stream
        // still has queued comes before the main stream's next work (the
        // scratch's free among it).
        struct sort_first {
            const stream_t& ms;
            const stream_t& ss;
            ~sort_first() { stream_after(ms, ss); }
        } guard{ms, ss};
        uint8_t* base = &(*out.blob)[0];
        bucket_mem* d_buckets = (bucket_mem*)base;
        // One set of histogram and digits, or two when carrying (batch i
        // uses set i % sets).
        const size_t sets = L.sets();
        auto hist_set = [&](size_t k) {
            return vec2d_t<uint32_t>{(uint32_t*)(base + buckets_b + k * hist_b),
                                     (uint32_t)row_sz};
        };
        vec2d_t<uint2> d_temps{(uint2*)(base + buckets_b + sets * hist_b), (uint32_t)stride};
        uint8_t* const digits_at = base + buckets_b + sets * hist_b + temps_b;
        auto digits_set = [&](size_t k) {
            return vec2d_t<uint32_t>{(uint32_t*)(digits_at + k * digits_b), (uint32_t)stride};
        };
        bucket_mem* d_acc = (bucket_mem*)(digits_at + sets * digits_b);
        bucket_mem* d_pairs = (bucket_mem*)((uint8_t*)d_acc + acc_b);
        uint8_t* d_order = base + before_order;
        // Streamed points: two tiles of a batch each, filled on stream 1.
        std::unique_ptr<tile_pair> tiles;
        if (hp)
            tiles.reset(new tile_pair(ms, gpu[1], *hp, stride));
        // The scratch is ms's; ss may use it once ms got this far.
        event_t ready, sorted[2], consumed[2];
        ready.record(ms);
        ready.wait(ss);

        uint32_t grid = gpu.sm_count() / 3;
        while (grid & (grid - 1))
            grid -= grid & (0 - grid);
        trace.at(1);
        auto batch_len = [&](size_t k) {
            size_t at = k * stride;
            return at >= npoints ? 0 : npoints - at < stride ? npoints - at : stride;
        };
        // Batch k's digits, sorted, into set k % sets.
        auto digits = [&](size_t k) {
            const size_t set = k % sets;
            const vec2d_t<uint32_t> dg = digits_set(set);
            trace.mark(k, msm_trace::B0, ss);
            breakdown<<<2 * grid, 1024, sizeof(scalar_t) * 1024, ss>>>(
                dg, scalars + k * stride, batch_len(k), nwins, wbits, true);
            CUDA_OK(cudaGetLastError());
            trace.mark(k, msm_trace::B1, ss);
            uint32_t* t = (uint32_t*)d_temps[0];
            sorter.run(ss, dg, hist_set(set), t, stride, t + 3 * stride,
                       temps_b - stride * 12, batch_len(k));
            trace.mark(k, msm_trace::S1, ss);
            sorted[set].record(ss);
        };

        const uint32_t fold_block = 256;
        auto fold = [&](bucket_mem* acc, const bucket_mem* src, size_t n,
                        bool first) {
            size_t threads = n * bucket_T::degree;
            uint32_t blocks = (uint32_t)((threads + fold_block - 1) / fold_block);
            fold_sums<bucket_T><<<blocks, fold_block, 0, ms>>>(acc, src,
                                                               (uint32_t)n, first);
            CUDA_OK(cudaGetLastError());
        };

        if (tiles) {
            tiles->fill(0, 0, batch_len(0));
            if (batch > 1)
                tiles->fill(1, stride, batch_len(1));
        }
        for (size_t k = 0; k < sets && k < batch; k++)
            digits(k);
        if (L.carry && hp && hp->carried)
            ++*hp->carried;
        for (size_t i = 0; i < batch; i++) {
            const size_t set = i % sets, num = batch_len(i);
            const vec2d_t<uint32_t> dg = digits_set(set), hs = hist_set(set);
            const affine_mem* pts = &d_points[i * stride];
            if (tiles) {
                pts = (const affine_mem*)tiles->tile(i);
                tiles->wait_landed(i, ms);
            }
            sorted[set].wait(ms);
            trace.mark(i, msm_trace::M0, ms);
            batch_addition<bucket_T><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, ms>>>(
                &d_buckets[nwins * row_sz], pts, num, &dg[0][0], hs[0][0]);
            CUDA_OK(cudaGetLastError());
            trace.mark(i, msm_trace::M1, ms);
            ordered.run<bucket_T>(ms, d_order, d_buckets, pts, dg, (uint32_t)stride, hs,
                                  L.carry && i > 0);
            consumed[set].record(ms);
            if (tiles) {
                tiles->release(i, ms);
                if (i + 2 < batch)
                    tiles->fill(i + 2, (i + 2) * stride, batch_len(i + 2));
            }
            trace.mark(i, msm_trace::M2, ms);
            // Carried buckets are integrated after the last batch only.
            const bool integrate_now = !L.carry || i + 1 == batch;
            if (integrate_now)
                integrate_rows(d_buckets, d_pairs, fanout, ms);
            trace.mark(i, msm_trace::M3, ms);
            // Window sums into the accumulator (the first 2T buckets of
            // each row), then this batch's batch-addition sums.
            if (integrate_now)
                for (uint32_t y = 0; y < nwins; y++)
                    fold(d_acc + y * 2 * T, d_buckets + y * row_sz, 2 * T,
                         L.carry || i == 0);
            fold(d_acc + nwins * 2 * T, d_buckets + nwins * row_sz, nsums, i == 0);
            trace.mark(i, msm_trace::M4, ms);
            // The next batch of this set once this one's accumulation has
            // read its digits.
            if (i + sets < batch) {
                consumed[set].wait(ss);
                digits(i + sets);
            }
        }

        trace.at(2);
        out.acc = d_acc;
        if (ms_own) {
            stream_after(ms, ss);
            out.done.reset(new event_t);
            out.done->record(ms);
        }
        return out;
    }

    // `run`'s second part: waits for what `launch` queued, reads the sums
    // and adds the windows up on the host; the scratch is freed.
    void finish(launched& l, point_T* out)
    {
        const stream_t& ms = main_stream();
        const size_t nacc = l.nacc, nsums = l.nsums, npoints = l.npoints;
        const uint32_t top = l.top;
        msm_trace& trace = *l.trace;
        std::vector<bucket_T> sums(nacc);
        if (l.done) {
            // Later MSMs may be queued on these streams: wait for this
            // one's event and read its sums outside them (a blocking copy
            // on the legacy stream, which our non-blocking streams do not
            // wait for, nor it for them).
            CUDA_OK(cudaEventSynchronize(*l.done));
            CUDA_OK(cudaMemcpy(sums.data(), l.acc, nacc * sizeof(bucket_T),
                               cudaMemcpyDeviceToHost));
        } else {
            ms.DtoH(sums.data(), l.acc, nacc);
            ms.sync();
        }
        l.blob.reset();
        trace.at(3);

        // Windows in parallel, then Horner from the top window down.
        std::vector<point_T> win(nwins);
        auto one_window = [&](size_t y) {
            uint32_t bits = y == nwins - 1 ? top : wbits;
            win[y] = window_sum(&sums[y * 2 * T], bits);
        };
        if (npoints >= ((size_t)1 << 16)) {
            fork_join(nwins, one_window);
        } else {
            for (uint32_t y = 0; y < nwins; y++)
                one_window(y);
        }
        point_T acc = win[nwins - 1];
        for (uint32_t y = nwins - 1; y-- > 0;) {
            for (uint32_t d = 0; d < wbits; d++)
                acc.dbl();
            acc.add(win[y]);
        }
        bucket_T ones = sum_up(&sums[nwins * 2 * T], nsums);
        point_T p = ones;
        acc.add(p);
        *out = acc;
        trace.at(4);
        trace.report(npoints, wbits, nwins, l.fanout, l.cub_b);
        trace.report_host(npoints);
    }
};

// Σ s_i·p_i over n device scalars and points with our driver (see above),
// its scratch fitted into `budget` bytes (`dalloc::room`); given `hp` the
// points are streamed from host memory instead.
template<class bucket_T, class point_T, class affine_T>
static void msm_device(const gpu_t& gpu, const cuzk_cuda_tuning& tune,
                       const affine_T* points, const fr_t* scalars, size_t n,
                       point_T* out, size_t budget = SIZE_MAX,
                       const host_points* hp = nullptr)
{
    msm_driver<bucket_T, point_T, affine_T> msm{gpu, n, tune};
    msm.fit(n, budget, hp ? hp->elem : 0, hp ? hp->tile_points : 0);
    msm.run(out, points, scalars, n, hp);
}

// Device scratch of one MSM of `n` points through the driver, the larger
// of G1 and G2 streamed from the host: at the rule's windows (`least`
// false), or the least it can run with (`least`: narrow windows, many
// batches; what the staging tiers count, since the driver fits itself to
// the room there is).
static size_t msm_scratch_bytes(const gpu_t& gpu, const cuzk_cuda_tuning& tune,
                                size_t n, bool least = false)
{
    if (n == 0)
        return 0;
    msm_driver<bucket_t, point_t, affine_t> g1{gpu, n, tune};
    msm_driver<bucket_fp2_t, point_fp2_t, affine_fp2_t> g2{gpu, n, tune};
    const size_t e1 = sizeof(affine_t::mem_t), e2 = sizeof(affine_fp2_t::mem_t);
    if (least) {
        g1.fit(n, 0, e1);
        g2.fit(n, 0, e2);
    }
    size_t b1 = g1.need(n, least ? e1 : 0), b2 = g2.need(n, least ? e2 : 0);
    return b1 > b2 ? b1 : b2;
}

#endif
