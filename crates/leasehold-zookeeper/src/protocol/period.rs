//! The period ledger's requests: marking a claim started, reading the record, clearing it.

use leasehold::store::{CasRounds, PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};
use zookeeper_client::Error;

use super::{Protocol, lost_race, written_stat};

impl Protocol {
    /// Marks `lease`'s period claim started: a multi-read of slot 0 and the ledger, then one
    /// `multi` of a version check of slot 0 and the ledger's `set_data` (*started*) at the
    /// version read, after checking that `lease` holds slot 0 (token, fence, not released, not
    /// ended by the ensemble's time) and that the ledger's claim is its token's. A claim already
    /// started by this token answers `Started` without a write. The slot node is not written: the
    /// lease's expiry and fence stay as they are.
    pub(crate) async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        if lease.slot != 0 {
            return Ok(PeriodStart::NotHeld);
        }
        let slot_path = self.paths.slot(&lease.lock, 0);
        let ledger_path = self.paths.ledger(&lease.lock);
        // Only the holder's own extensions (or a takeover, which the next round sees) change
        // what the `multi` checks.
        for _ in 0..CasRounds::PeriodStart.count() {
            let read = self.read(&lease.lock, &[0], true).await?;
            let now = self.now()?;
            let Some(node) = read
                .slots
                .first()
                .and_then(|(_, n)| n.as_ref())
                .filter(|n| n.is(lease) && n.live_for_holder(now))
            else {
                return Ok(PeriodStart::NotHeld);
            };
            let Some((ledger, stat)) = read
                .ledger
                .as_ref()
                .and_then(|(l, s)| Some((l.as_ref()?, s)))
                .filter(|(l, _)| l.token == Some(lease.token))
            else {
                return Ok(PeriodStart::NotHeld);
            };
            if ledger.started {
                return Ok(PeriodStart::Started);
            }
            let mut started = ledger.clone();
            started.start();
            let data = started.encode().into_bytes();
            let (slot_version, ledger_version) = (node.stat.version, stat.version);
            let results = self
                .link
                .write("a period start", |c| {
                    let (sp, lp, data) = (slot_path.clone(), ledger_path.clone(), data.clone());
                    async move {
                        let mut w = c.new_multi_writer();
                        w.add_check_version(&sp, slot_version)?;
                        w.add_set_data(&lp, &data, Some(ledger_version))?;
                        w.commit().await.map(Some).or_else(lost_race)
                    }
                })
                .await?;
            if let Some(results) = results {
                if let Some(stat) = written_stat(results.get(1)) {
                    self.link.clock.observe(stat.mtime);
                }
                return Ok(PeriodStart::Started);
            }
        }
        Err(CasRounds::PeriodStart.gave_up(&lease.lock))
    }

    /// The lock's ledger record (one read of the ledger node); `None` for a lock never claimed
    /// or a ledger node this store did not write.
    pub(crate) async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let read = self.read(lock, &[], true).await?;
        Ok(read
            .ledger
            .and_then(|(ledger, _)| ledger)
            .map(|l| l.record()))
    }

    /// Clears the lock's ledger: a read of the ledger node, then one `set_data` emptying it at
    /// the version read (re-read if it changed meanwhile). The node is emptied, not deleted, like
    /// the slot nodes: a delete and a later create would reset its data version, which the
    /// claims' and starts' `multi`s compare. Empty data reads as no record, in this version and
    /// in older ones. The slot nodes (the leases and their fences) are not touched.
    pub(crate) async fn clear_period(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let ledger_path = self.paths.ledger(lock);
        for _ in 0..CasRounds::LedgerClear.count() {
            let read = self.read(lock, &[], true).await?;
            let Some((Some(ledger), stat)) = read.ledger else {
                return Ok(None);
            };
            let version = stat.version;
            let emptied = self
                .link
                .write("a clear of the period ledger", |c| {
                    let path = ledger_path.clone();
                    async move {
                        match c.set_data(&path, b"", Some(version)).await {
                            Ok(stat) => Ok(Some(stat)),
                            Err(Error::BadVersion | Error::NoNode) => Ok(None),
                            Err(e) => Err(e),
                        }
                    }
                })
                .await?;
            if let Some(stat) = emptied {
                self.link.clock.observe(stat.mtime);
                return Ok(Some(ledger.record()));
            }
        }
        Err(CasRounds::LedgerClear.gave_up(lock))
    }
}
