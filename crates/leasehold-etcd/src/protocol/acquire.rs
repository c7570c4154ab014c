//! Acquisitions: the lowest free slot, and slot 0 with the period ledger.

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp, TxnResponse};
use leasehold::store::{
    AcquireRequest, Acquisition, ClaimVerdict, LedgerText, StoreError, StoreResult, ceil_millis,
    time_at_ms,
};
use leasehold::{Holder, Lease, LockName, Period};

use super::read::{Slots, slots_read_back};
use super::{Protocol, granted_fence, secs_ms, ttl_secs};
use crate::record::{Ledger, Record, encode, now_ms};
use crate::session::{Grant, Session, Sessions};

/// How many sessions one acquisition tries when etcd says the session it used is gone.
const SESSION_TRIES: usize = 2;

impl Protocol {
    /// One acquisition: of slot 0 and the period `req` claims
    /// ([`acquire_period`](Self::acquire_period)), or else of the lowest free slot
    /// ([`acquire`](Self::acquire)).
    pub(crate) async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        match req.period {
            Some(period) => self.acquire_period(req, period).await,
            None => self.acquire(req).await,
        }
    }

    /// One acquisition, on the session for its TTL. A single-slot lock: one transaction that puts
    /// slot 0 if it is absent, or returns the lock's keys as they are (where a retried request
    /// finds its own grant). A group: a linearizable read of its slots first (our own live grant is
    /// returned as is), then per attempt one transaction that puts the lowest free slot if it is
    /// still absent, or returns the slots as they are now.
    pub(crate) async fn acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let (keys, sessions) = (&self.keys, &self.sessions);
        let sent_ms = now_ms();
        let mine = |held: &Slots| {
            held.records
                .iter()
                .find(|r| r.answers(req, now_ms()))
                .cloned()
        };
        let mut slot = 0;
        if req.slots > 1 {
            let held = self.read_lock(&req.lock).await?;
            if let Some(r) = mine(&held) {
                return Ok(Acquisition::Elected(r.lease(&req.lock)));
            }
            let Some(free) = held.lowest_free(req.slots) else {
                return Ok(Acquisition::Taken(refusing(&held, req.slots)));
            };
            slot = free;
        }
        for _ in 0..SESSION_TRIES {
            let (session, renewal) = sessions
                .for_grant(&self.link, ttl_secs(req.ttl), ceil_millis(req.ttl))
                .await?;
            let mut record = self.session_record(req, sent_ms, slot, (&session, renewal));
            let mut session_gone = false;
            for _ in 0..=req.slots.max(1) {
                record.slot = slot;
                let key = keys.slot(&req.lock, slot);
                let _in_flight = sessions.pending(&req.lock, slot);
                let t = Txn::new()
                    .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        key.as_str(),
                        encode(&record),
                        Some(PutOptions::new().with_lease(session.id)),
                    )])
                    .or_else([TxnOp::get(
                        keys.lock(&req.lock),
                        Some(GetOptions::new().with_prefix()),
                    )]);
                let Some(resp) = self.txn_on_session(&session, renewal, t).await? else {
                    session_gone = true;
                    break;
                };
                if resp.succeeded() {
                    let lease = self.granted(req, record, &resp, &session, sent_ms)?;
                    return Ok(Acquisition::Elected(lease));
                }
                let now = slots_read_back(keys, resp);
                if let Some(r) = mine(&now) {
                    remember(sessions, &req.lock, &r);
                    return Ok(Acquisition::Elected(r.lease(&req.lock)));
                }
                match now.lowest_free(req.slots) {
                    Some(s) => slot = s,
                    None => return Ok(Acquisition::Taken(refusing(&now, req.slots))),
                }
            }
            if !session_gone {
                // The free slots kept being taken under us: as busy as a full lock.
                return Ok(Acquisition::Taken(None));
            }
        }
        Err(StoreError::transient(
            "etcd dropped the session lease of every acquisition attempt; try again",
        ))
    }
}

/// The holder a refusal names: of the lock's slots below `slots`, the one whose lease ends
/// first. A lease on a session whose recorded expiry has passed was renewed since through its
/// session, which its holder renews every third of a lease: it ends at the latest a lease (as
/// asked) from now, and etcd's watch says when its key goes before that.
fn refusing(held: &Slots, slots: u32) -> Option<Holder> {
    let now = now_ms();
    held.records
        .iter()
        .filter(|r| r.slot < slots.max(1))
        .map(|r| {
            let mut holder = r.holder();
            if r.session && r.expires_ms <= now {
                holder.expires_at = time_at_ms(now.saturating_add(secs_ms(r.asked)));
            }
            holder
        })
        .min_by_key(|h| h.expires_at)
}

impl Protocol {
    /// The lease `record` is once `resp`, the transaction that put it on `session`, succeeded:
    /// its fence is the transaction's revision, and it ends no later than the session as renewed
    /// meanwhile. The store remembers it as its grant.
    fn granted(
        &self,
        req: &AcquireRequest,
        mut record: Record,
        resp: &TxnResponse,
        session: &Session,
        sent_ms: u64,
    ) -> StoreResult<Lease> {
        record.fence = granted_fence(resp)?;
        record.expires_ms = record
            .expires_ms
            .min(self.session_expiry(session, sent_ms, req.ttl));
        remember(&self.sessions, &req.lock, &record);
        Ok(record.lease(&req.lock))
    }
}

/// Remembers `record` as this store's grant if it is on one of its sessions.
fn remember(sessions: &Sessions, lock: &LockName, record: &Record) {
    if record.session && sessions.is_session(record.lease_id) {
        sessions.granted(
            lock,
            record.slot,
            Grant {
                token: record.token,
                fence: record.fence,
                session: record.lease_id,
                expires_ms: record.expires_ms,
            },
        );
    }
}

impl Protocol {
    /// One acquisition claiming `period` of the ledger (slot 0 only): a linearizable read of the
    /// lock (slot and ledger; our own live grant is returned as is), the ledger's judgement
    /// ([`judge_claim`](leasehold::store::judge_claim): a run granted at or after the window's
    /// start refuses, an unstarted claim since then holds the period while slot 0 is taken), then a
    /// lease grant and one transaction per attempt that puts slot 0 **and** the ledger (the new
    /// claim, not started, keeping the previous record's latest run) only if the slot is still
    /// absent and the ledger unchanged since read (`mod_revision`, or still absent). The window
    /// comes from this host's clock (etcd has none to offer).
    async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
    ) -> StoreResult<Acquisition> {
        let (keys, sessions) = (&self.keys, &self.sessions);
        let sent_ms = now_ms();
        let window = period.window_at_ms(i64::try_from(sent_ms).unwrap_or(i64::MAX));
        let mine = |held: &Slots| {
            held.records
                .iter()
                .find(|r| r.answers(req, now_ms()) && r.slot == 0)
                .map(|r| {
                    let mut lease = r.lease(&req.lock);
                    lease.period =
                        Some(period.id_at_ms(i64::try_from(r.acquired_ms).unwrap_or(i64::MAX)));
                    lease
                })
        };
        // The ledger's answer, or `None` to go on with the grant (slot 0 free, no run counts).
        let judged = |held: &Slots| {
            let taken = held.lowest_free(1) != Some(0);
            let latest = held.ledger.as_ref().map(|l| &l.text);
            match LedgerText::judge(latest, window.from_ms, taken) {
                ClaimVerdict::Ran => {
                    Some(held.ledger.as_ref().map_or(Acquisition::Taken(None), |l| {
                        Acquisition::AlreadyRan(l.record())
                    }))
                }
                ClaimVerdict::Claimed => Some(Acquisition::Taken(None)),
                ClaimVerdict::Free => taken.then_some(Acquisition::Taken(None)),
            }
        };
        let mut held = self.read_lock(&req.lock).await?;
        if let Some(lease) = mine(&held) {
            return Ok(Acquisition::Elected(lease));
        }
        if let Some(answer) = judged(&held) {
            return Ok(answer);
        }
        let (mut session, mut renewal) = sessions
            .for_grant(&self.link, ttl_secs(req.ttl), ceil_millis(req.ttl))
            .await?;
        let mut record = self.session_record(req, sent_ms, 0, (&session, renewal));
        let key = keys.slot(&req.lock, 0);
        let ledger_key = keys.ledger(&req.lock);
        let _in_flight = sessions.pending(&req.lock, 0);
        // A ledger that keeps changing under us is only ever replaced by other grants (or marked
        // started by their holders); a few rounds settle it (each round either grants, refuses, or
        // sees a newer ledger).
        for _ in 0..4 {
            let claim = Ledger::claim(
                window,
                sent_ms,
                &req.owner,
                req.token,
                held.ledger.as_ref(),
                0,
            )
            .text
            .encode();
            let ledger_unchanged = match &held.ledger {
                Some(l) => Compare::mod_revision(ledger_key.as_str(), CompareOp::Equal, l.version),
                None => Compare::create_revision(ledger_key.as_str(), CompareOp::Equal, 0),
            };
            let t = Txn::new()
                .when([
                    Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                    ledger_unchanged,
                ])
                .and_then([
                    TxnOp::put(
                        key.as_str(),
                        encode(&record),
                        Some(PutOptions::new().with_lease(session.id)),
                    ),
                    TxnOp::put(ledger_key.as_str(), claim.as_str(), None),
                ])
                .or_else([TxnOp::get(
                    keys.lock(&req.lock),
                    Some(GetOptions::new().with_prefix()),
                )]);
            let Some(resp) = self.txn_on_session(&session, renewal, t).await? else {
                // The session is gone: the next round puts the key on a new one.
                (session, renewal) = sessions
                    .for_grant(&self.link, ttl_secs(req.ttl), ceil_millis(req.ttl))
                    .await?;
                record = self.session_record(req, sent_ms, 0, (&session, renewal));
                continue;
            };
            if resp.succeeded() {
                let mut lease = self.granted(req, record, &resp, &session, sent_ms)?;
                lease.period = Some(window.id);
                return Ok(Acquisition::Elected(lease));
            }
            held = slots_read_back(keys, resp);
            if let Some(lease) = mine(&held) {
                if let Some(r) = held.records.iter().find(|r| r.slot == 0) {
                    remember(sessions, &req.lock, r);
                }
                return Ok(Acquisition::Elected(lease));
            }
            if let Some(answer) = judged(&held) {
                return Ok(answer);
            }
        }
        Ok(Acquisition::Taken(None))
    }
}
