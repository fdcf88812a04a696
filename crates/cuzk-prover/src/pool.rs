//! Witness vectors kept for the next partition.
//!
//! A partition's witness is gigabytes of scalars (a, b, c and the
//! assignment), written once and dropped after proving, and the next
//! partition of the same shape needs vectors of the same sizes. Fresh
//! memory costs the kernel a page fault and a page zeroing per 4 KiB on
//! first touch — on a virtual machine that is most of a compiled
//! synthesis (docs/PERF.md) — so vectors given back here after use are
//! handed to the next synthesis instead.
//!
//! The pool is off until [`VecPool::configure`] gives it room. What it
//! keeps idle is held against a [`PoolAccount`] (the engine's memory
//! budget): a vector the account has no room for is dropped, and
//! [`VecPool::clear`] gives everything back when the account needs it.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use blstrs::Scalar;

/// Where idle vectors are charged.
pub trait PoolAccount: Send + Sync {
    /// Holds `bytes` for idle vectors; `false` when they do not fit.
    fn hold(&self, bytes: u64) -> bool;
    /// Gives back `bytes` held before.
    fn release(&self, bytes: u64);
}

#[derive(Default)]
struct State {
    idle: Vec<Vec<Scalar>>,
    idle_bytes: u64,
    limit: u64,
    account: Option<Arc<dyn PoolAccount>>,
    reused: u64,
}

/// A pool of scalar vectors (see the module docs).
#[derive(Default)]
pub struct VecPool {
    state: Mutex<State>,
}

fn bytes_of(v: &Vec<Scalar>) -> u64 {
    (v.capacity() * std::mem::size_of::<Scalar>()) as u64
}

/// The process's pool, used by synthesis and the prover backends.
pub fn pool() -> &'static VecPool {
    static POOL: OnceLock<VecPool> = OnceLock::new();
    POOL.get_or_init(VecPool::default)
}

impl VecPool {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps at most `limit` bytes idle, charged to `account` (none: not
    /// charged). A limit of 0 turns the pool off. Idle vectors are given
    /// back first.
    pub fn configure(&self, limit: u64, account: Option<Arc<dyn PoolAccount>>) {
        self.clear();
        let mut st = self.lock();
        st.limit = limit;
        st.account = account;
    }

    /// An empty vector with room for `len` scalars: the smallest idle one
    /// that is large enough and at most an eighth larger (what a caller
    /// reserved for `len` then nearly covers it), else a new one.
    pub fn take(&self, len: usize) -> Vec<Scalar> {
        let mut st = self.lock();
        let best = st
            .idle
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= len && v.capacity() * 8 <= len * 9)
            .min_by_key(|(_, v)| v.capacity())
            .map(|(i, _)| i);
        let Some(i) = best else {
            drop(st);
            return Vec::with_capacity(len);
        };
        let v = st.idle.swap_remove(i);
        let bytes = bytes_of(&v);
        st.idle_bytes -= bytes;
        st.reused += bytes;
        if let Some(account) = st.account.clone() {
            drop(st);
            account.release(bytes);
        }
        v
    }

    /// Keeps `v` (emptied) for a later [`VecPool::take`] if there is room,
    /// else drops it.
    pub fn give(&self, mut v: Vec<Scalar>) {
        let bytes = bytes_of(&v);
        if bytes == 0 {
            return;
        }
        let account = {
            let st = self.lock();
            if st.idle_bytes + bytes > st.limit {
                return;
            }
            st.account.clone()
        };
        if account.as_ref().is_some_and(|a| !a.hold(bytes)) {
            return;
        }
        v.clear();
        let mut st = self.lock();
        st.idle_bytes += bytes;
        st.idle.push(v);
    }

    /// Drops every idle vector; returns the bytes given back.
    pub fn clear(&self) -> u64 {
        let (idle, bytes, account) = {
            let mut st = self.lock();
            let bytes = std::mem::take(&mut st.idle_bytes);
            (std::mem::take(&mut st.idle), bytes, st.account.clone())
        };
        drop(idle);
        if let Some(a) = account {
            a.release(bytes);
        }
        bytes
    }

    /// Bytes idle now.
    pub fn idle_bytes(&self) -> u64 {
        self.lock().idle_bytes
    }

    /// Bytes handed out again since the start.
    pub fn reused_bytes(&self) -> u64 {
        self.lock().reused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Default)]
    struct Counter {
        held: AtomicU64,
        room: u64,
    }

    impl PoolAccount for Counter {
        fn hold(&self, bytes: u64) -> bool {
            let now = self.held.load(Ordering::SeqCst);
            if now + bytes > self.room {
                return false;
            }
            self.held.fetch_add(bytes, Ordering::SeqCst);
            true
        }
        fn release(&self, bytes: u64) {
            self.held.fetch_sub(bytes, Ordering::SeqCst);
        }
    }

    #[test]
    fn off_by_default_and_reuses_within_limit_and_account() {
        let pool = VecPool::default();
        pool.give(vec![Scalar::from(1u64); 100]);
        assert_eq!(pool.idle_bytes(), 0, "off until configured");

        let account = Arc::new(Counter {
            room: 150 * 32,
            ..Counter::default()
        });
        pool.configure(1 << 20, Some(account.clone()));
        let v = vec![Scalar::from(1u64); 100];
        let ptr = v.as_ptr();
        pool.give(v);
        assert_eq!(account.held.load(Ordering::SeqCst), 100 * 32);
        // No room in the account for a second one: dropped.
        pool.give(vec![Scalar::from(1u64); 100]);
        assert_eq!(pool.idle_bytes(), 100 * 32);
        // Too large a request gets a new vector, and so does one much
        // smaller than the idle vector; a fitting one the idle one.
        assert_eq!(pool.take(101).capacity(), 101);
        assert_eq!(pool.take(50).capacity(), 50);
        let again = pool.take(90);
        assert_eq!((again.as_ptr(), again.len()), (ptr, 0));
        assert_eq!(account.held.load(Ordering::SeqCst), 0);

        pool.give(again);
        assert_eq!(pool.clear(), 100 * 32);
        assert_eq!(account.held.load(Ordering::SeqCst), 0);
        assert_eq!(pool.reused_bytes(), 100 * 32);
    }
}
