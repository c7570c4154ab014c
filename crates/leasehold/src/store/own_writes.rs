//! What a store remembers of its own writes: per `(lock, slot)` it holds, the record it last
//! wrote there with the version the server gave that write (a data version, a stream
//! sequence). With it a release or an extension is one write expecting that version, instead
//! of a read and then a write.
//!
//! The memory is only ever a guess about the server. A write conditioned on a remembered
//! version the record no longer has fails as contention, and the store then reads the slot as
//! it would have without the memory; so a stale entry costs one refused write, and nothing is
//! ever granted or answered from the memory alone. What the store must keep true is that an
//! entry is the record *as it is on the server whenever the server's version is the remembered
//! one* — which holds for a record this client wrote, since any other write changes the
//! version.
//!
//! An entry comes with a grant and leaves when its lease is released or found not held. Leases
//! lost without either (a holder that never came back) are forgotten when the memory has grown
//! past [`OWN_WRITES_PRUNE_FROM`] entries (then again each time it has doubled since), if their
//! record says they can be ([`OwnWrite::forgettable`]). So the memory holds about one entry per
//! lease held through the store.
//!
//! ```
//! use leasehold::store::{OwnWrite, OwnWrites, Token};
//! use leasehold::{Lease, LockName};
//!
//! #[derive(Clone)]
//! struct Written { token: Token, fence: u64, version: i64, ends_ms: u64 }
//!
//! impl OwnWrite for Written {
//!     fn is(&self, lease: &Lease) -> bool {
//!         self.token == lease.token && self.fence == lease.fence
//!     }
//!     fn forgettable(&self, host_now_ms: u64) -> bool {
//!         self.ends_ms <= host_now_ms
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let lock = LockName::new("nightly-report")?;
//! let token = Token::random();
//! let lease = Lease {
//!     lock: lock.clone(), slot: 0, owner: "a".into(), token, fence: 3,
//!     acquired_at: std::time::SystemTime::now(),
//!     expires_at: std::time::SystemTime::now(),
//!     period: None,
//! };
//! let writes = OwnWrites::default();
//! writes.remember(&lock, 0, Written { token, fence: 3, version: 1, ends_ms: u64::MAX });
//! assert_eq!(writes.mine(&lease).map(|w| w.version), Some(1));
//! writes.refresh(&lease, Written { token, fence: 3, version: 2, ends_ms: u64::MAX });
//! assert_eq!(writes.mine(&lease).map(|w| w.version), Some(2));
//! writes.forget(&lease);
//! assert!(writes.mine(&lease).is_none());
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::name::LockName;
use crate::store::lease::Lease;
use crate::store::millis::host_epoch_ms;

/// The size of an [`OwnWrites`] memory from which entries that say they can be forgotten are
/// pruned (then again each time it has doubled since the last pruning).
pub const OWN_WRITES_PRUNE_FROM: usize = 4096;

/// A record a store wrote to a slot it holds, as [`OwnWrites`] remembers it.
pub trait OwnWrite: Clone {
    /// True if this write is `lease`'s grant (its token and fence), not released.
    fn is(&self, lease: &Lease) -> bool;

    /// True if the entry may be dropped when the memory is pruned: the lease it records has run
    /// out by this host's clock (`host_now_ms`, ms since the epoch) and nothing else keeps it
    /// (a session it is attached to, for instance).
    fn forgettable(&self, host_now_ms: u64) -> bool;
}

/// The latest record this client wrote per `(lock, slot)` it holds (see [the module](self)).
#[derive(Debug)]
pub struct OwnWrites<W> {
    memory: Mutex<Memory<W>>,
}

#[derive(Debug)]
struct Memory<W> {
    writes: HashMap<(LockName, u32), W>,
    /// The size at which to prune next (0: [`OWN_WRITES_PRUNE_FROM`]).
    prune_at: usize,
}

impl<W> Default for OwnWrites<W> {
    fn default() -> Self {
        Self {
            memory: Mutex::new(Memory {
                writes: HashMap::new(),
                prune_at: 0,
            }),
        }
    }
}

impl<W: OwnWrite> OwnWrites<W> {
    fn memory(&self) -> MutexGuard<'_, Memory<W>> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers `write` as the latest record written to `slot` of `lock` (a grant).
    pub fn remember(&self, lock: &LockName, slot: u32, write: W) {
        let mut memory = self.memory();
        memory.writes.insert((lock.clone(), slot), write);
        if memory.writes.len() >= memory.prune_at.max(OWN_WRITES_PRUNE_FROM) {
            let now = host_epoch_ms();
            memory.writes.retain(|_, w| !w.forgettable(now));
            memory.prune_at = memory.writes.len().saturating_mul(2);
        }
    }

    /// Replaces what is remembered for `lease` with `write` (an extension of it), if `lease` is
    /// still what is remembered for its slot: a release that forgot it meanwhile wins.
    pub fn refresh(&self, lease: &Lease, write: W) {
        if let Some(w) = self
            .memory()
            .writes
            .get_mut(&(lease.lock.clone(), lease.slot))
            && w.is(lease)
        {
            *w = write;
        }
    }

    /// The record last written for `lease`, if it is this grant, unreleased.
    pub fn mine(&self, lease: &Lease) -> Option<W> {
        self.memory()
            .writes
            .get(&(lease.lock.clone(), lease.slot))
            .filter(|w| w.is(lease))
            .cloned()
    }

    /// Forgets `lease`, if it is what is remembered for its slot (another grant of the slot
    /// stays).
    pub fn forget(&self, lease: &Lease) {
        self.take(lease);
    }

    /// Forgets `lease` and returns what was remembered for it (a release): [`mine`](Self::mine)
    /// and [`forget`](Self::forget) under one lock.
    pub fn take(&self, lease: &Lease) -> Option<W> {
        let mut memory = self.memory();
        let key = (lease.lock.clone(), lease.slot);
        if memory.writes.get(&key).is_some_and(|w| w.is(lease)) {
            return memory.writes.remove(&key);
        }
        None
    }

    /// Forgets the entry of `slot` of `lock` if `pick` chooses it; true if it did.
    pub fn forget_if(&self, lock: &LockName, slot: u32, pick: impl FnOnce(&W) -> bool) -> bool {
        let mut memory = self.memory();
        let key = (lock.clone(), slot);
        if memory.writes.get(&key).is_some_and(pick) {
            memory.writes.remove(&key);
            return true;
        }
        false
    }

    /// Changes, in place, every remembered write of `leases` (each only if it is still that
    /// lease's) with `change`.
    pub fn update<'a>(
        &self,
        leases: impl IntoIterator<Item = &'a Lease>,
        mut change: impl FnMut(&mut W),
    ) {
        let mut memory = self.memory();
        for lease in leases {
            if let Some(w) = memory.writes.get_mut(&(lease.lock.clone(), lease.slot))
                && w.is(lease)
            {
                change(w);
            }
        }
    }

    /// Removes and returns every entry `take` picks, with its lock.
    pub fn take_where(&self, mut take: impl FnMut(&W) -> bool) -> Vec<(LockName, W)> {
        let mut memory = self.memory();
        let picked: Vec<(LockName, u32)> = memory
            .writes
            .iter()
            .filter(|(_, w)| take(w))
            .map(|(k, _)| k.clone())
            .collect();
        picked
            .into_iter()
            .filter_map(|k| memory.writes.remove(&k).map(|w| (k.0, w)))
            .collect()
    }

    /// How many writes are remembered.
    pub fn len(&self) -> usize {
        self.memory().writes.len()
    }

    /// True if nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::store::lease::Token;

    #[derive(Clone, Debug, PartialEq)]
    struct W {
        token: Token,
        fence: u64,
        version: u32,
        ends_ms: u64,
    }

    impl OwnWrite for W {
        fn is(&self, lease: &Lease) -> bool {
            self.token == lease.token && self.fence == lease.fence
        }
        fn forgettable(&self, host_now_ms: u64) -> bool {
            self.ends_ms <= host_now_ms
        }
    }

    fn lease(lock: &LockName, slot: u32, token: Token, fence: u64) -> Lease {
        Lease {
            lock: lock.clone(),
            slot,
            owner: "o".to_owned(),
            token,
            fence,
            acquired_at: SystemTime::now(),
            expires_at: SystemTime::now(),
            period: None,
        }
    }

    #[test]
    fn only_the_same_unreleased_grant_is_answered() -> Result<(), crate::error::NameError> {
        let lock = LockName::new("a")?;
        let token = Token::random();
        let mine = lease(&lock, 1, token, 7);
        let newer = lease(&lock, 1, Token::random(), 8);
        let writes = OwnWrites::default();
        let w = |version| W {
            token,
            fence: 7,
            version,
            ends_ms: u64::MAX,
        };
        writes.remember(&lock, 1, w(1));
        assert_eq!(writes.mine(&newer), None, "another grant of the slot");
        writes.refresh(&newer, w(5));
        assert_eq!(writes.mine(&mine).map(|w| w.version), Some(1));
        writes.refresh(&mine, w(2));
        writes.update([&mine], |w| w.version += 10);
        assert_eq!(writes.mine(&mine).map(|w| w.version), Some(12));
        writes.forget(&newer);
        assert_eq!(writes.len(), 1, "forgetting another grant keeps this one");
        assert_eq!(writes.take(&newer), None);
        let taken = writes.take(&mine);
        assert_eq!(taken.as_ref().map(|w| w.version), Some(12));
        assert!(writes.is_empty());
        writes.remember(&lock, 1, taken.unwrap_or_else(|| w(12)));
        assert!(!writes.forget_if(&lock, 1, |w| w.version == 1));
        assert!(writes.forget_if(&lock, 1, |w| w.version == 12));
        assert!(writes.is_empty());
        writes.refresh(&mine, w(3));
        assert!(
            writes.is_empty(),
            "a refresh after a release does not bring it back"
        );
        Ok(())
    }

    #[test]
    fn a_grown_memory_forgets_what_ran_out() -> Result<(), crate::error::NameError> {
        let lock = LockName::new("a")?;
        let writes = OwnWrites::default();
        let (mut ran_out, mut live) = (0, 0);
        for slot in 0..u32::try_from(OWN_WRITES_PRUNE_FROM).unwrap_or(u32::MAX) {
            let ends_ms = if slot % 2 == 0 { 0 } else { u64::MAX };
            if ends_ms == 0 {
                ran_out += 1;
            } else {
                live += 1;
            }
            let write = W {
                token: Token::random(),
                fence: 1,
                version: 0,
                ends_ms,
            };
            writes.remember(&lock, slot, write);
        }
        assert!(ran_out > 0);
        assert_eq!(writes.len(), live, "the leases that ran out were forgotten");
        let taken = writes.take_where(|w| w.ends_ms == u64::MAX);
        assert_eq!(taken.len(), live);
        assert!(writes.is_empty());
        Ok(())
    }
}
