//! The leases this client holds, as it last wrote them: the lock record of each (its sequence,
//! and the session it names), so that its releases are written at once, expecting the sequence
//! of its own last write, and so that one session renewal answers for every lease held under
//! the session without reading them.
//!
//! An entry is added by a grant (or an attachment to a session) and leaves on release, when the
//! session renewal finds the lease forced out (revoked), when its session is lost, or when its
//! own expiry passed without an extension (the session renewal then deletes its record; a lease
//! of its own, never extended, is forgotten once the memory has grown past
//! [`PRUNE_FROM`] entries, since the server removes its record). So the memory holds about one
//! entry per lease held through this store.
//!
//! A write expecting a sequence the key no longer has fails as contention, so a stale entry
//! costs one conflict, after which the slot is read as usual. Nothing is granted from this
//! memory.

use std::collections::HashMap;
use std::sync::Mutex;

use leasehold::{Lease, LockName};

use crate::record::{Record, now_ms};

/// The size of the memory from which leases of their own that ran out without an extension
/// are forgotten (then again each time it has doubled since).
pub(crate) const PRUNE_FROM: usize = 4096;

/// The latest record this client wrote per `(lock, slot)` it holds.
#[derive(Debug, Default)]
pub(crate) struct Written(Mutex<Memory>);

#[derive(Debug, Default)]
struct Memory {
    records: HashMap<(LockName, u32), Record>,
    /// The size at which to forget leases of their own that ran out (0: [`PRUNE_FROM`]).
    prune_at: usize,
}

impl std::ops::Deref for Memory {
    type Target = HashMap<(LockName, u32), Record>;
    fn deref(&self) -> &Self::Target {
        &self.records
    }
}

impl std::ops::DerefMut for Memory {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.records
    }
}

impl Written {
    fn map(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers `record` (its `seq` the sequence the server stored it at) as written to `lock`.
    pub(crate) fn remember(&self, lock: &LockName, record: &Record) {
        let mut map = self.map();
        map.insert((lock.clone(), record.held.slot), record.clone());
        if map.len() >= map.prune_at.max(PRUNE_FROM) {
            let now = now_ms();
            map.retain(|_, r| r.session.is_some() || r.held.live_at(now));
            map.prune_at = map.len().saturating_mul(2);
        }
    }

    /// Replaces the record of `lease` with `record` if it is still remembered (a release that
    /// forgot it meanwhile wins).
    pub(crate) fn refresh(&self, lease: &Lease, record: &Record) {
        if let Some(r) = self.map().get_mut(&(lease.lock.clone(), lease.slot))
            && r.held.is(lease)
        {
            *r = record.clone();
        }
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

    /// Forgets the lease of `token` in `slot` of `lock`, if it is the one remembered; true if it
    /// was.
    pub(crate) fn forget_token(
        &self,
        lock: &LockName,
        slot: u32,
        token: leasehold::store::Token,
    ) -> bool {
        let mut map = self.map();
        let key = (lock.clone(), slot);
        if map.get(&key).is_some_and(|r| r.held.token == token) {
            map.remove(&key);
            return true;
        }
        false
    }

    /// Records that the leases `renewed` (in `session`) now end at `expires_ms`.
    pub(crate) fn renewed<'a>(
        &self,
        session: &str,
        renewed: impl IntoIterator<Item = &'a Lease>,
        expires_ms: u64,
    ) {
        let mut map = self.map();
        for lease in renewed {
            if let Some(r) = map.get_mut(&(lease.lock.clone(), lease.slot))
                && r.held.is(lease)
                && r.session.as_deref() == Some(session)
            {
                r.held.expires_ms = expires_ms;
            }
        }
    }

    /// Removes and returns the leases of `session` that `take` picks.
    pub(crate) fn take_from(
        &self,
        session: &str,
        mut take: impl FnMut(&Record) -> bool,
    ) -> Vec<(LockName, Record)> {
        let mut map = self.map();
        let picked: Vec<(LockName, u32)> = map
            .iter()
            .filter(|(_, r)| r.session.as_deref() == Some(session) && take(r))
            .map(|(k, _)| k.clone())
            .collect();
        picked
            .into_iter()
            .filter_map(|k| map.remove(&k).map(|r| (k.0, r)))
            .collect()
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
            session: Some("s1".to_owned()),
        };
        let lease = record.held.lease(&lock);
        let written = Written::default();
        assert_eq!(written.mine(&lease), None);
        written.remember(&lock, &record);
        assert_eq!(written.mine(&lease).map(|r| r.seq), Some(9));
        written.renewed("s1", [&lease], 50);
        assert_eq!(written.mine(&lease).map(|r| r.held.expires_ms), Some(50));
        written.renewed("s2", [&lease], 70);
        assert_eq!(
            written.mine(&lease).map(|r| r.held.expires_ms),
            Some(50),
            "another session's renewal does not extend it"
        );
        let other = Lease {
            fence: 8,
            ..lease.clone()
        };
        assert_eq!(written.mine(&other), None, "another grant of the slot");
        assert!(!written.forget_token(&lock, 1, leasehold::store::Token::random()));
        assert_eq!(written.take_from("s2", |_| true), Vec::new());
        assert_eq!(
            written.take_from("s1", |r| r.held.expires_ms < 50),
            Vec::new()
        );
        assert_eq!(written.take_from("s1", |_| true).len(), 1);
        assert_eq!(written.mine(&lease), None);
        written.remember(
            &lock,
            &Record {
                held: leasehold::store::SlotRecord {
                    released: true,
                    ..record.held.clone()
                },
                ..record.clone()
            },
        );
        assert_eq!(written.mine(&lease), None, "released");
        written.forget(&lease);
        assert!(written.map().is_empty());
        written.remember(&lock, &record);
        assert!(written.forget_token(&lock, 1, record.held.token));
        assert!(written.map().is_empty());
        Ok(())
    }
}
