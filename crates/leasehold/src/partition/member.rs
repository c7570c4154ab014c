//! A member's loop: keep the membership, read the set, compute the assignment, hand over the
//! shards it no longer gets and take the free ones it does. One task per joined set.
//!
//! Each period (a third of the lease), and whenever the member group or a shard the member
//! awaits is released (`wake`), the member reads the member group (one request). Only
//! when the group changed since the member last saw the set settled, or something of its own
//! changed (a shard lost, one acquired or handed over), does it read the shards' owners (one
//! batched read of the shard locks on a store that reads in batches, else one listing of the
//! store's live locks) and act; a settled set costs one read per period and the renewals. A member that sees a free shard waiting for another member for a whole period
//! (that member saw nothing change: the shard's owner lost it without the group changing)
//! takes a new slot in the group and gives up its oldest: the group's fingerprint changes, so
//! every member reads the set again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::elect::elector::Elector;
use crate::error::Result;
use crate::events::LostReason;
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::name::LockName;
use crate::outcome::Outcome;
use crate::partition::assign::assign;
use crate::partition::event::{ShardEvent, ShardLease};
use crate::partition::read::{self, ShardNames};
use crate::partition::view::Assignment;
use crate::partition::wake::Wake;
use crate::store::lease::Release;

/// How many shard acquisitions a member sends at once.
const ACQUIRES_AT_ONCE: usize = 16;

/// The shards this member owns now, with their contexts: shared with the handle.
pub(crate) type Mine = Arc<Mutex<BTreeMap<u32, LeaderContext>>>;

/// What a member needs to know of its set and node, fixed when it joins.
pub(crate) struct Setup {
    pub(crate) node: Arc<str>,
    pub(crate) shards: u32,
    /// How often the member reads and acts.
    pub(crate) period: Duration,
    pub(crate) drain: Duration,
    /// The set's name with the elector's tenant applied: how the shard locks are listed.
    pub(crate) scoped: String,
    /// The member group and each shard's lock, before the tenant (the electors apply it).
    pub(crate) member_lock: LockName,
    /// The member group's full name, with the tenant's namespace (read from the store).
    pub(crate) scoped_member_lock: LockName,
    pub(crate) shard_locks: Vec<LockName>,
    /// Each shard's lock with the tenant's namespace, in shard order (read from the store).
    pub(crate) scoped_shard_locks: Vec<LockName>,
    /// Electors for the member group (its slot count) and for the shards (one slot), sharing
    /// the caller's store, tenant and heartbeat.
    pub(crate) members: Elector,
    pub(crate) shard_elector: Elector,
}

/// A shard this member owns.
struct Owned {
    guard: LeaderGuard,
    ending: CancellationToken,
    /// Resolves (with an error) when the shard's [`ShardLease`] is dropped.
    working: oneshot::Receiver<()>,
}

/// The member's state, owned by its task.
pub(crate) struct Member {
    setup: Setup,
    memberships: Vec<LeaderGuard>,
    owned: BTreeMap<u32, Owned>,
    /// Hand-overs in progress: wait for the work, then release.
    handing_over: JoinSet<(u32, Result<Release>)>,
    leaving: HashMap<Id, u32>,
    events: mpsc::UnboundedSender<ShardEvent>,
    view: watch::Sender<Arc<Assignment>>,
    mine: Mine,
    /// The member group as last read.
    fingerprint: Option<Vec<(u32, u64, String)>>,
    live: BTreeMap<Arc<str>, u32>,
    owners: Vec<Option<Arc<str>>>,
    target: Vec<Option<Arc<str>>>,
    /// The last reading found every shard with its target, and nothing changed since.
    settled: bool,
    /// Free shards the last reading gave to other members.
    waiting_for_others: BTreeSet<u32>,
    /// Shards this member lost whose work has not ended yet (their [`ShardLease`] is still
    /// held): not taken again until it has, so that one node never runs two tenures of a shard
    /// at once.
    winding_down: BTreeMap<u32, oneshot::Receiver<()>>,
    warned_full: bool,
}

impl Member {
    pub(crate) fn new(
        setup: Setup,
        first: Vec<LeaderGuard>,
        events: mpsc::UnboundedSender<ShardEvent>,
        view: watch::Sender<Arc<Assignment>>,
        mine: Mine,
    ) -> Self {
        let n = setup.shards as usize;
        Self {
            setup,
            memberships: first,
            owned: BTreeMap::new(),
            handing_over: JoinSet::new(),
            leaving: HashMap::new(),
            events,
            view,
            mine,
            fingerprint: None,
            live: BTreeMap::new(),
            owners: vec![None; n],
            target: vec![None; n],
            settled: false,
            waiting_for_others: BTreeSet::new(),
            winding_down: BTreeMap::new(),
            warned_full: false,
        }
    }

    /// Runs until `stop`, then leaves: releases its member slots, hands over its shards (each
    /// waiting for its work, at most the drain), and answers with the first release error.
    pub(crate) async fn run(mut self, stop: CancellationToken) -> Result<()> {
        let mut tick = tokio::time::interval(self.setup.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let store = Arc::clone(self.setup.members.store());
        let mut wake = Wake::new(&store, &self.setup.scoped_member_lock);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                Some(done) = self.handing_over.join_next_with_id(), if !self.handing_over.is_empty() => {
                    // A failed release was logged; the lease ends at its expiry.
                    let _ = self.handed_over(done);
                    self.publish();
                }
                _ = tick.tick() => self.reconcile(true).await,
                () = Self::work_ended(&mut self.winding_down), if !self.winding_down.is_empty() => {
                    // The work of a shard this member lost has ended: it may take it again.
                    self.settled = false;
                    self.reconcile(false).await;
                }
                () = wake.released() => {
                    // A member left, or a shard this member awaits was handed over: read the
                    // set now rather than at the next period.
                    self.settled = false;
                    self.reconcile(false).await;
                }
            }
            wake.await_shards(&store, &self.setup.scoped_shard_locks, &self.awaited());
        }
        self.leave().await
    }

    /// One period's work (`periodic`), or the same work early, woken by a release.
    async fn reconcile(&mut self, periodic: bool) {
        let lost_slots = self.drop_lost();
        // A slot lost here may still be live in the store (a pause that ended inside its
        // margin): free it before taking another (the node would count once with both, as a
        // node id counts once, but the old slot's running out would change the group's
        // fingerprint again later).
        futures::future::join_all(lost_slots.into_iter().map(LeaderGuard::release)).await;
        self.keep_membership().await;
        let read = match read::members(&self.setup.members, &self.setup.scoped_member_lock).await {
            Ok(read) => read,
            Err(e) => {
                warn!(error = %e, "partition: reading the member group failed; trying again next period");
                return;
            }
        };
        if self.fingerprint.as_ref() != Some(&read.fingerprint) {
            self.settled = false;
        }
        self.fingerprint = Some(read.fingerprint);
        self.live = read.weights;
        if self.settled {
            return;
        }
        let names = ShardNames {
            scoped: &self.setup.scoped,
            shards: self.setup.shards,
            locks: &self.setup.scoped_shard_locks,
        };
        let owners = match read::owners(&self.setup.shard_elector, &names).await {
            Ok(owners) => owners,
            Err(e) => {
                warn!(error = %e, "partition: reading the shards' owners failed; trying again next period");
                return;
            }
        };
        self.act(owners, periodic).await;
        self.publish();
    }

    /// Computes the assignment from `read` (corrected by what this member knows of its own
    /// shards), hands over what it no longer gets and takes the free shards it gets; at a
    /// `periodic` reading, also nudges the set when a free shard waited a whole period for
    /// another member.
    async fn act(&mut self, mut read: Vec<Option<Arc<str>>>, periodic: bool) {
        let me = Arc::clone(&self.setup.node);
        let handing: BTreeSet<u32> = self.leaving.values().copied().collect();
        for (s, owner) in (0u32..).zip(read.iter_mut()) {
            if self.owned.contains_key(&s) {
                *owner = Some(Arc::clone(&me));
            } else if handing.contains(&s) || owner.as_deref() == Some(&*me) {
                // On its way out, or read as this node's but no longer held (lost or
                // released): not this node's for the assignment.
                *owner = None;
            }
        }
        let target = assign(self.setup.shards, &self.live, &read);
        self.settled = handing.is_empty() && read == target;
        let give_up: Vec<u32> = self
            .owned
            .keys()
            .copied()
            .filter(|&s| target[s as usize].as_deref() != Some(&*me))
            .collect();
        self.winding_down.retain(|_, working| {
            matches!(working.try_recv(), Err(oneshot::error::TryRecvError::Empty))
        });
        let take: Vec<u32> = (0u32..)
            .zip(target.iter().zip(&read))
            .filter(|(s, (t, r))| {
                t.as_deref() == Some(&*me)
                    && r.is_none()
                    && !handing.contains(s)
                    && !self.winding_down.contains_key(s)
            })
            .map(|(s, _)| s)
            .collect();
        let waiting: BTreeSet<u32> = (0u32..)
            .zip(target.iter().zip(&read))
            .filter(|(_, (t, r))| r.is_none() && t.is_some() && t.as_deref() != Some(&*me))
            .map(|(s, _)| s)
            .collect();
        for s in handing {
            // Still held until its hand-over ends.
            read[s as usize] = Some(Arc::clone(&me));
        }
        self.owners = read;
        self.target = target;
        for s in give_up {
            self.hand_over(s);
        }
        self.acquire(take).await;
        // Waiting "for a whole period" is judged from one periodic reading to the next: a
        // reading a release woke in between would otherwise nudge at once, and the nudge's own
        // release would wake every member again.
        if periodic {
            if waiting
                .intersection(&self.waiting_for_others)
                .next()
                .is_some()
            {
                self.nudge().await;
            }
            self.waiting_for_others = waiting;
        }
    }

    /// Resolves when the work of one of the shards in `winding_down` has ended (its
    /// [`ShardLease`] dropped), and forgets that shard.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an ending seen while nobody waits is found by the next call, or by the next
    /// reading.
    async fn work_ended(winding_down: &mut BTreeMap<u32, oneshot::Receiver<()>>) {
        let ended = futures::future::select_all(
            winding_down
                .iter_mut()
                .map(|(s, working)| Box::pin(async move { (*s, working.await) })),
        )
        .await;
        let ((shard, _), _, _) = ended;
        winding_down.remove(&shard);
    }

    /// The shards the last reading assigned to this member that another member still holds:
    /// their release is this member's cue to take them.
    fn awaited(&self) -> BTreeSet<u32> {
        let me = &*self.setup.node;
        (0u32..)
            .zip(self.target.iter().zip(&self.owners))
            .filter(|(s, (t, o))| {
                t.as_deref() == Some(me)
                    && o.as_deref().is_some_and(|o| o != me)
                    && !self.owned.contains_key(s)
            })
            .map(|(s, _)| s)
            .collect()
    }

    /// Tries to acquire each of `take` (one attempt each, a few at a time).
    async fn acquire(&mut self, take: Vec<u32>) {
        let attempts: Vec<_> = take
            .into_iter()
            .map(|s| {
                let elector = self.setup.shard_elector.clone();
                let lock = self.setup.shard_locks[s as usize].clone();
                async move { (s, elector.try_acquire(lock).await) }
            })
            .collect();
        let answers: Vec<(u32, Result<Outcome<LeaderGuard>>)> = futures::stream::iter(attempts)
            .buffer_unordered(ACQUIRES_AT_ONCE)
            .collect()
            .await;
        for (s, answer) in answers {
            match answer {
                Ok(Outcome::Elected(guard)) => self.took(s, guard),
                Ok(_) => debug!(
                    shard = s,
                    "partition: shard still held; trying again next period"
                ),
                Err(e) => warn!(shard = s, error = %e, "partition: acquiring a shard failed"),
            }
        }
    }

    /// Records a shard this member now owns and tells the handle.
    fn took(&mut self, shard: u32, guard: LeaderGuard) {
        let (working, work_ended) = oneshot::channel();
        let ending = CancellationToken::new();
        let lease = ShardLease {
            shard,
            ctx: guard.context(),
            ending: ending.clone(),
            _working: working,
        };
        self.mine().insert(shard, guard.context());
        self.owned.insert(
            shard,
            Owned {
                guard,
                ending,
                working: work_ended,
            },
        );
        if let Some(owner) = self.owners.get_mut(shard as usize) {
            *owner = Some(Arc::clone(&self.setup.node));
        }
        let _ = self.events.send(ShardEvent::Acquired(shard, lease));
    }

    /// Starts handing `shard` over: its work is told to end, and once its [`ShardLease`] is
    /// dropped (or the drain runs out) its lease is released.
    fn hand_over(&mut self, shard: u32) {
        let Some(owned) = self.owned.remove(&shard) else {
            return;
        };
        self.mine().remove(&shard);
        self.settled = false;
        let drain = self.setup.drain;
        let task = self.handing_over.spawn(async move {
            let Owned {
                guard,
                ending,
                working,
            } = owned;
            ending.cancel();
            if tokio::time::timeout(drain, working).await.is_err() {
                warn!(
                    shard,
                    ?drain,
                    "partition: the shard's work did not end within the drain; releasing it anyway"
                );
            }
            (shard, guard.release().await)
        });
        self.leaving.insert(task.id(), shard);
    }

    /// A hand-over ended: tell the handle how, and answer with the release's error, if any.
    fn handed_over(
        &mut self,
        done: std::result::Result<(Id, (u32, Result<Release>)), JoinError>,
    ) -> Option<crate::Error> {
        let (shard, released) = match done {
            Ok((id, (shard, released))) => {
                self.leaving.remove(&id);
                (shard, released)
            }
            Err(e) => {
                // The task ended without an answer (its runtime is shutting down): its guard
                // was dropped, which releases in the background.
                let shard = self.leaving.remove(&e.id());
                warn!(?shard, error = %e, "partition: a hand-over ended without an answer");
                (shard?, Ok(Release::Released))
            }
        };
        if let Some(owner) = self.owners.get_mut(shard as usize)
            && owner.as_deref() == Some(&*self.setup.node)
        {
            *owner = None;
        }
        let (event, error) = match released {
            Ok(Release::NotHeld) => (ShardEvent::Lost(shard, LostReason::NotHeld), None),
            Ok(Release::Released) => (ShardEvent::Released(shard), None),
            Err(e) => {
                warn!(shard, error = %e, "partition: releasing a handed-over shard failed; it ends at its expiry");
                (ShardEvent::Released(shard), Some(e))
            }
        };
        let _ = self.events.send(event);
        error
    }

    /// Forgets the shards whose lease was lost (their guards release in the background, token
    /// checked) and the member slots lost, returned for the caller to release (token checked).
    fn drop_lost(&mut self) -> Vec<LeaderGuard> {
        let lost: Vec<(u32, LostReason)> = self
            .owned
            .iter()
            .filter_map(|(s, o)| Some((*s, o.guard.lost().now_or_never()?)))
            .collect();
        for (shard, reason) in lost {
            if let Some(owned) = self.owned.remove(&shard) {
                self.winding_down.insert(shard, owned.working);
            }
            self.mine().remove(&shard);
            if let Some(owner) = self.owners.get_mut(shard as usize) {
                *owner = None;
            }
            self.settled = false;
            let _ = self.events.send(ShardEvent::Lost(shard, reason));
        }
        let (lost, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.memberships)
            .into_iter()
            .partition(|g| g.is_lost());
        self.memberships = kept;
        if !lost.is_empty() {
            self.settled = false;
        }
        lost
    }

    /// Holds a member slot, taking one if it has none (one attempt).
    async fn keep_membership(&mut self) {
        if !self.memberships.is_empty() {
            return;
        }
        match self
            .setup
            .members
            .try_acquire(&self.setup.member_lock)
            .await
        {
            Ok(Outcome::Elected(guard)) => {
                self.memberships.push(guard);
                self.warned_full = false;
            }
            Ok(_) => {
                if !std::mem::replace(&mut self.warned_full, true) {
                    warn!(
                        "partition: the member group is full; this node is not a member until a slot frees"
                    );
                }
            }
            Err(e) => {
                warn!(error = %e, "partition: taking a member slot failed; trying again next period");
            }
        }
    }

    /// Changes the member group's fingerprint (a new slot in, the oldest out) so that every
    /// member reads the set again.
    async fn nudge(&mut self) {
        debug!(
            "partition: a free shard waits for another member; asking every member to look again"
        );
        match self
            .setup
            .members
            .try_acquire(&self.setup.member_lock)
            .await
        {
            Ok(Outcome::Elected(fresh)) => {
                self.memberships.push(fresh);
                if self.memberships.len() > 1 {
                    let oldest = self.memberships.remove(0);
                    if let Err(e) = oldest.release().await {
                        debug!(error = %e, "partition: releasing a member slot failed");
                    }
                }
            }
            Ok(_) => {
                debug!("partition: the member group is full; cannot ask the others to look again")
            }
            Err(e) => debug!(error = %e, "partition: taking a member slot failed"),
        }
    }

    /// Leaves the set: member slots first (the others stop giving this node shards), then every
    /// shard handed over.
    async fn leave(mut self) -> Result<()> {
        let released = futures::future::join_all(
            std::mem::take(&mut self.memberships)
                .into_iter()
                .map(LeaderGuard::release),
        )
        .await;
        let mut first_error = released.into_iter().find_map(std::result::Result::err);
        let all: Vec<u32> = self.owned.keys().copied().collect();
        for s in all {
            self.hand_over(s);
        }
        while let Some(done) = self.handing_over.join_next_with_id().await {
            let error = self.handed_over(done);
            if first_error.is_none() {
                first_error = error;
            }
        }
        self.live.clear();
        self.publish();
        first_error.map_or(Ok(()), Err)
    }

    fn mine(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, LeaderContext>> {
        self.mine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the view to the handle.
    fn publish(&self) {
        let view = Assignment::new(
            self.live.iter().map(|(n, w)| (Arc::clone(n), *w)),
            self.owners.clone(),
            self.target.clone(),
        );
        self.view.send_if_modified(|old| {
            if **old == view {
                return false;
            }
            *old = Arc::new(view);
            true
        });
    }
}
