//! The protocol room: every request this store sends to JetStream, in one place.
//!
//! | operation | requests | atomic by |
//! |---|---|---|
//! | read a lock | one batch direct get, `{"multi_last": ["$KV.<bucket>.<lock>.>"], "batch": N}` to `$JS.API.DIRECT.GET.KV_<bucket>`: the latest message of every slot key and of the ledger | one batch read |
//! | read one slot | one direct get, `$JS.API.DIRECT.GET.KV_<bucket>.<subject>` | one read |
//! | grant | one publish of the record to the slot's subject with `Nats-Expected-Last-Subject-Sequence` = the sequence read (0: none) and `Nats-TTL` | the expected sequence |
//! | grant with a period | one **atomic batch** (`Nats-Batch-Id`, `Nats-Batch-Sequence`, `Nats-Batch-Commit`): the grant as above and the ledger (the new claim, not started) with its own expected sequence | one atomic batch |
//! | start a period | a read of the lock, then one publish of the ledger marked started, expecting the last sequence of the lock's whole filter (`Nats-Expected-Last-Subject-Sequence` with `Nats-Expected-Last-Subject-Sequence-Subject: $KV.<bucket>.<lock>.>`): slot 0 and the ledger unchanged since the read | the expected last sequence of the lock's filter |
//! | period record | one direct get of the ledger key | one read |
//! | clear the ledger | one direct get of the ledger key, then one delete marker on it expecting the sequence read | the expected sequence |
//! | extend | one publish of the record with a fresh `Nats-TTL`, expecting the sequence of this client's own last write of it ([`Written`](crate::written::Written)); after a conflict, or without one, a direct get of the slot first | the expected sequence |
//! | release | one delete marker (`KV-Operation: DEL`), expecting the sequence as for an extension | the expected sequence |
//! | force | one delete marker per live slot, expecting the sequence read | the expected sequence, per slot |
//! | release with linger | one publish of the record, marked released, with a `Nats-TTL` of the linger | the expected sequence |
//! | list | one batch direct get, `{"seq": S, "next_by_subj": "$KV.<bucket>.>", "batch": N}` (the `list` module) | one batch read |
//! | release signal | one KV watch of every key of the bucket (the `watch` module) | — |
//!
//! A wrong expected sequence (`err_code` 10071) means someone else wrote the key since it was
//! read: the lock is re-read (a bounded number of times) and the answer is `Held` or `NotHeld`,
//! never an error.
//!
//! The server removes a message when its `Nats-TTL` runs out and writes a marker
//! (`Nats-Marker-Reason: MaxAge`) in its place: that, a delete marker, or no message at all is a
//! free slot. TTLs are whole seconds: the lease rounded **up**, at least 1 s.

mod acquire;
mod extend_release;
mod period;
mod read;
pub(crate) mod session;

use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::StreamExt;
use leasehold::store::{StoreError, StoreResult, ceil_secs};

use crate::classify::{self, Published, timed_out};
use crate::keys::Keys;
use crate::link::{Conn, Link, MARKER_TTL};
use crate::record::{Op, SESSION_HEADER, Stored};

pub(crate) use acquire::{acquire, acquire_period};
pub(crate) use extend_release::release;
pub(crate) use period::{clear_period, period_record, start_period};
pub(crate) use read::{force_release, read_lock};

/// `Nats-TTL` for a lease of `ttl`: whole seconds, rounded **up**, at least 1 (the server's
/// granularity and minimum).
///
/// ```text
/// 300ms → "1s", 1s → "1s", 1.2s → "2s"
/// ```
pub(crate) fn ttl_header(ttl: Duration) -> String {
    format!("{}s", ceil_secs(ttl).max(1))
}

/// The API subject of direct gets on the bucket's stream.
fn direct(keys: &Keys) -> String {
    format!("$JS.API.DIRECT.GET.{}", keys.stream())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.as_str())
}

/// A stored message as a direct get returns it (the message's subject and sequence in headers).
fn stored(msg: async_nats::Message) -> Option<Stored> {
    let headers = msg.headers.as_ref()?;
    let subject = header(headers, "Nats-Subject")?.to_owned();
    let seq = header(headers, "Nats-Sequence")?.parse().ok()?;
    let gone = matches!(header(headers, "KV-Operation"), Some("DEL" | "PURGE"))
        || header(headers, "Nats-Marker-Reason").is_some();
    let session = header(headers, SESSION_HEADER).map(str::to_owned);
    Some(Stored {
        subject,
        seq,
        op: if gone { Op::Gone } else { Op::Put },
        payload: msg.payload,
        session,
    })
}

/// An error status of a direct get (404 is "no message", handled by the callers).
fn status_error(what: &str, msg: &async_nats::Message) -> StoreError {
    let code = msg.status.map_or(0, |s| s.as_u16());
    let description = msg.description.clone().unwrap_or_default();
    let kind = classify::api_kind(async_nats::jetstream::ErrorCode(0), usize::from(code));
    StoreError::new(
        kind,
        format!("NATS JetStream refused {what}: status {code} {description}"),
    )
}

/// A batch direct get: every message the request selects, in the server's order.
pub(crate) async fn read_batch(
    link: &Link,
    keys: &Keys,
    body: serde_json::Value,
) -> StoreResult<Vec<Stored>> {
    let conn = link.conn().await?;
    let budget = link.request_timeout();
    let what = "a read";
    let read = async {
        let inbox = conn.client.new_inbox();
        let mut replies = conn
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| classify::disconnected(what, e))?;
        conn.client
            .publish_with_reply(direct(keys), inbox, Bytes::from(body.to_string()))
            .await
            .map_err(|e| classify::disconnected(what, e))?;
        let mut out = Vec::new();
        while let Some(msg) = replies.next().await {
            match msg.status.map(|s| s.as_u16()) {
                None => out.extend(stored(msg)),
                // 204: the end of the batch; 404: nothing matched.
                Some(204 | 404) => return Ok(out),
                Some(_) => return Err(status_error(what, &msg)),
            }
        }
        Err(classify::disconnected(what, "the subscription closed"))
    };
    tokio::time::timeout(budget, read)
        .await
        .map_err(|_| timed_out(what, budget))?
}

/// The latest message of one subject, if any.
pub(super) async fn read_one(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    subject: &str,
) -> StoreResult<Option<Stored>> {
    let budget = link.request_timeout();
    let what = "a read";
    let request = conn
        .client
        .request(format!("{}.{subject}", direct(keys)), Bytes::new());
    let msg = tokio::time::timeout(budget, request)
        .await
        .map_err(|_| timed_out(what, budget))?
        .map_err(|e| classify::disconnected(what, e))?;
    match msg.status.map(|s| s.as_u16()) {
        None => Ok(stored(msg)),
        Some(404) => Ok(None),
        Some(_) => Err(status_error(what, &msg)),
    }
}

/// The headers of a compare-and-set write: the expected last sequence of the subject.
pub(super) fn cas(expected: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", expected.to_string());
    headers
}

/// A compare-and-set write with a TTL.
pub(super) fn cas_ttl(expected: u64, ttl: Duration) -> HeaderMap {
    let mut headers = cas(expected);
    headers.insert("Nats-TTL", ttl_header(ttl));
    headers
}

/// A delete marker written as a compare-and-set (it expires like the server's own markers).
pub(super) fn delete_marker(expected: u64) -> HeaderMap {
    let mut headers = cas_ttl(expected, MARKER_TTL);
    headers.insert("KV-Operation", "DEL");
    headers
}

/// One JetStream publish, answered with its sequence or a conflict.
pub(super) async fn publish(
    conn: &Conn,
    link: &Link,
    what: &str,
    subject: String,
    headers: HeaderMap,
    payload: Bytes,
) -> StoreResult<Published> {
    let budget = link.request_timeout();
    let sent = async {
        match conn
            .js
            .publish_with_headers(subject, headers, payload)
            .await
        {
            Ok(ack) => match ack.await {
                Ok(ack) => Ok(Published::Stored(ack.sequence)),
                Err(e) => classify::publish(what, &e),
            },
            Err(e) => classify::publish(what, &e),
        }
    };
    tokio::time::timeout(budget, sent)
        .await
        .map_err(|_| timed_out(what, budget))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_rounded_up_to_whole_seconds() {
        assert_eq!(ttl_header(Duration::from_millis(300)), "1s");
        assert_eq!(ttl_header(Duration::from_secs(1)), "1s");
        assert_eq!(ttl_header(Duration::from_millis(1200)), "2s");
        assert_eq!(ttl_header(Duration::ZERO), "1s");
    }
}
