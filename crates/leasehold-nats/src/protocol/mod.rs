//! The protocol room: every request this store sends to JetStream, in one place.
//!
//! | operation | requests | atomic by |
//! |---|---|---|
//! | read a lock | one batch direct get, `{"multi_last": ["$KV.<bucket>.<lock>.>"], "batch": N}` to `$JS.API.DIRECT.GET.KV_<bucket>`: the latest message of every slot key and of the ledger; when some record names a session, one more batch direct get of those session records (`{"multi_last": ["$KV.<bucket>.=session.<id>", …]}`, 256 per request) | one batch read (the session records are read after the lock: a session seen gone stays gone) |
//! | read many locks (`state_many`: a partition set's shard owners) | one batch direct get per 256 locks (fewer when their slots could not fit one answer of 1,024 messages), `{"multi_last": ["$KV.<bucket>.<lock>.>", …], "batch": 1024}`, then one batch direct get of the session records their records name (256 per request); a batch the server refuses is read one lock at a time | one batch read per request (the session records are read after every lock) |
//! | read one slot | one direct get, `$JS.API.DIRECT.GET.KV_<bucket>.<subject>` | one read |
//! | grant | one publish of the record to the slot's subject with `Nats-Expected-Last-Subject-Sequence` = the sequence read (0: none) and `Nats-TTL`: a lease of its own until its first extension | the expected sequence |
//! | grant with a period | one **atomic batch** (`Nats-Batch-Id`, `Nats-Batch-Sequence`, `Nats-Batch-Commit`): the grant as above and the ledger (the new claim, not started) with its own expected sequence | one atomic batch |
//! | start a period | a read of the lock, then one publish of the ledger marked started, expecting the last sequence of the lock's whole filter (`Nats-Expected-Last-Subject-Sequence` with `Nats-Expected-Last-Subject-Sequence-Subject: $KV.<bucket>.<lock>.>`): slot 0 and the ledger unchanged since the read | the expected last sequence of the lock's filter |
//! | period record | one direct get of the ledger key | one read |
//! | clear the ledger | one direct get of the ledger key, then one delete marker on it expecting the sequence read | the expected sequence |
//! | start a session | one publish of the session record to `=session.<id>` (`id` random) expecting no message (sequence 0), with `Nats-TTL` | the expected sequence |
//! | extend many (a beat), and extend (one entry) | **one publish of the session record per lease length**, with a fresh `Nats-TTL`, expecting the sequence of this client's own last write of it; on contention, a direct get of it (gone: the session and its leases are lost; revoked leases: a direct get of each lock record, and a delete marker where it still names the session) and the publish again; then, for each lease extended for the first time (or with another length than its session's), one publish of its lock record naming the session (`Leasehold-Session`), without a TTL, expecting the sequence of this client's own last write of it (the attachment); a lease this client does not hold: a direct get of its slot, then a renewal of its own record or of its session record | the expected sequence, per record |
//! | release | one delete marker (`KV-Operation: DEL`), expecting the sequence of this client's own last write of the record; after a conflict, or without one, a direct get of the slot (and of its session record), a revocation first when another client's session holds it, then the delete marker | the expected sequence |
//! | revoke one lease of a session | one publish of the session record with the lease's slot key and token added to its revoked list, expecting the sequence read, with the session's full `Nats-TTL`; on contention, a direct get and again | the expected sequence of the session record |
//! | force | a read of the lock; per held slot, the revocation (for a record under a session), then one delete marker expecting the sequence read | the expected sequence, per record |
//! | release with linger | one publish of the record, marked released, as a lease of its own (no session) with a `Nats-TTL` of the linger | the expected sequence |
//! | list | one batch direct get, `{"seq": S, "next_by_subj": "$KV.<bucket>.>", "batch": N}` (the `list` module), and the session records the page's lock records name | one batch read |
//! | release signal | one KV watch of every key of the bucket (the `watch` module) | — |
//!
//! **Why sessions, and why this way.** KV has no conditional write of many keys (an atomic
//! batch is all or nothing, so one lease lost would fail the whole beat), so one lease renewed
//! per write costs one publish per lease per lease/3: 3,333 a second for 10,000 leases at a
//! 3 s lease. A session record the lock records refer to costs one publish per renewal period,
//! however many leases, and lets the server's own TTL end every lease of a dead process at
//! once. Grants stay leases of their own (their own TTL) until their first extension: a grant
//! never waits on a session write, a lease released before its first renewal never touches
//! one, and the grant is safe whatever the session's state (the core times its local deadline
//! from the grant's send, which a session renewed earlier could not promise). Forced releases
//! revoke in the session record before deleting, so the holder's next renewal, which writes
//! that record, cannot miss them.
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
mod renew;
mod session;

use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::StreamExt;
use leasehold::store::{StoreError, StoreResult, ceil_secs};

use crate::classify::{self, Published, timed_out};
use crate::keys::Keys;
use crate::link::{Conn, Link, MARKER_TTL};
use crate::record::{Op, SESSION_HEADER, Stored};
use crate::written::Written;

pub(crate) use session::{Sessions, judge};

/// What every request needs, and one method per request (in the files of this module): the
/// connection to the server, the key layout, this client's memory of its own writes, and its
/// session records.
pub(crate) struct Protocol {
    pub(crate) link: Arc<Link>,
    pub(crate) keys: Keys,
    /// The leases this client holds, as last written (for renewals and one-request releases).
    pub(crate) written: Written,
    /// This client's session records, one per lease length.
    pub(crate) sessions: Sessions,
}

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

impl Protocol {
    /// A batch direct get: every message the request selects, in the server's order.
    pub(crate) async fn read_batch(&self, body: serde_json::Value) -> StoreResult<Vec<Stored>> {
        let conn = self.link.conn().await?;
        let budget = self.link.request_timeout();
        let what = "a read";
        let read = async {
            let inbox = conn.client.new_inbox();
            let mut replies = conn
                .client
                .subscribe(inbox.clone())
                .await
                .map_err(|e| classify::disconnected(what, e))?;
            conn.client
                .publish_with_reply(direct(&self.keys), inbox, Bytes::from(body.to_string()))
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
}

impl Protocol {
    /// The latest message of one subject, if any.
    pub(super) async fn read_one(&self, conn: &Conn, subject: &str) -> StoreResult<Option<Stored>> {
        let budget = self.link.request_timeout();
        let what = "a read";
        let request = conn
            .client
            .request(format!("{}.{subject}", direct(&self.keys)), Bytes::new());
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

impl Protocol {
    /// One JetStream publish, answered with its sequence or a conflict.
    pub(super) async fn publish(
        &self,
        conn: &Conn,
        what: &str,
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
    ) -> StoreResult<Published> {
        let budget = self.link.request_timeout();
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
