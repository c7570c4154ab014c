//! Renewing a beat's leases: one write of the session record per lease length, an attachment
//! per lease extended for the first time, and the leases this client does not hold extended
//! alone.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, stream};
use leasehold::Lease;
use leasehold::store::{Extension, StoreError, StoreResult, ceil_millis};

use super::session::{SESSION_ROUNDS, under};
use super::{Protocol, cas_ttl, delete_marker};
use crate::classify::Published;
use crate::link::Conn;
use crate::record::{Record, SessionRecord, now_ms, time};
use crate::session::Own;
use crate::written::SessionWrites;

/// The most writes of lock records one renewal has in flight at once (attachments of leases
/// extended for the first time, deletions of expired ones, leases extended alone).
const WRITES_IN_FLIGHT: usize = 64;

impl Protocol {
    /// Renews a beat's leases: one session write per lease length for the leases this client
    /// granted, an attachment (one write each) for a lease extended for the first time or with
    /// another length than its session's, and each other lease alone
    /// ([`extend_alone`](Self::extend_alone)).
    pub(crate) async fn extend_many(
        &self,
        entries: &[(Lease, Duration)],
    ) -> Vec<StoreResult<Extension>> {
        let now = now_ms();
        let mut answers: Vec<Option<StoreResult<Extension>>> =
            entries.iter().map(|_| None).collect();
        // A lease named twice is renewed once (two attachments of it at once would race); every
        // repetition gets the first one's answer.
        let mut first = HashMap::new();
        let of: Vec<usize> = entries
            .iter()
            .enumerate()
            .map(|(i, (l, _))| {
                *first
                    .entry((&l.lock, l.slot, l.token, l.fence))
                    .or_insert(i)
            })
            .collect();
        let mut by_ttl: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        let mut alone = Vec::new();
        for (i, (lease, ttl)) in entries.iter().enumerate() {
            if of[i] != i {
                continue;
            }
            match self.written.mine(lease) {
                Some(r) if !r.held.live_at(now) => answers[i] = Some(Ok(Extension::NotHeld)),
                Some(_) => by_ttl.entry(ceil_millis(*ttl)).or_default().push(i),
                None => alone.push(i),
            }
        }
        let conn = match self.link.conn().await {
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
            let own = match self.session_for(conn, ttl).await {
                Ok(own) => own,
                Err(e) => {
                    for i in group {
                        answers[i] = Some(Err(copy(&e)));
                    }
                    continue;
                }
            };
            let owned = self.sessions.ids().await;
            let mut renewed = Vec::new();
            let mut to_attach = Vec::new();
            for i in group {
                let lease = &entries[i].0;
                match self.written.mine(lease) {
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
            self.written.renewed(&own.id, renewed, own.expires_ms);
            let own = &own;
            let attached: Vec<(usize, StoreResult<Extension>)> = stream::iter(to_attach)
                .map(|(i, r)| async move {
                    let lease = &entries[i].0;
                    (i, self.attach(conn, lease, r, own).await)
                })
                .buffer_unordered(WRITES_IN_FLIGHT)
                .collect()
                .await;
            for (i, answer) in attached {
                answers[i] = Some(answer);
            }
            self.sweep(conn, &own.id).await;
        }
        let singles: Vec<(usize, StoreResult<Extension>)> = stream::iter(alone)
            .map(|i| async move {
                let (lease, ttl) = &entries[i];
                (i, self.extend_alone(conn, lease, *ttl).await)
            })
            .buffer_unordered(WRITES_IN_FLIGHT)
            .collect()
            .await;
        for (i, answer) in singles {
            answers[i] = Some(answer);
        }
        for (i, &f) in of.iter().enumerate() {
            if f != i {
                answers[i] = match &answers[f] {
                    Some(Ok(extension)) => Some(Ok(*extension)),
                    Some(Err(e)) => Some(Err(copy(e))),
                    None => None,
                };
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(StoreError::permanent("an entry was not answered"))))
            .collect()
    }
}

/// `e` again, for another entry of the request it failed.
fn copy(e: &StoreError) -> StoreError {
    StoreError::new(e.kind(), e.message())
}

impl Protocol {
    /// Attaches `lease` (a lease of its own, or held under another of this client's sessions) to
    /// `own`, renewed just before: one write of its lock record naming `own`, without a TTL of its
    /// own, expecting the sequence of this client's last write of it. On a conflict the slot is
    /// read: attached to `own` already (an earlier attachment whose answer was lost) → extended;
    /// anything else (it ran out, or was forced out) → not held.
    async fn attach(
        &self,
        conn: &Conn,
        lease: &Lease,
        rec: Record,
        own: &Own,
    ) -> StoreResult<Extension> {
        let mut next = rec.clone();
        next.held.expires_ms = own.expires_ms;
        next.session = Some(own.id.clone());
        let subject = self.keys.slot(&lease.lock, lease.slot);
        let payload = Bytes::from(next.encode(false));
        match self
            .publish(
                conn,
                "an extension",
                subject,
                under(rec.seq, &own.id),
                payload,
            )
            .await?
        {
            Published::Stored(seq) => {
                next.seq = seq;
                self.written.refresh(lease, next.clone());
                Ok(Extension::Extended {
                    expires_at: time(own.expires_ms),
                })
            }
            Published::Conflict => {
                // An earlier attachment whose answer was lost leaves the record attached already.
                match self.read_slot(conn, lease).await? {
                    Some(mut read)
                        if read.held.is(lease)
                            && read.session.as_deref() == Some(own.id.as_str()) =>
                    {
                        read.held.expires_ms = own.expires_ms;
                        self.written.refresh(lease, read.clone());
                        Ok(Extension::Extended {
                            expires_at: time(own.expires_ms),
                        })
                    }
                    _ => {
                        self.written.forget(lease);
                        Ok(Extension::NotHeld)
                    }
                }
            }
        }
    }
}

impl Protocol {
    /// Deletes the lock records of the leases of session `id` whose own expiry passed without an
    /// extension (the session lives on for the others), and forgets them.
    async fn sweep(&self, conn: &Conn, id: &str) {
        let now = now_ms();
        let expired = self.written.take_from(id, |r| !r.held.live_at(now));
        stream::iter(expired)
            .for_each_concurrent(WRITES_IN_FLIGHT, |(lock, rec)| async move {
                let subject = self.keys.slot(&lock, rec.held.slot);
                let what = "the deletion of an expired lease";
                let marker = delete_marker(rec.seq);
                if let Err(e) = self
                    .publish(conn, what, subject, marker, Bytes::new())
                    .await
                {
                    // Remembered again, so that the next renewal tries again.
                    tracing::debug!(error = %e, lock = %lock, "could not delete an expired lease");
                    self.written.remember(&lock, rec.held.slot, rec);
                }
            })
            .await;
    }
}

impl Protocol {
    /// Extends a lease this client does not hold under one of its sessions (granted by another
    /// client, or by the previous version): a read of its slot, then, for a record of its own
    /// (with its own TTL), a new value with a fresh TTL; for a record under a session, a renewal
    /// of that session record (its own length, or `ttl` if shorter, is the answer).
    pub(crate) async fn extend_alone(
        &self,
        conn: &Conn,
        lease: &Lease,
        ttl: Duration,
    ) -> StoreResult<Extension> {
        let Some(rec) = self
            .read_slot(conn, lease)
            .await?
            .filter(|r| r.held.is(lease))
        else {
            return Ok(Extension::NotHeld);
        };
        let Some(id) = rec.session.clone() else {
            return self
                .extend_from(conn, lease, rec, ttl)
                .await
                .map(|a| a.unwrap_or(Extension::NotHeld));
        };
        let subject = self.keys.session(&id);
        let mut read = self.read_one(conn, &subject).await?;
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
            match self
                .publish(conn, what, subject.clone(), headers, payload)
                .await?
            {
                Published::Stored(_) => {
                    return Ok(Extension::Extended {
                        expires_at: time(sent.saturating_add(ceil_millis(ttl.min(session.ttl)))),
                    });
                }
                Published::Conflict => read = self.read_one(conn, &subject).await?,
            }
        }
        Err(StoreError::transient(format!(
            "the NATS session record {id} kept changing during an extension; try again"
        )))
    }
}
