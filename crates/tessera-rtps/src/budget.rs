//! Byte budgets: what one reader holds for a peer, and what all readers of a participant hold.
//!
//! A [`ReaderCore`](crate::reader::ReaderCore) bounds the bytes it buffers (out-of-order samples,
//! partially reassembled samples) with its own limits; but many readers × many writers multiply
//! such a bound. A [`SharedBudget`] is one participant-wide pool that every reader's [`Budget`]
//! also draws from, so the whole participant stays within a known figure whatever the number of
//! endpoints. It is a pair of atomics: no lock, no clock, no I/O, so the cores stay sans-IO and
//! their lock order is unchanged.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A pool of bytes shared by several [`Budget`]s (typically one participant's readers). Cheap
/// to clone: clones share the pool.
#[derive(Clone)]
pub struct SharedBudget(Arc<Pool>);

struct Pool {
    limit: usize,
    used: AtomicUsize,
    refused: AtomicU64,
}

impl fmt::Debug for SharedBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBudget")
            .field("limit", &self.0.limit)
            .field("used", &self.used())
            .field("refused", &self.refused())
            .finish()
    }
}

impl SharedBudget {
    /// A pool of `limit` bytes.
    pub fn new(limit: usize) -> SharedBudget {
        SharedBudget(Arc::new(Pool {
            limit,
            used: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }))
    }

    /// The pool's size.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// Bytes currently drawn.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// How many requests were refused because the pool was spent.
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Ordering::Relaxed)
    }

    /// Draws `n` bytes if they fit; counts a refusal otherwise.
    fn draw(&self, n: usize) -> bool {
        let limit = self.0.limit;
        let ok = self
            .0
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= limit)
            })
            .is_ok();
        if !ok {
            self.0.refused.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// Returns `n` bytes (never below zero).
    fn give_back(&self, n: usize) {
        let _ = self
            .0
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(n))
            });
    }
}

/// One owner's account of bytes held: checked against the owner's own limit and, if it has
/// one, drawn from a [`SharedBudget`]. Dropping the account returns what it still holds to
/// the pool, so a deleted reader frees its share.
#[derive(Debug, Default)]
pub struct Budget {
    used: usize,
    shared: Option<SharedBudget>,
}

impl Budget {
    /// An empty account, drawing from `shared` if given.
    pub fn new(shared: Option<SharedBudget>) -> Budget {
        Budget { used: 0, shared }
    }

    /// Bytes held by this account.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Charges `n` bytes if the account stays within `limit` and the shared pool (if any) has
    /// them; returns whether it did. Nothing changes on refusal.
    pub fn try_charge(&mut self, n: usize, limit: usize) -> bool {
        match self.used.checked_add(n) {
            Some(t) if t <= limit => {}
            _ => return false,
        }
        if let Some(s) = &self.shared {
            if !s.draw(n) {
                return false;
            }
        }
        self.used += n;
        true
    }

    /// Returns `n` bytes (at most what the account holds).
    pub fn refund(&mut self, n: usize) {
        let n = n.min(self.used);
        self.used -= n;
        if let Some(s) = &self.shared {
            s.give_back(n);
        }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        let n = self.used;
        self.refund(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_draw_from_and_return_to_the_pool() {
        let pool = SharedBudget::new(100);
        let mut a = Budget::new(Some(pool.clone()));
        let mut b = Budget::new(Some(pool.clone()));
        assert!(a.try_charge(60, 80));
        assert!(!a.try_charge(30, 80), "over the account's own limit");
        assert_eq!(pool.refused(), 0, "a local refusal is not the pool's");
        assert!(!b.try_charge(50, 80), "the pool has only 40 left");
        assert_eq!(pool.refused(), 1);
        assert_eq!((a.used(), b.used(), pool.used()), (60, 0, 60));
        assert!(b.try_charge(40, 80));
        a.refund(1000); // more than held: refunds what it holds
        assert_eq!((a.used(), pool.used()), (0, 40));
        drop(b);
        assert_eq!(pool.used(), 0, "a dropped account returns its bytes");
    }

    #[test]
    fn unshared_accounts_only_check_their_limit() {
        let mut a = Budget::default();
        assert!(a.try_charge(usize::MAX, usize::MAX));
        assert!(!a.try_charge(1, usize::MAX), "no overflow");
        a.refund(usize::MAX);
        assert_eq!(a.used(), 0);
    }
}
