//! The partition scenario's journal: every shard lease the store granted, released or let
//! expire, the members' joins, leave and crash, the losses they heard of, and the work each
//! shard's owner did (its writes to the fenced resource, and when it ran).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use leasehold::store::{
    AcquireRequest, Acquisition, Extension, Release, StoreObserver, StoreResult,
};
use leasehold::{Lease, LostReason};
use tokio::time::Instant;

use crate::sim::clock::STORE_ORIGIN;
use crate::sim::resource::FencedResource;
use crate::sim::timeline::Resource;

/// How a tenure ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its owner released the lease (a hand-over).
    Released,
    /// The store's lease ran out (its owner crashed).
    Expired,
}

/// One grant of one shard: from the store's grant to its release or expiry.
#[derive(Debug, Clone)]
pub(crate) struct Tenure {
    pub(crate) node: usize,
    pub(crate) shard: u32,
    pub(crate) fence: u64,
    pub(crate) label: String,
    pub(crate) acquired: Instant,
    /// When the store's lease ends unless renewed (kept current through renewals).
    pub(crate) expires: Instant,
    pub(crate) ended: Option<(Instant, Ended)>,
}

/// The work a node did on a shard: from its `Acquired` event to the drop of its lease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Work {
    pub(crate) shard: u32,
    pub(crate) node: usize,
    pub(crate) start: Instant,
    pub(crate) end: Option<Instant>,
}

/// What happened.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What {
    Joined,
    Left,
    Crashed,
    Granted {
        tenure: usize,
    },
    Released {
        tenure: usize,
    },
    Expired {
        tenure: usize,
    },
    Lost {
        shard: u32,
        reason: LostReason,
    },
    Wrote {
        shard: u32,
        fence: u64,
        accepted: bool,
    },
}

/// One happening, at a virtual instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) at: Instant,
    /// 0 for expiries (they happen as time reaches the instant), 1 for everything else.
    rank: u8,
    seq: u64,
    pub(crate) node: usize,
    pub(crate) what: What,
}

#[derive(Debug)]
struct State {
    t0: Instant,
    names: Vec<String>,
    /// `<set>.shard-`: the shard locks' common prefix.
    prefix: String,
    tenures: Vec<Tenure>,
    work: Vec<Work>,
    entries: Vec<Entry>,
    seq: u64,
    resource: FencedResource,
    failure: Option<String>,
}

/// The journal, shared by the store's observer, the members' tasks and the recorder.
#[derive(Debug, Clone)]
pub(crate) struct ShardLog {
    state: Arc<Mutex<State>>,
}

impl ShardLog {
    /// A journal for a run that started at `t0` (when the store's clock read
    /// [`STORE_ORIGIN`]), with these node ids, of the set named `set`.
    pub(crate) fn new(t0: Instant, names: Vec<String>, set: &str) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                t0,
                names,
                prefix: format!("{set}.shard-"),
                tenures: Vec::new(),
                work: Vec::new(),
                entries: Vec::new(),
                seq: 0,
                resource: FencedResource::default(),
                failure: None,
            })),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn joined(&self, node: usize) {
        self.state().push(node, What::Joined);
    }

    pub(crate) fn left(&self, node: usize) {
        self.state().push(node, What::Left);
    }

    /// Node `node` crashed: its work stops now.
    pub(crate) fn crashed(&self, node: usize) {
        let mut s = self.state();
        let now = Instant::now();
        for w in s
            .work
            .iter_mut()
            .filter(|w| w.node == node && w.end.is_none())
        {
            w.end = Some(now);
        }
        s.push(node, What::Crashed);
    }

    pub(crate) fn lost(&self, node: usize, shard: u32, reason: LostReason) {
        self.state().push(node, What::Lost { shard, reason });
    }

    /// Node `node` starts its work on `shard`; returns the work's id for
    /// [`work_ended`](Self::work_ended).
    pub(crate) fn work_started(&self, node: usize, shard: u32) -> usize {
        let mut s = self.state();
        s.work.push(Work {
            shard,
            node,
            start: Instant::now(),
            end: None,
        });
        s.work.len() - 1
    }

    pub(crate) fn work_ended(&self, id: usize) {
        if let Some(w) = self.state().work.get_mut(id) {
            w.end.get_or_insert_with(Instant::now);
        }
    }

    /// Node `node` writes to `shard`'s part of the fenced resource with `fence`.
    pub(crate) fn write(&self, node: usize, shard: u32, fence: u64) {
        let mut s = self.state();
        let accepted = s.resource.write(node, shard, fence);
        s.push(
            node,
            What::Wrote {
                shard,
                fence,
                accepted,
            },
        );
    }

    /// Something went wrong that the scenario does not expect (a join refused, say).
    pub(crate) fn fail(&self, why: String) {
        self.state().failure.get_or_insert(why);
    }

    pub(crate) fn failure(&self) -> Option<String> {
        self.state().failure.clone()
    }

    /// Everything journalled up to `until`, in order: the expiries of leases that ended by
    /// then are added first, at the instant they ended.
    pub(crate) fn drain(&self, until: Instant) -> Vec<Entry> {
        let mut s = self.state();
        for id in 0..s.tenures.len() {
            let t = &mut s.tenures[id];
            if t.ended.is_none() && t.expires <= until {
                t.ended = Some((t.expires, Ended::Expired));
                let (at, node) = (t.expires, t.node);
                s.seq += 1;
                let seq = s.seq;
                s.entries.push(Entry {
                    at,
                    rank: 0,
                    seq,
                    node,
                    what: What::Expired { tenure: id },
                });
            }
        }
        let mut entries = std::mem::take(&mut s.entries);
        entries.sort_by_key(|e| (e.at, e.rank, e.seq));
        entries
    }

    pub(crate) fn tenure(&self, id: usize) -> Option<Tenure> {
        self.state().tenures.get(id).cloned()
    }

    /// The label of `shard`'s lease with `fence`.
    pub(crate) fn label(&self, shard: u32, fence: u64) -> Option<String> {
        let s = self.state();
        s.find(shard, fence).map(|id| s.tenures[id].label.clone())
    }

    /// The latest tenure of `shard` granted to `node`.
    pub(crate) fn latest(&self, node: usize, shard: u32) -> Option<Tenure> {
        self.state()
            .tenures
            .iter()
            .rev()
            .find(|t| t.node == node && t.shard == shard)
            .cloned()
    }

    pub(crate) fn tenures(&self) -> Vec<Tenure> {
        self.state().tenures.clone()
    }

    pub(crate) fn work(&self) -> Vec<Work> {
        self.state().work.clone()
    }

    /// The virtual instant of a store time.
    pub(crate) fn instant_of(&self, wall: SystemTime) -> Instant {
        self.state().instant_of(wall)
    }

    /// The resource as a frame shows it (one "slot" per shard).
    pub(crate) fn resource(&self) -> Resource {
        let s = self.state();
        s.resource.snapshot(&s.names)
    }

    /// The shard of a lock name, if it is one of the set's shard locks.
    fn shard_of(&self, s: &State, lock: &str) -> Option<u32> {
        lock.strip_prefix(&s.prefix)?.parse().ok()
    }
}

impl State {
    fn push(&mut self, node: usize, what: What) {
        self.seq += 1;
        self.entries.push(Entry {
            at: Instant::now(),
            rank: 1,
            seq: self.seq,
            node,
            what,
        });
    }

    fn find(&self, shard: u32, fence: u64) -> Option<usize> {
        self.tenures
            .iter()
            .position(|t| t.shard == shard && t.fence == fence)
    }

    fn node_of(&self, owner: &str) -> Option<usize> {
        self.names.iter().position(|n| n == owner)
    }

    fn instant_of(&self, wall: SystemTime) -> Instant {
        let after = wall.duration_since(STORE_ORIGIN).unwrap_or(Duration::ZERO);
        self.t0 + after
    }
}

/// The store's answers about shard leases (the member group's are left out: the joins, the
/// leave and the crash are journalled by the members themselves).
impl StoreObserver for ShardLog {
    fn acquired(&self, req: &AcquireRequest, answer: &StoreResult<Acquisition>) {
        let Ok(Acquisition::Elected(lease)) = answer else {
            return;
        };
        let mut s = self.state();
        let (Some(shard), Some(node)) =
            (self.shard_of(&s, req.lock.as_str()), s.node_of(&req.owner))
        else {
            return;
        };
        if s.find(shard, lease.fence).is_some() {
            return; // a retried request that had been applied: the same lease again
        }
        let letter = s.names[node].chars().last().unwrap_or('?');
        let tenure = Tenure {
            node,
            shard,
            fence: lease.fence,
            label: format!("{letter}·{}", s.tenures.len() + 1),
            acquired: Instant::now(),
            expires: s.instant_of(lease.expires_at),
            ended: None,
        };
        s.tenures.push(tenure);
        let id = s.tenures.len() - 1;
        s.push(node, What::Granted { tenure: id });
    }

    fn extended(&self, lease: &Lease, _ttl: Duration, answer: &StoreResult<Extension>) {
        let Ok(Extension::Extended { expires_at }) = answer else {
            return;
        };
        let mut s = self.state();
        let Some(shard) = self.shard_of(&s, lease.lock.as_str()) else {
            return;
        };
        if let Some(id) = s.find(shard, lease.fence) {
            let expires = s.instant_of(*expires_at);
            s.tenures[id].expires = expires;
        }
    }

    fn released(&self, lease: &Lease, _linger: Duration, answer: &StoreResult<Release>) {
        let Ok(Release::Released) = answer else {
            return;
        };
        let mut s = self.state();
        let Some(shard) = self.shard_of(&s, lease.lock.as_str()) else {
            return;
        };
        let Some(id) = s.find(shard, lease.fence) else {
            return;
        };
        if s.tenures[id].ended.is_none() {
            let node = s.tenures[id].node;
            s.tenures[id].ended = Some((Instant::now(), Ended::Released));
            s.push(node, What::Released { tenure: id });
        }
    }
}
