//! The period ledger's requests: marking a claim started, reading the record, clearing it.

use bytes::Bytes;
use leasehold::store::{CasRounds, PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};

use super::{Protocol, cas, delete_marker};
use crate::classify::Published;
use crate::record::{Ledger, decode_ledger, now_ms};

impl Protocol {
    /// Marks `lease`'s period claim started: a read of the lock, then one publish of the ledger
    /// marked *started*, conditioned on the last sequence of **every** key of the lock
    /// (`Nats-Expected-Last-Subject-Sequence` with `Nats-Expected-Last-Subject-Sequence-Subject` =
    /// the lock's filter), so it commits only if neither slot 0 nor the ledger changed since the
    /// read — after checking that `lease` holds slot 0 (token, fence, not released, not run out by
    /// this host's clock) and that the ledger's claim is its token's. A claim already started by
    /// this token answers `Started` without a write. Slot 0 is not written: the lease's expiry and
    /// fence stay as they are.
    pub(crate) async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        if lease.slot != 0 {
            return Ok(PeriodStart::NotHeld);
        }
        let conn = self.link.conn().await?;
        let mut held = self.read_lock(&lease.lock).await?;
        // Only the holder's own extensions (or a takeover, which the next round sees) change the
        // lock's last sequence.
        for _ in 0..CasRounds::PeriodStart.count() {
            let now = now_ms();
            if !held
                .records
                .iter()
                .any(|r| r.held.slot == 0 && r.held.is(lease) && r.held.live_at(now))
            {
                return Ok(PeriodStart::NotHeld);
            }
            let ledger = match Ledger::to_start(held.ledger.as_ref(), lease.token) {
                Ok(ledger) => ledger,
                Err(answer) => return Ok(answer),
            };
            let value = ledger.started().text.encode();
            let mut headers = cas(held.lock_seq);
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence-Subject",
                self.keys.lock(&lease.lock).as_str(),
            );
            let subject = self.keys.ledger(&lease.lock);
            match self
                .publish(conn, "a period start", subject, headers, Bytes::from(value))
                .await?
            {
                Published::Stored(_) => return Ok(PeriodStart::Started),
                Published::Conflict => held = self.read_lock(&lease.lock).await?,
            }
        }
        Err(CasRounds::PeriodStart.gave_up(&lease.lock))
    }
}

impl Protocol {
    /// The lock's ledger record (one direct get of the ledger key); `None` for a lock never
    /// claimed, or a value this store did not write.
    pub(crate) async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let conn = self.link.conn().await?;
        let subject = self.keys.ledger(lock);
        Ok(self
            .read_one(conn, &subject)
            .await?
            .and_then(|msg| decode_ledger(&msg))
            .map(|l| l.record()))
    }
}

impl Protocol {
    /// Deletes the lock's ledger and returns its record: a direct get of the ledger key, then one
    /// delete marker on it expecting the sequence read (`Nats-Expected-Last-Subject-Sequence`), so
    /// it lands only if the ledger is still the one read (re-read if it changed). A value this
    /// store did not write is left alone (`None`, as [`period_record`](Self::period_record) reads
    /// it). The slot keys — the leases, and their fences (the stream sequences of their grants) —
    /// are not self.written.
    pub(crate) async fn clear_period(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let conn = self.link.conn().await?;
        let subject = self.keys.ledger(lock);
        for _ in 0..CasRounds::LedgerClear.count() {
            let Some(ledger) = self
                .read_one(conn, &subject)
                .await?
                .and_then(|msg| decode_ledger(&msg))
            else {
                return Ok(None);
            };
            match self
                .publish(
                    conn,
                    "a clear of the period ledger",
                    subject.clone(),
                    delete_marker(ledger.version),
                    Bytes::new(),
                )
                .await?
            {
                Published::Stored(_) => return Ok(Some(ledger.record())),
                Published::Conflict => {}
            }
        }
        Err(CasRounds::LedgerClear.gave_up(lock))
    }
}
