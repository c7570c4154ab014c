//! The single-slot locks whose last acquisition through this store was refused (MySQL/MariaDB).
//!
//! MySQL has no conditional `ON DUPLICATE KEY UPDATE`: the acquire upsert is sent whether or not
//! the row is free, and a refused one is still an `INSERT` statement that locks the row, counts
//! as a write (`Com_insert_select`, `Handler_write`) and may reach the binary log. A follower
//! waiting for a lock would pay that on every attempt. So once an attempt on a lock was refused,
//! the next attempts on it first read the slot (`state`, one `SELECT` judged by the database's
//! clock): held by another node id, the attempt is refused without a write and names the holder,
//! so the waiter knows when the lease could end; free, or held under the request's own node id
//! (perhaps by this very request, applied before), it sends the upsert. The upsert stays
//! conditional, so a race between the read and the write is still decided by the database. A
//! grant forgets the lock.
//!
//! The cost: an uncontended acquisition is unchanged (upsert, then `read_slot`: two round
//! trips); the first refused attempt of a wait still writes, and its read back names the
//! holder (two round trips as well); every later refused attempt is one read and writes
//! nothing; the attempt that finally wins after refusals takes one round trip more (read,
//! upsert, `read_slot`).

use std::collections::HashSet;
use std::sync::Mutex;

use leasehold::LockName;

/// The most locks a store remembers as refused. Past it the memory starts afresh: a lock
/// forgotten that way costs one write on its next refused attempt, and nothing else.
pub(crate) const REFUSED_LOCKS_REMEMBERED: usize = 4096;

/// The single-slot locks whose last acquisition through this store was refused.
#[derive(Default)]
pub(crate) struct RefusedLocks {
    locks: Mutex<HashSet<LockName>>,
}

impl RefusedLocks {
    /// True if the last acquisition of `lock` through this store was refused: the next one
    /// reads the slot before it writes.
    pub(crate) fn contains(&self, lock: &LockName) -> bool {
        self.guard().contains(lock)
    }

    /// An acquisition of `lock` was refused.
    pub(crate) fn refused(&self, lock: &LockName) {
        let mut locks = self.guard();
        if locks.len() >= REFUSED_LOCKS_REMEMBERED && !locks.contains(lock) {
            locks.clear();
        }
        locks.insert(lock.clone());
    }

    /// An acquisition of `lock` was granted.
    pub(crate) fn granted(&self, lock: &LockName) {
        let mut locks = self.guard();
        if !locks.is_empty() {
            locks.remove(lock);
        }
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, HashSet<LockName>> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(name: &str) -> LockName {
        LockName::new(name).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_refusal_is_remembered_until_a_grant_and_the_memory_is_bounded() {
        let refused = RefusedLocks::default();
        assert!(!refused.contains(&lock("a")));
        refused.refused(&lock("a"));
        refused.refused(&lock("a"));
        assert!(refused.contains(&lock("a")));
        refused.granted(&lock("a"));
        assert!(!refused.contains(&lock("a")));
        for i in 0..REFUSED_LOCKS_REMEMBERED {
            refused.refused(&lock(&format!("lock-{i}")));
        }
        assert!(refused.contains(&lock("lock-0")));
        refused.refused(&lock("one-more"));
        assert!(refused.contains(&lock("one-more")));
        assert!(!refused.contains(&lock("lock-0")), "full: started afresh");
        assert_eq!(refused.guard().len(), 1);
    }
}
