//! The protocol room: every request this store sends to etcd, in one place.
//!
//! | operation | requests | atomic by |
//! |---|---|---|
//! | read a lock (`state`) | one linearizable range get of `<prefix>/<lock>/` (its slot keys and its ledger); for keys on a session whose stored expiry has passed, one `LeaseTimeToLive` per distinct session | one read |
//! | acquire, one slot | one transaction: *if* slot 0's key has `create_revision` 0, put the record attached to the session, *else* get the lock's range (where a retried request finds its own grant). A session with less than a third of its TTL left is kept alive first; one that would end before the new lease gets a keep-alive sent beside the transaction (one in flight per session: concurrent acquisitions share it), unless the session ends at most a second (or a tenth of its TTL) before the new lease would: the lease then ends with the session | the compare on `create_revision`: the key is created once |
//! | acquire, a group | a read of the lock (our own live grant returned as is), then per attempt the transaction above on the lowest free slot | as above |
//! | acquire with a period | a read of the lock; then per attempt one transaction: *if* slot 0's key is absent *and* the ledger's `mod_revision` is the one read (or it is absent), put slot 0 on the session **and** the ledger (the new claim, not started), *else* get the lock's range | one transaction over both keys |
//! | start a period | a read of the lock; then one transaction: *if* slot 0's and the ledger's `mod_revision` are as read, put the ledger marked started, *else* get the lock's range | one transaction over both keys |
//! | period record | one get of `<prefix>/<lock>/ledger` | one read |
//! | clear the ledger | one get of the ledger key; then one transaction: *if* its `mod_revision` is as read, delete it | the compare on `mod_revision` |
//! | extend many (`extend_many`), the grants of this store on a session of the same TTL | per session, whatever the number of leases: one keep-alive and, beside it, one `LeaseTimeToLive` with the keys attached; a lease is extended if its key is still attached and it has not run out. Keys on the session no live grant accounts for are deleted, one transaction per 100 (*if* still on the session) | the keep-alive; each key's presence on the session |
//! | extend, a grant on a session of the same TTL | as `extend_many` with one lease | |
//! | extend, any other key on a session | a get of the slot key; the same TTL: a keep-alive of its session; another TTL: one transaction *if* the key's `mod_revision` is as read, move it to this store's session for that TTL | the compare on `mod_revision` |
//! | extend, a key on its own etcd lease (an earlier version's) | one get of the slot key; the same TTL: a lease keep-alive, another TTL: a lease grant; then one transaction: *if* the key's `mod_revision` is as read, put the record with the new expiry (on the new lease, or keeping the key's); the old lease revoked after a move | the compare on `mod_revision` |
//! | release, a grant of this store on a session | one transaction: *if* the key's `create_revision` and `mod_revision` are both the fence (the grant's key, never rewritten), delete it | the compares |
//! | release, otherwise | one get of the slot key; then one transaction: *if* its `mod_revision` is as read, delete it (an etcd lease of its own revoked after, never a session), or with a linger put it marked released on a new etcd lease of the linger | the compare on `mod_revision` |
//! | force release | a read of the lock; then one transaction per 100 live slots: *if* every `mod_revision` is as read, delete them all; etcd leases of their own revoked after (sessions are not: their holders learn at the next renewal) | the compares on `mod_revision` |
//! | list | one range get over `[<prefix>/0, <prefix>/{)` with a limit (the `list` module), and the session reads of `state` | one read |
//! | release signal | one watch on `<prefix>/` for deletes (the `watch` module) | — |
//!
//! * The **fence** is the slot key's `create_revision`: the cluster-wide revision of the put that
//!   created it. Revisions only grow (across leaders, member restarts and compaction), and a key
//!   is created again only after it was deleted, so every grant of a slot gets a higher fence.
//! * Every change after the grant is conditioned on the key being the grant's: its
//!   `create_revision` (and `mod_revision`) as granted, or as read just before after checking
//!   the token and fence in what was read. Nothing changes a lease its holder no longer holds.
//! * **Sessions** (the `session` module): a store attaches every key it acquires with one TTL
//!   (rounded up to whole seconds) to one etcd lease, kept alive by one keep-alive per renewal
//!   for all of them, as etcd's own `concurrency.Session`. etcd deletes them all when it runs
//!   out: a lost session frees its locks no earlier than etcd's TTL, counted from the last
//!   keep-alive etcd received, which is never before the holder's own deadline (counted from
//!   when it sent it). A lease that runs out while its session lives on has its key deleted at
//!   the session's next renewal, so no key outlives its lease by more than a renewal period.

mod acquire;
mod extend_release;
mod period;
mod read;
mod renew;

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, LeaseGrantOptions, PutOptions, Txn, TxnOp, TxnResponse};
use leasehold::store::{
    AcquireRequest, SlotRecord, StoreError, StoreResult, ceil_millis, ceil_secs,
};

use crate::keys::Keys;
use crate::link::Link;
use crate::record::{Record, encode};
use crate::session::{Renewal, Session, Sessions};

/// What every request needs, and one method per request (in the files of this module): the
/// link to the cluster, the key layout, and this store's sessions.
pub(crate) struct Protocol {
    pub(crate) link: Arc<Link>,
    pub(crate) keys: Keys,
    /// The etcd leases this store attaches its keys to, one per TTL, and its grants on them.
    pub(crate) sessions: Sessions,
}

/// The longest TTL etcd grants, in seconds (etcd's `MaxLeaseTTL`).
pub(crate) const MAX_TTL_SECS: i64 = 9_000_000_000;

/// Whole seconds for an etcd lease: `ttl` rounded **up** (so a lease is never shorter than
/// asked), at least 1, at most etcd's maximum. etcd may raise it further to its own minimum
/// (1.5 election timeouts, rounded up: 2 s with the default 1 s election timeout); the grant's
/// answer says what it chose, and expiries are computed from that.
///
/// ```text
/// 300ms → 1 s, 1s → 1 s, 1.2s → 2 s
/// ```
pub(crate) fn ttl_secs(ttl: Duration) -> i64 {
    let secs = ceil_secs(ttl).max(1);
    i64::try_from(secs)
        .unwrap_or(MAX_TTL_SECS)
        .min(MAX_TTL_SECS)
}

pub(crate) fn secs_ms(secs: i64) -> u64 {
    u64::try_from(secs).unwrap_or(0).saturating_mul(1000)
}

/// The expiry of a lease asked for `ttl` at `sent_ms` on an etcd lease of `granted` seconds:
/// `ttl` later, but never after the etcd lease (etcd only ever grants more than asked; this
/// holds even if it did not, and for TTLs beyond etcd's maximum).
pub(super) fn expiry(sent_ms: u64, ttl: Duration, granted: i64) -> u64 {
    sent_ms.saturating_add(ceil_millis(ttl).min(secs_ms(granted)))
}

/// The fence of a grant: the revision of the transaction that put the slot's record.
pub(super) fn granted_fence(resp: &TxnResponse) -> StoreResult<u64> {
    let revision = resp.header().map_or(0, |h| h.revision());
    u64::try_from(revision)
        .map_err(|_| StoreError::permanent("etcd answered a put without its revision"))
}

/// Sends one transaction (again only when it was certainly not applied).
pub(crate) async fn txn(link: &Link, what: &str, txn: Txn) -> StoreResult<TxnResponse> {
    link.call_kv(what, |mut kv| {
        let txn = txn.clone();
        async move { kv.txn(txn).await }
    })
    .await
}

impl Protocol {
    /// The record a grant of `req` on `slot` puts, attached to `session` (its fence and revision
    /// are filled in by the transaction that puts it). Its expiry is the one the grant will have:
    /// `ttl` from `sent_ms` when the session is renewed beside it, else at most the session's end
    /// ([`session_expiry`](Self::session_expiry)); should the renewal fail, the grant's lease ends
    /// sooner than recorded.
    pub(super) fn session_record(
        &self,
        req: &AcquireRequest,
        sent_ms: u64,
        slot: u32,
        (session, renewal): (&Session, Renewal),
    ) -> Record {
        let mut held = SlotRecord::granted(req, slot, sent_ms);
        held.expires_ms = match renewal {
            Renewal::Beside => expiry(sent_ms, req.ttl, session.granted),
            Renewal::None => self.session_expiry(session, sent_ms, req.ttl),
        };
        Record {
            held,
            asked: session.asked,
            granted: session.granted,
            mod_revision: 0,
            lease_id: session.id,
            session: true,
        }
    }

    /// The expiry of a lease of `ttl` granted at `sent_ms` on `session`: `ttl` later, but never
    /// after the session's etcd lease as last renewed.
    pub(super) fn session_expiry(&self, session: &Session, sent_ms: u64, ttl: Duration) -> u64 {
        let deadline = self
            .sessions
            .by_id(session.id)
            .map_or(session.deadline_ms(), |s| s.deadline_ms());
        expiry(sent_ms, ttl, session.granted).min(deadline)
    }

    /// Sends `t`, an acquisition putting a key on `session`, with the session's keep-alive beside
    /// it when `renewal` asks for one. `None` when the session turned out to be gone (it is
    /// forgotten: try again on a new one).
    pub(super) async fn txn_on_session(
        &self,
        session: &Session,
        renewal: Renewal,
        t: Txn,
    ) -> StoreResult<Option<TxnResponse>> {
        let renew = async {
            match renewal {
                // One at a time per session, whatever the number of acquisitions that find it
                // due (the others' leases are capped at the session's end as known when their
                // transactions are answered); boxed: about once a second, and the acquisition's
                // future stays small.
                Renewal::Beside => match self.sessions.beside(session) {
                    Some(_one) => Box::pin(self.sessions.keep_alive(&self.link, session))
                        .await
                        .map(Some),
                    None => Ok(None),
                },
                Renewal::None => Ok(None),
            }
        };
        let (resp, renewed) = tokio::join!(txn(&self.link, "an acquisition", t), renew);
        if matches!(renewed, Ok(Some(false))) {
            return Ok(None);
        }
        match resp {
            Err(e) if e.message().contains("lease not found") => {
                self.sessions.lost(session.id);
                Ok(None)
            }
            other => other.map(Some),
        }
    }

    /// Puts `record` (re-encoded) if the key still has `mod_revision`, attached to `lease_id`
    /// (`None`: keep the key's lease).
    pub(super) async fn swap(
        &self,
        key: &str,
        mod_revision: i64,
        record: &Record,
        lease_id: Option<i64>,
    ) -> StoreResult<bool> {
        let put = match lease_id {
            Some(id) => PutOptions::new().with_lease(id),
            None => PutOptions::new().with_ignore_lease(),
        };
        let t = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, mod_revision)])
            .and_then([TxnOp::put(key, encode(record), Some(put))]);
        Ok(txn(&self.link, "a lease update", t).await?.succeeded())
    }
}

/// Grants an etcd lease of `secs` seconds: its id and the TTL etcd chose.
pub(crate) async fn grant(link: &Link, secs: i64) -> StoreResult<(i64, i64)> {
    let resp = link
        .idempotent("a lease grant", |mut c| async move {
            c.lease_grant(secs, Some(LeaseGrantOptions::new())).await
        })
        .await?;
    if !resp.error().is_empty() {
        return Err(StoreError::transient(format!(
            "etcd refused a lease: {}",
            resp.error()
        )));
    }
    Ok((resp.id(), resp.ttl()))
}

/// Revokes a lease we no longer need; failures only cost the lease running out on its own.
pub(crate) async fn revoke_quietly(link: &Link, id: i64) {
    if id == 0 {
        return;
    }
    let revoked = link
        .idempotent("a lease revocation", |mut c| async move {
            c.lease_revoke(id).await
        })
        .await;
    if let Err(e) = revoked
        && !e.message().contains("not found")
    {
        tracing::debug!(error = %e, lease = id, "etcd lease left to expire");
    }
}

/// Renews a lease to its granted TTL; `false` if it no longer exists.
pub(crate) async fn keep_alive(link: &Link, id: i64) -> StoreResult<bool> {
    link.idempotent("a lease keep-alive", |mut c| async move {
        match c.lease_keep_alive(id).await {
            Ok(_) => Ok(true),
            Err(etcd_client::Error::LeaseKeepAliveError(m)) if m.contains("not found") => Ok(false),
            Err(etcd_client::Error::GRpcStatus(s)) if s.message().contains("not found") => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_seconds() {
        assert_eq!(ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(ttl_secs(Duration::ZERO), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1000)), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1001)), 2);
        assert_eq!(ttl_secs(Duration::MAX), MAX_TTL_SECS);
    }

    #[test]
    fn expiries_never_pass_the_etcd_lease() {
        assert_eq!(expiry(1000, Duration::from_millis(300), 1), 1300);
        assert_eq!(expiry(1000, Duration::from_millis(2500), 2), 3000);
        assert_eq!(
            expiry(0, Duration::MAX, MAX_TTL_SECS),
            secs_ms(MAX_TTL_SECS)
        );
    }
}
