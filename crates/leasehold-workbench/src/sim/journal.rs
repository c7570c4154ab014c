//! The journal: what happened during a run, written down the moment it happened.
//!
//! Everything runs on one thread, so entries are appended in the order the runtime performed
//! them; each gets a sequence number. The store's answers come from [`ObservedStore`]
//! (acquisitions, refusals because the lock is taken or because the period ledger says the
//! period already ran, extensions, releases), `lost` from the electors' event streams, `skip` and
//! the end of a run from the run outcomes, and writes from the actions. Store-side expiries have
//! no caller, so they are added when the recorder drains the journal, at the instant the lease
//! ended (see [`Journal::drain`]).
//!
//! [`ObservedStore`]: leasehold::store::ObservedStore

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{
    Lease, LostReason,
    store::{Extension, Release, StoreObserver},
};
use tokio::time::Instant;

use crate::sim::resource::FencedResource;
use crate::sim::timeline::Resource;

/// One happening.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) at: Instant,
    /// 0 for store-side expiries (they happen as time reaches the instant, before anything a
    /// task does at that instant), 1 for everything else.
    rank: u8,
    seq: u64,
    /// The candidate it happened to.
    pub(crate) node: usize,
    pub(crate) what: What,
}

/// What happened. `lease` indexes [`Journal::lease`]; instants are virtual.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What {
    /// The first attempt of the node's run found the lock taken; `blocker` is when the first
    /// live lease ends.
    Contended { blocker: Option<Instant> },
    /// The period ledger refused the node's claim: `period` was granted to candidate `by` at
    /// `at`. Its own answer, never contention (the lock may be free).
    AlreadyRan { period: i64, by: usize, at: Instant },
    /// The node's wait ran out.
    Skipped { blocker: Option<Instant> },
    /// The store granted a lease ending at `expires`.
    Granted { lease: usize, expires: Instant },
    /// The store renewed the lease to `expires`.
    Extended { lease: usize, expires: Instant },
    /// The store refused to renew: the token no longer held the lease.
    ExtendRefused { lease: usize },
    /// The store freed the lock.
    Released { lease: usize },
    /// The store shortened the lease to `expires` (the minimum lease).
    Lingered { lease: usize, expires: Instant },
    /// The store refused the release: the token no longer held the lease.
    ReleaseRefused { lease: usize },
    /// The lease ran out in the store.
    Expired { lease: usize },
    /// The elector reported the lease lost; `expires` is the store's expiry if still ahead.
    Lost {
        lease: usize,
        reason: LostReason,
        expires: Option<Instant>,
    },
    /// The action wrote to the fenced resource.
    Wrote { lease: usize, accepted: bool },
    /// The node's run returned after its action (and release).
    Finished,
    /// The store answered an acquisition attempt of the node's current run with an error (the
    /// first such answer of the run).
    AcquireFailed,
    /// The store answered an extension of `lease` with an error (the first one per lease).
    ExtendFailed { lease: usize },
    /// The store answered a release of `lease` with an error (the first one per lease).
    ReleaseFailed { lease: usize },
    /// The node's run returned an error: its action's (`store` false) or the store's.
    RunFailed { store: bool },
}

/// One granted lease.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRecord {
    pub(crate) node: usize,
    /// The display label: candidate letter, `·`, acquisition number in this run.
    pub(crate) label: String,
    pub(crate) slot: u32,
    pub(crate) fence: u64,
    /// The period of the ledger this grant claimed, if any.
    pub(crate) period: Option<i64>,
    pub(crate) acquired: Instant,
    acquired_wall: SystemTime,
    /// When the store's lease ends (kept current through extensions and lingering releases).
    expires: Instant,
    /// Freed by a release, or its expiry was journalled.
    ended: bool,
    /// A store error answering an extension of it was journalled.
    extend_failed: bool,
    /// A store error answering a release of it was journalled.
    release_failed: bool,
}

impl LeaseRecord {
    /// The virtual instant of a store time, using this lease's grant as the reference.
    pub(crate) fn instant_of(&self, wall: SystemTime) -> Instant {
        match wall.duration_since(self.acquired_wall) {
            Ok(after) => self.acquired + after,
            Err(e) => self
                .acquired
                .checked_sub(e.duration())
                .unwrap_or(self.acquired),
        }
    }
}

#[derive(Debug, Default)]
struct Log {
    seq: u64,
    entries: Vec<Entry>,
    leases: Vec<LeaseRecord>,
    /// Per candidate: the contended first attempt of its current run was journalled.
    contended: Vec<bool>,
    /// Per candidate: a store error answering an attempt of its current run was journalled.
    acquire_failed: Vec<bool>,
    resource: FencedResource,
    failure: Option<String>,
}

impl Log {
    fn push(&mut self, node: usize, what: What) {
        let seq = self.seq;
        self.seq += 1;
        self.entries.push(Entry {
            at: Instant::now(),
            rank: 1,
            seq,
            node,
            what,
        });
    }

    fn find(&self, slot: u32, fence: u64) -> Option<usize> {
        self.leases
            .iter()
            .position(|l| l.slot == slot && l.fence == fence)
    }

    /// When the first lease still live at `now` ends.
    fn blocker(&self, now: Instant) -> Option<Instant> {
        self.leases
            .iter()
            .filter(|l| !l.ended && l.expires > now)
            .map(|l| l.expires)
            .min()
    }
}

/// The shared journal of one run. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    log: Arc<Mutex<Log>>,
    names: Arc<[String]>,
}

impl Journal {
    pub(crate) fn new(names: &[String]) -> Self {
        let log = Log {
            contended: vec![false; names.len()],
            acquire_failed: vec![false; names.len()],
            ..Log::default()
        };
        Self {
            log: Arc::new(Mutex::new(log)),
            names: names.into(),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn node_of(&self, owner: &str) -> Option<usize> {
        self.names.iter().position(|n| n == owner)
    }

    /// The log, with the id and node of `lease` if it was recorded.
    fn recorded(&self, lease: &Lease) -> Option<(MutexGuard<'_, Log>, usize, usize)> {
        let log = self.log();
        let id = log.find(lease.slot, lease.fence)?;
        let node = log.leases[id].node;
        Some((log, id, node))
    }

    /// Notes that candidate `node` starts a run (its first contended attempt will be journalled).
    pub(crate) fn attempting(&self, node: usize) {
        let mut log = self.log();
        if let Some(contended) = log.contended.get_mut(node) {
            *contended = false;
        }
        if let Some(failed) = log.acquire_failed.get_mut(node) {
            *failed = false;
        }
    }

    /// Notes that candidate `node`'s elector reported its lease in `slot` with `fence` lost.
    pub(crate) fn lost(&self, node: usize, slot: u32, fence: u64, reason: LostReason) {
        let mut log = self.log();
        let Some(id) = log.find(slot, fence) else {
            return;
        };
        let record = &log.leases[id];
        let expires = (!record.ended && record.expires > Instant::now()).then_some(record.expires);
        log.push(
            node,
            What::Lost {
                lease: id,
                reason,
                expires,
            },
        );
    }

    /// Notes that candidate `node` skipped.
    pub(crate) fn skipped(&self, node: usize) {
        let mut log = self.log();
        let blocker = log.blocker(Instant::now());
        log.push(node, What::Skipped { blocker });
    }

    /// Candidate `node` writes to the fenced resource with its lease; true if accepted.
    pub(crate) fn write(&self, node: usize, slot: u32, fence: u64) -> bool {
        self.write_noted(node, slot, fence, true)
    }

    /// Like [`write`](Self::write), but journals an accepted write only if `note` (a seeded run
    /// writes every 200 ms and shows the first and last write of each action, and every write
    /// the resource rejected).
    pub(crate) fn write_noted(&self, node: usize, slot: u32, fence: u64, note: bool) -> bool {
        let mut log = self.log();
        let accepted = log.resource.write(node, slot, fence);
        if !note && accepted {
            return accepted;
        }
        if let Some(id) = log.find(slot, fence) {
            log.push(
                node,
                What::Wrote {
                    lease: id,
                    accepted,
                },
            );
        }
        accepted
    }

    /// Notes that candidate `node`'s run returned after its action.
    pub(crate) fn finished(&self, node: usize) {
        self.log().push(node, What::Finished);
    }

    /// Notes that candidate `node`'s run returned an error: its action's, or (`store`) the
    /// store's.
    pub(crate) fn run_failed(&self, node: usize, store: bool) {
        self.log().push(node, What::RunFailed { store });
    }

    /// Notes a failure that makes the run unusable (the first one is kept).
    pub(crate) fn failed(&self, message: String) {
        self.log().failure.get_or_insert(message);
    }

    /// The failure noted, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.log().failure.clone()
    }

    /// Takes every entry journalled so far, after adding the expiry of every lease whose store
    /// expiry is at or before `until`, sorted by instant (expiries first within an instant, then
    /// in the order they were journalled).
    pub(crate) fn drain(&self, until: Instant) -> Vec<Entry> {
        let mut log = self.log();
        let mut expired = Vec::new();
        for (id, record) in log.leases.iter_mut().enumerate() {
            if !record.ended && record.expires <= until {
                record.ended = true;
                expired.push((record.expires, record.node, id));
            }
        }
        for (at, node, lease) in expired {
            let seq = log.seq;
            log.seq += 1;
            log.entries.push(Entry {
                at,
                rank: 0,
                seq,
                node,
                what: What::Expired { lease },
            });
        }
        let mut entries = std::mem::take(&mut log.entries);
        entries.sort_by_key(|e| (e.at, e.rank, e.seq));
        entries
    }

    /// A copy of lease `id`'s record.
    pub(crate) fn lease(&self, id: usize) -> Option<LeaseRecord> {
        self.log().leases.get(id).cloned()
    }

    /// The latest grant that claimed a period: the ledger's record as the store keeps it (every
    /// grant passes through the journal, and the ledger keeps the latest period granted).
    pub(crate) fn ledger(&self) -> Option<LeaseRecord> {
        let log = self.log();
        log.leases
            .iter()
            .rev()
            .find(|l| l.period.is_some())
            .cloned()
    }

    /// The lease with this slot and fence.
    pub(crate) fn lease_by_fence(&self, slot: u32, fence: u64) -> Option<LeaseRecord> {
        let log = self.log();
        log.find(slot, fence).map(|id| log.leases[id].clone())
    }

    /// The resource as the frame shows it.
    pub(crate) fn resource(&self) -> Resource {
        self.log().resource.snapshot(&self.names)
    }
}

/// The store's answers, as [`ObservedStore`](leasehold::store::ObservedStore) passes them on. The
/// memory store never fails; errors come from the store outage, and the first one of a run (or
/// of a lease) is journalled.
impl StoreObserver for Journal {
    /// Notes the store's answer to an acquisition attempt.
    fn acquired(&self, req: &AcquireRequest, answer: &StoreResult<Acquisition>) {
        let Some(node) = self.node_of(&req.owner) else {
            return;
        };
        let mut log = self.log();
        let Ok(answer) = answer else {
            if let Some(noted) = log.acquire_failed.get_mut(node)
                && !*noted
            {
                *noted = true;
                log.push(node, What::AcquireFailed);
            }
            return;
        };
        match answer {
            Acquisition::Elected(lease) => {
                if log.find(lease.slot, lease.fence).is_some() {
                    return; // a retried request that had been applied: the same lease again
                }
                let now = Instant::now();
                let letter = self.names[node].chars().last().unwrap_or('?');
                let record = LeaseRecord {
                    node,
                    label: format!("{letter}·{}", log.leases.len() + 1),
                    slot: lease.slot,
                    fence: lease.fence,
                    period: lease.period,
                    acquired: now,
                    acquired_wall: lease.acquired_at,
                    expires: now,
                    ended: false,
                    extend_failed: false,
                    release_failed: false,
                };
                let expires = record.instant_of(lease.expires_at);
                log.leases.push(LeaseRecord { expires, ..record });
                let id = log.leases.len() - 1;
                log.push(node, What::Granted { lease: id, expires });
            }
            Acquisition::AlreadyRan(record) => {
                let Some(by) = self.node_of(&record.by) else {
                    return;
                };
                // Any grant maps store times to virtual instants; the refusing record's own
                // grant is among them (it went through this store).
                let now = Instant::now();
                let at = log.leases.first().map_or(now, |l| l.instant_of(record.at));
                log.push(
                    node,
                    What::AlreadyRan {
                        period: record.period,
                        by,
                        at,
                    },
                );
            }
            // Held: every slot is taken (contention).
            _ => {
                if !log.contended[node] {
                    log.contended[node] = true;
                    let blocker = log.blocker(Instant::now());
                    log.push(node, What::Contended { blocker });
                }
            }
        }
    }

    /// Notes the store's answer to an extension.
    fn extended(&self, lease: &Lease, _ttl: Duration, answer: &StoreResult<Extension>) {
        let Some((mut log, id, node)) = self.recorded(lease) else {
            return;
        };
        let Ok(answer) = answer else {
            if !std::mem::replace(&mut log.leases[id].extend_failed, true) {
                log.push(node, What::ExtendFailed { lease: id });
            }
            return;
        };
        match answer {
            Extension::Extended { expires_at } => {
                let expires = log.leases[id].instant_of(*expires_at);
                log.leases[id].expires = expires;
                log.push(node, What::Extended { lease: id, expires });
            }
            Extension::NotHeld => log.push(node, What::ExtendRefused { lease: id }),
        }
    }

    /// Notes the store's answer to a release asking to keep the lease for `linger`.
    fn released(&self, lease: &Lease, linger: Duration, answer: &StoreResult<Release>) {
        let Some((mut log, id, node)) = self.recorded(lease) else {
            return;
        };
        let Ok(answer) = answer else {
            if !std::mem::replace(&mut log.leases[id].release_failed, true) {
                log.push(node, What::ReleaseFailed { lease: id });
            }
            return;
        };
        match answer {
            Release::Released if linger.is_zero() => {
                log.leases[id].ended = true;
                log.push(node, What::Released { lease: id });
            }
            Release::Released => {
                let record = &mut log.leases[id];
                record.expires = record
                    .expires
                    .min(leasehold::store::deadline_after(Instant::now(), linger));
                let expires = record.expires;
                log.push(node, What::Lingered { lease: id, expires });
            }
            Release::NotHeld => log.push(node, What::ReleaseRefused { lease: id }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use leasehold::{LockName, PeriodRecord, store::Token};

    use super::*;

    fn names() -> Vec<String> {
        vec!["node-a".to_owned(), "node-b".to_owned()]
    }

    fn request(owner: &str) -> AcquireRequest {
        let lock = LockName::new("invoice-close").expect("a valid name");
        AcquireRequest::new(lock, 1, owner, Token::random(), Duration::from_secs(5))
    }

    fn kinds(journal: &Journal) -> Vec<(usize, &'static str)> {
        journal
            .drain(Instant::now())
            .iter()
            .map(|e| {
                let kind = match e.what {
                    What::AlreadyRan { .. } => "already_ran",
                    What::Contended { .. } => "contended",
                    What::Granted { .. } => "granted",
                    _ => "other",
                };
                (e.node, kind)
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_ledger_refusal_is_journalled_as_already_ran_not_as_contention() {
        let journal = Journal::new(&names());
        let granted_at = Instant::now();
        let req = request("node-a");
        let lease = Lease {
            lock: req.lock.clone(),
            slot: 0,
            owner: "node-a".to_owned(),
            token: req.token,
            fence: 1,
            acquired_at: UNIX_EPOCH,
            expires_at: UNIX_EPOCH + Duration::from_secs(5),
            period: Some(0),
        };
        journal.acquired(&req, &Ok(Acquisition::Elected(lease)));
        tokio::time::sleep(Duration::from_secs(3)).await;

        let record = PeriodRecord {
            period: 0,
            from: UNIX_EPOCH,
            until: UNIX_EPOCH + Duration::from_secs(10),
            at: UNIX_EPOCH,
            by: "node-a".to_owned(),
            started: true,
            ran_at: Some(UNIX_EPOCH),
        };
        journal.acquired(&request("node-b"), &Ok(Acquisition::AlreadyRan(record)));
        let entries = journal.drain(Instant::now());
        let refusal = entries.last().map(|e| (e.node, e.what));
        assert!(
            matches!(refusal, Some((1, What::AlreadyRan { period: 0, by: 0, at })) if at == granted_at),
            "{refusal:?}"
        );
        assert_eq!(journal.ledger().and_then(|l| l.period), Some(0));

        // Contention still shows once per run, and again in the next run.
        journal.acquired(&request("node-b"), &Ok(Acquisition::Taken(None)));
        journal.acquired(&request("node-b"), &Ok(Acquisition::Taken(None)));
        assert_eq!(kinds(&journal), [(1, "contended")]);
        journal.attempting(1);
        journal.acquired(&request("node-b"), &Ok(Acquisition::Taken(None)));
        assert_eq!(kinds(&journal), [(1, "contended")]);
    }
}
