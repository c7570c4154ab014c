//! Extending and releasing a lease: compare-and-set writes expecting the sequence last written
//! or read.

use std::time::Duration;

use bytes::Bytes;
use leasehold::store::{StoreResult, ceil_millis};
use leasehold::{
    Lease,
    store::{Extension, Release},
};

use super::read::read_slot;
use super::{cas_ttl, delete_marker, publish};
use crate::classify::Published;
use crate::keys::Keys;
use crate::link::{Conn, Link};
use crate::record::{Record, now_ms};
use crate::written::Written;

/// Extends a lease to `ttl` from now, if it has not run out: a new value with a fresh TTL,
/// expecting the sequence of this client's own last write of it (one request), or else the
/// sequence read.
pub(crate) async fn extend(
    link: &Link,
    keys: &Keys,
    written: &Written,
    lease: &Lease,
    ttl: Duration,
) -> StoreResult<Extension> {
    let conn = link.conn().await?;
    if let Some(rec) = written.mine(lease) {
        if let Some(answer) = extend_from(conn, link, keys, written, lease, rec, ttl).await? {
            return Ok(answer);
        }
        written.forget(lease);
    }
    let Some(rec) = read_slot(conn, link, keys, lease)
        .await?
        .filter(|r| r.held.is(lease))
    else {
        return Ok(Extension::NotHeld);
    };
    Ok(extend_from(conn, link, keys, written, lease, rec, ttl)
        .await?
        .unwrap_or(Extension::NotHeld))
}

/// The extension of `rec`, the record of `lease` at `rec.seq`; `None` when the key changed since.
async fn extend_from(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    written: &Written,
    lease: &Lease,
    rec: Record,
    ttl: Duration,
) -> StoreResult<Option<Extension>> {
    let sent = now_ms();
    if !rec.held.live_at(sent) {
        return Ok(Some(Extension::NotHeld));
    }
    let mut next = rec.clone();
    next.held.expires_ms = sent.saturating_add(ceil_millis(ttl));
    let subject = keys.slot(&lease.lock, lease.slot);
    let payload = Bytes::from(next.encode(false));
    let headers = cas_ttl(rec.seq, ttl);
    match publish(conn, link, "an extension", subject, headers, payload).await? {
        Published::Stored(seq) => {
            next.seq = seq;
            written.remember(&lease.lock, &next);
            Ok(Some(Extension::Extended {
                expires_at: crate::record::time(next.held.expires_ms),
            }))
        }
        Published::Conflict => Ok(None),
    }
}

/// Releases a lease. Without linger the key gets a delete marker (compare-and-set). With linger
/// the record is written again, marked released (so it can no longer be extended), ending at the
/// earlier of its end and `linger` from now, with a TTL of what is left of it. A lease that
/// already ran out by this host's clock is deleted all the same (it is ours), but reported
/// `NotHeld`. The write expects the sequence of this client's own last write (one request), or
/// else the sequence read.
pub(crate) async fn release(
    link: &Link,
    keys: &Keys,
    written: &Written,
    lease: &Lease,
    linger: Duration,
) -> StoreResult<Release> {
    let conn = link.conn().await?;
    let remembered = written.mine(lease);
    written.forget(lease);
    if let Some(rec) = remembered
        && let Some(answer) = release_from(conn, link, keys, lease, rec, linger).await?
    {
        return Ok(answer);
    }
    let Some(rec) = read_slot(conn, link, keys, lease)
        .await?
        .filter(|r| r.held.is(lease))
    else {
        return Ok(Release::NotHeld);
    };
    Ok(release_from(conn, link, keys, lease, rec, linger)
        .await?
        .unwrap_or(Release::NotHeld))
}

/// The release of `rec`, the record of `lease` at `rec.seq`; `None` when the key changed since.
async fn release_from(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    lease: &Lease,
    rec: Record,
    linger: Duration,
) -> StoreResult<Option<Release>> {
    let sent = now_ms();
    let live = rec.held.live_at(sent);
    let subject = keys.slot(&lease.lock, lease.slot);
    let (headers, payload) = if linger.is_zero() || !live {
        (delete_marker(rec.seq), Bytes::new())
    } else {
        let mut next = rec.clone();
        next.held.released = true;
        next.held.expires_ms = rec
            .held
            .expires_ms
            .min(sent.saturating_add(ceil_millis(linger)));
        let left = Duration::from_millis(next.held.expires_ms.saturating_sub(sent));
        (cas_ttl(rec.seq, left), Bytes::from(next.encode(false)))
    };
    Ok(
        match publish(conn, link, "a release", subject, headers, payload).await? {
            Published::Stored(_) if live => Some(Release::Released),
            Published::Stored(_) => Some(Release::NotHeld),
            Published::Conflict => None,
        },
    )
}
