//! The protocol room: every request this store sends to etcd, in one place.
//!
//! | operation | requests | atomic by |
//! |---|---|---|
//! | read a lock (`state`) | one linearizable range get of `<prefix>/<lock>/` (its slot keys and its ledger) | one read |
//! | acquire | a read of the lock; a lease grant (the TTL rounded up to whole seconds); then per attempt one transaction: *if* the lowest free slot's key has `create_revision` 0, put the record with the lease, *else* get the lock's range | the compare on `create_revision`: the key is created once |
//! | acquire with a period | a read of the lock; a lease grant; then per attempt one transaction: *if* slot 0's key is absent *and* the ledger's `mod_revision` is the one read (or it is absent), put slot 0 with the lease **and** the ledger (the new claim, not started), *else* get the lock's range | one transaction over both keys |
//! | start a period | a read of the lock; then one transaction: *if* slot 0's and the ledger's `mod_revision` are as read, put the ledger marked started, *else* get the lock's range | one transaction over both keys |
//! | period record | one get of `<prefix>/<lock>/ledger` | one read |
//! | clear the ledger | one get of the ledger key; then one transaction: *if* its `mod_revision` is as read, delete it | the compare on `mod_revision` |
//! | extend | one get of the slot key; the same TTL: a lease keep-alive, another TTL: a lease grant; then one transaction: *if* the key's `mod_revision` is as read, put the record with the new expiry (on the new lease, or keeping the key's); the old lease revoked after a move | the compare on `mod_revision` |
//! | release | one get of the slot key; then one transaction: *if* its `mod_revision` is as read, delete it (the lease revoked after), or with a linger put it marked released (moved to a lease of the linger when that ends sooner) | the compare on `mod_revision` |
//! | force release | a read of the lock; then one transaction per 100 live slots: *if* every `mod_revision` is as read, delete them all; their leases revoked after | the compares on `mod_revision` |
//! | list | one range get over `[<prefix>/0, <prefix>/{)` with a limit (the `list` module) | one read |
//! | release signal | one watch on `<prefix>/` for deletes (the `watch` module) | — |
//!
//! * The **fence** is the slot key's `create_revision`: the cluster-wide revision of the put that
//!   created it. Revisions only grow (across leaders, member restarts and compaction), and a key
//!   is created again only after it was deleted, so every grant of a slot gets a higher fence.
//! * Every change after the grant is a compare-and-swap on the key's `mod_revision` read just
//!   before, after checking the token and fence in what was read: nothing changes a lease its
//!   holder no longer holds.
//! * Each slot key is attached to an etcd lease granted for its one acquisition, so etcd deletes
//!   it when the lease runs out.

mod acquire;
mod extend_release;
mod period;
mod read;

use std::time::Duration;

use etcd_client::{Compare, CompareOp, LeaseGrantOptions, PutOptions, Txn, TxnOp, TxnResponse};
use leasehold::store::{
    AcquireRequest, SlotRecord, StoreError, StoreResult, ceil_millis, ceil_secs,
};

use crate::link::Link;
use crate::record::{Record, encode};

pub(crate) use acquire::{acquire, acquire_period};
pub(crate) use extend_release::{extend, release};
pub(crate) use period::{clear_period, period_record, start_period};
pub(crate) use read::{force_release, read_lock};

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

pub(super) fn secs_ms(secs: i64) -> u64 {
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
    link.call(what, |mut c| {
        let txn = txn.clone();
        async move { c.txn(txn).await }
    })
    .await
}

/// A fresh etcd lease for `req` and the record a grant on `slot` writes under it (fence and
/// revision are filled in by the transaction that puts it).
pub(super) async fn new_grant(
    link: &Link,
    req: &AcquireRequest,
    sent_ms: u64,
    slot: u32,
) -> StoreResult<Record> {
    let asked = ttl_secs(req.ttl);
    let (lease_id, granted) = grant(link, asked).await?;
    let mut held = SlotRecord::granted(req, slot, sent_ms);
    held.expires_ms = expiry(sent_ms, req.ttl, granted);
    Ok(Record {
        held,
        asked,
        granted,
        mod_revision: 0,
        lease_id,
    })
}

/// Grants an etcd lease of `secs` seconds: its id and the TTL etcd chose.
pub(super) async fn grant(link: &Link, secs: i64) -> StoreResult<(i64, i64)> {
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
pub(super) async fn keep_alive(link: &Link, id: i64) -> StoreResult<bool> {
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

/// Puts `record` (re-encoded) if the key still has `mod_revision`, attached to `lease_id`
/// (`None`: keep the key's lease).
pub(super) async fn swap(
    link: &Link,
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
    Ok(txn(link, "a lease update", t).await?.succeeded())
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
