//! The device lock's order: a mutex whose urgent waiters go before every
//! other waiter. A CRITICAL partition (a WinningPoSt due within its epoch)
//! waits for the kernel region in progress to end, but not for the PoRep
//! partitions queued behind it: with `std::sync::Mutex` any waiter may win
//! each hand-over, so it could wait for several regions of ~1.5–2 s each
//! on a busy device. Among waiters of one kind the order is unspecified;
//! urgent waiters can keep the others out for as long as they keep coming,
//! which CRITICAL work (one small partition per epoch) does not.

use std::sync::{Condvar, Mutex, MutexGuard};

/// A mutex taken as urgent or not (see the module doc).
pub(crate) struct UrgentMutex<T> {
    gate: Mutex<Gate>,
    turn: Condvar,
    value: Mutex<T>,
}

#[derive(Default)]
struct Gate {
    held: bool,
    /// Urgent callers waiting: ordinary callers wait while there are any.
    urgent_waiting: usize,
    /// All callers waiting (observed by tests).
    waiting: usize,
}

/// The value of an [`UrgentMutex`], held until dropped.
pub(crate) struct UrgentGuard<'a, T> {
    lock: &'a UrgentMutex<T>,
    value: Option<MutexGuard<'a, T>>,
}

impl<T> UrgentMutex<T> {
    pub(crate) fn new(value: T) -> UrgentMutex<T> {
        UrgentMutex {
            gate: Mutex::new(Gate::default()),
            turn: Condvar::new(),
            value: Mutex::new(value),
        }
    }

    /// Waits for the value: until it is free and, unless `urgent`, no
    /// urgent caller waits for it. A panic while it was held poisons
    /// nothing here; the holder's guard gave it back.
    pub(crate) fn lock(&self, urgent: bool) -> UrgentGuard<'_, T> {
        let mut g = self.gate();
        g.waiting += 1;
        if urgent {
            g.urgent_waiting += 1;
        }
        while g.held || (!urgent && g.urgent_waiting > 0) {
            g = self.turn.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.waiting -= 1;
        if urgent {
            g.urgent_waiting -= 1;
        }
        g.held = true;
        drop(g);
        // Only the gate's holder takes it, so it is free: a poisoned one
        // only says an earlier holder panicked.
        let value = self.value.lock().unwrap_or_else(|p| p.into_inner());
        UrgentGuard {
            lock: self,
            value: Some(value),
        }
    }

    /// Whether an urgent caller waits now: a holder between two stages
    /// of its work may give the value back and take it again to let it in.
    pub(crate) fn urgent_waiting(&self) -> bool {
        self.gate().urgent_waiting > 0
    }

    /// Callers waiting now (for tests).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.gate().waiting
    }

    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> std::ops::Deref for UrgentGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("held until dropped")
    }
}

impl<T> std::ops::DerefMut for UrgentGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("held until dropped")
    }
}

impl<T> Drop for UrgentGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.value.take());
        self.lock.gate().held = false;
        self.lock.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    /// Spins (briefly sleeping) until `n` callers wait on `lock`.
    fn until_waiting(lock: &UrgentMutex<Vec<&'static str>>, n: usize) {
        let end = Instant::now() + Duration::from_secs(30);
        while lock.waiting() < n {
            assert!(
                Instant::now() < end,
                "{} of {n} callers waiting",
                lock.waiting()
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Starts a caller that appends `name` to the value once it holds it.
    fn caller(
        lock: &Arc<UrgentMutex<Vec<&'static str>>>,
        name: &'static str,
        urgent: bool,
    ) -> thread::JoinHandle<()> {
        let lock = lock.clone();
        thread::spawn(move || lock.lock(urgent).push(name))
    }

    #[test]
    fn urgent_callers_go_before_ordinary_ones_that_waited_longer() {
        let lock = Arc::new(UrgentMutex::new(Vec::new()));
        let held = lock.lock(false);
        let mut threads = Vec::new();
        for (i, name) in ["porep-1", "porep-2", "porep-3"].into_iter().enumerate() {
            threads.push(caller(&lock, name, false));
            until_waiting(&lock, i + 1);
        }
        threads.push(caller(&lock, "winning-1", true));
        until_waiting(&lock, 4);
        threads.push(caller(&lock, "winning-2", true));
        until_waiting(&lock, 5);
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        let order = lock.lock(false).clone();
        assert_eq!(order.len(), 5, "{order:?}");
        let mut first_two = order[..2].to_vec();
        first_two.sort();
        assert_eq!(first_two, ["winning-1", "winning-2"], "{order:?}");
    }

    #[test]
    fn ordinary_callers_all_get_it_and_never_together() {
        let lock = Arc::new(UrgentMutex::new(0u64));
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (lock, inside) = (lock.clone(), inside.clone());
                thread::spawn(move || {
                    for _ in 0..200 {
                        let mut g = lock.lock(i % 4 == 0);
                        let was = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(was, 0, "two holders at once");
                        *g += 1;
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(false), 8 * 200);
    }

    #[test]
    fn a_holder_sees_urgent_callers_waiting_and_only_those() {
        let lock = Arc::new(UrgentMutex::new(Vec::new()));
        let held = lock.lock(false);
        let porep = caller(&lock, "porep", false);
        until_waiting(&lock, 1);
        assert!(
            !lock.urgent_waiting(),
            "an ordinary caller counted as urgent"
        );
        let winning = caller(&lock, "winning", true);
        until_waiting(&lock, 2);
        assert!(lock.urgent_waiting());
        // Between two stages: give it back, take it again.
        drop(held);
        let again = lock.lock(false);
        assert_eq!(again.first(), Some(&"winning"), "{:?}", *again);
        assert!(!lock.urgent_waiting());
        drop(again);
        winning.join().unwrap();
        porep.join().unwrap();
        assert_eq!(lock.lock(false).len(), 2);
    }

    #[test]
    fn a_holder_that_panics_gives_it_back() {
        let lock = Arc::new(UrgentMutex::new(1u32));
        let l = lock.clone();
        let r = thread::spawn(move || {
            let _g = l.lock(true);
            panic!("a prove panicked");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(*lock.lock(false), 1);
    }
}
