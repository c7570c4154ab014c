//! The session requests (see the `session` module for the design): starting and renewing a
//! session record, revoking one lease of a session, reading the sessions lock records name,
//! and renewing a beat's leases with one write per lease length.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::{StreamExt, stream};
use leasehold::store::{Extension, StoreError, StoreResult, Token, ceil_millis};
use leasehold::{Lease, LockName};

use super::read::read_slot;
use super::{cas, cas_ttl, delete_marker, publish, read_batch, read_one};
use crate::classify::Published;
use crate::keys::{KeyOf, Keys};
use crate::link::{Conn, Link};
use crate::record::{Record, Revoked, SESSION_HEADER, SessionRecord, now_ms, time};
use crate::session::{MAX_REVOKED, Own, Sessions};
use crate::written::Written;

/// How often a session write re-reads a session record that changed under it before giving
/// up with a transient error (each change is a forced release of one of its leases).
const SESSION_ROUNDS: usize = 4;

/// The most session records one read asks for (one batch direct get per this many).
const SESSION_READ_BATCH: usize = 256;

/// The most writes of lock records one renewal has in flight at once (attachments of leases
/// extended for the first time, deletions of expired ones, leases extended alone).
const WRITES_IN_FLIGHT: usize = 64;

/// The headers of a compare-and-set write of a lock record held under session `id`: no TTL of
/// its own.
pub(super) fn under(expected: u64, id: &str) -> HeaderMap {
    let mut headers = cas(expected);
    headers.insert(SESSION_HEADER, id);
    headers
}

/// Starts a new session of `ttl` (a fresh random id, written expecting no message yet).
pub(crate) async fn create(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    ttl: Duration,
) -> StoreResult<Own> {
    for _ in 0..SESSION_ROUNDS {
        let id = Token::random().to_hex();
        let sent = now_ms();
        let record = SessionRecord {
            id: id.clone(),
            ttl,
            expires_ms: sent.saturating_add(ceil_millis(ttl)),
            revoked: Vec::new(),
            seq: 0,
        };
        let subject = keys.session(&id);
        let payload = Bytes::from(record.encode());
        match publish(
            conn,
            link,
            "a session start",
            subject,
            cas_ttl(0, ttl),
            payload,
        )
        .await?
        {
            Published::Stored(seq) => {
                return Ok(Own {
                    id,
                    ttl,
                    seq,
                    expires_ms: record.expires_ms,
                });
            }
            // An id already used (by chance): draw another.
            Published::Conflict => {}
        }
    }
    Err(StoreError::transient(
        "could not start a NATS session record",
    ))
}

/// Renews `own` (one compare-and-set write); when someone else wrote it, reads it, drops the
/// leases revoked in it (see [`drop_revoked`]) and writes again. `None` when the session is
/// gone (the server removed it).
pub(crate) async fn renew(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    written: &Written,
    own: &Own,
) -> StoreResult<Option<Own>> {
    let subject = keys.session(&own.id);
    let mut expected = own.seq;
    let mut keep: Vec<Revoked> = Vec::new();
    for _ in 0..SESSION_ROUNDS {
        let sent = now_ms();
        let record = SessionRecord {
            id: own.id.clone(),
            ttl: own.ttl,
            expires_ms: sent.saturating_add(ceil_millis(own.ttl)),
            revoked: keep.clone(),
            seq: expected,
        };
        let headers = cas_ttl(expected, own.ttl);
        let payload = Bytes::from(record.encode());
        match publish(
            conn,
            link,
            "a session renewal",
            subject.clone(),
            headers,
            payload,
        )
        .await?
        {
            Published::Stored(seq) => {
                return Ok(Some(Own {
                    seq,
                    expires_ms: record.expires_ms,
                    ..own.clone()
                }));
            }
            Published::Conflict => {
                let Some(now) = read_one(conn, link, keys, &subject)
                    .await?
                    .and_then(|msg| SessionRecord::decode(&own.id, &msg))
                else {
                    return Ok(None);
                };
                expected = now.seq;
                keep = drop_revoked(conn, link, keys, written, &own.id, now.revoked).await;
            }
        }
    }
    Err(StoreError::transient(format!(
        "the NATS session record {} kept changing while it was renewed; try again",
        own.id
    )))
}

/// Forgets the leases revoked in session `id` and deletes their lock records where they still
/// name it (the forcer may have died before it deleted them); returns the entries to keep
/// (those whose lock record could not be checked).
async fn drop_revoked(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    written: &Written,
    id: &str,
    revoked: Vec<Revoked>,
) -> Vec<Revoked> {
    let mut keep = Vec::new();
    for r in revoked {
        let Some(KeyOf::Slot(lock, slot)) = keys.parse_key(&r.key) else {
            continue;
        };
        written.forget_token(&lock, slot, r.token);
        if delete_if_under(conn, link, keys, &lock, slot, id, r.token)
            .await
            .is_err()
        {
            keep.push(r);
        }
    }
    keep
}

/// Deletes the lock record of `slot` of `lock` if it still is `token`'s under session `id`.
async fn delete_if_under(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    lock: &LockName,
    slot: u32,
    id: &str,
    token: Token,
) -> StoreResult<()> {
    let subject = keys.slot(lock, slot);
    let Some(rec) = read_one(conn, link, keys, &subject)
        .await?
        .and_then(|msg| Record::decode(slot, &msg))
    else {
        return Ok(());
    };
    if rec.held.token == token && rec.session.as_deref() == Some(id) {
        let what = "a cleanup of a revoked lease";
        publish(
            conn,
            link,
            what,
            subject,
            delete_marker(rec.seq),
            Bytes::new(),
        )
        .await?;
    }
    Ok(())
}

/// Adds the lease of `token` in slot key `key` to the revoked list of `session` (a
/// compare-and-set on the sequence read, read again on a conflict). True when it is revoked
/// (now or before); false when the session is gone, so nothing holds the slot through it.
pub(crate) async fn revoke(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    mut session: SessionRecord,
    key: String,
    token: Token,
) -> StoreResult<bool> {
    let subject = keys.session(&session.id);
    for _ in 0..SESSION_ROUNDS {
        if session.revokes(token) {
            return Ok(true);
        }
        if session.revoked.len() >= MAX_REVOKED {
            return Err(StoreError::transient(format!(
                "the NATS session record {} already holds {MAX_REVOKED} revoked leases its \
                 holder has not seen (MAX_REVOKED); try again after its next renewal",
                session.id
            )));
        }
        let expected = session.seq;
        session.revoked.push(Revoked {
            key: key.clone(),
            token,
        });
        // The full lease again: the server keeps the session no shorter than its holder's
        // last renewal promised, whatever the clocks say.
        let headers = cas_ttl(expected, session.ttl);
        let payload = Bytes::from(session.encode());
        match publish(
            conn,
            link,
            "a revocation",
            subject.clone(),
            headers,
            payload,
        )
        .await?
        {
            Published::Stored(_) => return Ok(true),
            Published::Conflict => {
                let id = session.id.clone();
                match read_one(conn, link, keys, &subject)
                    .await?
                    .and_then(|msg| SessionRecord::decode(&id, &msg))
                {
                    Some(now) => session = now,
                    None => return Ok(false),
                }
            }
        }
    }
    Err(StoreError::transient(format!(
        "the NATS session record {} kept changing during a revocation; try again",
        session.id
    )))
}

/// The session records `records` name, by id; a session the server removed is absent.
pub(crate) async fn sessions_of<'a>(
    link: &Link,
    keys: &Keys,
    records: impl IntoIterator<Item = &'a Record>,
) -> StoreResult<HashMap<String, SessionRecord>> {
    let ids: BTreeSet<&str> = records
        .into_iter()
        .filter_map(|r| r.session.as_deref())
        .collect();
    let mut out = HashMap::new();
    let ids: Vec<&str> = ids.into_iter().collect();
    for chunk in ids.chunks(SESSION_READ_BATCH) {
        let subjects: Vec<String> = chunk.iter().map(|id| keys.session(id)).collect();
        let body = serde_json::json!({ "multi_last": subjects, "batch": chunk.len() });
        for msg in read_batch(link, keys, body).await? {
            if let Some(KeyOf::Session(id)) = keys.parse_subject(&msg.subject)
                && let Some(session) = SessionRecord::decode(&id, &msg)
            {
                out.insert(id, session);
            }
        }
    }
    Ok(out)
}

/// Whether `record` is held, judged with the sessions read: a record under a session is held
/// while the session is there and its token is not revoked, and then ends when the session
/// does (its `expires_ms` is set to the session's). A record of its own is held while it is
/// there.
pub(crate) fn judge(record: &mut Record, sessions: &HashMap<String, SessionRecord>) -> bool {
    let Some(id) = record.session.as_deref() else {
        return true;
    };
    match sessions.get(id) {
        Some(s) if !s.revokes(record.held.token) => {
            record.held.expires_ms = s.expires_ms;
            true
        }
        _ => false,
    }
}

/// Renews a beat's leases: one session write per lease length for the leases this client
/// granted, an attachment (one write each) for a lease extended for the first time or with
/// another length than its session's, and each other lease alone ([`extend_alone`]).
pub(crate) async fn extend_many(
    link: &Link,
    keys: &Keys,
    written: &Written,
    sessions: &Sessions,
    entries: &[(Lease, Duration)],
) -> Vec<StoreResult<Extension>> {
    let now = now_ms();
    let mut answers: Vec<Option<StoreResult<Extension>>> = entries.iter().map(|_| None).collect();
    let mut by_ttl: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut alone = Vec::new();
    for (i, (lease, ttl)) in entries.iter().enumerate() {
        match written.mine(lease) {
            Some(r) if !r.held.live_at(now) => answers[i] = Some(Ok(Extension::NotHeld)),
            Some(_) => by_ttl.entry(ceil_millis(*ttl)).or_default().push(i),
            None => alone.push(i),
        }
    }
    let conn = match link.conn().await {
        Ok(conn) => conn,
        Err(e) => {
            return answers
                .into_iter()
                .map(|a| a.unwrap_or_else(|| Err(copy(&e))))
                .collect();
        }
    };
    for (ttl_ms, group) in by_ttl {
        let ttl = Duration::from_millis(ttl_ms);
        let own = match sessions.renew(conn, link, keys, written, ttl).await {
            Ok(own) => own,
            Err(e) => {
                for i in group {
                    answers[i] = Some(Err(copy(&e)));
                }
                continue;
            }
        };
        let owned = sessions.ids().await;
        let mut renewed = Vec::new();
        let mut to_attach = Vec::new();
        for i in group {
            let lease = &entries[i].0;
            match written.mine(lease) {
                Some(r) if r.session.as_deref() == Some(own.id.as_str()) => {
                    renewed.push(lease);
                    answers[i] = Some(Ok(Extension::Extended {
                        expires_at: time(own.expires_ms),
                    }));
                }
                // A lease of its own (its first extension), or attached to another of this
                // client's sessions (another length).
                Some(r) if r.session.as_ref().is_none_or(|id| owned.contains(id)) => {
                    to_attach.push((i, r));
                }
                // Revoked, or its session lost, while this batch was renewed.
                _ => answers[i] = Some(Ok(Extension::NotHeld)),
            }
        }
        written.renewed(&own.id, renewed, own.expires_ms);
        let own = &own;
        let attached: Vec<(usize, StoreResult<Extension>)> = stream::iter(to_attach)
            .map(|(i, r)| async move {
                let lease = &entries[i].0;
                (i, attach(conn, link, keys, written, lease, r, own).await)
            })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .collect()
            .await;
        for (i, answer) in attached {
            answers[i] = Some(answer);
        }
        sweep(conn, link, keys, written, &own.id).await;
    }
    let singles: Vec<(usize, StoreResult<Extension>)> = stream::iter(alone)
        .map(|i| async move {
            let (lease, ttl) = &entries[i];
            (
                i,
                extend_alone(conn, link, keys, written, lease, *ttl).await,
            )
        })
        .buffer_unordered(WRITES_IN_FLIGHT)
        .collect()
        .await;
    for (i, answer) in singles {
        answers[i] = Some(answer);
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(StoreError::permanent("an entry was not answered"))))
        .collect()
}

/// `e` again, for another entry of the request it failed.
fn copy(e: &StoreError) -> StoreError {
    StoreError::new(e.kind(), e.message())
}

/// Attaches `lease` (a lease of its own, or held under another of this client's sessions) to
/// `own`, renewed just before: one write of its lock record naming `own`, without a TTL of its
/// own, expecting the sequence of this client's last write of it. A conflict means the record
/// changed since (it ran out, or was forced out): not held.
async fn attach(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    written: &Written,
    lease: &Lease,
    rec: Record,
    own: &Own,
) -> StoreResult<Extension> {
    let mut next = rec.clone();
    next.held.expires_ms = own.expires_ms;
    next.session = Some(own.id.clone());
    let subject = keys.slot(&lease.lock, lease.slot);
    let payload = Bytes::from(next.encode(false));
    match publish(
        conn,
        link,
        "an extension",
        subject,
        under(rec.seq, &own.id),
        payload,
    )
    .await?
    {
        Published::Stored(seq) => {
            next.seq = seq;
            written.refresh(lease, &next);
            Ok(Extension::Extended {
                expires_at: time(own.expires_ms),
            })
        }
        Published::Conflict => {
            written.forget(lease);
            Ok(Extension::NotHeld)
        }
    }
}

/// Deletes the lock records of the leases of session `id` whose own expiry passed without an
/// extension (the session lives on for the others), and forgets them.
async fn sweep(conn: &Conn, link: &Link, keys: &Keys, written: &Written, id: &str) {
    let now = now_ms();
    let expired = written.take_from(id, |r| !r.held.live_at(now));
    stream::iter(expired)
        .for_each_concurrent(WRITES_IN_FLIGHT, |(lock, rec)| async move {
            let subject = keys.slot(&lock, rec.held.slot);
            let what = "the deletion of an expired lease";
            let marker = delete_marker(rec.seq);
            if let Err(e) = publish(conn, link, what, subject, marker, Bytes::new()).await {
                // Remembered again, so that the next renewal tries again.
                tracing::debug!(error = %e, lock = %lock, "could not delete an expired lease");
                written.remember(&lock, &rec);
            }
        })
        .await;
}

/// Extends a lease this client does not hold under one of its sessions (granted by another
/// client, or by the previous version): a read of its slot, then, for a record of its own
/// (with its own TTL), a new value with a fresh TTL; for a record under a session, a renewal
/// of that session record (its own length, or `ttl` if shorter, is the answer).
pub(crate) async fn extend_alone(
    conn: &Conn,
    link: &Link,
    keys: &Keys,
    written: &Written,
    lease: &Lease,
    ttl: Duration,
) -> StoreResult<Extension> {
    let Some(rec) = read_slot(conn, link, keys, lease)
        .await?
        .filter(|r| r.held.is(lease))
    else {
        return Ok(Extension::NotHeld);
    };
    let Some(id) = rec.session.clone() else {
        return super::extend_release::extend_from(conn, link, keys, written, lease, rec, ttl)
            .await
            .map(|a| a.unwrap_or(Extension::NotHeld));
    };
    let subject = keys.session(&id);
    let mut read = read_one(conn, link, keys, &subject).await?;
    for _ in 0..SESSION_ROUNDS {
        let sent = now_ms();
        let Some(mut session) = read
            .and_then(|msg| SessionRecord::decode(&id, &msg))
            .filter(|s| !s.revokes(lease.token) && s.expires_ms > sent)
        else {
            return Ok(Extension::NotHeld);
        };
        let expected = session.seq;
        session.expires_ms = sent.saturating_add(ceil_millis(session.ttl));
        let headers = cas_ttl(expected, session.ttl);
        let payload = Bytes::from(session.encode());
        let what = "an extension";
        match publish(conn, link, what, subject.clone(), headers, payload).await? {
            Published::Stored(_) => {
                return Ok(Extension::Extended {
                    expires_at: time(sent.saturating_add(ceil_millis(ttl.min(session.ttl)))),
                });
            }
            Published::Conflict => read = read_one(conn, link, keys, &subject).await?,
        }
    }
    Err(StoreError::transient(format!(
        "the NATS session record {id} kept changing during an extension; try again"
    )))
}
