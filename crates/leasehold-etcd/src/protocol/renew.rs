//! Renewing many leases at once: one keep-alive of their session and one read of the keys
//! still attached to it, whatever their number; keys nothing of this store accounts for any
//! more are deleted on the way.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use etcd_client::{Compare, CompareOp, LeaseTimeToLiveOptions, Txn, TxnOp};
use leasehold::Lease;
use leasehold::store::{
    Extension, StoreResult, answer_each, answer_repeats, first_occurrences, time_at_ms,
};

use super::{Protocol, expiry, ttl_secs, txn};
use crate::record::now_ms;
use crate::session::Session;

/// How many orphan keys one transaction deletes (etcd allows 128 operations by default).
const REAP_CHUNK: usize = 100;

impl Protocol {
    /// Extends each of `leases` as [`extend`](Self::extend) would answer it alone. The leases this
    /// store holds on a session of the same TTL cost one keep-alive and one read per session; the
    /// others are extended each alone.
    pub(crate) async fn extend_many(
        &self,
        leases: &[(Lease, Duration)],
    ) -> Vec<StoreResult<Extension>> {
        let sessions = &self.sessions;
        // A lease named twice is renewed once; the repeat gets the first one's answer.
        let first = first_occurrences(leases);
        let mut by_session: HashMap<i64, (Session, Vec<usize>)> = HashMap::new();
        let mut alone = Vec::new();
        for (i, (lease, ttl)) in leases.iter().enumerate() {
            if first[i] != i {
                continue;
            }
            let session = sessions
                .grant_of(lease)
                .and_then(|g| sessions.by_id(g.session))
                .filter(|s| s.asked == ttl_secs(*ttl));
            match session {
                Some(s) => by_session.entry(s.id).or_insert((s, Vec::new())).1.push(i),
                None => alone.push(i),
            }
        }
        let batches = by_session.into_values().map(|(session, of)| async move {
            let entries: Vec<&(Lease, Duration)> = of.iter().map(|&i| &leases[i]).collect();
            let renewed = self.renew(&session, &entries).await;
            let each = answer_each(renewed, of.len());
            (of, each)
        });
        let singles = alone.iter().map(|&i| async move {
            let (lease, ttl) = &leases[i];
            (i, self.extend(lease, *ttl).await)
        });
        let (batches, singles) = tokio::join!(
            futures::future::join_all(batches),
            futures::future::join_all(singles)
        );
        let mut answers = HashMap::new();
        for (of, each) in batches {
            answers.extend(of.into_iter().zip(each));
        }
        answers.extend(singles);
        answer_repeats(&first, &answers)
    }

    /// One renewal of `session` for `entries` (each a grant of this store on it): a keep-alive and,
    /// beside it, the list of keys attached to the session. A grant whose key is still attached and
    /// whose lease has not run out is extended to `ttl` from when the keep-alive was sent; any
    /// other is not held. Keys on the session that no live grant accounts for are then deleted.
    async fn renew(
        &self,
        session: &Session,
        entries: &[&(Lease, Duration)],
    ) -> StoreResult<Vec<Extension>> {
        let sessions = &self.sessions;
        let sent_ms = now_ms();
        let (alive, attached) = tokio::join!(
            sessions.keep_alive(&self.link, session),
            self.attached_keys(session.id)
        );
        if !alive? {
            return Ok(entries.iter().map(|_| Extension::NotHeld).collect());
        }
        let attached = attached?;
        let answers = entries
            .iter()
            .map(|(lease, ttl)| {
                let live = sessions
                    .grant_of(lease)
                    .is_some_and(|g| g.expires_ms > sent_ms);
                let key = self.keys.slot(&lease.lock, lease.slot);
                if live && attached.contains(key.as_bytes()) {
                    let until = expiry(sent_ms, *ttl, session.granted);
                    sessions.extended(lease, until);
                    Extension::Extended {
                        expires_at: time_at_ms(until),
                    }
                } else {
                    sessions.forget(lease);
                    Extension::NotHeld
                }
            })
            .collect();
        self.reap(session.id, &attached, sent_ms).await;
        Ok(answers)
    }

    /// The keys attached to etcd lease `id` (none once it is gone).
    async fn attached_keys(&self, id: i64) -> StoreResult<HashSet<Vec<u8>>> {
        let resp = self
            .link
            .idempotent("a session read", |mut c| async move {
                c.lease_time_to_live(id, Some(LeaseTimeToLiveOptions::new().with_keys()))
                    .await
            })
            .await?;
        Ok(resp.keys().iter().cloned().collect())
    }

    /// Deletes the keys on session `id` that no live grant of this store (nor an acquisition in
    /// flight) accounts for at `now_ms`: a lease that ran out while other leases kept the session
    /// alive, or a grant whose answer never arrived. Each delete is conditioned on the key still
    /// being on the session. Failures are left to the next renewal.
    async fn reap(&self, id: i64, attached: &HashSet<Vec<u8>>, now_ms: u64) {
        let orphans: Vec<&Vec<u8>> = self.sessions.orphans(
            attached
                .iter()
                .filter_map(|key| Some((self.keys.parse(key)?, key))),
            id,
            now_ms,
        );
        for chunk in orphans.chunks(REAP_CHUNK) {
            let compares: Vec<Compare> = chunk
                .iter()
                .map(|key| Compare::lease(key.as_slice(), CompareOp::Equal, id))
                .collect();
            let deletes: Vec<TxnOp> = chunk
                .iter()
                .map(|key| TxnOp::delete(key.as_slice(), None))
                .collect();
            let t = Txn::new().when(compares).and_then(deletes);
            if let Err(e) = txn(&self.link, "a clean-up of expired keys", t).await {
                tracing::debug!(error = %e, "etcd keys of expired leases left for the next renewal");
            }
        }
    }
}
