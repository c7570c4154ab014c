//! The protocol room: every request this store sends to JetStream, in one place.
//!
//! | operation | requests |
//! |---|---|
//! | read a lock | one batch direct get, `{"multi_last": ["$KV.<bucket>.<lock>.>"], "batch": N}` to `$JS.API.DIRECT.GET.KV_<bucket>`: the latest message of every slot key and of the ledger |
//! | read one slot | one direct get, `$JS.API.DIRECT.GET.KV_<bucket>.<subject>` |
//! | grant | one publish of the record to the slot's subject with `Nats-Expected-Last-Subject-Sequence` = the sequence read (0: none) and `Nats-TTL` |
//! | grant with a period | one **atomic batch** (`Nats-Batch-Id`, `Nats-Batch-Sequence`, `Nats-Batch-Commit`): the grant as above and the ledger (the new claim, not started) with its own expected sequence |
//! | start a period | a read of the lock, then one publish of the ledger marked started, expecting the last sequence of the lock's whole filter (`Nats-Expected-Last-Subject-Sequence` with `Nats-Expected-Last-Subject-Sequence-Subject: $KV.<bucket>.<lock>.>`): slot 0 and the ledger unchanged since the read |
//! | period record | one direct get of the ledger key |
//! | clear the ledger | one direct get of the ledger key, then one delete marker on it expecting the sequence read |
//! | extend | one publish of the record with a fresh `Nats-TTL`, expecting the sequence of this client's own last write of it ([`Written`]); after a conflict, or without one, a direct get of the slot first |
//! | release | one delete marker (`KV-Operation: DEL`), expecting the sequence as for an extension |
//! | force | one delete marker per live slot, expecting the sequence read |
//! | release with linger | one publish of the record, marked released, with a `Nats-TTL` of the linger |
//! | list | one batch direct get, `{"seq": S, "next_by_subj": "$KV.<bucket>.>", "batch": N}` |
//!
//! A wrong expected sequence (`err_code` 10071) means someone else wrote the key since it was
//! read: the lock is re-read (a bounded number of times) and the answer is `Held` or `NotHeld`,
//! never an error.
//!
//! The server removes a message when its `Nats-TTL` runs out and writes a marker
//! (`Nats-Marker-Reason: MaxAge`) in its place: that, a delete marker, or no message at all is a
//! free slot. TTLs are whole seconds: the lease rounded **up**, at least 1 s.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::StreamExt;
use leasehold::store::{
    AcquireRequest, Acquisition, ClaimVerdict, MAX_SLOTS, PeriodStart, StoreResult,
};
use leasehold::{
    Holder, Lease, LockName, Period, PeriodRecord,
    store::{Extension, Release, StoreError, Token},
};

use crate::classify::{self, Published, timed_out};
use crate::keys::{KeyOf, Keys};
use crate::link::{Conn, Link, MARKER_TTL};
use crate::record::{Ledger, Op, Record, Stored, ms_ceil, now_ms};
use crate::written::Written;

/// How often an acquisition re-reads a lock whose slot someone else wrote first before it
/// answers `Held` (it also stops as soon as no slot is free).
const ACQUIRE_ROUNDS: u32 = 8;
/// How often a forced release re-reads a lock that changed under it before giving up.
const FORCE_ROUNDS: usize = 5;
/// How often a period start re-reads a lock that changed under it before giving up (with a
/// transient error: the core tries again).
const START_ROUNDS: usize = 4;
/// How often a clear of the ledger re-reads a ledger that changed under it before giving up
/// (with a transient error: the operator tries again).
const CLEAR_ROUNDS: usize = 4;
/// The most messages one read of a lock returns: every slot (the server answers at most 1024
/// messages per batch direct get, and refuses a `multi_last` matching more keys with status 413,
/// a permanent error: only a lock used with all 1024 slots *and* a period ledger has more).
const LOCK_BATCH: u32 = MAX_SLOTS;

/// `Nats-TTL` for a lease of `ttl`: whole seconds, rounded **up**, at least 1 (the server's
/// granularity and minimum).
///
/// ```text
/// 300ms → "1s", 1s → "1s", 1.2s → "2s"
/// ```
pub(crate) fn ttl_header(ttl: Duration) -> String {
    format!("{}s", ttl.as_nanos().div_ceil(1_000_000_000).max(1))
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
    Some(Stored {
        subject,
        seq,
        op: if gone { Op::Gone } else { Op::Put },
        payload: msg.payload,
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
async fn read_one(
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
fn cas(expected: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Expected-Last-Subject-Sequence", expected.to_string());
    headers
}

/// A compare-and-set write with a TTL.
fn cas_ttl(expected: u64, ttl: Duration) -> HeaderMap {
    let mut headers = cas(expected);
    headers.insert("Nats-TTL", ttl_header(ttl));
    headers
}

/// A delete marker written as a compare-and-set (it expires like the server's own markers).
fn delete_marker(expected: u64) -> HeaderMap {
    let mut headers = cas_ttl(expected, MARKER_TTL);
    headers.insert("KV-Operation", "DEL");
    headers
}

/// One JetStream publish, answered with its sequence or a conflict.
async fn publish(
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

/// The keys of a lock as read: the leases this store wrote, the latest sequence of every slot
/// key, and the ledger.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The leases, by slot.
    pub(crate) records: Vec<Record>,
    /// Per slot with a message: its sequence and whether it is a value (a lease, or a value
    /// another program wrote, which is never overwritten) rather than a marker.
    last: BTreeMap<u32, (u64, bool)>,
    /// The period ledger, if the lock has one.
    pub(crate) ledger: Option<Ledger>,
    /// The sequence of the ledger key's latest message (0: none).
    ledger_seq: u64,
    /// The highest sequence among the latest messages of every key of the lock (0: none): the
    /// last sequence of the lock's filter, which a period start expects.
    lock_seq: u64,
}

impl Slots {
    pub(crate) fn read(keys: &Keys, messages: &[Stored]) -> Self {
        let mut slots = Self::default();
        for msg in messages {
            slots.lock_seq = slots.lock_seq.max(msg.seq);
            match keys.parse_subject(&msg.subject) {
                Some(KeyOf::Slot(_, slot)) => {
                    slots.last.insert(slot, (msg.seq, msg.op == Op::Put));
                    slots.records.extend(Record::decode(slot, msg));
                }
                Some(KeyOf::Ledger(_)) => {
                    slots.ledger_seq = msg.seq;
                    slots.ledger = Ledger::decode(msg);
                }
                None => {}
            }
        }
        slots.records.sort_by_key(|r| r.slot);
        slots
    }

    /// The lowest slot in `0..slots` without a live message.
    fn lowest_free(&self, slots: u32) -> Option<u32> {
        (0..slots.max(1)).find(|s| !self.last.get(s).is_some_and(|(_, live)| *live))
    }

    /// The sequence a write to `slot` must expect.
    fn expected(&self, slot: u32) -> u64 {
        self.last.get(&slot).map_or(0, |(seq, _)| *seq)
    }
}

/// Every key of `lock`.
pub(crate) async fn read_lock(link: &Link, keys: &Keys, lock: &LockName) -> StoreResult<Slots> {
    let body = serde_json::json!({ "multi_last": [keys.lock(lock)], "batch": LOCK_BATCH });
    let messages = read_batch(link, keys, body).await?;
    Ok(Slots::read(keys, &messages))
}

/// The record of `lease`'s slot, if it holds one of this store's.
async fn read_slot(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    lease: &Lease,
) -> StoreResult<Option<Record>> {
    let subject = keys.slot(&lease.lock, lease.slot);
    Ok(read_one(conn, link, keys, &subject)
        .await?
        .and_then(|msg| Record::decode(lease.slot, &msg)))
}

/// A new record for `req` in `slot`, timed from now.
fn new_record(req: &AcquireRequest, slot: u32) -> Record {
    let sent = now_ms();
    Record {
        slot,
        token: req.token,
        owner: req.owner.to_string(),
        fence: 0,
        acquired_ms: sent,
        expires_ms: sent.saturating_add(ms_ceil(req.ttl)),
        released: false,
        seq: 0,
    }
}

/// The live lease of `req`'s token among `held`, if a retried request was applied.
fn mine(held: &Slots, req: &AcquireRequest) -> Option<Record> {
    let now = now_ms();
    held.records
        .iter()
        .find(|r| {
            r.token == req.token && !r.released && r.live_at(now) && r.slot < req.slots.max(1)
        })
        .cloned()
}

/// Grants the lowest free slot of `req.lock`, or `None` when every slot is held.
pub(crate) async fn acquire(
    link: &Link,
    keys: &Keys,
    written: &Written,
    req: &AcquireRequest,
) -> StoreResult<Option<Lease>> {
    let conn = link.conn().await?;
    let mut held = read_lock(link, keys, &req.lock).await?;
    for _ in 0..ACQUIRE_ROUNDS.min(req.slots.max(1) + 1) {
        if let Some(r) = mine(&held, req) {
            return Ok(Some(r.lease(&req.lock)));
        }
        let Some(slot) = held.lowest_free(req.slots) else {
            return Ok(None);
        };
        let mut record = new_record(req, slot);
        let subject = keys.slot(&req.lock, slot);
        let headers = cas_ttl(held.expected(slot), req.ttl);
        let payload = Bytes::from(record.encode(true));
        match publish(conn, link, "an acquisition", subject, headers, payload).await? {
            Published::Stored(seq) => {
                record.fence = seq;
                record.seq = seq;
                written.remember(&req.lock, &record);
                return Ok(Some(record.lease(&req.lock)));
            }
            Published::Conflict => held = read_lock(link, keys, &req.lock).await?,
        }
    }
    Ok(mine(&held, req).map(|r| r.lease(&req.lock)))
}

/// One acquisition claiming `period` of the ledger (slot 0 only): a read of the lock (our own
/// live grant is returned as is), the ledger's judgement ([`judge_claim`](leasehold::store::judge_claim): a run granted at or
/// after the window's start refuses, an unstarted claim since then holds the period while slot 0
/// is taken), then one **atomic batch** per attempt that writes slot 0 and the ledger (the new
/// claim, not started, keeping the previous record's latest run), each with the sequence read as its expected last sequence, so both
/// commit or neither. The window comes from this host's clock (the server's time is only known
/// after a write).
pub(crate) async fn acquire_period(
    link: &Link,
    keys: &Keys,
    written: &Written,
    req: &AcquireRequest,
    period: Period,
) -> StoreResult<Acquisition> {
    let conn = link.conn().await?;
    let with_period = |r: Record| {
        let mut lease = r.lease(&req.lock);
        lease.period = Some(period.id_at_ms(i64::try_from(r.acquired_ms).unwrap_or(i64::MAX)));
        lease
    };
    let mut held = read_lock(link, keys, &req.lock).await?;
    for _ in 0..4 {
        if let Some(r) = mine(&held, req).filter(|r| r.slot == 0) {
            return Ok(Acquisition::Elected(with_period(r)));
        }
        let mut record = new_record(req, 0);
        let window = period.window_at_ms(i64::try_from(record.acquired_ms).unwrap_or(i64::MAX));
        let taken = held.lowest_free(1) != Some(0);
        match Ledger::judge(held.ledger.as_ref(), window.from_ms, taken) {
            ClaimVerdict::Ran => {
                return Ok(held.ledger.as_ref().map_or(Acquisition::Taken(None), |l| {
                    Acquisition::AlreadyRan(l.record())
                }));
            }
            ClaimVerdict::Claimed => return Ok(Acquisition::Taken(None)),
            ClaimVerdict::Free if taken => return Ok(Acquisition::Taken(None)),
            ClaimVerdict::Free => {}
        }
        let id = Token::random().to_hex();
        let mut grant = cas_ttl(held.expected(0), req.ttl);
        grant.insert("Nats-Batch-Id", id.as_str());
        grant.insert("Nats-Batch-Sequence", "1");
        let mut ledger = cas(held.ledger_seq);
        ledger.insert("Nats-Batch-Id", id.as_str());
        ledger.insert("Nats-Batch-Sequence", "2");
        ledger.insert("Nats-Batch-Commit", "1");
        conn.client
            .publish_with_headers(
                keys.slot(&req.lock, 0),
                grant,
                Bytes::from(record.encode(true)),
            )
            .await
            .map_err(|e| classify::disconnected("an acquisition", e))?;
        let value = Ledger::claim(
            window,
            record.acquired_ms,
            &req.owner,
            req.token,
            held.ledger.as_ref(),
        )
        .encode();
        let subject = keys.ledger(&req.lock);
        match publish(
            conn,
            link,
            "an acquisition",
            subject,
            ledger,
            Bytes::from(value),
        )
        .await?
        {
            Published::Stored(seq) => {
                // The batch is stored contiguously: the grant just before the ledger.
                record.fence = seq.saturating_sub(1);
                record.seq = record.fence;
                written.remember(&req.lock, &record);
                let mut lease = record.lease(&req.lock);
                lease.period = Some(window.id);
                return Ok(Acquisition::Elected(lease));
            }
            Published::Conflict => held = read_lock(link, keys, &req.lock).await?,
        }
    }
    Ok(Acquisition::Taken(None))
}

/// Marks `lease`'s period claim started: a read of the lock, then one publish of the ledger
/// marked *started*, conditioned on the last sequence of **every** key of the lock
/// (`Nats-Expected-Last-Subject-Sequence` with `Nats-Expected-Last-Subject-Sequence-Subject` =
/// the lock's filter), so it commits only if neither slot 0 nor the ledger changed since the
/// read — after checking that `lease` holds slot 0 (token, fence, not released, not run out by
/// this host's clock) and that the ledger's claim is its token's. A claim already started by this
/// token answers `Started` without a write. Slot 0 is not written: the lease's expiry and fence
/// stay as they are.
pub(crate) async fn start_period(
    link: &Link,
    keys: &Keys,
    lease: &Lease,
) -> StoreResult<PeriodStart> {
    if lease.slot != 0 {
        return Ok(PeriodStart::NotHeld);
    }
    let conn = link.conn().await?;
    let mut held = read_lock(link, keys, &lease.lock).await?;
    // Only the holder's own extensions (or a takeover, which the next round sees) change the
    // lock's last sequence.
    for _ in 0..START_ROUNDS {
        let now = now_ms();
        if !held
            .records
            .iter()
            .any(|r| r.slot == 0 && r.is(lease) && r.live_at(now))
        {
            return Ok(PeriodStart::NotHeld);
        }
        let Some(ledger) = held
            .ledger
            .as_ref()
            .filter(|l| l.token == Some(lease.token))
        else {
            return Ok(PeriodStart::NotHeld);
        };
        if ledger.started {
            return Ok(PeriodStart::Started);
        }
        let value = ledger.started().encode();
        let mut headers = cas(held.lock_seq);
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence-Subject",
            keys.lock(&lease.lock).as_str(),
        );
        let subject = keys.ledger(&lease.lock);
        match publish(
            conn,
            link,
            "a period start",
            subject,
            headers,
            Bytes::from(value),
        )
        .await?
        {
            Published::Stored(_) => return Ok(PeriodStart::Started),
            Published::Conflict => held = read_lock(link, keys, &lease.lock).await?,
        }
    }
    Err(StoreError::transient(format!(
        "the lock {} kept changing while its period claim was marked started; try again",
        lease.lock
    )))
}

/// The lock's ledger record (one direct get of the ledger key); `None` for a lock never
/// claimed, or a value this store did not write.
pub(crate) async fn period_record(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
) -> StoreResult<Option<PeriodRecord>> {
    let conn = link.conn().await?;
    let subject = keys.ledger(lock);
    Ok(read_one(conn, link, keys, &subject)
        .await?
        .and_then(|msg| Ledger::decode(&msg))
        .map(|l| l.record()))
}

/// Deletes the lock's ledger and returns its record: a direct get of the ledger key, then one
/// delete marker on it expecting the sequence read (`Nats-Expected-Last-Subject-Sequence`), so
/// it lands only if the ledger is still the one read (re-read if it changed). A value this
/// store did not write is left alone (`None`, as [`period_record`] reads it). The slot keys —
/// the leases, and their fences (the stream sequences of their grants) — are not written.
pub(crate) async fn clear_period(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
) -> StoreResult<Option<PeriodRecord>> {
    let conn = link.conn().await?;
    let subject = keys.ledger(lock);
    for _ in 0..CLEAR_ROUNDS {
        let Some(ledger) = read_one(conn, link, keys, &subject)
            .await?
            .and_then(|msg| Ledger::decode(&msg))
        else {
            return Ok(None);
        };
        match publish(
            conn,
            link,
            "a clear of the period ledger",
            subject.clone(),
            delete_marker(ledger.seq),
            Bytes::new(),
        )
        .await?
        {
            Published::Stored(_) => return Ok(Some(ledger.record())),
            Published::Conflict => {}
        }
    }
    Err(StoreError::transient(format!(
        "the period ledger of lock {lock} kept changing while it was cleared; try again"
    )))
}

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
        .filter(|r| r.is(lease))
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
    if !rec.live_at(sent) {
        return Ok(Some(Extension::NotHeld));
    }
    let mut next = rec.clone();
    next.expires_ms = sent.saturating_add(ms_ceil(ttl));
    let subject = keys.slot(&lease.lock, lease.slot);
    let payload = Bytes::from(next.encode(false));
    let headers = cas_ttl(rec.seq, ttl);
    match publish(conn, link, "an extension", subject, headers, payload).await? {
        Published::Stored(seq) => {
            next.seq = seq;
            written.remember(&lease.lock, &next);
            Ok(Some(Extension::Extended {
                expires_at: crate::record::time(next.expires_ms),
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
        .filter(|r| r.is(lease))
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
    let live = rec.live_at(sent);
    let subject = keys.slot(&lease.lock, lease.slot);
    let (headers, payload) = if linger.is_zero() || !live {
        (delete_marker(rec.seq), Bytes::new())
    } else {
        let mut next = rec.clone();
        next.released = true;
        next.expires_ms = rec.expires_ms.min(sent.saturating_add(ms_ceil(linger)));
        let left = Duration::from_millis(next.expires_ms.saturating_sub(sent));
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

/// Writes a delete marker on every live slot of `lock` among `slots` whatever its token
/// (compare-and-set on what was read, re-read if the lock changed meanwhile), and returns the
/// holders as they were.
pub(crate) async fn force_release(
    link: &Link,
    keys: &Keys,
    lock: &LockName,
    slots: u32,
) -> StoreResult<Vec<Holder>> {
    let conn = link.conn().await?;
    let mut freed = Vec::new();
    for _ in 0..FORCE_ROUNDS {
        let held: Vec<Record> = read_lock(link, keys, lock)
            .await?
            .records
            .into_iter()
            .filter(|r| r.slot < slots)
            .collect();
        if held.is_empty() {
            return Ok(freed);
        }
        let mut changed = false;
        for r in held {
            let subject = keys.slot(lock, r.slot);
            match publish(
                conn,
                link,
                "a forced release",
                subject,
                delete_marker(r.seq),
                Bytes::new(),
            )
            .await?
            {
                Published::Stored(_) => freed.push(r.holder()),
                Published::Conflict => changed = true,
            }
        }
        if !changed {
            return Ok(freed);
        }
    }
    Err(StoreError::transient(format!(
        "the lock {lock} kept changing during a forced release; try again"
    )))
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
