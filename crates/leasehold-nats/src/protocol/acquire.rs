//! Acquisitions: the lowest free slot, and slot 0 with the period ledger in one atomic batch.

use bytes::Bytes;
use leasehold::store::{
    AcquireRequest, Acquisition, ClaimVerdict, LedgerText, SlotRecord, StoreResult,
};
use leasehold::{Lease, Period, store::Token};

use super::read::Slots;
use super::{Protocol, cas, cas_ttl};
use crate::classify::{self, Published};
use crate::record::{Ledger, Record, now_ms};

/// How often an acquisition re-reads a lock whose slot someone else wrote first before it
/// answers `Held` (it also stops as soon as no slot is free).
const ACQUIRE_ROUNDS: u32 = 8;

/// A new record for `req` in `slot`, timed from now: a lease of its own, with its own TTL, until
/// its first extension attaches it to a session.
pub(super) fn new_record(req: &AcquireRequest, slot: u32) -> Record {
    Record {
        held: SlotRecord::granted(req, slot, now_ms()),
        seq: 0,
        session: None,
    }
}

/// The live lease of `req`'s token among `held`, if a retried request was applied.
pub(super) fn mine(held: &Slots, req: &AcquireRequest) -> Option<Record> {
    let now = now_ms();
    held.records
        .iter()
        .find(|r| r.held.answers(req, now))
        .cloned()
}

impl Protocol {
    /// One acquisition: of slot 0 and the period `req` claims
    /// ([`acquire_period`](Self::acquire_period)), or else of the lowest free slot
    /// ([`acquire`](Self::acquire)).
    pub(crate) async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        match req.period {
            Some(period) => self.acquire_period(req, period).await,
            None => Ok(self.acquire(req).await?.into()),
        }
    }

    /// Grants the lowest free slot of `req.lock`, or `None` when every slot is held.
    pub(crate) async fn acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        let conn = self.link.conn().await?;
        let mut held = self.read_lock(&req.lock).await?;
        for _ in 0..ACQUIRE_ROUNDS.min(req.slots.max(1) + 1) {
            if let Some(r) = mine(&held, req) {
                return Ok(Some(r.held.lease(&req.lock)));
            }
            let Some(slot) = held.lowest_free(req.slots) else {
                return Ok(None);
            };
            let mut record = new_record(req, slot);
            let subject = self.keys.slot(&req.lock, slot);
            let headers = cas_ttl(held.expected(slot), req.ttl);
            let payload = Bytes::from(record.encode(true));
            match self
                .publish(conn, "an acquisition", subject, headers, payload)
                .await?
            {
                Published::Stored(seq) => {
                    record.held.fence = seq;
                    record.seq = seq;
                    self.written
                        .remember(&req.lock, record.held.slot, record.clone());
                    return Ok(Some(record.held.lease(&req.lock)));
                }
                Published::Conflict => held = self.read_lock(&req.lock).await?,
            }
        }
        Ok(mine(&held, req).map(|r| r.held.lease(&req.lock)))
    }

    /// One acquisition claiming `period` of the ledger (slot 0 only): a read of the lock (our own
    /// live grant is returned as is), the ledger's judgement
    /// ([`judge_claim`](leasehold::store::judge_claim): a run granted at or after the window's
    /// start refuses, an unstarted claim since then holds the period while slot 0 is taken), then
    /// one **atomic batch** per attempt that writes slot 0 and the ledger (the new claim, not
    /// started, keeping the previous record's latest run), each with the sequence read as its
    /// expected last sequence, so both commit or neither. The window comes from this host's clock
    /// (the server's time is only known after a write).
    async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
    ) -> StoreResult<Acquisition> {
        let conn = self.link.conn().await?;
        let with_period = |r: Record| {
            let mut lease = r.held.lease(&req.lock);
            lease.period =
                Some(period.id_at_ms(i64::try_from(r.held.acquired_ms).unwrap_or(i64::MAX)));
            lease
        };
        let mut held = self.read_lock(&req.lock).await?;
        for _ in 0..4 {
            if let Some(r) = mine(&held, req).filter(|r| r.held.slot == 0) {
                return Ok(Acquisition::Elected(with_period(r)));
            }
            let mut record = new_record(req, 0);
            let window =
                period.window_at_ms(i64::try_from(record.held.acquired_ms).unwrap_or(i64::MAX));
            let taken = held.lowest_free(1) != Some(0);
            match LedgerText::judge(held.ledger.as_ref().map(|l| &l.text), window.from_ms, taken) {
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
                    self.keys.slot(&req.lock, 0),
                    grant,
                    Bytes::from(record.encode(true)),
                )
                .await
                .map_err(|e| classify::disconnected("an acquisition", e))?;
            let value = Ledger::claim(
                window,
                record.held.acquired_ms,
                &req.owner,
                req.token,
                held.ledger.as_ref(),
                0,
            )
            .text
            .encode();
            let subject = self.keys.ledger(&req.lock);
            match self
                .publish(conn, "an acquisition", subject, ledger, Bytes::from(value))
                .await?
            {
                Published::Stored(seq) => {
                    // The batch is stored contiguously: the grant just before the ledger.
                    record.held.fence = seq.saturating_sub(1);
                    record.seq = record.held.fence;
                    self.written
                        .remember(&req.lock, record.held.slot, record.clone());
                    let mut lease = record.held.lease(&req.lock);
                    lease.period = Some(window.id);
                    return Ok(Acquisition::Elected(lease));
                }
                Published::Conflict => held = self.read_lock(&req.lock).await?,
            }
        }
        Ok(Acquisition::Taken(None))
    }
}
