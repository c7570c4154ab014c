//! The records this client wrote last, so that its own extensions and releases can be written at
//! once, expecting the sequence of its own last write, instead of reading the slot first.
//!
//! A write expecting a sequence the key no longer has fails as contention, so a stale entry (a
//! forced release, an expiry, a write of another client, a write whose answer was lost) costs one
//! conflict, after which the slot is read as usual. Nothing is granted from this memory.

use std::collections::HashMap;
use std::sync::Mutex;

use leasehold::{Lease, LockName};

use crate::record::Record;

/// The most records remembered; past it the memory starts afresh (it only saves round trips).
pub(crate) const MAX_WRITTEN: usize = 4096;

/// The latest record this client wrote per `(lock, slot)`.
#[derive(Debug, Default)]
pub(crate) struct Written(Mutex<HashMap<(LockName, u32), Record>>);

impl Written {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(LockName, u32), Record>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers `record` (its `seq` the sequence the server stored it at) as written to `lock`.
    pub(crate) fn remember(&self, lock: &LockName, record: &Record) {
        let mut map = self.map();
        if map.len() >= MAX_WRITTEN {
            map.clear();
        }
        map.insert((lock.clone(), record.held.slot), record.clone());
    }

    /// The record last written for `lease`, if it is this grant, unreleased.
    pub(crate) fn mine(&self, lease: &Lease) -> Option<Record> {
        self.map()
            .get(&(lease.lock.clone(), lease.slot))
            .filter(|r| r.held.is(lease))
            .cloned()
    }

    /// Forgets what was written to `lease`'s slot.
    pub(crate) fn forget(&self, lease: &Lease) {
        self.map().remove(&(lease.lock.clone(), lease.slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_unreleased_grant_is_remembered() -> Result<(), leasehold::error::NameError> {
        let lock = LockName::new("a")?;
        let record = Record {
            held: leasehold::store::SlotRecord {
                slot: 1,
                token: leasehold::store::Token::random(),
                owner: "n".to_owned(),
                fence: 7,
                acquired_ms: 1,
                expires_ms: 2,
                released: false,
            },
            seq: 9,
        };
        let lease = record.held.lease(&lock);
        let written = Written::default();
        assert_eq!(written.mine(&lease), None);
        written.remember(&lock, &record);
        assert_eq!(written.mine(&lease).map(|r| r.seq), Some(9));
        let other = Lease {
            fence: 8,
            ..lease.clone()
        };
        assert_eq!(written.mine(&other), None, "another grant of the slot");
        written.remember(
            &lock,
            &Record {
                held: leasehold::store::SlotRecord {
                    released: true,
                    ..record.held.clone()
                },
                ..record
            },
        );
        assert_eq!(written.mine(&lease), None, "released");
        written.forget(&lease);
        assert!(written.map().is_empty());
        Ok(())
    }
}
