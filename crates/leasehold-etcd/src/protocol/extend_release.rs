//! Extending and releasing a lease: through its session when this store holds it on one;
//! otherwise compare-and-swaps on the slot key's `mod_revision` after reading it.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use leasehold::Lease;
use leasehold::store::{Extension, Release, StoreResult, ceil_millis, time_at_ms};

use super::{Protocol, expiry, grant, keep_alive, revoke_quietly, secs_ms, ttl_secs, txn};
use crate::record::{Record, now_ms};
use crate::session::{Grant, Renewal, Sessions};

impl Protocol {
    /// Extends a lease to `ttl` from now, if it has not run out.
    ///
    /// * A grant of this store on its session for the same TTL: the session's renewal (one
    ///   keep-alive, one read of its keys; see the `renew` module).
    /// * Any other key on a session: with the same TTL, a keep-alive of that session; with another
    ///   TTL, the key moved to this store's session for it (compare-and-swap).
    /// * A key on its own etcd lease (written by an earlier version): with the TTL it was granted
    ///   for, the etcd lease is kept alive; with another TTL, a new etcd lease is granted and the
    ///   key moved to it. Either way the record's expiry is then updated by a compare-and-swap.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let (link, sessions) = (&*self.link, &self.sessions);
        let asked = ttl_secs(ttl);
        if sessions
            .grant_of(lease)
            .and_then(|g| sessions.by_id(g.session))
            .is_some_and(|s| s.asked == asked)
        {
            let one = [(lease.clone(), ttl)];
            let mut each = self.extend_many(&one).await;
            return each.pop().unwrap_or(Ok(Extension::NotHeld));
        }
        let sent_ms = now_ms();
        let Some(rec) = self
            .read_slot(lease)
            .await?
            .map(|r| with_local_expiry(sessions, lease, r))
            .filter(|r| r.is(lease) && r.live_at(sent_ms))
        else {
            return Ok(Extension::NotHeld);
        };
        let key = self.keys.slot(&lease.lock, lease.slot);
        if rec.session {
            return self.extend_on_session(&key, lease, ttl, rec).await;
        }
        let mut next = rec.clone();
        next.asked = asked;
        next.expires_ms = expiry(sent_ms, ttl, rec.granted);
        if asked == rec.asked {
            if !keep_alive(link, rec.lease_id).await? {
                return Ok(Extension::NotHeld);
            }
            if !self.swap(&key, rec.mod_revision, &next, None).await? {
                return Ok(Extension::NotHeld);
            }
        } else {
            let (id, granted) = grant(link, asked).await?;
            next.granted = granted;
            next.expires_ms = expiry(sent_ms, ttl, granted);
            if !self.swap(&key, rec.mod_revision, &next, Some(id)).await? {
                revoke_quietly(link, id).await;
                return Ok(Extension::NotHeld);
            }
            revoke_quietly(link, rec.lease_id).await;
        }
        Ok(Extension::Extended {
            expires_at: time_at_ms(next.expires_ms),
        })
    }
}

/// `rec` as read for `lease`, with the lease's end as this store granted or extended it when it
/// is a grant of this store on a session (read, a session's key only says when the session could
/// end at the latest).
fn with_local_expiry(sessions: &Sessions, lease: &Lease, mut rec: Record) -> Record {
    if rec.session
        && let Some(grant) = sessions.grant_of(lease)
    {
        rec.expires_ms = grant.expires_ms;
    }
    rec
}

impl Protocol {
    /// Extends `lease`, whose key `rec` (read just before) is on a session.
    async fn extend_on_session(
        &self,
        key: &str,
        lease: &Lease,
        ttl: Duration,
        rec: Record,
    ) -> StoreResult<Extension> {
        let (link, sessions) = (&*self.link, &self.sessions);
        let sent_ms = now_ms();
        let asked = ttl_secs(ttl);
        if asked == rec.asked {
            // Another store's session (or one this store no longer tracks): keep it alive.
            if !keep_alive(link, rec.lease_id).await? {
                return Ok(Extension::NotHeld);
            }
            return Ok(Extension::Extended {
                expires_at: time_at_ms(expiry(sent_ms, ttl, rec.granted)),
            });
        }
        let (session, renewal) = sessions.for_grant(link, asked, ceil_millis(ttl)).await?;
        if renewal == Renewal::Beside && !sessions.keep_alive(link, &session).await? {
            return Ok(Extension::NotHeld);
        }
        let until = self.session_expiry(&session, sent_ms, ttl);
        let mut next = rec.clone();
        next.asked = session.asked;
        next.granted = session.granted;
        next.lease_id = session.id;
        next.expires_ms = until;
        if !self
            .swap(key, rec.mod_revision, &next, Some(session.id))
            .await?
        {
            return Ok(Extension::NotHeld);
        }
        sessions.granted(
            &lease.lock,
            lease.slot,
            Grant {
                token: lease.token,
                fence: lease.fence,
                session: session.id,
                expires_ms: until,
            },
        );
        Ok(Extension::Extended {
            expires_at: time_at_ms(until),
        })
    }

    /// Releases a lease. A grant of this store on a session, without linger: one transaction that
    /// deletes its key if it is still the one created at the lease's fence and never rewritten
    /// since; a lease that already ran out by this host's clock is deleted all the same but
    /// reported `NotHeld`. Otherwise a read of the key first, then: without linger the key is
    /// deleted (compare-and-swap) and its etcd lease revoked unless it is a session's. With linger
    /// the key is moved to a new etcd lease of the linger (rounded up to whole seconds) — unless
    /// that would not end sooner than the lease does, in which case the lease is left to run out —
    /// and marked released so it can no longer be extended. A lease that already ran out by this
    /// host's clock is deleted all the same (it is ours), but reported `NotHeld`.
    pub(crate) async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let (link, keys, sessions) = (&*self.link, &self.keys, &self.sessions);
        let sent_ms = now_ms();
        if linger.is_zero()
            && let Some(grant) = sessions.grant_of(lease)
            && let Ok(fence) = i64::try_from(lease.fence)
        {
            let key = keys.slot(&lease.lock, lease.slot);
            let t = Txn::new()
                .when([
                    Compare::create_revision(key.as_str(), CompareOp::Equal, fence),
                    Compare::mod_revision(key.as_str(), CompareOp::Equal, fence),
                ])
                .and_then([TxnOp::delete(key.as_str(), None)]);
            if txn(link, "a release", t).await?.succeeded() {
                sessions.forget(lease);
                return Ok(if grant.expires_ms > sent_ms {
                    Release::Released
                } else {
                    Release::NotHeld
                });
            }
        }
        let Some(rec) = self
            .read_slot(lease)
            .await?
            .map(|r| with_local_expiry(sessions, lease, r))
            .filter(|r| r.is(lease))
        else {
            return Ok(Release::NotHeld);
        };
        let key = keys.slot(&lease.lock, lease.slot);
        let live = rec.live_at(sent_ms);
        let done = |ok: bool| {
            if ok && live {
                Release::Released
            } else {
                Release::NotHeld
            }
        };
        if linger.is_zero() || !live {
            let t = Txn::new()
                .when([Compare::mod_revision(
                    key.as_str(),
                    CompareOp::Equal,
                    rec.mod_revision,
                )])
                .and_then([TxnOp::delete(key.as_str(), None)]);
            let deleted = txn(link, "a release", t).await?.succeeded();
            if deleted {
                sessions.forget(lease);
                if !rec.session {
                    revoke_quietly(link, rec.lease_id).await;
                }
            }
            return Ok(done(deleted));
        }
        let mut next = rec.clone();
        next.released = true;
        let remaining = rec.expires_ms.saturating_sub(sent_ms);
        next.expires_ms = rec
            .expires_ms
            .min(sent_ms.saturating_add(ceil_millis(linger)));
        let secs = ttl_secs(linger);
        if secs_ms(secs) < remaining {
            let (id, granted) = grant(link, secs).await?;
            if secs_ms(granted) < remaining {
                next.granted = granted;
                next.session = false;
                let moved = self.swap(&key, rec.mod_revision, &next, Some(id)).await?;
                if moved {
                    sessions.forget(lease);
                }
                if !moved {
                    revoke_quietly(link, id).await;
                } else if !rec.session {
                    revoke_quietly(link, rec.lease_id).await;
                }
                return Ok(done(moved));
            }
            revoke_quietly(link, id).await;
        }
        // The key stays on its etcd lease, marked released, until that runs out. A session's key
        // would stay as long as the session: it is moved to a lease of its own first.
        if rec.session {
            let (id, granted) = grant(link, ttl_secs(Duration::from_millis(remaining))).await?;
            next.granted = granted;
            next.session = false;
            let moved = self.swap(&key, rec.mod_revision, &next, Some(id)).await?;
            if moved {
                sessions.forget(lease);
            } else {
                revoke_quietly(link, id).await;
            }
            return Ok(done(moved));
        }
        Ok(done(self.swap(&key, rec.mod_revision, &next, None).await?))
    }
}
