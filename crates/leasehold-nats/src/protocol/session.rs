//! The session requests (see the `session` module for the design): starting and renewing a
//! session record, revoking one lease of a session, reading the sessions lock records name,
//! and renewing a beat's leases with one write per lease length.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use async_nats::HeaderMap;
use bytes::Bytes;
use leasehold::LockName;
use leasehold::store::{StoreError, StoreResult, Token, ceil_millis};

use super::{Protocol, cas, cas_ttl, delete_marker};
use crate::classify::Published;
use crate::keys::KeyOf;
use crate::link::Conn;
use crate::record::{Record, Revoked, SESSION_HEADER, SessionRecord, now_ms};
use crate::session::{MAX_REVOKED, Own};
use crate::written::SessionWrites;

/// How often a write of a session record (a start, a renewal, a revocation, the renewal of
/// another client's session by an extension) re-reads it after it changed under it, before
/// giving up with a transient error (each change is a forced release of one of its leases).
pub(super) const SESSION_ROUNDS: usize = 4;

/// The most session records one read asks for (one batch direct get per this many).
const SESSION_READ_BATCH: usize = 256;

/// The headers of a compare-and-set write of a lock record held under session `id`: no TTL of
/// its own.
pub(crate) fn under(expected: u64, id: &str) -> HeaderMap {
    let mut headers = cas(expected);
    headers.insert(SESSION_HEADER, id);
    headers
}

impl Protocol {
    /// Starts a new session of `ttl` (a fresh random id, written expecting no message yet).
    pub(crate) async fn start_session(&self, conn: &Conn, ttl: Duration) -> StoreResult<Own> {
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
            let subject = self.keys.session(&id);
            let payload = Bytes::from(record.encode());
            match self
                .publish(conn, "a session start", subject, cas_ttl(0, ttl), payload)
                .await?
            {
                Published::Stored(seq) => {
                    return Ok(Own {
                        id,
                        ttl,
                        seq,
                        expires_ms: record.expires_ms,
                        revoked: Vec::new(),
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
}

impl Protocol {
    /// Renews `own` (one compare-and-set write); when someone else wrote it, reads it, drops the
    /// leases revoked in it (see [`drop_revoked`](Self::drop_revoked)) and writes again. `None`
    /// when the session is gone (the server removed it).
    pub(crate) async fn renew_session(&self, conn: &Conn, own: &Own) -> StoreResult<Option<Own>> {
        let subject = self.keys.session(&own.id);
        let mut expected = own.seq;
        let mut keep = if own.revoked.is_empty() {
            Vec::new()
        } else {
            self.drop_revoked(conn, &own.id, own.revoked.clone()).await
        };
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
            match self
                .publish(conn, "a session renewal", subject.clone(), headers, payload)
                .await?
            {
                Published::Stored(seq) => {
                    return Ok(Some(Own {
                        seq,
                        expires_ms: record.expires_ms,
                        revoked: keep,
                        ..own.clone()
                    }));
                }
                Published::Conflict => {
                    let Some(now) = self
                        .read_one(conn, &subject)
                        .await?
                        .and_then(|msg| SessionRecord::decode(&own.id, &msg))
                    else {
                        return Ok(None);
                    };
                    expected = now.seq;
                    keep = self.drop_revoked(conn, &own.id, now.revoked).await;
                }
            }
        }
        Err(StoreError::transient(format!(
            "the NATS session record {} kept changing while it was renewed; try again",
            own.id
        )))
    }
}

impl Protocol {
    /// Forgets the leases revoked in session `id` and deletes their lock records where they still
    /// name it (the forcer may have died before it deleted them); returns the entries to keep
    /// (those whose lock record could not be checked).
    async fn drop_revoked(&self, conn: &Conn, id: &str, revoked: Vec<Revoked>) -> Vec<Revoked> {
        let mut keep = Vec::new();
        for r in revoked {
            let Some(KeyOf::Slot(lock, slot)) = self.keys.parse_key(&r.key) else {
                continue;
            };
            self.written
                .forget_if(&lock, slot, |w| w.held.token == r.token);
            if self
                .delete_if_under(conn, &lock, slot, id, r.token)
                .await
                .is_err()
            {
                keep.push(r);
            }
        }
        keep
    }
}

impl Protocol {
    /// Deletes the lock record of `slot` of `lock` if it still is `token`'s under session `id`.
    async fn delete_if_under(
        &self,
        conn: &Conn,
        lock: &LockName,
        slot: u32,
        id: &str,
        token: Token,
    ) -> StoreResult<()> {
        let subject = self.keys.slot(lock, slot);
        let Some(rec) = self
            .read_one(conn, &subject)
            .await?
            .and_then(|msg| Record::decode(slot, &msg))
        else {
            return Ok(());
        };
        if rec.held.token == token && rec.session.as_deref() == Some(id) {
            let what = "a cleanup of a revoked lease";
            self.publish(conn, what, subject, delete_marker(rec.seq), Bytes::new())
                .await?;
        }
        Ok(())
    }
}

impl Protocol {
    /// Adds the lease of `token` in slot key `key` to the revoked list of `session` (a
    /// compare-and-set on the sequence read, read again on a conflict). True when it is revoked
    /// (now or before); false when the session is gone, so nothing holds the slot through it.
    pub(crate) async fn revoke(
        &self,
        conn: &Conn,
        mut session: SessionRecord,
        key: String,
        token: Token,
    ) -> StoreResult<bool> {
        let subject = self.keys.session(&session.id);
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
            match self
                .publish(conn, "a revocation", subject.clone(), headers, payload)
                .await?
            {
                Published::Stored(_) => return Ok(true),
                Published::Conflict => {
                    let id = session.id.clone();
                    match self
                        .read_one(conn, &subject)
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
}

impl Protocol {
    /// The session records `records` name, by id; a session the server removed is absent.
    pub(crate) async fn sessions_of<'a>(
        &self,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> StoreResult<HashMap<String, SessionRecord>> {
        let ids: BTreeSet<&str> = records
            .into_iter()
            .filter_map(|r| r.session.as_deref())
            .collect();
        let mut out = HashMap::new();
        let ids: Vec<&str> = ids.into_iter().collect();
        for chunk in ids.chunks(SESSION_READ_BATCH) {
            let subjects: Vec<String> = chunk.iter().map(|id| self.keys.session(id)).collect();
            let body = serde_json::json!({ "multi_last": subjects, "batch": chunk.len() });
            for msg in self.read_batch(body).await? {
                if let Some(KeyOf::Session(id)) = self.keys.parse_subject(&msg.subject)
                    && let Some(session) = SessionRecord::decode(&id, &msg)
                {
                    out.insert(id, session);
                }
            }
        }
        Ok(out)
    }
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

/// This client's sessions, one per lease length (in milliseconds); writes of them are one at
/// a time.
#[derive(Debug, Default)]
pub(crate) struct Sessions(tokio::sync::Mutex<BTreeMap<u64, Own>>);

impl Sessions {
    /// True if `id` is one of this client's sessions, not known to be lost.
    pub(crate) async fn owns(&self, id: &str) -> bool {
        self.0.lock().await.values().any(|own| own.id == id)
    }

    /// The ids of this client's sessions not known to be lost.
    pub(crate) async fn ids(&self) -> Vec<String> {
        self.0
            .lock()
            .await
            .values()
            .map(|own| own.id.clone())
            .collect()
    }
}

impl Protocol {
    /// Renews this client's session of `ttl` (one write), or starts one if there is none or it
    /// was lost.
    pub(crate) async fn session_for(&self, conn: &Conn, ttl: Duration) -> StoreResult<Own> {
        let mut table = self.sessions.0.lock().await;
        let ttl_ms = ceil_millis(ttl);
        if let Some(own) = table.get(&ttl_ms).cloned() {
            match self.renew_session(conn, &own).await? {
                Some(renewed) => {
                    table.insert(ttl_ms, renewed.clone());
                    return Ok(renewed);
                }
                None => {
                    // Lost: every lease under it is gone; it is never written again.
                    table.remove(&ttl_ms);
                    self.written.take_from(&own.id, |_| true);
                }
            }
        }
        let own = self
            .start_session(conn, Duration::from_millis(ttl_ms))
            .await?;
        table.insert(ttl_ms, own.clone());
        Ok(own)
    }
}
