//! Acquisitions: the lowest free or expired slot, and slot 0 with the period ledger in one `multi`.

use leasehold::store::{AcquireRequest, Acquisition, ClaimVerdict, StoreResult};
use leasehold::{Lease, Period};

use super::{ACQUIRE_ROUNDS, PERSISTENT, Protocol, grant_record, lost_race, mine, written_stat};
use crate::record::{Ledger, Node};

impl Protocol {
    /// One acquisition of the lowest free or expired slot; `None` when every slot is held.
    pub(crate) async fn acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        let slots: Vec<u32> = (0..req.slots.max(1)).collect();
        for _ in 0..ACQUIRE_ROUNDS {
            let read = self.read(&req.lock, &slots, false).await?;
            let now = self.now()?;
            if let Some(lease) = mine(&read, req, now) {
                return Ok(Some(lease));
            }
            let Some((slot, node)) = read.slots.iter().find(|(_, n)| {
                n.as_ref()
                    .is_none_or(|n| !n.live_for_others(now, self.tolerance_ms))
            }) else {
                return Ok(None);
            };
            let version = node.as_ref().map(|n| n.stat.version);
            let record = grant_record(req, version, now);
            if let Some(stat) = self
                .write_slot(&req.lock, *slot, version, &record, "an acquisition")
                .await?
            {
                let node = Node {
                    slot: *slot,
                    record: Some(record),
                    stat,
                };
                let lease = node.lease(&req.lock);
                self.written.remember(&req.lock, *slot, node);
                return Ok(lease);
            }
        }
        Ok(None)
    }

    /// One acquisition of slot 0 claiming `period` of the ledger, in one `multi` with the
    /// ledger's write. The window comes from the store's estimate of the ensemble's time; the
    /// ledger is judged by time ([`judge_claim`](leasehold::store::judge_claim)): a run granted
    /// at or after the window's start refuses the claim, and an unstarted claim since then holds
    /// the period while slot 0 is live. A grant replaces the ledger with the new claim, not
    /// started, keeping the previous record's latest run.
    pub(crate) async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
    ) -> StoreResult<Acquisition> {
        let slot_path = self.paths.slot(&req.lock, 0);
        let ledger_path = self.paths.ledger(&req.lock);
        for round in 0..ACQUIRE_ROUNDS {
            let read = self.read(&req.lock, &[0], true).await?;
            let now = self.now()?;
            if let Some(mut lease) = mine(&read, req, now) {
                lease.period = Some(period.id_at(lease.acquired_at));
                return Ok(Acquisition::Elected(lease));
            }
            let window = period.window_at_ms(now);
            let latest = read.ledger.as_ref().and_then(|(l, _)| l.as_ref());
            let node = read.slots.first().and_then(|(_, n)| n.clone());
            let live = node
                .as_ref()
                .is_some_and(|n| n.live_for_others(now, self.tolerance_ms));
            match Ledger::judge(latest, window.from_ms, live) {
                ClaimVerdict::Ran => {
                    return Ok(latest.map_or(Acquisition::Taken(None), |l| {
                        Acquisition::AlreadyRan(l.record())
                    }));
                }
                ClaimVerdict::Claimed => return Ok(Acquisition::Taken(None)),
                ClaimVerdict::Free if live => return Ok(Acquisition::Taken(None)),
                ClaimVerdict::Free => {}
            }
            if node.is_none() && round == 0 {
                self.ensure_lock_node(&req.lock).await?;
            }
            let version = node.as_ref().map(|n| n.stat.version);
            let record = grant_record(req, version, now);
            let ran = latest.and_then(Ledger::last_run_ms);
            let ledger = Ledger::claim(window, now, &req.owner, req.token, ran);
            let ledger_version = read.ledger.as_ref().map(|(_, s)| s.version);
            let (slot_data, ledger_data) = (record.encode(), ledger.encode().into_bytes());
            let results = self
                .link
                .write("an acquisition", |c| {
                    let (sp, lp) = (slot_path.clone(), ledger_path.clone());
                    let (sd, ld) = (slot_data.clone(), ledger_data.clone());
                    async move {
                        let mut w = c.new_multi_writer();
                        match version {
                            None => w.add_create(&sp, &sd, &PERSISTENT)?,
                            Some(v) => w.add_set_data(&sp, &sd, Some(v))?,
                        }
                        match ledger_version {
                            None => w.add_create(&lp, &ld, &PERSISTENT)?,
                            Some(v) => w.add_set_data(&lp, &ld, Some(v))?,
                        }
                        w.commit().await.map(Some).or_else(lost_race)
                    }
                })
                .await?;
            let Some(results) = results else { continue };
            let stat = match written_stat(results.first()) {
                Some(stat) => stat,
                // ZooKeeper servers with ZOOKEEPER-4026 answer a create inside a multi
                // without its Stat: read it.
                None => match self.read_one(&req.lock, 0).await? {
                    Some(n) if n.record.as_ref() == Some(&record) => n.stat,
                    _ => return Ok(Acquisition::Taken(None)),
                },
            };
            self.link.clock.observe(stat.mtime);
            let node = Node {
                slot: 0,
                record: Some(record),
                stat,
            };
            let Some(mut lease) = node.lease(&req.lock) else {
                return Ok(Acquisition::Taken(None));
            };
            self.written.remember(&req.lock, 0, node);
            lease.period = Some(window.id);
            return Ok(Acquisition::Elected(lease));
        }
        Ok(Acquisition::Taken(None))
    }
}
