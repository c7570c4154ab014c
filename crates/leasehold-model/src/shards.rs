//! Partition sets: a few shards over two nodes, each node following the member's rules of
//! `leasehold::partition` (`assign.rs`, `member.rs`, `handle.rs`), as a stateright [`Model`].
//!
//! The store is linearizable and reads the real clock: each shard is a lock with one lease and
//! a fence counter, and the member group is a group lock whose live slots name their node. A
//! node joins (takes a member slot), and once a tick (a period: a third of the lease) reads the
//! member group and, when it changed or something of its own did, the shards' owners; computes
//! the assignment with the core's function, ported; hands over the shards it no longer gets
//! (the work is told to stop, then the lease is released, within the drain); tries once to
//! acquire each free shard it gets; and changes the group's fingerprint when a free shard waits
//! a whole period for another member. Its leases are renewed together at each tick (the
//! heartbeat), and a lease it cannot renew, or whose local deadline passed, is lost. Nodes may
//! join, leave gracefully, crash (and restart with the same node id), pause for any time, and an
//! operator may force one shard free.

use stateright::{Model, Property};

use crate::properties;
use crate::rules::{ShardRule, ShardSetup};
use crate::state::{Fence, Tick};

/// The most nodes a partition model has.
pub const NODES: usize = 2;

/// The most shards a partition model has.
pub const MAX_SHARDS: usize = 3;

/// The most member slots the group holds at once: a node may hold a fresh slot while its old
/// one, which it stopped believing in at its local deadline, still runs out at the store, and
/// take one more to nudge the others (room for three a node, so no step is refused for want of
/// a slot).
const GROUP_SLOTS: usize = 3 * NODES;

/// A shard's lease as the store keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardLease {
    /// The node holding it (its node id).
    pub node: u8,
    /// The fence minted with the grant; unique per grant of the shard, so it also serves as the
    /// lease's token.
    pub fence: Fence,
    /// When the store frees it.
    pub expiry: Tick,
}

/// A member slot of the member group as the store keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberSlot {
    /// The node whose slot it is.
    pub node: u8,
    /// The slot's fence: unique per grant, so a fresh slot changes the group's fingerprint.
    pub fence: Fence,
    /// When the store frees it.
    pub expiry: Tick,
}

/// The store of a partition set.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ShardStore {
    /// Each shard's live lease (an expired one is dropped: it is free).
    pub shards: [Option<ShardLease>; MAX_SHARDS],
    /// The last fence minted per shard.
    pub fences: [Fence; MAX_SHARDS],
    /// The member group's live slots, in order (an expired one is dropped).
    pub members: [Option<MemberSlot>; GROUP_SLOTS],
    /// The last fence minted for a member slot.
    pub group_fence: Fence,
}

impl ShardStore {
    /// Shard `s`'s lease if it is live at `now`.
    pub fn live(&self, s: usize, now: Tick) -> Option<ShardLease> {
        self.shards
            .get(s)
            .copied()
            .flatten()
            .filter(|l| l.expiry > now)
    }

    /// The group's fingerprint at `now`: the fences of its live slots, in order.
    fn fingerprint(&self, now: Tick) -> [Fence; GROUP_SLOTS] {
        let mut print = [0; GROUP_SLOTS];
        let live = self.members.iter().flatten().filter(|m| m.expiry > now);
        for (at, m) in print.iter_mut().zip(live) {
            *at = m.fence;
        }
        print.sort_unstable();
        print
    }

    /// Each node's weight as read from the group at `now`, as `read::members` counts it: a node
    /// id counts once, with its newest slot's weight (every node here has weight 1), however
    /// many live slots name it — under [`ShardRule::CountsEverySlot`], once per live slot.
    fn weights(&self, now: Tick, rule: ShardRule) -> [u8; NODES] {
        let mut weights: [u8; NODES] = [0; NODES];
        for m in self.members.iter().flatten().filter(|m| m.expiry > now) {
            if let Some(w) = weights.get_mut(usize::from(m.node)) {
                *w = if rule == ShardRule::CountsEverySlot {
                    w.saturating_add(1)
                } else {
                    1
                };
            }
        }
        weights
    }

    /// How many nodes hold a live member slot at `now` (a node id once, however many slots).
    fn member_nodes(&self, now: Tick) -> u32 {
        let mut named = [false; NODES];
        for m in self.members.iter().flatten().filter(|m| m.expiry > now) {
            if let Some(is) = named.get_mut(usize::from(m.node)) {
                *is = true;
            }
        }
        named.iter().map(|&is| u32::from(is)).sum()
    }
}

/// Where a node is in the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Status {
    /// Not a member: never joined, or left.
    #[default]
    Out,
    /// A member: it reads and acts every period.
    Member,
    /// Leaving gracefully: its member slot is released, its shards are being handed over.
    Leaving,
    /// Crashed: it knows nothing; its leases run out at the store.
    Crashed,
}

/// A lease as its node believes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Believed {
    /// The lease's fence (its token).
    pub fence: Fence,
    /// The local deadline: the node takes the lease as valid before it.
    pub deadline: Tick,
}

/// A shard being handed over: its work was told to stop; the lease is released once the work
/// has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HandOver {
    /// The lease, as its node believes it.
    pub lease: Believed,
    /// When the hand-over began: it ends within the drain (a period, one tick).
    pub since: Tick,
    /// The lease was released already (only under [`ShardRule::ReleasesBeforeWorkEnds`]: the
    /// work still runs).
    pub released: bool,
}

/// One node: its membership, its shards and what it last read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Node {
    /// Where it is in the set.
    pub status: Status,
    /// It is paused: it renews, reads and acts no more until it resumes.
    pub paused: bool,
    /// Its member slot, as it believes it.
    pub membership: Option<Believed>,
    /// The member slot it stopped believing in at its local deadline, which the store may still
    /// hold: released by its token before another is taken (`Member::reconcile`).
    pub lost_membership: Option<Fence>,
    /// The shards it owns (their work runs), as it believes them.
    pub owned: [Option<Believed>; MAX_SHARDS],
    /// The shards it is handing over.
    pub handing: [Option<HandOver>; MAX_SHARDS],
    /// The acquisitions its last reading decided and it has not sent yet.
    pub pending: [bool; MAX_SHARDS],
    /// The member group's fingerprint as it last read it.
    pub seen: Option<[Fence; GROUP_SLOTS]>,
    /// Its last reading found every shard with its target, and nothing of its own changed
    /// since: it reads only the member group until that changes.
    pub settled: bool,
    /// The free shards its last reading gave to other members.
    pub waiting: [bool; MAX_SHARDS],
    /// It has read and acted in this tick (once a period).
    pub acted: bool,
}

impl Node {
    /// True if the node is a member that is not paused.
    pub fn live(&self) -> bool {
        self.status == Status::Member && !self.paused
    }

    /// True if it believes it owns shard `s` at `now` (its work may run): owned or being handed
    /// over, before the local deadline.
    pub fn believes(&self, s: usize, now: Tick) -> Option<Fence> {
        let owned = self.owned.get(s).copied().flatten();
        let handing = self.handing.get(s).copied().flatten().map(|h| h.lease);
        owned
            .or(handing)
            .filter(|b| b.deadline > now)
            .map(|b| b.fence)
    }

    /// How many shards it owns (not counting those being handed over).
    pub fn owns(&self) -> usize {
        self.owned.iter().flatten().count()
    }
}

/// The whole world of a partition set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardState {
    /// The real clock.
    pub now: Tick,
    /// How many shards the set has (the same in every state of a model).
    pub shards: u8,
    /// The store.
    pub store: ShardStore,
    /// The nodes, by node id.
    pub nodes: [Node; NODES],
    /// When the set last changed (a join, a leave, a crash, a pause or its end, a forced
    /// release): coverage and balance are judged [`ShardSetup::settle`] ticks after it.
    pub changed: Tick,
    /// Joins left.
    pub joins_left: u8,
    /// Graceful leaves left.
    pub leaves_left: u8,
    /// Crashes left.
    pub crashes_left: u8,
    /// Pauses left.
    pub pauses_left: u8,
    /// Forced releases left.
    pub forced_left: u8,
    /// The highest fence ever minted per shard (for the properties).
    pub minted: [Fence; MAX_SHARDS],
    /// A grant's fence was not above every fence minted before it for its shard.
    pub fence_fell: bool,
    /// Per shard, the fence of the lease an operator forced out: its owner believes in it
    /// until its next renewal, by design.
    pub forced_out: [Option<Fence>; MAX_SHARDS],
    /// The node last granted each shard.
    pub last_owner: [Option<u8>; MAX_SHARDS],
    /// A shard was granted to another node than its previous owner (for the coverage of the
    /// setups: a move happened).
    pub moved: bool,
    /// A member's reading gave it more shards than its even share: the shards divided by the
    /// nodes holding a member slot (a node id once), rounded up.
    pub over_share: bool,
}

impl ShardState {
    /// True once [`ShardSetup::settle`] ticks have passed since the last change and some node is
    /// a live member: coverage and balance are due.
    pub fn calm(&self, setup: &ShardSetup) -> bool {
        self.now >= self.changed.saturating_add(setup.settle) && self.nodes.iter().any(Node::live)
    }

    /// One line of what matters, for traces.
    pub fn summary(&self) -> String {
        let shards: Vec<String> = (0..usize::from(self.shards).min(MAX_SHARDS))
            .map(|s| match self.store.live(s, self.now) {
                Some(l) => format!("s{s}: n{} (fence {}, until {})", l.node, l.fence, l.expiry),
                None => format!("s{s}: free"),
            })
            .collect();
        let group: Vec<String> = self
            .store
            .members
            .iter()
            .flatten()
            .map(|m| format!("n{}#{} until {}", m.node, m.fence, m.expiry))
            .collect();
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(n, node)| {
                let owned: Vec<String> = node
                    .owned
                    .iter()
                    .enumerate()
                    .filter_map(|(s, b)| b.map(|b| format!("s{s}<{}", b.deadline)))
                    .collect();
                let handing: Vec<String> = node
                    .handing
                    .iter()
                    .enumerate()
                    .filter_map(|(s, h)| {
                        h.map(|h| {
                            let released = if h.released { ", released" } else { "" };
                            format!("s{s}<{}{released}", h.lease.deadline)
                        })
                    })
                    .collect();
                let asks: Vec<String> = (0..MAX_SHARDS)
                    .filter(|&s| node.pending[s])
                    .map(|s| format!(" s{s}"))
                    .collect();
                format!(
                    "n{n} {:?}{}{} owns [{}] handing [{}]{}",
                    node.status,
                    if node.paused { " paused" } else { "" },
                    if node.settled { " settled" } else { "" },
                    owned.join(" "),
                    handing.join(" "),
                    if asks.is_empty() {
                        String::new()
                    } else {
                        format!(" asks for{}", asks.concat())
                    }
                )
            })
            .collect();
        format!(
            "t={}: {}; group [{}]; {}",
            self.now,
            shards.join(", "),
            group.join(", "),
            nodes.join("; ")
        )
    }

    /// Drops what only matters while live: expired leases and member slots (a free shard is
    /// free whatever ran out), in a fixed order.
    fn canonical(mut self) -> Self {
        let now = self.now;
        for l in &mut self.store.shards {
            if l.is_some_and(|l| l.expiry <= now) {
                *l = None;
            }
        }
        for m in &mut self.store.members {
            if m.is_some_and(|m| m.expiry <= now) {
                *m = None;
            }
        }
        let members = self.store.members;
        for node in &mut self.nodes {
            // A lost slot the store no longer holds needs no release.
            if node
                .lost_membership
                .is_some_and(|f| !members.iter().flatten().any(|m| m.fence == f))
            {
                node.lost_membership = None;
            }
        }
        self.store
            .members
            .sort_unstable_by_key(|m| (m.is_none(), *m));
        self
    }
}

/// One step of a partition set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShardAction {
    /// The real clock advances a tick: local deadlines that passed end their leases, then every
    /// node that is not paused renews its leases (the heartbeat of each period).
    Tick,
    /// Node `n` reads the set and acts (its period's work).
    Act(u8),
    /// Node `n` sends its acquisition of shard `s` (decided by its reading).
    Acquire(u8, u8),
    /// Node `n`'s hand-over of shard `s` ends: today the work has stopped and the lease is
    /// released; under [`ShardRule::ReleasesBeforeWorkEnds`] the work (running past the
    /// release) stops.
    HandedOver(u8, u8),
    /// Node `n` joins (or restarts with the same node id and joins again).
    Join(u8),
    /// Node `n` leaves gracefully.
    Leave(u8),
    /// Node `n` crashes.
    Crash(u8),
    /// Node `n` pauses.
    Pause(u8),
    /// Node `n` resumes.
    Resume(u8),
    /// An operator forces shard `s` free.
    Force(u8),
}

/// A partition set of a few shards over [`NODES`] nodes, as the checker explores it.
#[derive(Clone, Debug)]
pub struct ShardModel {
    /// The sizes, faults and rules.
    pub setup: ShardSetup,
}

impl ShardModel {
    /// A model of `setup`.
    pub fn new(setup: ShardSetup) -> Self {
        Self { setup }
    }

    fn shards(&self) -> usize {
        usize::from(self.setup.shards).min(MAX_SHARDS)
    }

    /// The local deadline of a lease granted or renewed now.
    fn deadline(&self, now: Tick) -> Tick {
        now.saturating_add(self.setup.lease)
            .saturating_sub(self.setup.margin)
    }

    /// Grants node `n` a fresh member slot now.
    fn take_member_slot(&self, state: &mut ShardState, n: usize) -> Option<Believed> {
        let now = state.now;
        let at = state
            .store
            .members
            .iter()
            .position(|m| m.is_none_or(|m| m.expiry <= now))?;
        state.store.group_fence = state.store.group_fence.checked_add(1)?;
        let fence = state.store.group_fence;
        state.store.members[at] = Some(MemberSlot {
            node: u8::try_from(n).ok()?,
            fence,
            expiry: now.saturating_add(self.setup.lease),
        });
        Some(Believed {
            fence,
            deadline: self.deadline(now),
        })
    }

    /// Releases the member slot `fence` (if the store still holds it).
    fn release_member_slot(state: &mut ShardState, fence: Fence) {
        for m in &mut state.store.members {
            if m.is_some_and(|m| m.fence == fence) {
                *m = None;
            }
        }
    }

    /// Releases shard `s`'s lease `fence`, if the store still holds it.
    fn release_shard(&self, state: &mut ShardState, s: usize, fence: Fence) {
        let now = state.now;
        if state.store.live(s, now).is_some_and(|l| l.fence == fence) {
            state.store.shards[s] = None;
            if self.setup.rule == ShardRule::ReleaseForgetsFence {
                state.store.fences[s] = 0;
            }
        }
    }

    /// Node `n` reads the set and acts, as `Member::reconcile` and `Member::act` do.
    fn act(&self, state: &mut ShardState, n: usize) -> Option<()> {
        let now = state.now;
        let shards = self.shards();
        let rule = self.setup.rule;
        // The member slot lost at the local deadline is released first (token checked), then
        // keep_membership takes one again.
        if let Some(fence) = state.nodes[n].lost_membership.take() {
            Self::release_member_slot(state, fence);
        }
        if state.nodes[n].membership.is_none() {
            let slot = self.take_member_slot(state, n)?;
            state.nodes[n].membership = Some(slot);
        }
        // The member group: one read.
        let print = state.store.fingerprint(now);
        let weights = state.store.weights(now, rule);
        // The most shards a member of weight 1 is given: an even share, rounded up, of the
        // nodes holding a member slot.
        let fair = u32::from(self.setup.shards).div_ceil(state.store.member_nodes(now).max(1));
        let node = &mut state.nodes[n];
        node.acted = true;
        if node.seen != Some(print) {
            node.settled = false;
        }
        node.seen = Some(print);
        if node.settled {
            return Some(());
        }
        // The shards' owners: one listing, corrected by what this node knows of its own.
        let me = u8::try_from(n).ok()?;
        let mut read = [None; MAX_SHARDS];
        for (s, owner) in read.iter_mut().enumerate().take(shards) {
            *owner = state.store.live(s, now).map(|l| l.node);
            if node.owned[s].is_some() {
                *owner = Some(me);
            } else if node.handing[s].is_some() || *owner == Some(me) {
                *owner = None;
            }
        }
        let target = assign(shards, weights, &read);
        let handing = node.handing.iter().any(Option::is_some);
        node.settled = !handing && read == target;
        let mut waiting = [false; MAX_SHARDS];
        let mine = target.iter().filter(|&&t| t == Some(me)).count();
        let over_share = u32::try_from(mine).ok()? > fair;
        for s in 0..shards {
            let mine = target[s] == Some(me);
            let ignore = rule == ShardRule::IgnoresAssignment;
            if node.owned[s].is_some() && !mine && !ignore {
                // Hand it over: the work is told to stop; the lease goes when it has.
                let lease = node.owned[s].take()?;
                node.settled = false;
                let released = rule == ShardRule::ReleasesBeforeWorkEnds;
                node.handing[s] = Some(HandOver {
                    lease,
                    since: now,
                    released,
                });
            }
            let free = read[s].is_none() && node.handing[s].is_none();
            if free && (mine || ignore) {
                node.pending[s] = true;
            }
            waiting[s] = read[s].is_none() && target[s].is_some() && !mine;
        }
        let nudge = rule != ShardRule::NoNudge
            && waiting
                .iter()
                .zip(node.waiting)
                .any(|(now, before)| *now && before);
        node.waiting = waiting;
        state.over_share |= over_share;
        // A hand-over that releases at once (a rule broken on purpose).
        for s in 0..shards {
            if let Some(h) = state.nodes[n].handing[s]
                && h.released
                && h.since == now
            {
                self.release_shard(state, s, h.lease.fence);
            }
        }
        if nudge {
            // A fresh slot in, the oldest out: the group's fingerprint changes.
            let fresh = self.take_member_slot(state, n)?;
            if let Some(old) = state.nodes[n].membership.replace(fresh) {
                Self::release_member_slot(state, old.fence);
            }
        }
        Some(())
    }

    /// Node `n` tries to acquire shard `s`: the store grants it only if it is free.
    fn acquire(&self, state: &mut ShardState, n: usize, s: usize) -> Option<()> {
        let now = state.now;
        *state.nodes[n].pending.get_mut(s)? = false;
        if state.store.live(s, now).is_some() {
            return Some(()); // still held: tried again next period
        }
        let fence = state.store.fences[s].checked_add(1)?;
        if fence <= state.minted[s] {
            state.fence_fell = true;
        }
        state.minted[s] = state.minted[s].max(fence);
        state.store.fences[s] = fence;
        let node = u8::try_from(n).ok()?;
        state.store.shards[s] = Some(ShardLease {
            node,
            fence,
            expiry: now.saturating_add(self.setup.lease),
        });
        if state.last_owner[s].is_some_and(|o| o != node) {
            state.moved = true;
        }
        state.last_owner[s] = Some(node);
        state.nodes[n].owned[s] = Some(Believed {
            fence,
            deadline: self.deadline(now),
        });
        Some(())
    }

    /// The clock advances: deadlines that passed end their leases; every node that is not
    /// paused renews all of its leases in one heartbeat, and learns of those the store no
    /// longer holds.
    fn tick(&self, state: &mut ShardState) {
        state.now += 1;
        let now = state.now;
        let deadline = self.deadline(now);
        let lease = self.setup.lease;
        for node in &mut state.nodes {
            node.acted = false;
            // The local deadlines: the lease is lost, its work stops.
            if let Some(b) = node.membership.filter(|b| b.deadline <= now) {
                node.membership = None;
                node.lost_membership = Some(b.fence);
                node.settled = false;
            }
            for b in &mut node.owned {
                if b.is_some_and(|b| b.deadline <= now) {
                    *b = None;
                    node.settled = false;
                }
            }
            for h in &mut node.handing {
                if h.is_some_and(|h| h.lease.deadline <= now) {
                    *h = None;
                }
            }
            if node.paused {
                continue;
            }
            // The heartbeat.
            if let Some(b) = node.membership.as_mut() {
                let slot = state
                    .store
                    .members
                    .iter_mut()
                    .flatten()
                    .find(|m| m.fence == b.fence && m.expiry > now);
                match slot {
                    Some(m) => {
                        m.expiry = now.saturating_add(lease);
                        b.deadline = deadline;
                    }
                    None => {
                        node.membership = None;
                        node.settled = false;
                    }
                }
            }
            for (s, b) in node.owned.iter_mut().enumerate() {
                let Some(held) = b.as_mut() else { continue };
                match state.store.shards[s].as_mut() {
                    Some(l) if l.fence == held.fence && l.expiry > now => {
                        l.expiry = now.saturating_add(lease);
                        held.deadline = deadline;
                    }
                    _ => {
                        // NotHeld: lost at once.
                        *b = None;
                        node.settled = false;
                    }
                }
            }
            for (s, h) in node.handing.iter_mut().enumerate() {
                let Some(hand) = h.as_mut() else { continue };
                if hand.released {
                    continue;
                }
                match state.store.shards[s].as_mut() {
                    Some(l) if l.fence == hand.lease.fence && l.expiry > now => {
                        l.expiry = now.saturating_add(lease);
                        hand.lease.deadline = deadline;
                    }
                    _ => *h = None,
                }
            }
        }
        for node in &mut state.nodes {
            leave_when_done(node);
        }
    }

    /// True if time may pass: every node that is not paused has read and acted in this tick and
    /// sent its acquisitions, and every hand-over that began before this tick has ended (the
    /// drain is a period).
    fn may_tick(&self, state: &ShardState) -> bool {
        state.now < self.setup.horizon
            && state.nodes.iter().all(|node| {
                node.paused
                    || ((node.status != Status::Member || node.acted)
                        && !node.pending.contains(&true)
                        && node.handing.iter().flatten().all(|h| h.since >= state.now))
            })
    }
}

/// A node leaving that has handed every shard over is out.
fn leave_when_done(node: &mut Node) {
    if node.status == Status::Leaving && node.handing.iter().all(Option::is_none) {
        *node = Node::default();
    }
}

/// The assignment of `leasehold::partition::assign`, ported to node indices: the target owner
/// of each of `shards` shards, for `weights` (node → weight; 0: not a member) and `owners` (the
/// current owner of each shard as read).
///
/// 1. Each member's quota is its share `n·w/W` rounded down, plus one for as many members as
///    the rounding left over: first those whose current holding exceeds the rounded-down share,
///    then those with the largest remainder, then by node id.
/// 2. Each shard stays with its owner while the owner is a member below its quota.
/// 3. Every other shard goes to the member furthest below its quota (ties: the first node id).
pub fn assign(
    shards: usize,
    weights: [u8; NODES],
    owners: &[Option<u8>; MAX_SHARDS],
) -> [Option<u8>; MAX_SHARDS] {
    let mut target = [None; MAX_SHARDS];
    let total: u32 = weights.iter().map(|&w| u32::from(w)).sum();
    if total == 0 {
        return target;
    }
    let n = u32::try_from(shards).unwrap_or(0);
    let member = |o: Option<u8>| o.filter(|&o| weights.get(usize::from(o)).is_some_and(|&w| w > 0));
    let mut current = [0u32; NODES];
    for &o in owners.iter().take(shards) {
        if let Some(o) = member(o) {
            current[usize::from(o)] += 1;
        }
    }
    let mut quota: [u32; NODES] = weights.map(|w| n * u32::from(w) / total);
    let left = n - quota.iter().sum::<u32>();
    let remainder = |i: usize| n * u32::from(weights[i]) % total;
    let mut up: Vec<usize> = (0..NODES)
        .filter(|&i| weights[i] > 0 && remainder(i) > 0)
        .collect();
    up.sort_by_key(|&i| {
        (
            std::cmp::Reverse(current[i] > quota[i]),
            std::cmp::Reverse(remainder(i)),
            i,
        )
    });
    for &i in up.iter().take(usize::try_from(left).unwrap_or(usize::MAX)) {
        quota[i] += 1;
    }
    let mut given = [0u32; NODES];
    for (slot, &o) in target.iter_mut().zip(owners).take(shards) {
        if let Some(o) = member(o)
            && given[usize::from(o)] < quota[usize::from(o)]
        {
            *slot = Some(o);
            given[usize::from(o)] += 1;
        }
    }
    for slot in target.iter_mut().take(shards).filter(|t| t.is_none()) {
        // Furthest below its quota; ties: the first node id.
        let Some(i) = (0..NODES)
            .filter(|&i| given[i] < quota[i])
            .max_by_key(|&i| (quota[i] - given[i], std::cmp::Reverse(i)))
        else {
            break;
        };
        *slot = u8::try_from(i).ok();
        given[i] += 1;
    }
    target
}

impl Model for ShardModel {
    type State = ShardState;
    type Action = ShardAction;

    fn init_states(&self) -> Vec<ShardState> {
        let mut state = ShardState {
            now: 0,
            shards: self.setup.shards,
            store: ShardStore::default(),
            nodes: [Node::default(); NODES],
            changed: 0,
            joins_left: self.setup.joins,
            leaves_left: self.setup.leaves,
            crashes_left: self.setup.crashes,
            pauses_left: self.setup.pauses,
            forced_left: self.setup.forced,
            minted: [0; MAX_SHARDS],
            fence_fell: false,
            forced_out: [None; MAX_SHARDS],
            last_owner: [None; MAX_SHARDS],
            moved: false,
            over_share: false,
        };
        for n in 0..usize::from(self.setup.members).min(NODES) {
            let Some(slot) = self.take_member_slot(&mut state, n) else {
                continue;
            };
            state.nodes[n] = Node {
                status: Status::Member,
                membership: Some(slot),
                ..Node::default()
            };
        }
        vec![state.canonical()]
    }

    fn actions(&self, state: &ShardState, actions: &mut Vec<ShardAction>) {
        if self.may_tick(state) {
            actions.push(ShardAction::Tick);
        }
        let now = state.now;
        for (n, node) in state.nodes.iter().enumerate() {
            let id = u8::try_from(n).unwrap_or(u8::MAX);
            let shard_ids = (0..self.shards()).map(|s| u8::try_from(s).unwrap_or(u8::MAX));
            if !node.paused {
                if node.status == Status::Member && !node.acted && !node.pending.contains(&true) {
                    actions.push(ShardAction::Act(id));
                }
                for s in shard_ids {
                    if node.pending[usize::from(s)] {
                        actions.push(ShardAction::Acquire(id, s));
                    }
                    if node.handing[usize::from(s)].is_some() {
                        actions.push(ShardAction::HandedOver(id, s));
                    }
                }
            }
            match node.status {
                Status::Out | Status::Crashed if state.joins_left > 0 => {
                    actions.push(ShardAction::Join(id));
                }
                Status::Member | Status::Leaving => {
                    let calm = !node.paused && !node.pending.contains(&true);
                    if node.status == Status::Member && calm && state.leaves_left > 0 {
                        actions.push(ShardAction::Leave(id));
                    }
                    if state.crashes_left > 0 {
                        actions.push(ShardAction::Crash(id));
                    }
                    if node.paused {
                        actions.push(ShardAction::Resume(id));
                    } else if state.pauses_left > 0 {
                        actions.push(ShardAction::Pause(id));
                    }
                }
                _ => {}
            }
        }
        if state.forced_left > 0 {
            for s in 0..self.shards() {
                if state.store.live(s, now).is_some() {
                    actions.push(ShardAction::Force(u8::try_from(s).unwrap_or(u8::MAX)));
                }
            }
        }
    }

    fn next_state(&self, last: &ShardState, action: ShardAction) -> Option<ShardState> {
        let mut state = last.clone();
        let now = state.now;
        match action {
            ShardAction::Tick => self.tick(&mut state),
            ShardAction::Act(n) => self.act(&mut state, usize::from(n))?,
            ShardAction::Acquire(n, s) => {
                self.acquire(&mut state, usize::from(n), usize::from(s))?
            }
            ShardAction::HandedOver(n, s) => {
                let (n, s) = (usize::from(n), usize::from(s));
                let h = state.nodes.get(n)?.handing.get(s).copied().flatten()?;
                if !h.released {
                    self.release_shard(&mut state, s, h.lease.fence);
                }
                state.nodes[n].handing[s] = None;
                leave_when_done(&mut state.nodes[n]);
            }
            ShardAction::Join(n) => {
                let n = usize::from(n);
                state.joins_left = state.joins_left.checked_sub(1)?;
                let slot = self.take_member_slot(&mut state, n)?;
                *state.nodes.get_mut(n)? = Node {
                    status: Status::Member,
                    membership: Some(slot),
                    ..Node::default()
                };
                state.changed = now;
            }
            ShardAction::Leave(n) => {
                let n = usize::from(n);
                state.leaves_left = state.leaves_left.checked_sub(1)?;
                // Member slots first (the others stop giving it shards), then every shard
                // handed over.
                if let Some(slot) = state.nodes.get_mut(n)?.membership.take() {
                    Self::release_member_slot(&mut state, slot.fence);
                }
                if let Some(fence) = state.nodes.get_mut(n)?.lost_membership.take() {
                    Self::release_member_slot(&mut state, fence);
                }
                let node = state.nodes.get_mut(n)?;
                node.status = Status::Leaving;
                let released = self.setup.rule == ShardRule::ReleasesBeforeWorkEnds;
                for s in 0..MAX_SHARDS {
                    if let Some(lease) = node.owned[s].take() {
                        node.handing[s] = Some(HandOver {
                            lease,
                            since: now,
                            released,
                        });
                    }
                }
                for s in 0..MAX_SHARDS {
                    if let Some(h) = state.nodes[n].handing[s]
                        && h.released
                        && h.since == now
                    {
                        self.release_shard(&mut state, s, h.lease.fence);
                    }
                }
                leave_when_done(&mut state.nodes[n]);
                state.changed = now;
            }
            ShardAction::Crash(n) => {
                state.crashes_left = state.crashes_left.checked_sub(1)?;
                *state.nodes.get_mut(usize::from(n))? = Node {
                    status: Status::Crashed,
                    ..Node::default()
                };
                state.changed = now;
            }
            ShardAction::Pause(n) => {
                state.pauses_left = state.pauses_left.checked_sub(1)?;
                state.nodes.get_mut(usize::from(n))?.paused = true;
                state.changed = now;
            }
            ShardAction::Resume(n) => {
                state.nodes.get_mut(usize::from(n))?.paused = false;
                state.changed = now;
            }
            ShardAction::Force(s) => {
                state.forced_left = state.forced_left.checked_sub(1)?;
                let s = usize::from(s);
                let lease = state.store.live(s, now)?;
                state.store.shards[s] = None;
                *state.forced_out.get_mut(s)? = Some(lease.fence);
                state.changed = now;
            }
        }
        Some(state.canonical())
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::shards()
    }

    fn within_boundary(&self, state: &ShardState) -> bool {
        state.now <= self.setup.horizon
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The port keeps the core's answers on the cases its own tests name: a joiner takes only
    /// its quota, a balanced assignment is a fixed point, a shard of a node that left is filled.
    #[test]
    fn the_ported_assignment_matches_the_cores_rules() {
        // Node 0 alone owns all three; node 1 joins: quotas 2 and 1, node 0 keeps shards 0, 1.
        let all0 = [Some(0), Some(0), Some(0)];
        assert_eq!(assign(3, [1, 1], &all0), [Some(0), Some(0), Some(1)]);
        // Balanced already: kept as it is.
        let split = [Some(1), Some(0), Some(0)];
        assert_eq!(assign(3, [1, 1], &split), split);
        // Node 0 lost shard 0 (free): the round-up goes to the member holding more than its
        // floor (node 1 holds two), so node 1 keeps both and node 0 gets the free one.
        let lost = [None, Some(1), Some(1)];
        assert_eq!(assign(3, [1, 1], &lost), [Some(0), Some(1), Some(1)]);
        // Nobody above the floor: the round-up goes to the first node id.
        let one_each = [None, Some(1), Some(0)];
        assert_eq!(assign(3, [1, 1], &one_each), [Some(0), Some(1), Some(0)]);
        // A node that is not a member owns nothing it keeps.
        assert_eq!(assign(3, [0, 1], &all0), [Some(1), Some(1), Some(1)]);
        // Weight 2 against 1 (a node holding a fresh slot beside one running out).
        assert_eq!(assign(3, [2, 1], &[None; 3]), [Some(0), Some(0), Some(1)]);
        assert_eq!(assign(3, [0, 0], &all0), [None; 3]);
    }
}
