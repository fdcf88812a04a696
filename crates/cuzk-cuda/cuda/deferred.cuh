//! Deferred others (`gpus.tuning.overlap_others`): a streamed split MSM
//! (`msm_split01_streamed`, split01.cuh) leaves its Pippenger over the
//! gathered other scalars queued on its context's two side streams and
//! returns with a ticket. The shared MSM stage goes on to its next MSM,
//! whose tiles the copy engine moves while the SMs run that Pippenger, and
//! collects the sum by ticket before it ends (`cuzk_cuda_deferred_g1/_g2`).
//!
//! The gathered others live in one of the context's two split scratch
//! slots here, held until their Pippenger is waited for; a third streamed
//! MSM waits for the oldest. The resident path keeps the context's own
//! split scratch. Our driver's kernels use no device-wide counters (unlike
//! sppark's `accumulate`), so they run beside the main stream's.

#ifndef __CUZK_DEFERRED_CUH__
#define __CUZK_DEFERRED_CUH__

#include <memory>
#include <type_traits>
#include <vector>

// One queued Pippenger, of either group.
struct deferred_base {
    uint64_t ticket = 0;
    int slot = 0;     // the split scratch slot it reads
    bool g2 = false;  // G2 (else G1)
    bool done = false;
    // Waits for its kernels and sums the windows (once).
    virtual void wait() = 0;
    virtual ~deferred_base() {}
};

template<class bucket_T, class point_T, class affine_T>
struct deferred_msm : deferred_base {
    msm_driver<bucket_T, point_T, affine_T> drv;
    typename msm_driver<bucket_T, point_T, affine_T>::launched l;
    point_T result;

    deferred_msm(const gpu_t& gpu, const cuzk_cuda_tuning& tune, size_t n)
        : drv{gpu, n, tune}
    {
        result.inf();
        g2 = bucket_T::degree != 1;
    }
    void wait() override
    {
        if (done)
            return;
        drv.finish(l, &result);
        done = true;
    }
    // Dropped unwaited (an error, a trim): its kernels still read a slot
    // the caller may free next, so they are waited for.
    ~deferred_msm() override
    {
        if (!done)
            (void)cudaStreamSynchronize(drv.main_stream());
        (void)cudaGetLastError();
    }
};

// A context's deferred others: side streams, two scratch slots, the
// queued Pippenger runs in the order they were queued.
struct deferral {
    stream_t* ms = nullptr;  // accumulate, integrate, fold
    stream_t* ss = nullptr;  // breakdown and sort
    split_scratch slots[2];
    std::vector<std::unique_ptr<deferred_base>> pending;
    uint64_t next_ticket = 1;

    bool busy(int s) const
    {
        for (const auto& p : pending)
            if (!p->done && p->slot == s)
                return true;
        return false;
    }

    // A slot no queued Pippenger reads; when both are read, the oldest
    // run is waited for and its slot returned.
    int free_slot()
    {
        for (int s = 0; s < 2; s++)
            if (!busy(s))
                return s;
        for (auto& p : pending)
            if (!p->done) {
                p->wait();
                return p->slot;
            }
        return 0;
    }

    // Queues Pippenger over `n` device points and scalars (of `slot`) on
    // the side streams, after the work queued on `after` so far (the
    // gather that wrote them); its scratch fitted into `budget` bytes.
    template<class bucket_T, class point_T, class affine_T>
    uint64_t launch(const gpu_t& gpu, const cuzk_cuda_tuning& tune, const stream_t& after,
                    int slot, const affine_T* points, const fr_t* scalars, size_t n,
                    size_t budget)
    {
        if (!ms) {
            ms = new stream_t(gpu.id());
            ss = new stream_t(gpu.id());
        }
        event_t gathered;
        gathered.record(after);
        gathered.wait(*ms);
        std::unique_ptr<deferred_msm<bucket_T, point_T, affine_T>> d{
            new deferred_msm<bucket_T, point_T, affine_T>(gpu, tune, n)};
        d->drv.set_streams(*ms, *ss);
        d->drv.fit(n, budget, 0);
        d->l = d->drv.launch(points, scalars, n);
        d->slot = slot;
        d->ticket = next_ticket++;
        const uint64_t t = d->ticket;
        pending.push_back(std::move(d));
        return t;
    }

    // The sum of ticket `t` (of group G2 when `g2`), waited for and
    // removed; false when there is no such ticket.
    template<class point_T>
    bool take(uint64_t t, bool g2, point_T* out)
    {
        for (size_t i = 0; i < pending.size(); i++) {
            deferred_base* p = pending[i].get();
            if (p->ticket != t || p->g2 != g2)
                continue;
            p->wait();
            // The group is checked above: the cast is to its own type.
            typedef typename std::conditional<
                std::is_same<point_T, point_t>::value,
                deferred_msm<bucket_t, point_t, affine_t>,
                deferred_msm<bucket_fp2_t, point_fp2_t, affine_fp2_t>>::type own;
            *out = static_cast<own*>(p)->result;
            pending.erase(pending.begin() + i);
            return true;
        }
        return false;
    }

    // Waits for every queued run and drops it (its sum unread).
    void discard() { pending.clear(); }

    void release(dalloc& a)
    {
        discard();
        slots[0].release(a);
        slots[1].release(a);
    }

    size_t bytes() const { return slots[0].bytes() + slots[1].bytes(); }

    ~deferral()
    {
        discard();
        delete ms;
        delete ss;
    }
};

#endif
