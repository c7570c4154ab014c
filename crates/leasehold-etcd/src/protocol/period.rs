//! The period ledger's requests: marking a claim started, reading the record, clearing it.

use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};
use leasehold::store::{CasRounds, PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};

use super::read::slots_read_back;
use super::{Protocol, txn};
use crate::record::{Ledger, decode_ledger, now_ms};

impl Protocol {
    /// Marks `lease`'s period claim started: a linearizable read of the lock, then one transaction
    /// that rewrites the ledger with *started* only if slot 0's key and the ledger are unchanged
    /// since the read (`mod_revision`), after checking that `lease` holds slot 0 (token, fence, not
    /// released, not run out by this host's clock) and that the ledger's claim is its token's. A
    /// claim already started by this token answers `Started` without a write. The slot key is not
    /// written: the lease's expiry and fence stay as they are.
    pub(crate) async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        let keys = &self.keys;
        if lease.slot != 0 {
            return Ok(PeriodStart::NotHeld);
        }
        let key = keys.slot(&lease.lock, 0);
        let ledger_key = keys.ledger(&lease.lock);
        let mut held = self.read_lock(&lease.lock).await?;
        // Only the holder's own extensions (or a takeover, which the next round sees) change what
        // the transaction compares.
        for _ in 0..CasRounds::PeriodStart.count() {
            let Some(slot) = held
                .records
                .iter()
                .find(|r| r.slot == 0 && r.is(lease) && r.live_at(now_ms()))
            else {
                return Ok(PeriodStart::NotHeld);
            };
            let ledger = match Ledger::to_start(held.ledger.as_ref(), lease.token) {
                Ok(ledger) => ledger,
                Err(answer) => return Ok(answer),
            };
            let started = ledger.started();
            let t = Txn::new()
                .when([
                    Compare::mod_revision(key.as_str(), CompareOp::Equal, slot.mod_revision),
                    Compare::mod_revision(ledger_key.as_str(), CompareOp::Equal, ledger.version),
                ])
                .and_then([TxnOp::put(ledger_key.as_str(), started.text.encode(), None)])
                .or_else([TxnOp::get(
                    keys.lock(&lease.lock),
                    Some(GetOptions::new().with_prefix()),
                )]);
            let resp = txn(&self.link, "a period start", t).await?;
            if resp.succeeded() {
                return Ok(PeriodStart::Started);
            }
            held = slots_read_back(keys, resp);
        }
        Err(CasRounds::PeriodStart.gave_up(&lease.lock))
    }

    /// The lock's ledger record (one linearizable read of the ledger key); `None` for a lock never
    /// claimed, or a ledger key this store did not write.
    pub(crate) async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        Ok(self
            .read_ledger(&self.keys.ledger(lock))
            .await?
            .map(|l| l.record()))
    }

    /// The ledger at `key` (one linearizable read), with its `mod_revision`; `None` when the key is
    /// missing or holds a value this store did not write.
    async fn read_ledger(&self, key: &str) -> StoreResult<Option<Ledger>> {
        let resp = self
            .link
            .idempotent("a read", |mut c| {
                let key = key.to_owned();
                async move { c.get(key, None).await }
            })
            .await?;
        Ok(resp.kvs().first().and_then(decode_ledger))
    }

    /// Deletes the lock's ledger key and returns its record: a linearizable read of the key, then
    /// one transaction that deletes it only if it is unchanged since the read (`mod_revision`),
    /// re-read if it changed. A key this store did not write is left alone (`None`, as
    /// [`period_record`](Self::period_record) reads it). The slot keys, and so the leases and their
    /// fences (their keys' `create_revision`), are not touched.
    pub(crate) async fn clear_period(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let key = self.keys.ledger(lock);
        for _ in 0..CasRounds::LedgerClear.count() {
            let Some(ledger) = self.read_ledger(&key).await? else {
                return Ok(None);
            };
            let t = Txn::new()
                .when([Compare::mod_revision(
                    key.as_str(),
                    CompareOp::Equal,
                    ledger.version,
                )])
                .and_then([TxnOp::delete(key.as_str(), None)]);
            if txn(&self.link, "a clear of the period ledger", t)
                .await?
                .succeeded()
            {
                return Ok(Some(ledger.record()));
            }
        }
        Err(CasRounds::LedgerClear.gave_up(lock))
    }
}
