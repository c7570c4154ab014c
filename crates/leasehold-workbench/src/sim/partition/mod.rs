//! The `partition` scenario: nodes join a [`PartitionSet`] one after another, one leaves, one
//! crashes; the real members (the core's partition code) decide who owns which shard when.
//!
//! * **The cast.** `nodes` electors (`node-a` …), each with its own node id, on one
//!   [`MemoryStore`] (clock at [`STORE_ORIGIN`] at tick 0). Node `i` joins the set at tick
//!   `i × PARTITION_STEP`; node-b leaves at `nodes × PARTITION_STEP`
//!   ([`Partition::leave`](leasehold::partition::Partition::leave)), node-c crashes
//!   `PARTITION_STEP` ticks later: from then on none of its requests reaches the store (a
//!   [`CrashStore`](crash::CrashStore) in front of it answers them with errors), its work stops
//!   at once, and its leases end only by expiring.
//! * **The work.** For every [`ShardEvent::Acquired`] the node starts the shard's work: it
//!   writes to the fenced resource with the shard's fence, waits for
//!   [`ShardLease::ending`](leasehold::partition::ShardLease::ending), writes again if it is a
//!   hand-over (the lease is still held then) and drops the lease, which lets the hand-over
//!   release it.
//! * **Recording.** The store's grants, releases and renewals of the shard locks pass through an
//!   [`ObservedStore`]; expiries are added at the instant the lease ended; the members journal
//!   their joins, the leave, the crash and the losses they hear of. At every tick boundary the
//!   driver reads each shard lock's state from the store, and the assignment from the first
//!   live member's [`Partition::watch`](leasehold::partition::Partition::watch).
//! * **Checks.** Over the whole run: no two tenures of one shard overlap (in the store, or in
//!   the work), and each shard's fences strictly increase ([`PartitionCheck`]).

mod crash;
mod log;

use std::sync::{Arc, Mutex, PoisonError};

use leasehold::partition::{Assignment, PartitionSet, ShardEnd, ShardEvent, ShardLease};
use leasehold::store::{LockState, ObservedStore};
use leasehold::{
    ElectionOptions, Elector, LeaseStore, LockName, LostReason, MemoryStore, RetryPolicy,
};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};

use crate::sim::clock::{Clock, RETRY, STORE_ORIGIN, TICK};
use crate::sim::error::SimError;
use crate::sim::params::Params;
use crate::sim::scenario::{PARTITION_SET, PARTITION_STEP, Scenario};
use crate::sim::timeline::{
    Frame, NodeState, Operation, Outcome, PartitionCheck, ShardState, ShardTenure, Status,
    Timeline, TimelineEvent,
};

use crash::CrashStore;
use log::{Ended, Entry, ShardLog, Tenure, What, Work};

/// The node that leaves gracefully, and the one that crashes.
const LEAVER: usize = 1;
const CRASHER: usize = 2;

/// The members' latest views of the assignment (`None` before a node joined and after it left
/// or crashed).
type Views = Arc<Mutex<Vec<Option<watch::Receiver<Arc<Assignment>>>>>>;

/// What one node does when.
struct Plan {
    join: Instant,
    leave: Option<Instant>,
    crash: Option<Instant>,
}

/// Runs the scenario with validated `params`; called on the paused runtime.
pub(crate) async fn drive(params: Params) -> Result<Timeline, SimError> {
    let scenario = Scenario::Partition;
    let preset = scenario.preset();
    let t0 = Instant::now();
    let clock = Clock::new(t0);
    let shards = params.shards.or(preset.shards).unwrap_or(10);
    let nodes = usize::try_from(params.nodes.or(preset.nodes).unwrap_or(3)).map_err(failed)?;
    let names: Vec<String> = scenario
        .candidates()
        .iter()
        .take(nodes)
        .map(|&n| n.to_owned())
        .collect();
    let log = ShardLog::new(t0, names.clone(), PARTITION_SET);
    let memory: Arc<dyn LeaseStore> = Arc::new(MemoryStore::with_clock_origin(STORE_ORIGIN));
    let observed: Arc<dyn LeaseStore> = Arc::new(ObservedStore::new(memory.clone(), log.clone()));
    let lease = TICK * params.lease;
    let set = PartitionSet::builder(PARTITION_SET, shards)
        .lease(lease)
        .build()
        .map_err(failed)?;
    let locks = (0..shards)
        .map(|k| set.shard_lock(k))
        .collect::<Option<Vec<LockName>>>()
        .ok_or_else(|| SimError::Failed("a shard lock name could not be built".into()))?;
    let views: Views = Arc::new(Mutex::new(vec![None; nodes]));
    let step = |n: usize| PARTITION_STEP.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
    let (leave_tick, crash_tick) = (step(nodes), step(nodes + 1));
    for (node, name) in names.iter().enumerate() {
        let crash = Arc::new(CrashStore::new(observed.clone()));
        let store: Arc<dyn LeaseStore> = crash.clone();
        let options = ElectionOptions::builder()
            .node_id(name)
            .lease(lease)
            .retry(RetryPolicy::new(RETRY, RETRY, 0.0).map_err(failed)?)
            .build()
            .map_err(failed)?;
        let plan = Plan {
            join: clock.attempt_at(step(node), node),
            leave: (node == LEAVER).then(|| clock.attempt_at(leave_tick, node)),
            crash: (node == CRASHER).then(|| clock.attempt_at(crash_tick, node)),
        };
        tokio::spawn(member(Member {
            node,
            set: set.clone(),
            elector: Elector::with_options(store, options),
            crash,
            plan,
            log: log.clone(),
            views: views.clone(),
        }));
    }

    let mut recorder = Recorder::new(clock, log.clone(), names.clone());
    let last = scenario.last_tick(&params);
    for tick in 0..=last {
        sleep_until(clock.end_of(tick)).await;
        let mut states = Vec::with_capacity(locks.len());
        for lock in &locks {
            states.push(memory.state(lock, 1).await.map_err(failed)?);
        }
        let view = first_view(&views);
        recorder.close_tick(tick, &states, view.as_deref());
        if let Some(failure) = log.failure() {
            return Err(SimError::Failed(failure));
        }
    }
    let check = check(&log, clock, shards, &names);
    Ok(Timeline {
        scenario: scenario.id().to_owned(),
        params,
        lock: PARTITION_SET.to_owned(),
        candidates: names,
        max_tick: last,
        frames: recorder.frames,
        events: recorder.events,
        partition: Some(check),
    })
}

fn failed(e: impl std::fmt::Display) -> SimError {
    SimError::Failed(e.to_string())
}

/// The assignment as the first live member last computed it.
fn first_view(views: &Views) -> Option<Arc<Assignment>> {
    let views = views.lock().unwrap_or_else(PoisonError::into_inner);
    views
        .iter()
        .flatten()
        .map(|v| Arc::clone(&v.borrow()))
        .find(|a| !a.members().is_empty())
}

/// One node's part in the scenario.
struct Member {
    node: usize,
    set: PartitionSet,
    elector: Elector,
    crash: Arc<CrashStore>,
    plan: Plan,
    log: ShardLog,
    views: Views,
}

impl Member {
    fn set_view(&self, view: Option<watch::Receiver<Arc<Assignment>>>) {
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = views.get_mut(self.node) {
            *slot = view;
        }
    }
}

/// Sleeps until `at`, or for ever when there is no such instant.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Joins at the plan's instant, works on every shard it acquires, and leaves or crashes when
/// the plan says.
async fn member(m: Member) {
    sleep_until(m.plan.join).await;
    let mut partition = match m.set.join(&m.elector).await {
        Ok(p) => p,
        Err(e) => return m.log.fail(format!("node {} could not join: {e}", m.node)),
    };
    m.log.joined(m.node);
    m.set_view(Some(partition.watch()));
    let mut work = JoinSet::new();
    loop {
        tokio::select! {
            event = partition.next() => match event {
                Some(ShardEvent::Acquired(shard, lease)) => {
                    work.spawn(shard_work(m.node, shard, lease, m.log.clone()));
                }
                Some(ShardEvent::Lost(shard, reason)) => m.log.lost(m.node, shard, reason),
                Some(_) => {}
                None => return,
            },
            () = until(m.plan.leave) => {
                m.log.left(m.node);
                m.set_view(None);
                if let Err(e) = partition.leave().await {
                    m.log.fail(format!("node {} could not leave: {e}", m.node));
                }
                while work.join_next().await.is_some() {}
                return;
            }
            () = until(m.plan.crash) => {
                m.crash.crash();
                m.set_view(None);
                m.log.crashed(m.node);
                work.abort_all();
                // The process is gone: the handle is kept (dropping it would leave the set
                // properly, which a crashed node cannot do) and nothing of it runs any more.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The work on one shard: a write with the shard's fence when it starts, and a last one when
/// the shard is handed over (its lease still held); a lost lease stops it without a write.
/// Dropping the lease at the end lets a hand-over release it.
async fn shard_work(node: usize, shard: u32, lease: ShardLease, log: ShardLog) {
    let fence = lease.fence();
    let id = log.work_started(node, shard);
    log.write(node, shard, fence);
    if lease.ending().await == ShardEnd::HandOver {
        log.write(node, shard, fence);
    }
    log.work_ended(id);
    drop(lease);
}

/// Builds the frames and events tick by tick.
struct Recorder {
    clock: Clock,
    log: ShardLog,
    names: Vec<String>,
    status: Vec<Status>,
    events: Vec<TimelineEvent>,
    frames: Vec<Frame>,
}

impl Recorder {
    fn new(clock: Clock, log: ShardLog, names: Vec<String>) -> Self {
        Self {
            clock,
            log,
            status: vec![Status::Idle; names.len()],
            names,
            events: Vec::new(),
            frames: Vec::new(),
        }
    }

    fn close_tick(&mut self, tick: u32, states: &[LockState], view: Option<&Assignment>) {
        for entry in self.log.drain(self.clock.end_of(tick)) {
            self.apply(&entry);
        }
        let shards: Vec<ShardState> = states
            .iter()
            .zip(0u32..)
            .map(|(state, shard)| self.shard_state(shard, state, tick, view))
            .collect();
        let nodes = self
            .names
            .iter()
            .zip(&self.status)
            .map(|(id, status)| NodeState {
                id: id.clone(),
                status: status.to_string(),
                token: None,
                fence: None,
                slot: None,
                shards: Some(
                    shards
                        .iter()
                        .filter(|s| s.owner.as_deref() == Some(id.as_str()))
                        .map(|s| s.shard)
                        .collect(),
                ),
            })
            .collect();
        self.frames.push(Frame {
            tick,
            nodes,
            holders: Vec::new(),
            resource: self.log.resource(),
            ledger: None,
            shards: Some(shards),
        });
    }

    fn shard_state(
        &self,
        shard: u32,
        state: &LockState,
        tick: u32,
        view: Option<&Assignment>,
    ) -> ShardState {
        let holder = state.holders.first();
        ShardState {
            shard,
            owner: holder.map(|h| h.owner.clone()),
            token: holder.and_then(|h| self.log.label(shard, h.fence)),
            fence: holder.map(|h| h.fence),
            ttl: holder.map(|h| self.clock.ttl(self.log.instant_of(h.expires_at), tick)),
            target: view.and_then(|v| v.target(shard)).map(str::to_owned),
        }
    }

    fn apply(&mut self, entry: &Entry) {
        let tick = self.clock.tick(entry.at);
        let node = entry.node;
        let mut tenure: Option<Tenure> = None;
        let mut shard = None;
        let (operation, outcome, ttl) = match entry.what {
            What::Joined => {
                self.status[node] = Status::Member;
                (Operation::Join, Outcome::Joined, None)
            }
            What::Left => {
                self.status[node] = Status::Left;
                (Operation::Leave, Outcome::Left, None)
            }
            What::Crashed => {
                self.status[node] = Status::Crashed;
                (Operation::Crash, Outcome::Crashed, None)
            }
            What::Granted { tenure: id } => {
                tenure = self.log.tenure(id);
                let ttl = tenure.as_ref().map(|t| self.clock.ttl(t.expires, tick));
                (Operation::Acquire, Outcome::Elected, ttl)
            }
            What::Released { tenure: id } => {
                tenure = self.log.tenure(id);
                (Operation::Release, Outcome::Released, Some(0))
            }
            What::Expired { tenure: id } => {
                tenure = self.log.tenure(id);
                (Operation::Expire, Outcome::Expired, Some(0))
            }
            What::Lost { shard: k, reason } => {
                shard = Some(k);
                tenure = self.log.latest(node, k);
                let outcome = match reason {
                    LostReason::DeadlinePassed => Outcome::DeadlinePassed,
                    LostReason::StoreFailed => Outcome::StoreFailed,
                    _ => Outcome::NotHeld,
                };
                (Operation::Lost, outcome, None)
            }
            What::Wrote {
                shard: k,
                fence,
                accepted,
            } => {
                shard = Some(k);
                tenure = self.log.latest(node, k).filter(|t| t.fence == fence);
                let outcome = if accepted {
                    Outcome::Accepted
                } else {
                    Outcome::RejectedFence
                };
                (Operation::Write, outcome, None)
            }
        };
        self.events.push(TimelineEvent {
            tick,
            candidate: self.names[node].clone(),
            operation: operation.to_string(),
            token: tenure.as_ref().map(|t| t.label.clone()),
            fence: tenure.as_ref().map(|t| t.fence),
            slot: None,
            ttl,
            outcome: outcome.to_string(),
            ledger: None,
            at_ms: None,
            shard: shard.or(tenure.as_ref().map(|t| t.shard)),
        });
    }
}

/// The whole run's checks: overlapping tenures (in the store and in the work), rising fences,
/// moves, and every tenure.
fn check(log: &ShardLog, clock: Clock, shards: u32, names: &[String]) -> PartitionCheck {
    let tenures = log.tenures();
    let work = log.work();
    let mut overlaps = 0u32;
    let mut fences_rise = true;
    let mut moves = 0u32;
    for shard in 0..shards {
        let mine: Vec<&Tenure> = tenures.iter().filter(|t| t.shard == shard).collect();
        let spans: Vec<(Instant, Option<Instant>)> = mine
            .iter()
            .map(|t| (t.acquired, t.ended.map(|(at, _)| at)))
            .collect();
        overlaps = overlaps.saturating_add(overlapping(&spans));
        let works: Vec<(Instant, Option<Instant>)> = work
            .iter()
            .filter(|w: &&Work| w.shard == shard)
            .map(|w| (w.start, w.end))
            .collect();
        overlaps = overlaps.saturating_add(overlapping(&works));
        for pair in mine.windows(2) {
            if let [before, after] = pair {
                fences_rise &= after.fence > before.fence;
                if after.node != before.node {
                    moves = moves.saturating_add(1);
                }
            }
        }
    }
    let tenures = tenures
        .iter()
        .map(|t| ShardTenure {
            shard: t.shard,
            owner: names.get(t.node).cloned().unwrap_or_default(),
            token: t.label.clone(),
            fence: t.fence,
            from_tick: clock.tick(t.acquired),
            until_tick: t.ended.map(|(at, _)| clock.tick(at)),
            ended: t.ended.map(|(_, how)| {
                match how {
                    Ended::Released => Outcome::Released,
                    Ended::Expired => Outcome::Expired,
                }
                .to_string()
            }),
            from_ms: clock.millis(t.acquired),
            until_ms: t.ended.map(|(at, _)| clock.millis(at)),
            deadline_ms: clock.millis(t.expires),
        })
        .collect();
    PartitionCheck {
        shards,
        overlaps,
        fences_rise,
        moves,
        tenures,
    }
}

/// How many pairs of these spans (start, end or still open) overlap in time.
fn overlapping(spans: &[(Instant, Option<Instant>)]) -> u32 {
    let mut n = 0u32;
    for (i, &(a_from, a_until)) in spans.iter().enumerate() {
        for &(b_from, b_until) in &spans[i + 1..] {
            let a_before_b = a_until.is_some_and(|end| end <= b_from);
            let b_before_a = b_until.is_some_and(|end| end <= a_from);
            if !a_before_b && !b_before_a {
                n = n.saturating_add(1);
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spans_that_share_an_instant_overlap_and_touching_ones_do_not() {
        let t = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(overlapping(&[(t, Some(t + s(2))), (t + s(2), None)]), 0);
        assert_eq!(overlapping(&[(t, Some(t + s(3))), (t + s(2), None)]), 1);
        assert_eq!(overlapping(&[(t, None), (t + s(9), Some(t + s(10)))]), 1);
        assert_eq!(
            overlapping(&[
                (t, Some(t + s(1))),
                (t + s(1), Some(t + s(2))),
                (t + s(2), None)
            ]),
            0
        );
    }
}
