//! The host memory budget: byte reservations against one limit.
//!
//! Everything big the engine holds — a partition's witness, a resident SRS —
//! is covered by a [`Reservation`] taken before the memory is allocated and
//! given back (in parts, or all at once on drop) when it is freed. The used
//! total never exceeds the limit: a reservation that does not fit waits, or
//! is refused if it could never fit. `peak` records the high-water mark so
//! tests can assert the limit held.
//!
//! A *critical reserve* (`memory.critical_reserve`) is the top of the budget
//! kept for [`Claim::Critical`] reservations (WinningPoSt): everything else
//! fits under `limit - reserve`, so an urgent partition never waits for a
//! large one to be proved before its memory is free.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Why a reservation was not granted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("{bytes} bytes can never fit in the memory budget of {limit} bytes")]
    TooLarge { bytes: u64, limit: u64 },
    #[error("gave up waiting for {bytes} bytes of memory budget")]
    Abandoned { bytes: u64 },
}

/// Who a reservation is for: only critical work may use the critical
/// reserve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Claim {
    #[default]
    Normal,
    Critical,
}

#[derive(Debug, Default)]
struct Counters {
    used: u64,
    peak: u64,
}

/// Frees memory the budget holds for idle buffers; returns the bytes freed.
pub type Reclaimer = Box<dyn Fn() -> u64 + Send + Sync>;

/// A byte budget shared by everything that reserves from it.
pub struct MemoryBudget {
    limit: u64,
    /// The top of `limit` only [`Claim::Critical`] reservations may use.
    critical_reserve: u64,
    counters: Mutex<Counters>,
    freed: Condvar,
    /// Called when a reservation does not fit, before it waits.
    reclaimer: Mutex<Option<Reclaimer>>,
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("limit", &self.limit)
            .field("critical_reserve", &self.critical_reserve)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// Bytes held against a [`MemoryBudget`]; returned on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Arc<MemoryBudget> {
        MemoryBudget::with_critical_reserve(limit, 0)
    }

    /// A budget of `limit` bytes whose top `critical_reserve` bytes (at most
    /// the limit) only critical reservations may use.
    pub fn with_critical_reserve(limit: u64, critical_reserve: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            critical_reserve: critical_reserve.min(limit),
            counters: Mutex::new(Counters::default()),
            freed: Condvar::new(),
            reclaimer: Mutex::new(None),
        })
    }

    /// Sets what frees idle buffers (the witness pool) when a reservation
    /// does not fit.
    pub fn set_reclaimer(&self, reclaimer: Reclaimer) {
        *self.reclaimer.lock().unwrap_or_else(|p| p.into_inner()) = Some(reclaimer);
    }

    /// Asks the reclaimer to free idle buffers; the bytes freed.
    fn reclaim(&self) -> u64 {
        match &*self.reclaimer.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(r) => r(),
            None => 0,
        }
    }

    /// Charges `bytes` if they fit now (outside the critical reserve), with
    /// no reservation to give them back: the caller gives them back with
    /// [`MemoryBudget::uncharge`] (for idle buffers, which are never waited
    /// for).
    pub fn charge(&self, bytes: u64) -> bool {
        let mut c = self.lock();
        if c.used + bytes > self.limit_for(Claim::Normal) {
            return false;
        }
        c.used += bytes;
        c.peak = c.peak.max(c.used);
        true
    }

    /// Gives back bytes taken with [`MemoryBudget::charge`].
    pub fn uncharge(&self, bytes: u64) {
        self.give_back(bytes);
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The most `claim` may have reserved in all: the limit for critical
    /// work, the limit less the critical reserve for the rest.
    pub fn limit_for(&self, claim: Claim) -> u64 {
        match claim {
            Claim::Critical => self.limit,
            Claim::Normal => self.limit - self.critical_reserve,
        }
    }

    /// Bytes kept for critical reservations.
    pub fn critical_reserve(&self) -> u64 {
        self.critical_reserve
    }

    pub fn used(&self) -> u64 {
        self.lock().used
    }

    /// The most ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.lock().peak
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `bytes` for normal work if they fit now.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Result<Option<Reservation>, BudgetError> {
        self.try_reserve_as(bytes, Claim::Normal)
    }

    /// Reserves `bytes` for `claim` if they fit now.
    pub fn try_reserve_as(
        self: &Arc<Self>,
        bytes: u64,
        claim: Claim,
    ) -> Result<Option<Reservation>, BudgetError> {
        let limit = self.limit_for(claim);
        if bytes > limit {
            return Err(BudgetError::TooLarge { bytes, limit });
        }
        let mut c = self.lock();
        if c.used + bytes > limit {
            drop(c);
            if self.reclaim() == 0 {
                return Ok(None);
            }
            c = self.lock();
            if c.used + bytes > limit {
                return Ok(None);
            }
        }
        c.used += bytes;
        c.peak = c.peak.max(c.used);
        Ok(Some(Reservation {
            budget: self.clone(),
            bytes,
        }))
    }

    /// Waits up to `wait` for `bytes` to fit (checking `give_up` between
    /// wake-ups) and reserves them for normal work; `Ok(None)` when the
    /// time ran out.
    pub fn reserve_within(
        self: &Arc<Self>,
        bytes: u64,
        wait: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<Option<Reservation>, BudgetError> {
        self.reserve_within_as(bytes, Claim::Normal, wait, give_up)
    }

    /// [`MemoryBudget::reserve_within`] for `claim`.
    pub fn reserve_within_as(
        self: &Arc<Self>,
        bytes: u64,
        claim: Claim,
        wait: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<Option<Reservation>, BudgetError> {
        let limit = self.limit_for(claim);
        if bytes > limit {
            return Err(BudgetError::TooLarge { bytes, limit });
        }
        let deadline = Instant::now() + wait;
        let mut c = self.lock();
        let mut reclaimed = false;
        loop {
            // Asked first: a waiter that should step aside does not take
            // memory that frees up at the same moment.
            if give_up() {
                return Err(BudgetError::Abandoned { bytes });
            }
            if c.used + bytes <= limit {
                c.used += bytes;
                c.peak = c.peak.max(c.used);
                return Ok(Some(Reservation {
                    budget: self.clone(),
                    bytes,
                }));
            }
            if !reclaimed {
                // Idle buffers go before anyone waits for their memory.
                reclaimed = true;
                drop(c);
                self.reclaim();
                c = self.lock();
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            // Wake at least every 100 ms to look at `give_up`.
            let slice = (deadline - now).min(Duration::from_millis(100));
            c = self
                .freed
                .wait_timeout(c, slice)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn give_back(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut c = self.lock();
        c.used = c.used.saturating_sub(bytes);
        drop(c);
        self.freed.notify_all();
    }
}

impl Reservation {
    /// Bytes still held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Moves `bytes` of this reservation (at most what is held) into a new
    /// one; the total stays charged.
    pub fn split(&mut self, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation {
            budget: self.budget.clone(),
            bytes,
        }
    }

    /// Takes over another reservation of the same budget.
    pub fn absorb(&mut self, mut other: Reservation) {
        debug_assert!(Arc::ptr_eq(&self.budget, &other.budget));
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Gives back part of the reservation (at most what is held).
    pub fn release(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.budget.give_back(bytes);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// The memory available to this process: the cgroup limit when one is set,
/// else the machine's MemTotal.
pub fn available_memory() -> Option<u64> {
    cgroup_limit().or_else(mem_total)
}

fn cgroup_limit() -> Option<u64> {
    // cgroup v2, then v1. "max" or absurd values mean no limit.
    for path in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(v) = text.trim().parse::<u64>() {
                if v < (1 << 60) {
                    return Some(v);
                }
            }
        }
    }
    None
}

fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_release_and_peak() {
        let b = MemoryBudget::new(100);
        let mut r1 = b.try_reserve(60).unwrap().unwrap();
        assert!(b.try_reserve(50).unwrap().is_none());
        let r2 = b.try_reserve(40).unwrap().unwrap();
        assert_eq!((b.used(), b.peak()), (100, 100));
        r1.release(30);
        assert_eq!(b.used(), 70);
        drop(r2);
        drop(r1);
        assert_eq!((b.used(), b.peak()), (0, 100));
        assert!(matches!(
            b.try_reserve(101),
            Err(BudgetError::TooLarge { .. })
        ));
    }

    #[test]
    fn idle_charges_are_reclaimed_before_a_reservation_waits() {
        let b = MemoryBudget::new(100);
        assert!(b.charge(70));
        assert!(!b.charge(40), "a charge never exceeds the limit");
        let freed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (b2, f2) = (b.clone(), freed.clone());
        b.set_reclaimer(Box::new(move || {
            // What a pool does: give back its idle bytes.
            let n = if f2.swap(70, std::sync::atomic::Ordering::SeqCst) == 0 {
                70
            } else {
                0
            };
            b2.uncharge(n);
            n
        }));
        let r = b
            .try_reserve(60)
            .unwrap()
            .expect("granted after reclaiming");
        assert_eq!(freed.load(std::sync::atomic::Ordering::SeqCst), 70);
        assert_eq!(b.used(), 60);
        drop(r);
        assert!(b.charge(100));
        b.uncharge(100);
        // reserve_within reclaims too (nothing left to reclaim: it times out).
        assert!(b.charge(50));
        let none = b
            .reserve_within(60, Duration::from_millis(10), &|| false)
            .unwrap();
        assert!(none.is_none());
        assert_eq!(b.used(), 50);
    }

    #[test]
    fn waiting_reservation_is_granted_when_memory_is_freed() {
        let b = MemoryBudget::new(10);
        let held = b.try_reserve(10).unwrap().unwrap();
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            b2.reserve_within(5, Duration::from_secs(10), &|| false)
                .unwrap()
                .map(|r| r.bytes())
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert_eq!(waiter.join().unwrap(), Some(5));
        assert_eq!(b.peak(), 10);
    }

    #[test]
    fn waiting_gives_up() {
        let b = MemoryBudget::new(10);
        let _held = b.try_reserve(10).unwrap().unwrap();
        assert_eq!(
            b.reserve_within(5, Duration::from_secs(5), &|| true)
                .unwrap_err(),
            BudgetError::Abandoned { bytes: 5 }
        );
        assert!(b
            .reserve_within(5, Duration::from_millis(10), &|| false)
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_critical_reserve_is_only_for_critical_claims() {
        let b = MemoryBudget::with_critical_reserve(100, 30);
        assert_eq!(b.limit_for(Claim::Normal), 70);
        let normal = b.try_reserve(70).unwrap().unwrap();
        assert!(
            b.try_reserve(1).unwrap().is_none(),
            "normal work stops at 70"
        );
        assert!(!b.charge(1), "idle buffers stay out of the reserve too");
        assert!(b
            .reserve_within(1, Duration::from_millis(10), &|| false)
            .unwrap()
            .is_none());
        let critical = b
            .reserve_within_as(30, Claim::Critical, Duration::from_millis(10), &|| false)
            .unwrap()
            .expect("critical work uses the reserve");
        assert_eq!(b.used(), 100);
        assert!(matches!(
            b.try_reserve(71),
            Err(BudgetError::TooLarge { limit: 70, .. })
        ));
        assert!(b.try_reserve_as(101, Claim::Critical).is_err());
        drop((normal, critical));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn machine_memory_is_known() {
        assert!(available_memory().unwrap() > 1 << 20);
    }
}
