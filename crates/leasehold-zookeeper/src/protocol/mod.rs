//! The protocol room: every request the store sends to ZooKeeper, each a single atomic request
//! (a multi-read, a versioned `create`/`set_data`, or one `multi` transaction).
//!
//! | operation | requests | atomic by |
//! |---|---|---|
//! | acquire | a multi-read of `slot-0..n` (a `get_data` for a single slot); then for the lowest slot that is absent, free or expired: `create` (absent) or `set_data` at the version read (a compare-and-swap); a lost race re-reads (bounded) | the version (or absence) of the one node written |
//! | acquire with a period | a multi-read of `slot-0` and `ledger`; then one `multi`: the slot's `create`/`set_data` **and** the ledger's `create`/`set_data` (the new claim, not started), each at the version read | one `multi` |
//! | start a period | a multi-read of `slot-0` and `ledger`; then one `multi`: a version check of the slot **and** the ledger's `set_data` (*started*) at the version read | one `multi` |
//! | period record | a read of `ledger` | one read |
//! | clear the ledger | a read of `ledger`; then its `set_data` to nothing at the version read (the node stays) | the version read |
//! | extend | `set_data` at the version of this client's last write to the slot, with the new TTL (keeps `czxid`, moves `mtime` to now); if that version is gone or unknown, `get_data` first and `set_data` at the version read | the version written or read |
//! | extend many (a beat's renewals, the `renew` module) | one `multi` of `set_data`s at the versions this client last wrote (a multi-read first of the slots it does not remember); a node changed meanwhile: one multi-read of them all and the `multi` again, at most `RENEW_ROUNDS` times; per `RENEW_BATCH` leases | each version written or read |
//! | release | one `multi`: `set_data` at the version of this client's last write marking it `free`, and `set_data` of the lock's release node (`create` on the lock's first release); with a linger a lone `set_data` marking it `linger` with a cap; if that version is gone or unknown, `get_data` first | the version written or read |
//! | state | a multi-read of `slot-0..n` | one multi-read |
//! | state of many locks (`state_many`: a partition set's shard owners) | one multi-read of every named lock's `slot-0..n` per `READ_BATCH` (1,000) nodes | one multi-read each |
//! | force release | a multi-read; one `multi` of `set_data` marking every live slot `free`, each at the version read, and of the lock's release node | one `multi` |
//! | list | one `get_children` of `<prefix>/locks`, then multi-reads of the slots of the locks after the cursor (the `list` module) | one read each |
//! | release signal | one persistent recursive watch on `<prefix>/locks` (the `watch` module); only the release nodes' changes wake waiters | — |
//!
//! The versions this client last wrote are remembered per slot it holds (`Protocol::written`,
//! the toolkit's `OwnWrites`): a node at that version is exactly what this client wrote, since
//! any other write moves the version on. A stale entry costs one refused `set_data`, after which
//! the slot is read as before.
//!
//! Slot nodes are persistent and never deleted: a delete followed by a create resets a node's
//! data version, so a holder's versioned write read before the delete could land on the new
//! node (the ABA problem). Marking slots free keeps every compare-and-swap exact.

mod acquire;
mod extend_release;
mod period;
mod read;
mod renew;

use std::sync::Arc;

use leasehold::store::{AcquireRequest, OwnWrites, StoreResult};
use leasehold::{Lease, LockName};
use zookeeper_client::{
    Acls, CreateMode, CreateOptions, Error, MultiReadResult, MultiWriteError, MultiWriteResult,
    Stat,
};

use crate::classify::classify;
use crate::keys::Paths;
use crate::link::Link;
use crate::record::{Ledger, Node, Record, Status, decode_ledger, ms_ceil};

/// How often an acquisition re-reads after losing a race before it answers `Held`.
pub(super) const ACQUIRE_ROUNDS: usize = 4;

/// Persistent nodes, open to every client that may reach the store's prefix.
pub(crate) const PERSISTENT: CreateOptions<'static> =
    CreateMode::Persistent.with_acls(Acls::anyone_all());

/// The store's requests.
pub(crate) struct Protocol {
    pub(crate) link: Arc<Link>,
    pub(crate) paths: Paths,
    /// The clock-skew tolerance, ms.
    pub(crate) tolerance_ms: i64,
    /// The slot nodes this client holds, as it last wrote them.
    pub(crate) written: OwnWrites<Node>,
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
pub(super) fn lost_race(e: MultiWriteError) -> Result<Option<Vec<MultiWriteResult>>, Error> {
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
pub(super) fn written_stat(result: Option<&MultiWriteResult>) -> Option<Stat> {
    match result? {
        MultiWriteResult::Create { stat, .. } | MultiWriteResult::SetData { stat } => {
            Some(*stat).filter(|s| !s.is_invalid())
        }
        _ => None,
    }
}

impl Protocol {
    pub(super) fn now(&self) -> StoreResult<i64> {
        self.link.now_ms()
    }

    /// One multi-read of `paths` (a plain `get_data` for one path): each node's data and
    /// `Stat`, `None` where it is absent.
    pub(super) async fn read_paths(
        &self,
        paths: Vec<String>,
    ) -> StoreResult<Vec<Option<(Vec<u8>, Stat)>>> {
        if let [path] = paths.as_slice() {
            let found = self
                .link
                .read("a read", |c| async move {
                    match c.get_data(path).await {
                        Ok(found) => Ok(Some(found)),
                        Err(Error::NoNode) => Ok(None),
                        Err(e) => Err(e),
                    }
                })
                .await?;
            if let Some((_, stat)) = &found {
                self.link.clock.observe(stat.mtime);
            }
            return Ok(vec![found]);
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
        results
            .into_iter()
            .map(|result| match result {
                MultiReadResult::Data { data, stat } => {
                    self.link.clock.observe(stat.mtime);
                    Ok(Some((data, stat)))
                }
                MultiReadResult::Error { err: Error::NoNode } => Ok(None),
                MultiReadResult::Error { err } => Err(classify("a read", &err)),
                _ => Ok(None),
            })
            .collect()
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
        let mut read = Read::default();
        for (i, found) in self.read_paths(paths).await?.into_iter().enumerate() {
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
    pub(super) async fn read_one(&self, lock: &LockName, slot: u32) -> StoreResult<Option<Node>> {
        let mut read = self.read(lock, &[slot], false).await?;
        Ok(read.slots.pop().and_then(|(_, node)| node))
    }

    /// Creates the lock's node if missing.
    pub(super) async fn ensure_lock_node(&self, lock: &LockName) -> StoreResult<()> {
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
    pub(super) async fn write_slot(
        &self,
        lock: &LockName,
        slot: u32,
        version: Option<i32>,
        record: &Record,
        what: &str,
    ) -> StoreResult<Option<Stat>> {
        let path = self.paths.slot(lock, slot);
        let data = record.encode();
        // Borrowed by each attempt's request, not copied.
        let (path, data) = (path.as_str(), data.as_slice());
        for _ in 0..2 {
            let written = self
                .link
                .write(what, |c| async move {
                    let result = match version {
                        None => c.create(path, data, &PERSISTENT).await.map(|(s, _)| s),
                        Some(v) => c.set_data(path, data, Some(v)).await,
                    };
                    match result {
                        Ok(stat) => Ok(Ok(stat)),
                        Err(Error::NoNode) if version.is_none() => Ok(Err(true)),
                        Err(Error::NodeExists | Error::BadVersion | Error::NoNode) => {
                            Ok(Err(false))
                        }
                        Err(e) => Err(e),
                    }
                })
                .await?;
            match written {
                Ok(stat) => {
                    self.link.clock.observe(stat.mtime);
                    return Ok(Some(stat));
                }
                // The lock's node is missing: create it, then the slot.
                // Boxed: rare, and it would make every write's future larger.
                Err(true) => Box::pin(self.ensure_lock_node(lock)).await?,
                Err(false) => return Ok(None),
            }
        }
        Ok(None)
    }
}

/// How a release's `multi` ended.
enum Freed {
    /// Applied: the results of the slot writes, then the release node's.
    Written(Vec<MultiWriteResult>),
    /// A slot changed since it was read.
    Changed,
    /// The release node is not as the request assumed (missing, or created meanwhile).
    NodeNotAsAssumed,
}

impl Protocol {
    /// Frees slots of `lock` in one `multi`: each `(path, data, version)` of `writes` is a
    /// `set_data` at the version read, and the lock's release node (`Paths::released`) is
    /// written with them, or created by the lock's first release. That node's change is all the
    /// release watch wakes waiters for: grants and extensions write slot nodes only, so a
    /// renewal wakes nobody. The results of the slot writes, in order; `None` when a slot
    /// changed since it was read (a lost race).
    pub(super) async fn write_release(
        &self,
        what: &str,
        lock: &LockName,
        writes: &[(String, Vec<u8>, i32)],
    ) -> StoreResult<Option<Vec<MultiWriteResult>>> {
        let released = self.paths.released(lock);
        let released = released.as_str();
        let mut create = false;
        // The node is never deleted: it is missing at most once, then exists for good.
        for _ in 0..3 {
            let freed = self
                .link
                .write(what, |c| async move {
                    let mut w = c.new_multi_writer();
                    for (path, data, version) in writes {
                        w.add_set_data(path, data, Some(*version))?;
                    }
                    if create {
                        w.add_create(released, &[], &PERSISTENT)?;
                    } else {
                        w.add_set_data(released, &[], None)?;
                    }
                    match w.commit().await {
                        Ok(results) => Ok(Freed::Written(results)),
                        Err(MultiWriteError::OperationFailed {
                            index,
                            source: Error::NoNode | Error::NodeExists,
                        }) if index == writes.len() => Ok(Freed::NodeNotAsAssumed),
                        Err(e) => lost_race(e).map(|_| Freed::Changed),
                    }
                })
                .await?;
            match freed {
                Freed::Written(mut results) => {
                    results.truncate(writes.len());
                    return Ok(Some(results));
                }
                Freed::Changed => return Ok(None),
                Freed::NodeNotAsAssumed => create = !create,
            }
        }
        Ok(None)
    }
}

/// The live lease `req.token` already holds (a retried request that was applied).
pub(super) fn mine(read: &Read, req: &AcquireRequest, now: i64) -> Option<Lease> {
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
pub(super) fn grant_record(req: &AcquireRequest, version: Option<i32>, now: i64) -> Record {
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
