//! The protocol room: every request the store sends to ZooKeeper, each a single atomic request
//! (a multi-read, a versioned `create`/`set_data`, or one `multi` transaction).
//!
//! | operation | requests |
//! |---|---|
//! | acquire | a multi-read of `slot-0..n`; then for the lowest slot that is absent, free or expired: `create` (absent) or `set_data` at the version read (a compare-and-swap); a lost race re-reads (bounded) |
//! | acquire with a period | a multi-read of `slot-0` and `ledger`; then one `multi`: the slot's `create`/`set_data` **and** the ledger's `create`/`set_data` (the new claim, not started), each at the version read |
//! | start a period | a multi-read of `slot-0` and `ledger`; then one `multi`: a version check of the slot **and** the ledger's `set_data` (*started*) at the version read |
//! | period record | a read of `ledger` |
//! | clear the ledger | a read of `ledger`; then its `set_data` to nothing at the version read (the node stays) |
//! | extend | `get_data` of the slot; `set_data` at its version with the new TTL (keeps `czxid`, moves `mtime` to now) |
//! | release | `get_data`; `set_data` at its version marking it `free` (or `linger` with a cap) |
//! | state | a multi-read of `slot-0..n` |
//! | force release | a multi-read; one `multi` of `set_data` marking every live slot `free`, each at the version read |
//!
//! Slot nodes are persistent and never deleted: a delete followed by a create resets a node's
//! data version, so a holder's versioned write read before the delete could land on the new
//! node (the ABA problem). Marking slots free keeps every compare-and-swap exact.

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, ClaimVerdict, PeriodStart, StoreResult};
use leasehold::{
    Holder, Lease, LockName, Period, PeriodRecord,
    store::{Extension, Release, StoreError},
};
use zookeeper_client::{
    Acls, CreateMode, CreateOptions, Error, MultiReadResult, MultiWriteError, MultiWriteResult,
    Stat,
};

use crate::classify::classify;
use crate::layout::{Paths, slot_of};
use crate::link::Link;
use crate::record::{Ledger, Node, Record, Status, decode_ledger, ms_ceil, time};

/// How often an acquisition re-reads after losing a race before it answers `Held`.
const ACQUIRE_ROUNDS: usize = 4;
/// How often a forced release re-reads a lock that changed under it before giving up.
const FORCE_ROUNDS: usize = 5;

/// Persistent nodes, open to every client that may reach the store's prefix.
pub(crate) const PERSISTENT: CreateOptions<'static> =
    CreateMode::Persistent.with_acls(Acls::anyone_all());

/// The store's requests.
pub(crate) struct Protocol {
    pub(crate) link: Arc<Link>,
    pub(crate) paths: Paths,
    /// The clock-skew tolerance, ms.
    pub(crate) tolerance_ms: i64,
}

/// The slots of a lock as read, and its ledger if asked for.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Every slot asked for, with its node if it exists.
    pub(crate) slots: Vec<(u32, Option<Node>)>,
    /// The ledger and its `Stat`, if it exists (its data `None` if not this store's).
    pub(crate) ledger: Option<(Option<Ledger>, Stat)>,
}

/// A multi-write's failure that means "someone changed what we read" (a lost race).
fn lost_race(e: MultiWriteError) -> Result<Option<Vec<MultiWriteResult>>, Error> {
    match e {
        MultiWriteError::OperationFailed {
            source: Error::BadVersion | Error::NodeExists | Error::NoNode,
            ..
        } => Ok(None),
        MultiWriteError::OperationFailed { source, .. }
        | MultiWriteError::RequestFailed { source } => Err(source),
    }
}

/// The `Stat` a write's result carries.
fn written_stat(result: Option<&MultiWriteResult>) -> Option<Stat> {
    match result? {
        MultiWriteResult::Create { stat, .. } | MultiWriteResult::SetData { stat } => {
            Some(*stat).filter(|s| !s.is_invalid())
        }
        _ => None,
    }
}

impl Protocol {
    fn now(&self) -> StoreResult<i64> {
        self.link.now_ms()
    }

    /// A multi-read of `slots` of `lock` (and its ledger).
    pub(crate) async fn read(
        &self,
        lock: &LockName,
        slots: &[u32],
        ledger: bool,
    ) -> StoreResult<Read> {
        let mut paths: Vec<String> = slots.iter().map(|s| self.paths.slot(lock, *s)).collect();
        if ledger {
            paths.push(self.paths.ledger(lock));
        }
        let results = self
            .link
            .read("a read", |c| {
                let paths = paths.clone();
                async move {
                    let mut reader = c.new_multi_reader();
                    for path in &paths {
                        reader.add_get_data(path)?;
                    }
                    reader.commit().await
                }
            })
            .await?;
        let mut read = Read::default();
        for (i, result) in results.into_iter().enumerate() {
            let found = match result {
                MultiReadResult::Data { data, stat } => {
                    self.link.clock.observe(stat.mtime);
                    Some((data, stat))
                }
                MultiReadResult::Error { err: Error::NoNode } => None,
                MultiReadResult::Error { err } => return Err(classify("a read", &err)),
                _ => None,
            };
            match slots.get(i) {
                Some(&slot) => read.slots.push((
                    slot,
                    found.map(|(data, stat)| Node {
                        slot,
                        record: Record::decode(&data),
                        stat,
                    }),
                )),
                None => read.ledger = found.map(|(data, stat)| (decode_ledger(&data), stat)),
            }
        }
        Ok(read)
    }

    /// The node of one slot, if it exists.
    async fn read_one(&self, lock: &LockName, slot: u32) -> StoreResult<Option<Node>> {
        let mut read = self.read(lock, &[slot], false).await?;
        Ok(read.slots.pop().and_then(|(_, node)| node))
    }

    /// Creates the lock's node if missing.
    async fn ensure_lock_node(&self, lock: &LockName) -> StoreResult<()> {
        let path = self.paths.lock(lock);
        self.link
            .write("creating a lock node", |c| {
                let path = path.clone();
                async move {
                    match c.create(&path, b"", &PERSISTENT).await {
                        Ok(_) | Err(Error::NodeExists) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
            })
            .await
    }

    /// Writes `record` to a slot: `create` when `version` is `None` (the node is absent), else
    /// `set_data` at `version`. `None` when someone else wrote first.
    async fn write_slot(
        &self,
        lock: &LockName,
        slot: u32,
        version: Option<i32>,
        record: &Record,
        what: &str,
    ) -> StoreResult<Option<Stat>> {
        let path = self.paths.slot(lock, slot);
        let data = record.encode();
        for _ in 0..2 {
            let written = self
                .link
                .write(what, |c| {
                    let (path, data) = (path.clone(), data.clone());
                    async move {
                        let result = match version {
                            None => c.create(&path, &data, &PERSISTENT).await.map(|(s, _)| s),
                            Some(v) => c.set_data(&path, &data, Some(v)).await,
                        };
                        match result {
                            Ok(stat) => Ok(Ok(stat)),
                            Err(Error::NoNode) if version.is_none() => Ok(Err(true)),
                            Err(Error::NodeExists | Error::BadVersion | Error::NoNode) => {
                                Ok(Err(false))
                            }
                            Err(e) => Err(e),
                        }
                    }
                })
                .await?;
            match written {
                Ok(stat) => {
                    self.link.clock.observe(stat.mtime);
                    return Ok(Some(stat));
                }
                // The lock's node is missing: create it, then the slot.
                Err(true) => self.ensure_lock_node(lock).await?,
                Err(false) => return Ok(None),
            }
        }
        Ok(None)
    }

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
                return Ok(node.lease(&req.lock));
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
            lease.period = Some(window.id);
            return Ok(Acquisition::Elected(lease));
        }
        Ok(Acquisition::Taken(None))
    }

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
        for _ in 0..ACQUIRE_ROUNDS {
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
        Err(StoreError::transient(format!(
            "lock {} kept changing while its period claim was marked started; try again",
            lease.lock
        )))
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
        for _ in 0..ACQUIRE_ROUNDS {
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
        Err(StoreError::transient(format!(
            "the period ledger of lock {lock} kept changing while it was cleared; try again"
        )))
    }

    /// Extends a lease to `ttl` from the ensemble's now, if it has not ended.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            return Ok(Extension::NotHeld);
        };
        let now = self.now()?;
        let (true, Some(record)) = (node.is(lease) && node.live_for_holder(now), &node.record)
        else {
            return Ok(Extension::NotHeld);
        };
        let next = Record {
            ttl_ms: ms_ceil(ttl),
            cap_ms: None,
            ..record.clone()
        };
        match self
            .write_slot(
                &lease.lock,
                lease.slot,
                Some(node.stat.version),
                &next,
                "an extension",
            )
            .await?
        {
            Some(stat) => Ok(Extension::Extended {
                expires_at: time(stat.mtime.saturating_add(next.ttl_ms)),
            }),
            None => Ok(Extension::NotHeld),
        }
    }

    /// Releases a lease: marks the slot free, or with `linger` ends it `linger` from now (never
    /// later than it would have ended) and stops its extensions.
    pub(crate) async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let Some(node) = self.read_one(&lease.lock, lease.slot).await? else {
            return Ok(Release::NotHeld);
        };
        let now = self.now()?;
        let (true, Some(record), Some(end)) = (node.is(lease), &node.record, node.end_ms()) else {
            return Ok(Release::NotHeld);
        };
        let live = node.live_for_holder(now);
        let next = if linger.is_zero() || !live {
            Record {
                status: Status::Free,
                ttl_ms: 0,
                cap_ms: None,
                ..record.clone()
            }
        } else {
            Record {
                status: Status::Linger,
                ttl_ms: ms_ceil(linger),
                cap_ms: Some(end),
                ..record.clone()
            }
        };
        let written = self
            .write_slot(
                &lease.lock,
                lease.slot,
                Some(node.stat.version),
                &next,
                "a release",
            )
            .await?;
        Ok(if written.is_some() && live {
            Release::Released
        } else {
            Release::NotHeld
        })
    }

    /// The live holders of `slots` of `lock`, by slot.
    pub(crate) async fn holders(&self, lock: &LockName, slots: &[u32]) -> StoreResult<Vec<Holder>> {
        let read = self.read(lock, slots, false).await?;
        let now = self.now()?;
        Ok(read
            .slots
            .iter()
            .filter_map(|(_, n)| n.as_ref())
            .filter(|n| n.record.is_some() && n.live_for_others(now, self.tolerance_ms))
            .filter_map(Node::holder)
            .collect())
    }

    /// The slot numbers of `lock`'s nodes (one `get_children`), sorted.
    pub(crate) async fn slots_of(&self, lock: &LockName) -> StoreResult<Vec<u32>> {
        let path = self.paths.lock(lock);
        let children = self
            .link
            .read("a read", |c| {
                let path = path.clone();
                async move {
                    match c.list_children(&path).await {
                        Ok(children) => Ok(children),
                        Err(Error::NoNode) => Ok(Vec::new()),
                        Err(e) => Err(e),
                    }
                }
            })
            .await?;
        let mut slots: Vec<u32> = children.iter().filter_map(|c| slot_of(c)).collect();
        slots.sort_unstable();
        Ok(slots)
    }

    /// Marks every live slot of `lock` among `slots` free whatever its token (one `multi` at the
    /// versions read, re-read if the lock changed meanwhile), and returns the holders as they
    /// were.
    pub(crate) async fn force_release(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<Holder>> {
        let all: Vec<u32> = (0..slots).collect();
        for _ in 0..FORCE_ROUNDS {
            let read = self.read(lock, &all, false).await?;
            let now = self.now()?;
            let live: Vec<(String, Vec<u8>, i32, Holder)> = read
                .slots
                .iter()
                .filter_map(|(_, n)| n.as_ref())
                .filter(|n| n.live_for_others(now, self.tolerance_ms))
                .filter_map(|n| {
                    let record = n.record.as_ref()?;
                    let free = Record {
                        status: Status::Free,
                        ttl_ms: 0,
                        cap_ms: None,
                        ..record.clone()
                    };
                    Some((
                        self.paths.slot(lock, n.slot),
                        free.encode(),
                        n.stat.version,
                        n.holder()?,
                    ))
                })
                .collect();
            if live.is_empty() {
                return Ok(Vec::new());
            }
            let writes: Vec<(String, Vec<u8>, i32)> = live
                .iter()
                .map(|(p, d, v, _)| (p.clone(), d.clone(), *v))
                .collect();
            let done = self
                .link
                .write("a forced release", |c| {
                    let writes = writes.clone();
                    async move {
                        let mut w = c.new_multi_writer();
                        for (path, data, version) in &writes {
                            w.add_set_data(path, data, Some(*version))?;
                        }
                        w.commit().await.map(Some).or_else(lost_race)
                    }
                })
                .await?;
            if let Some(results) = done {
                for stat in results.iter().filter_map(|r| written_stat(Some(r))) {
                    self.link.clock.observe(stat.mtime);
                }
                return Ok(live.into_iter().map(|(_, _, _, h)| h).collect());
            }
        }
        Err(StoreError::transient(format!(
            "lock {lock} kept changing during a forced release; try again"
        )))
    }
}

/// The live lease `req.token` already holds (a retried request that was applied).
fn mine(read: &Read, req: &AcquireRequest, now: i64) -> Option<Lease> {
    read.slots
        .iter()
        .filter_map(|(_, n)| n.as_ref())
        .find(|n| {
            n.record
                .as_ref()
                .is_some_and(|r| r.token == req.token && r.status == Status::Held)
                && n.live_for_holder(now)
        })
        .and_then(|n| n.lease(&req.lock))
}

/// The record a grant writes over a node at `version` (`None`: a new node, version 0).
fn grant_record(req: &AcquireRequest, version: Option<i32>, now: i64) -> Record {
    Record {
        status: Status::Held,
        grant_version: version.map_or(0, |v| v.saturating_add(1)),
        ttl_ms: ms_ceil(req.ttl),
        cap_ms: None,
        acquired_ms: now,
        token: req.token,
        owner: req.owner.to_string(),
    }
}
