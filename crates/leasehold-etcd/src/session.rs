//! Sessions: the etcd leases this store attaches its slot keys to, one per lease length, and
//! the grants it holds on them.
//!
//! A store grants one etcd lease per distinct TTL (rounded up to whole seconds, as etcd counts
//! them) and attaches every slot key it acquires with that TTL to it, as etcd's own
//! `concurrency.Session` does. Keeping a session alive is one keep-alive, whatever the number
//! of keys on it; etcd deletes them all when it runs out. A session is never revived: once its
//! keep-alive answers "not found" it is forgotten with every grant on it, and the next
//! acquisition starts a new one.
//!
//! The store remembers, per `(lock, slot)`, the token and fence it was granted on a session, so
//! a renewal or a release of its own grant needs no read first: a key still attached to the
//! session whose fence (`create_revision`) is the grant's is that grant.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use leasehold::store::{StoreResult, Token};
use leasehold::{Lease, LockName};

use crate::link::Link;
use crate::protocol::{grant, keep_alive, secs_ms};
use crate::record::now_ms;

/// One session: an etcd lease and when it was last renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session {
    /// The etcd lease id.
    pub(crate) id: i64,
    /// The TTL asked for, in whole seconds (the key of the session among the store's).
    pub(crate) asked: i64,
    /// The TTL etcd granted, in whole seconds.
    pub(crate) granted: i64,
    /// This host's clock (ms) when the last grant or keep-alive that etcd answered was sent:
    /// etcd keeps the lease at least `granted` seconds past it.
    pub(crate) renewed_ms: u64,
}

impl Session {
    /// Until when (this host's clock, ms) etcd keeps the session at least.
    pub(crate) fn deadline_ms(&self) -> u64 {
        self.renewed_ms.saturating_add(secs_ms(self.granted))
    }
}

/// A grant this store holds on one of its sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) token: Token,
    pub(crate) fence: u64,
    pub(crate) session: i64,
    /// The lease's end as last granted or extended (this host's clock, ms). After it the grant
    /// can no longer be extended, and its key, which would otherwise live as long as the
    /// session, is deleted at the session's next renewal.
    pub(crate) expires_ms: u64,
}

/// A grant on a session that lasts at most this much less than the grant's lease (or a tenth of
/// the session's TTL, when that is shorter) sends no keep-alive beside it: its lease ends with the
/// session, at most this much short of the TTL asked, and the holder's next renewal restores it.
/// Back-to-back acquisitions then cost about one keep-alive a second, not one each; and since
/// one keep-alive beside an acquisition is in flight per session at a time, concurrent
/// acquisitions that all find the session due send one between them (the others' leases are
/// counted to the session's deadline as known when their transactions are answered).
pub(crate) const RENEWAL_SLACK_MS: u64 = 1_000;

/// How a session should be renewed along with an acquisition on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// It lasts longer than the new lease: nothing to do.
    None,
    /// It ends before the new lease would: keep it alive beside the acquisition.
    Beside,
}

/// The sessions of one store and the grants held on them.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    current: Mutex<HashMap<i64, Session>>,
    grants: Mutex<HashMap<(LockName, u32), Grant>>,
    /// Acquisitions in flight, per `(lock, slot)`: a key of theirs found on a session is not an
    /// orphan yet.
    pending: Mutex<HashMap<(LockName, u32), usize>>,
    /// Serialises the grant of new sessions, so concurrent acquisitions share one.
    granting: tokio::sync::Mutex<()>,
    /// Sessions with a keep-alive in flight beside an acquisition: one at a time per session
    /// (see [`beside`](Self::beside)).
    beside: Mutex<HashSet<i64>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps stay consistent at every step, so a panic elsewhere leaves them usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    /// The session for leases of `asked` seconds to attach a grant of `ttl_ms` to at `now_ms`,
    /// and whether it needs renewing beside the grant (it ends more than [`RENEWAL_SLACK_MS`], or
    /// a tenth of its TTL, before the grant would).
    ///
    /// # Errors
    ///
    /// The classified error of the grant or keep-alive.
    pub(crate) async fn for_grant(
        &self,
        link: &Link,
        asked: i64,
        ttl_ms: u64,
    ) -> StoreResult<(Session, Renewal)> {
        let now = now_ms();
        if let Some(s) = self.get(asked)
            && Self::usable(&s, now)
        {
            return Ok((s, Self::renewal(&s, now, ttl_ms)));
        }
        // Boxed: a new session or a keep-alive first is rare, and every acquisition's future
        // would otherwise carry this one's size.
        Box::pin(self.grant_or_renew(link, asked, ttl_ms)).await
    }

    /// True if `s` has more than a third of its TTL left at `now`.
    fn usable(s: &Session, now: u64) -> bool {
        s.deadline_ms() > now.saturating_add(secs_ms(s.granted) / 3)
    }

    /// [`for_grant`](Self::for_grant) when the current session for `asked` seconds is missing or
    /// has a third of its TTL left at most: one at a time, keep it alive or grant a new one.
    async fn grant_or_renew(
        &self,
        link: &Link,
        asked: i64,
        ttl_ms: u64,
    ) -> StoreResult<(Session, Renewal)> {
        let _one = self.granting.lock().await;
        let now = now_ms();
        if let Some(s) = self.get(asked) {
            if Self::usable(&s, now) {
                return Ok((s, Self::renewal(&s, now, ttl_ms)));
            }
            if self.keep_alive(link, &s).await?
                && let Some(s) = self.get(asked)
            {
                return Ok((s, Renewal::None));
            }
        }
        let (id, granted) = grant(link, asked).await?;
        let s = Session {
            id,
            asked,
            granted,
            renewed_ms: now,
        };
        locked(&self.current).insert(asked, s);
        Ok((s, Renewal::None))
    }

    fn renewal(s: &Session, now: u64, ttl_ms: u64) -> Renewal {
        let slack = secs_ms(s.granted).div_ceil(10).min(RENEWAL_SLACK_MS);
        if s.deadline_ms().saturating_add(slack) < now.saturating_add(ttl_ms) {
            Renewal::Beside
        } else {
            Renewal::None
        }
    }

    /// The current session for leases of `asked` seconds.
    pub(crate) fn get(&self, asked: i64) -> Option<Session> {
        locked(&self.current).get(&asked).copied()
    }

    /// The session with etcd lease `id`, if it is still current.
    pub(crate) fn by_id(&self, id: i64) -> Option<Session> {
        locked(&self.current).values().find(|s| s.id == id).copied()
    }

    /// Sends one keep-alive for `session`: true if etcd still had it (its renewal time is then
    /// moved to when the keep-alive was sent); false if etcd no longer has it (it is then
    /// forgotten, with every grant on it).
    ///
    /// # Errors
    ///
    /// The classified error of the keep-alive; the session is kept (it may well be alive).
    pub(crate) async fn keep_alive(&self, link: &Link, session: &Session) -> StoreResult<bool> {
        let sent = now_ms();
        if keep_alive(link, session.id).await? {
            self.renewed(session.id, sent);
            Ok(true)
        } else {
            self.lost(session.id);
            Ok(false)
        }
    }

    /// The right to send the keep-alive of `session` beside an acquisition, unless one is in
    /// flight already: the acquisitions of many tasks that all find the session due then send
    /// one keep-alive, not one each (each is a stream of its own on the server). An acquisition
    /// without it counts its lease up to the session's deadline as known when its transaction
    /// is answered, as every acquisition on a session does.
    pub(crate) fn beside(&self, session: &Session) -> Option<Beside<'_>> {
        // The lock is let go before a `Beside` exists: its drop takes it again.
        let first = locked(&self.beside).insert(session.id);
        first.then(|| Beside {
            sessions: self,
            id: session.id,
        })
    }

    /// Records a keep-alive of session `id` sent at `sent_ms` that etcd answered.
    pub(crate) fn renewed(&self, id: i64, sent_ms: u64) {
        for s in locked(&self.current).values_mut() {
            if s.id == id {
                s.renewed_ms = s.renewed_ms.max(sent_ms);
            }
        }
    }

    /// Forgets session `id` and every grant on it: etcd no longer has it.
    pub(crate) fn lost(&self, id: i64) {
        locked(&self.current).retain(|_, s| s.id != id);
        locked(&self.grants).retain(|_, g| g.session != id);
    }

    /// Remembers a grant of `lock`'s `slot` on session `session`.
    pub(crate) fn granted(&self, lock: &LockName, slot: u32, grant: Grant) {
        locked(&self.grants).insert((lock.clone(), slot), grant);
    }

    /// This store's grant that `lease` is, if it holds it on a session.
    pub(crate) fn grant_of(&self, lease: &Lease) -> Option<Grant> {
        locked(&self.grants)
            .get(&(lease.lock.clone(), lease.slot))
            .filter(|g| g.token == lease.token && g.fence == lease.fence)
            .copied()
    }

    /// Moves the end of the grant `lease` is to `expires_ms`.
    pub(crate) fn extended(&self, lease: &Lease, expires_ms: u64) {
        if let Some(g) = locked(&self.grants)
            .get_mut(&(lease.lock.clone(), lease.slot))
            .filter(|g| g.token == lease.token && g.fence == lease.fence)
        {
            g.expires_ms = expires_ms;
        }
    }

    /// Marks an acquisition of `lock`'s `slot` in flight until the guard is dropped.
    pub(crate) fn pending(&self, lock: &LockName, slot: u32) -> Pending<'_> {
        *locked(&self.pending)
            .entry((lock.clone(), slot))
            .or_default() += 1;
        Pending {
            sessions: self,
            key: (lock.clone(), slot),
        }
    }

    /// True if `lock`'s `slot` has a key on session `id` that nothing of this store accounts
    /// for at `now_ms` (see [`orphans`](Self::orphans)).
    #[cfg(test)]
    pub(crate) fn orphan(&self, lock: &LockName, slot: u32, id: i64, now_ms: u64) -> bool {
        !self
            .orphans([((lock.clone(), slot), ())], id, now_ms)
            .is_empty()
    }

    /// Of the `(lock, slot)` keys found on session `id`, the ones nothing of this store accounts
    /// for at `now_ms`: no live grant on that session and no acquisition in flight. Their holder
    /// lost them (or never learnt it had them), and they would otherwise live as long as the
    /// session. Each key comes with a value handed back for the orphans (one pass under each
    /// lock, whatever the number of keys).
    pub(crate) fn orphans<T>(
        &self,
        found: impl IntoIterator<Item = ((LockName, u32), T)>,
        id: i64,
        now_ms: u64,
    ) -> Vec<T> {
        let pending = locked(&self.pending);
        let grants = locked(&self.grants);
        found
            .into_iter()
            .filter(|(key, _)| {
                !pending.contains_key(key)
                    && !grants
                        .get(key)
                        .is_some_and(|g| g.session == id && g.expires_ms > now_ms)
            })
            .map(|(_, value)| value)
            .collect()
    }

    /// Forgets the grant `lease` is (released, or found gone).
    pub(crate) fn forget(&self, lease: &Lease) {
        let mut grants = locked(&self.grants);
        let key = (lease.lock.clone(), lease.slot);
        if grants
            .get(&key)
            .is_some_and(|g| g.token == lease.token && g.fence == lease.fence)
        {
            grants.remove(&key);
        }
    }

    /// True if `id` is one of this store's sessions (current or not): its etcd lease must never
    /// be revoked for one of its keys.
    pub(crate) fn is_session(&self, id: i64) -> bool {
        self.by_id(id).is_some()
    }
}

/// A keep-alive beside an acquisition in flight (see [`Sessions::beside`]); the next may be
/// sent once it is dropped.
#[derive(Debug)]
pub(crate) struct Beside<'a> {
    sessions: &'a Sessions,
    id: i64,
}

impl Drop for Beside<'_> {
    fn drop(&mut self) {
        locked(&self.sessions.beside).remove(&self.id);
    }
}

/// An acquisition in flight (see [`Sessions::pending`]).
#[derive(Debug)]
pub(crate) struct Pending<'a> {
    sessions: &'a Sessions,
    key: (LockName, u32),
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let mut pending = locked(&self.sessions.pending);
        if let Some(n) = pending.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                pending.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(lock: &str, slot: u32, token: Token, fence: u64) -> Lease {
        let lock = LockName::new(lock).unwrap_or_else(|e| panic!("{e}"));
        Lease {
            lock,
            slot,
            owner: "a".into(),
            token,
            fence,
            acquired_at: std::time::SystemTime::UNIX_EPOCH,
            expires_at: std::time::SystemTime::UNIX_EPOCH,
            period: None,
        }
    }

    #[test]
    fn grants_are_recognised_by_token_and_fence_and_go_with_their_session() {
        let sessions = Sessions::default();
        let token = Token::random();
        let held = lease("a", 0, token, 7);
        sessions.granted(
            &held.lock,
            0,
            Grant {
                token,
                fence: 7,
                session: 1,
                expires_ms: 5_000,
            },
        );
        assert!(sessions.grant_of(&held).is_some());
        assert!(!sessions.orphan(&held.lock, 0, 1, 4_999));
        assert!(
            sessions.orphan(&held.lock, 0, 1, 5_000),
            "its lease ran out"
        );
        assert!(
            sessions.orphan(&held.lock, 0, 2, 4_999),
            "on another session"
        );
        sessions.extended(&held, 6_000);
        assert!(!sessions.orphan(&held.lock, 0, 1, 5_000));
        {
            let _in_flight = sessions.pending(&held.lock, 1);
            assert!(!sessions.orphan(&held.lock, 1, 1, 0));
        }
        assert!(sessions.orphan(&held.lock, 1, 1, 0));
        assert!(sessions.grant_of(&lease("a", 0, token, 8)).is_none());
        assert!(
            sessions
                .grant_of(&lease("a", 0, Token::random(), 7))
                .is_none()
        );
        sessions.forget(&lease("a", 0, Token::random(), 7));
        assert!(
            sessions.grant_of(&held).is_some(),
            "a forged lease forgets nothing"
        );
        sessions.lost(1);
        assert!(sessions.grant_of(&held).is_none());
    }

    #[test]
    fn one_keep_alive_beside_acquisitions_at_a_time_per_session() {
        let sessions = Sessions::default();
        let s = Session {
            id: 1,
            asked: 3,
            granted: 3,
            renewed_ms: 0,
        };
        let first = sessions.beside(&s);
        assert!(first.is_some());
        assert!(sessions.beside(&s).is_none(), "one in flight already");
        assert!(
            sessions.beside(&Session { id: 2, ..s }).is_some(),
            "per session"
        );
        drop(first);
        assert!(
            sessions.beside(&s).is_some(),
            "the next once it is answered"
        );
    }

    #[test]
    fn a_session_needs_renewing_beside_a_grant_that_would_outlive_it() {
        let s = Session {
            id: 1,
            asked: 3,
            granted: 3,
            renewed_ms: 10_000,
        };
        assert_eq!(s.deadline_ms(), 13_000);
        assert_eq!(Sessions::renewal(&s, 10_000, 3_000), Renewal::None);
        assert_eq!(
            Sessions::renewal(&s, 10_300, 3_000),
            Renewal::None,
            "a lease at most a tenth short ends with the session"
        );
        assert_eq!(Sessions::renewal(&s, 10_301, 3_000), Renewal::Beside);
        assert_eq!(Sessions::renewal(&s, 11_000, 1_000), Renewal::None);
        let long = Session { granted: 30, ..s };
        assert_eq!(Sessions::renewal(&long, 11_000, 30_000), Renewal::None);
        assert_eq!(Sessions::renewal(&long, 11_001, 30_000), Renewal::Beside);
    }
}
