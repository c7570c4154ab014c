//! Extending and releasing a lease: compare-and-swaps on the slot key's `mod_revision`.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use leasehold::Lease;
use leasehold::store::{Extension, Release, StoreResult, ceil_millis, time_at_ms};

use super::read::read_slot;
use super::{expiry, grant, keep_alive, revoke_quietly, secs_ms, swap, ttl_secs, txn};
use crate::keys::Keys;
use crate::link::Link;
use crate::record::now_ms;

/// Extends a lease to `ttl` from now, if it has not run out. With the TTL it was granted for,
/// the etcd lease is kept alive (its TTL restarts); with another TTL, a new etcd lease is granted
/// and the key moved to it. Either way the record's expiry is then updated by a
/// compare-and-swap.
pub(crate) async fn extend(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
    ttl: Duration,
) -> StoreResult<Extension> {
    let sent_ms = now_ms();
    let Some(rec) = read_slot(link, keys, lease)
        .await?
        .filter(|r| r.is(lease) && r.live_at(sent_ms))
    else {
        return Ok(Extension::NotHeld);
    };
    let key = keys.slot(&lease.lock, lease.slot);
    let asked = ttl_secs(ttl);
    let mut next = rec.clone();
    next.asked = asked;
    next.expires_ms = expiry(sent_ms, ttl, rec.granted);
    if asked == rec.asked {
        if !keep_alive(link, rec.lease_id).await? {
            return Ok(Extension::NotHeld);
        }
        if !swap(link, &key, rec.mod_revision, &next, None).await? {
            return Ok(Extension::NotHeld);
        }
    } else {
        let (id, granted) = grant(link, asked).await?;
        next.granted = granted;
        next.expires_ms = expiry(sent_ms, ttl, granted);
        if !swap(link, &key, rec.mod_revision, &next, Some(id)).await? {
            revoke_quietly(link, id).await;
            return Ok(Extension::NotHeld);
        }
        revoke_quietly(link, rec.lease_id).await;
    }
    Ok(Extension::Extended {
        expires_at: time_at_ms(next.expires_ms),
    })
}

/// Releases a lease. Without linger the key is deleted (compare-and-swap) and its etcd lease
/// revoked. With linger the key is moved to a new etcd lease of the linger (rounded up to whole
/// seconds) — unless that would not end sooner than the lease does, in which case the lease is
/// left to run out — and marked released so it can no longer be extended. A lease that already
/// ran out by this host's clock is deleted all the same (it is ours), but reported `NotHeld`.
pub(crate) async fn release(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
    linger: Duration,
) -> StoreResult<Release> {
    let sent_ms = now_ms();
    let Some(rec) = read_slot(link, keys, lease).await?.filter(|r| r.is(lease)) else {
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
            revoke_quietly(link, rec.lease_id).await;
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
            let moved = swap(link, &key, rec.mod_revision, &next, Some(id)).await?;
            revoke_quietly(link, if moved { rec.lease_id } else { id }).await;
            return Ok(done(moved));
        }
        revoke_quietly(link, id).await;
    }
    Ok(done(swap(link, &key, rec.mod_revision, &next, None).await?))
}
