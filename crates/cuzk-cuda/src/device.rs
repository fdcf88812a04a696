//! One CUDA device's contexts: the owner (the SRS on the device, see
//! `device_srs.rs`; its lock is the device lock, held for every region that
//! launches kernels, since sppark's streams and MSM counters are per device)
//! and the worker contexts, one per partition in flight, each with its own
//! buffers, allocator and upload stream. A worker uploads its witness
//! without the device lock, so one partition's copies overlap another's
//! kernels.
//!
//! The device lock serves urgent callers (partitions of CRITICAL jobs)
//! before the others waiting (`urgent_lock.rs`).
//!
//! Also here: the time the device lock is held for kernels, measured with
//! CUDA events ([`Device::kernels`], [`Device::busy`]), and waiting for
//! device memory that other partitions hold ([`Device::wait_for_memory`]):
//! a partition for which not even the lowest staging tier fits asks the
//! others to give their kept buffers back and waits for one of them to end
//! a partition, instead of failing; partitions about to start yield to it
//! ([`Device::yield_to_waiters`]).

#[cfg(feature = "lab")]
use std::sync::atomic::AtomicU32;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::CudaError;
use crate::ffi::Ctx;
use crate::matrices::MatricesCache;
use crate::timeline::Timeline;
use crate::urgent_lock::{UrgentGuard, UrgentMutex};

pub(crate) struct Device {
    // Declared before `owner`, so dropped first: workers read its SRS.
    idle: Mutex<Vec<Ctx>>,
    made: AtomicUsize,
    /// Test hook: allocation failures for the next worker taken.
    #[cfg(feature = "lab")]
    pending_failures: AtomicU32,
    /// Nanoseconds of kernel regions, timed by CUDA events.
    busy_ns: AtomicU64,
    /// The regions since [`Device::mark_timeline`] on the GPU's clock.
    timeline: Mutex<Timeline>,
    /// Partitions in flight on this device, and a signal when one ends.
    flights: Mutex<usize>,
    ended: Condvar,
    /// Set by a partition waiting for memory: others give their kept
    /// buffers back at the end of their partition.
    squeeze: AtomicBool,
    /// Partitions waiting for device memory now ([`Device::memory_waiter`]);
    /// changed under `flights`' lock, `ended` notified when one stops.
    waiters: AtomicUsize,
    /// The generation of the SRS the owner's sections hold (its live
    /// `device_srs::OnDevice`), apart from the device lock (lock order: the
    /// device lock, then this).
    srs: Mutex<Option<u64>>,
    /// Constraint matrices on the device, by circuit shape.
    pub(crate) matrices: MatricesCache,
    owner: UrgentMutex<Ctx>,
}

/// What [`Device::wait_for_memory`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Idle contexts gave memory back: measure again at once.
    Freed,
    /// Waited for another partition on the device to end.
    Waited,
    /// No other partition is in flight: waiting would not help.
    Alone,
}

/// How long one wait for another partition lasts at most.
const WAIT_STEP: Duration = Duration::from_secs(2);

impl Device {
    pub(crate) fn new(device: usize) -> Result<Device, CudaError> {
        Ok(Device {
            idle: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            #[cfg(feature = "lab")]
            pending_failures: AtomicU32::new(0),
            busy_ns: AtomicU64::new(0),
            timeline: Mutex::new(Timeline::default()),
            flights: Mutex::new(0),
            ended: Condvar::new(),
            squeeze: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            srs: Mutex::new(None),
            matrices: MatricesCache::default(),
            owner: UrgentMutex::new(Ctx::new(device)?),
        })
    }

    /// The device lock and the owner context, after any urgent caller
    /// waiting for it. A prove that panicked holding it leaves nothing
    /// to repair: the contexts hold scratch buffers, rewritten by every
    /// call.
    pub(crate) fn lock(&self) -> UrgentGuard<'_, Ctx> {
        self.owner.lock(false)
    }

    /// The generation of the SRS on the device, if any (see [`Device::srs`]).
    pub(crate) fn srs_state(&self) -> MutexGuard<'_, Option<u64>> {
        self.srs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device lock for a region that launches kernels, before other
    /// waiters if `urgent`; the region's length, timed by CUDA events on
    /// the device's main stream, is added to [`Device::busy`] when the
    /// guard drops.
    pub(crate) fn kernels(&self, urgent: bool) -> Result<KernelRegion<'_>, CudaError> {
        let mut owner = self.owner.lock(urgent);
        owner.span_begin()?;
        Ok(KernelRegion { dev: self, owner })
    }

    /// Total length of the kernel regions on this device so far.
    pub(crate) fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed))
    }

    /// Starts a new timeline: an epoch event on the device's main stream
    /// (taken under the device lock, so between regions); later regions
    /// are placed after it.
    pub(crate) fn mark_timeline(&self) -> Result<(), CudaError> {
        let mut owner = self.lock();
        owner.span_mark()?;
        *self.timeline.lock().unwrap_or_else(|p| p.into_inner()) = Timeline::default();
        Ok(())
    }

    /// The regions since [`Device::mark_timeline`].
    pub(crate) fn timeline(&self) -> Timeline {
        *self.timeline.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks one partition in flight until the guard drops.
    pub(crate) fn flight(&self) -> Flight<'_> {
        *self.flights.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Flight { dev: self }
    }

    /// Wakes partitions waiting for device memory: a context in flight
    /// gave its buffers back.
    pub(crate) fn freed(&self) {
        self.ended.notify_all();
    }

    /// Whether a waiting partition asked the others to give memory back.
    pub(crate) fn squeezed(&self) -> bool {
        self.squeeze.load(Ordering::Relaxed)
    }

    /// Called by a partition that found room again.
    pub(crate) fn unsqueeze(&self) {
        self.squeeze.store(false, Ordering::Relaxed);
    }

    /// A partition lacks device memory even for the lowest tier: idle
    /// contexts free their buffers; if they held none and other partitions
    /// are in flight, asks those to free theirs when they end a partition
    /// and waits (at most [`WAIT_STEP`]) for one to end.
    pub(crate) fn wait_for_memory(&self) -> Result<Wait, CudaError> {
        if self.trim_idle()? {
            return Ok(Wait::Freed);
        }
        let flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if *flights <= 1 {
            // A call that ended since the trim above put its contexts
            // back before its flight ended: theirs are freed now.
            drop(flights);
            if self.trim_idle()? {
                return Ok(Wait::Freed);
            }
            return Ok(Wait::Alone);
        }
        self.squeeze.store(true, Ordering::Relaxed);
        let _ = self
            .ended
            .wait_timeout(flights, WAIT_STEP)
            .unwrap_or_else(|p| p.into_inner());
        Ok(Wait::Waited)
    }

    /// Marks the caller as waiting for device memory until the guard drops
    /// (once it has its room): partitions about to start yield to it
    /// ([`Device::yield_to_waiters`]).
    pub(crate) fn memory_waiter(&self) -> MemoryWaiter<'_> {
        let _f = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        self.waiters.fetch_add(1, Ordering::Relaxed);
        MemoryWaiter { dev: self }
    }

    /// Before a partition (or a group) takes a context: while another
    /// partition waits for device memory, waits for it to get its room (at
    /// most [`WAIT_STEP`]), so that partitions starting one after another
    /// cannot take the memory each time before it measures again (a
    /// partition waited 45 s that way at 24 GiB on 2026-12-05).
    pub(crate) fn yield_to_waiters(&self) {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return;
        }
        let flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self
            .ended
            .wait_timeout_while(flights, WAIT_STEP, |_| {
                self.waiters.load(Ordering::Relaxed) > 0
            })
            .unwrap_or_else(|p| p.into_inner());
    }

    /// Bytes of the buffers idle worker contexts keep.
    pub(crate) fn idle_held(&self) -> Result<u64, CudaError> {
        let mut held = 0;
        for c in self.idle().iter_mut() {
            held += c.mem_room()?.1;
        }
        Ok(held)
    }

    /// Frees the buffers idle worker contexts keep; whether they held any.
    pub(crate) fn trim_idle(&self) -> Result<bool, CudaError> {
        let mut freed = false;
        for c in self.idle().iter_mut() {
            let (_, held) = c.mem_room()?;
            if held > 0 {
                c.trim()?;
                freed = true;
            }
        }
        Ok(freed)
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Ctx>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker context for one call: an idle one, or a new one (made
    /// under the device lock, taken as `urgent` says).
    pub(crate) fn take_worker(&self, urgent: bool) -> Result<Worker<'_>, CudaError> {
        let found = self.idle().pop();
        let ctx = match found {
            Some(c) => c,
            None => {
                let mut owner = self.owner.lock(urgent);
                // SAFETY: the owner is a field of self, dropped after every
                // worker (field order; workers in use borrow self); worker
                // kernel calls take self.kernels() (see backend/gpu.rs).
                let c = unsafe { Ctx::new_worker(&mut owner)? };
                self.made.fetch_add(1, Ordering::Relaxed);
                c
            }
        };
        #[cfg(feature = "lab")]
        let ctx = {
            let mut ctx = ctx;
            let fail = self.pending_failures.swap(0, Ordering::Relaxed);
            if fail > 0 {
                ctx.fail_next_allocs(fail)?;
            }
            ctx
        };
        Ok(Worker {
            dev: self,
            ctx: Some(ctx),
        })
    }

    /// Worker contexts made so far (at most the partitions ever in flight
    /// at once on this device).
    pub(crate) fn workers_made(&self) -> usize {
        self.made.load(Ordering::Relaxed)
    }

    /// The next worker taken fails its next `count` allocations.
    #[cfg(feature = "lab")]
    pub(crate) fn fail_next_allocs(&self, count: u32) {
        self.pending_failures.store(count, Ordering::Relaxed);
    }

    /// Runs `f` on the owner and every idle worker (not on workers in use).
    pub(crate) fn for_each_ctx(
        &self,
        mut f: impl FnMut(&mut Ctx) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        f(&mut self.lock())?;
        for c in self.idle().iter_mut() {
            f(c)?;
        }
        Ok(())
    }
}

/// The device lock held for kernels (see [`Device::kernels`]).
pub(crate) struct KernelRegion<'a> {
    dev: &'a Device,
    owner: UrgentGuard<'a, Ctx>,
}

impl<'a> KernelRegion<'a> {
    /// Between two stages of one partition: gives the device lock to an
    /// urgent caller waiting for it, if any, and takes it again after it
    /// (as `urgent` says); else keeps it.
    pub(crate) fn let_urgent_in(self, urgent: bool) -> Result<KernelRegion<'a>, CudaError> {
        if urgent || !self.dev.owner.urgent_waiting() {
            return Ok(self);
        }
        let dev = self.dev;
        drop(self);
        dev.kernels(urgent)
    }
}

impl Drop for KernelRegion<'_> {
    fn drop(&mut self) {
        match self.owner.span_end() {
            Ok((ms, placed)) => {
                let ns = (f64::from(ms) * 1e6) as u64;
                self.dev.busy_ns.fetch_add(ns, Ordering::Relaxed);
                if let Some((begin, end)) = placed {
                    let mut t = self.dev.timeline.lock().unwrap_or_else(|p| p.into_inner());
                    let (begin, end) = (f64::from(begin), f64::from(end));
                    t.first_begin_ms = Some(t.first_begin_ms.map_or(begin, |b| b.min(begin)));
                    t.last_end_ms = Some(t.last_end_ms.map_or(end, |e| e.max(end)));
                    t.busy_ms += f64::from(ms);
                }
            }
            Err(e) => tracing::warn!(%e, "timing a kernel region failed"),
        }
    }
}

/// A partition waiting for device memory (see [`Device::memory_waiter`]).
pub(crate) struct MemoryWaiter<'a> {
    dev: &'a Device,
}

impl Drop for MemoryWaiter<'_> {
    fn drop(&mut self) {
        let _f = self.dev.flights.lock().unwrap_or_else(|p| p.into_inner());
        self.dev.waiters.fetch_sub(1, Ordering::Relaxed);
        self.dev.ended.notify_all();
    }
}

/// One partition in flight on a device (see [`Device::flight`]).
pub(crate) struct Flight<'a> {
    dev: &'a Device,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut f = self.dev.flights.lock().unwrap_or_else(|p| p.into_inner());
        *f = f.saturating_sub(1);
        self.dev.ended.notify_all();
    }
}

/// A worker context taken for one call; back to the idle list on drop.
pub(crate) struct Worker<'a> {
    dev: &'a Device,
    ctx: Option<Ctx>,
}

impl std::ops::Deref for Worker<'_> {
    type Target = Ctx;
    fn deref(&self) -> &Ctx {
        self.ctx
            .as_ref()
            .expect("a worker holds its context until dropped")
    }
}

impl std::ops::DerefMut for Worker<'_> {
    fn deref_mut(&mut self) -> &mut Ctx {
        self.ctx
            .as_mut()
            .expect("a worker holds its context until dropped")
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.ctx.take() {
            self.dev.idle().push(c);
            // A partition waiting for memory can now free this one's.
            self.dev.ended.notify_all();
        }
    }
}
