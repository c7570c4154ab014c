//! Releasing a lease (and extending a record of its own): compare-and-set writes expecting the
//! sequence last written or read.

use std::time::Duration;

use bytes::Bytes;
use leasehold::store::{StoreResult, ceil_millis};
use leasehold::{
    Lease,
    store::{Extension, Release},
};

use super::session::judge;
use super::{Protocol, cas_ttl, delete_marker};
use crate::classify::Published;
use crate::link::Conn;
use crate::record::{Record, now_ms};

impl Protocol {
    /// The extension of `rec`, a record of its own (with its own TTL, as the previous version
    /// wrote them) of `lease` at `rec.seq`: a new value with a fresh TTL; `None` when the key
    /// changed since.
    pub(super) async fn extend_from(
        &self,
        conn: &Conn,
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
        let subject = self.keys.slot(&lease.lock, lease.slot);
        let payload = Bytes::from(next.encode(false));
        let headers = cas_ttl(rec.seq, ttl);
        match self
            .publish(conn, "an extension", subject, headers, payload)
            .await?
        {
            Published::Stored(seq) => {
                next.seq = seq;
                self.written.refresh(lease, next.clone());
                Ok(Some(Extension::Extended {
                    expires_at: crate::record::time(next.held.expires_ms),
                }))
            }
            Published::Conflict => Ok(None),
        }
    }
}

impl Protocol {
    /// Releases a lease. Without linger the key gets a delete marker (compare-and-set). With linger
    /// the record is written again as a record of its own (no session), marked released (so it can
    /// no longer be extended), ending at the earlier of its end and `linger` from now, with a TTL
    /// of what is left of it. A lease that already ran out by this host's clock is deleted all the
    /// same (it is ours), but reported `NotHeld`. The write expects the sequence of this client's
    /// own last write (one request), or else the sequence read; a lease held under another
    /// client's session is first revoked in it, so that its holder sees it at its next renewal.
    pub(crate) async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let conn = self.link.conn().await?;
        let remembered = self.written.take(lease);
        if let Some(rec) = remembered
            && let Some(answer) = self.release_from(conn, lease, rec, linger).await?
        {
            return Ok(answer);
        }
        let Some(mut rec) = self
            .read_slot(conn, lease)
            .await?
            .filter(|r| r.held.is(lease))
        else {
            return Ok(Release::NotHeld);
        };
        if let Some(id) = rec.session.clone() {
            let found = self.sessions_of([&rec]).await?;
            if !judge(&mut rec, &found) {
                // Its session is gone or revoked it: not held; the record is deleted all the same.
                rec.held.expires_ms = 0;
            } else if !self.sessions.owns(&id).await
                && let Some(session) = found.get(&id).cloned()
            {
                let key = self.keys.slot_key(&lease.lock, lease.slot);
                if !self.revoke(conn, session, key, lease.token).await? {
                    rec.held.expires_ms = 0;
                }
            }
        }
        Ok(self
            .release_from(conn, lease, rec, linger)
            .await?
            .unwrap_or(Release::NotHeld))
    }
}

impl Protocol {
    /// The release of `rec`, the record of `lease` at `rec.seq`; `None` when the key changed since.
    async fn release_from(
        &self,
        conn: &Conn,
        lease: &Lease,
        rec: Record,
        linger: Duration,
    ) -> StoreResult<Option<Release>> {
        let sent = now_ms();
        let live = rec.held.live_at(sent);
        let subject = self.keys.slot(&lease.lock, lease.slot);
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
            match self
                .publish(conn, "a release", subject, headers, payload)
                .await?
            {
                Published::Stored(_) if live => Some(Release::Released),
                Published::Stored(_) => Some(Release::NotHeld),
                Published::Conflict => None,
            },
        )
    }
}
