//! The leases this client holds, as it last wrote them (the toolkit's
//! [`OwnWrites`](leasehold::store::OwnWrites)): the lock record of each — its sequence, and the
//! session it names — so that its releases are written at once, expecting the sequence of its
//! own last write, and so that one session renewal answers for every lease held under the
//! session without reading them.
//!
//! An entry is added by a grant (or an attachment to a session) and leaves on release, when the
//! session renewal finds the lease forced out (revoked), when its session is lost, or when its
//! own expiry passed without an extension (the session renewal then deletes its record; a lease
//! of its own, never extended, is forgotten once the memory has grown past
//! [`OWN_WRITES_PRUNE_FROM`](leasehold::store::OWN_WRITES_PRUNE_FROM) entries, since the server
//! removes its record). A lease held under a session is never pruned: the session renewal
//! answers for it.
//!
//! A write expecting a sequence the key no longer has fails as contention, so a stale entry
//! costs one conflict, after which the slot is read as usual. Nothing is granted from this
//! memory.

use leasehold::store::{OwnWrite, OwnWrites};
use leasehold::{Lease, LockName};

use crate::record::Record;

/// The latest record this client wrote per `(lock, slot)` it holds.
pub(crate) type Written = OwnWrites<Record>;

impl OwnWrite for Record {
    fn is(&self, lease: &Lease) -> bool {
        self.held.is(lease)
    }
    fn forgettable(&self, host_now_ms: u64) -> bool {
        self.session.is_none() && !self.held.live_at(host_now_ms)
    }
}

/// What the session renewal asks of the memory.
pub(crate) trait SessionWrites {
    /// Records that the leases `renewed` (in `session`) now end at `expires_ms`.
    fn renewed<'a>(
        &self,
        session: &str,
        renewed: impl IntoIterator<Item = &'a Lease>,
        expires_ms: u64,
    );

    /// Removes and returns the leases of `session` that `take` picks.
    fn take_from(
        &self,
        session: &str,
        take: impl FnMut(&Record) -> bool,
    ) -> Vec<(LockName, Record)>;
}

impl SessionWrites for Written {
    fn renewed<'a>(
        &self,
        session: &str,
        renewed: impl IntoIterator<Item = &'a Lease>,
        expires_ms: u64,
    ) {
        self.update(renewed, |r| {
            if r.session.as_deref() == Some(session) {
                r.held.expires_ms = expires_ms;
            }
        });
    }

    fn take_from(
        &self,
        session: &str,
        mut take: impl FnMut(&Record) -> bool,
    ) -> Vec<(LockName, Record)> {
        self.take_where(|r| r.session.as_deref() == Some(session) && take(r))
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
        written.remember(&lock, 1, record.clone());
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
        let token = leasehold::store::Token::random();
        assert!(!written.forget_if(&lock, 1, |r| r.held.token == token));
        assert_eq!(written.take_from("s2", |_| true), Vec::new());
        assert_eq!(
            written.take_from("s1", |r| r.held.expires_ms < 50),
            Vec::new()
        );
        assert_eq!(written.take_from("s1", |_| true).len(), 1);
        assert_eq!(written.mine(&lease), None);
        let released = Record {
            held: leasehold::store::SlotRecord {
                released: true,
                ..record.held.clone()
            },
            ..record.clone()
        };
        written.remember(&lock, 1, released);
        assert_eq!(written.mine(&lease), None, "released");
        assert!(written.forget_if(&lock, 1, |r| r.held.token == record.held.token));
        assert!(written.is_empty());
        assert!(
            Record {
                session: None,
                ..record.clone()
            }
            .forgettable(3),
            "a lease of its own that ran out"
        );
        assert!(!record.forgettable(3), "a lease under a session");
        Ok(())
    }
}
