//! Partition sets on the store under test: three members, each on its own client, share 16
//! shards; joins, a graceful leave and a member cut off from the store, with every shard's work
//! recorded and checked for two owners at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use leasehold::partition::{Partition, PartitionSet, ShardEvent};
use leasehold::{Elector, LeaseStore, LockName};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use super::support::{SLACK, ok, options, valid};
use crate::factory::StoreFactory;
use crate::fault::{Fault, FaultControl, FaultyStore};
use crate::names::unique_name;

/// The lease of the cases' shards and memberships: whole seconds (etcd and NATS count leases in
/// seconds), short enough that a crash is covered again within a few seconds.
const LEASE: Duration = Duration::from_secs(3);
/// A member's period: a third of the lease.
const PERIOD: Duration = Duration::from_secs(1);
/// The shards of each case's set.
const SHARDS: u32 = 16;
/// How long a shard's work takes to stop after a hand-over began.
const STOPPING_TAKES: Duration = Duration::from_millis(50);
/// How often the owners are read back from the store while waiting for a balance.
const POLL: Duration = Duration::from_millis(200);

/// One stretch of work on a shard: from the `Acquired` event to the drop of its `ShardLease`.
#[derive(Debug, Clone)]
struct Tenure {
    shard: u32,
    node: String,
    fence: u64,
    start: Instant,
    end: Option<Instant>,
}

/// Every member's tenures, for the check that no shard had two owners at once.
#[derive(Clone, Default)]
struct Tenures(Arc<Mutex<Vec<Tenure>>>);

impl Tenures {
    fn begin(&self, shard: u32, node: &str, fence: u64) -> usize {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.push(Tenure {
            shard,
            node: node.to_owned(),
            fence,
            start: Instant::now(),
            end: None,
        });
        all.len() - 1
    }

    fn finish(&self, at: usize) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = all.get_mut(at) {
            t.end = Some(Instant::now());
        }
    }

    fn all(&self) -> Vec<Tenure> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Panics if two tenures of one shard overlap or a later tenure's fence is not higher;
    /// answers how many tenures were checked.
    fn assert_one_owner_at_a_time(&self) -> usize {
        let all = self.all();
        let mut by_shard: BTreeMap<u32, Vec<&Tenure>> = BTreeMap::new();
        for t in &all {
            by_shard.entry(t.shard).or_default().push(t);
        }
        for (shard, mut list) in by_shard {
            list.sort_by_key(|t| (t.start, t.fence));
            for pair in list.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                match a.end {
                    Some(end) => assert!(
                        end <= b.start,
                        "shard {shard} had two owners: {} (fence {}) worked until {:?} after \
                         {} (fence {}) acquired it",
                        a.node,
                        a.fence,
                        end - b.start,
                        b.node,
                        b.fence
                    ),
                    None => panic!(
                        "shard {shard} had two owners: {} (fence {}) still held it when {} \
                         (fence {}) acquired it",
                        a.node, a.fence, b.node, b.fence
                    ),
                }
                assert!(
                    b.fence > a.fence,
                    "shard {shard}: fences must rise across moves, but {} got {} after {} had {}",
                    b.node,
                    b.fence,
                    a.node,
                    a.fence
                );
            }
        }
        all.len()
    }
}

/// A member of the set on its own client of the store, driven by a task that runs one worker
/// per owned shard.
struct Node {
    id: String,
    /// The switches of the member that may be cut off (its client wrapped in a `FaultyStore`,
    /// which renews each lease alone: the others use the store as it is, in batches where it
    /// can).
    faults: Option<FaultControl>,
    driver: JoinHandle<Option<Partition>>,
    stop: oneshot::Sender<()>,
}

impl Node {
    async fn join(factory: &dyn StoreFactory, id: &str, set: &PartitionSet, log: &Tenures) -> Self {
        Self::join_with(factory, id, set, log, false).await
    }

    async fn join_with(
        factory: &dyn StoreFactory,
        id: &str,
        set: &PartitionSet,
        log: &Tenures,
        cuttable: bool,
    ) -> Self {
        let (store, faults) = if cuttable {
            let (store, faults) = FaultyStore::new(factory.make());
            (store as Arc<dyn LeaseStore>, Some(faults))
        } else {
            (factory.make(), None)
        };
        let elector = Elector::with_options(
            store,
            valid(options(id, Duration::ZERO, LEASE).build(), "options"),
        );
        let mut partition = ok(set.join(&elector).await, "join the partition set");
        let (stop, mut stopped) = oneshot::channel::<()>();
        let (log, node) = (log.clone(), id.to_owned());
        let driver = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => return Some(partition),
                    event = partition.next() => match event {
                        Some(ShardEvent::Acquired(shard, lease)) => {
                            let at = log.begin(shard, &node, lease.fence());
                            let log = log.clone();
                            tokio::spawn(async move {
                                lease.ending().await;
                                if !lease.is_lost() {
                                    sleep(STOPPING_TAKES).await;
                                }
                                log.finish(at);
                                drop(lease);
                            });
                        }
                        Some(_) => {}
                        None => return None,
                    },
                }
            }
        });
        Self {
            id: id.to_owned(),
            faults,
            driver,
            stop,
        }
    }

    /// Stops driving the events and leaves the set gracefully.
    async fn leave(self) {
        let _ = self.stop.send(());
        if let Ok(Some(partition)) = self.driver.await {
            ok(partition.leave().await, "leave the partition set");
        }
    }

    /// Cuts the member off from the store: every call fails from now on, as a crashed node or
    /// a network partition looks to the others. Its shards' work stops when their leases are
    /// lost on its side.
    fn cut_off(&self) {
        match &self.faults {
            Some(faults) => faults.fail_all_ops(Fault::transient()),
            None => panic!("conformance suite bug: {} cannot be cut off", self.id),
        }
    }
}

/// The owner of each shard as the store shows it.
async fn owners(store: &dyn LeaseStore, locks: &[LockName]) -> Vec<Option<String>> {
    let mut out = Vec::with_capacity(locks.len());
    for lock in locks {
        let state = ok(store.state(lock, 1).await, "read a shard's state");
        out.push(state.holders.first().map(|h| h.owner.clone()));
    }
    out
}

fn counts(owners: &[Option<String>]) -> HashMap<&str, usize> {
    let mut n = HashMap::new();
    for o in owners.iter().flatten() {
        *n.entry(o.as_str()).or_insert(0) += 1;
    }
    n
}

/// Every shard owned by one of `nodes`.
fn covered(owners: &[Option<String>], nodes: &[&str]) -> bool {
    owners
        .iter()
        .all(|o| o.as_deref().is_some_and(|o| nodes.contains(&o)))
}

/// Every shard owned by one of `nodes`, and their counts within one of each other.
fn balanced(owners: &[Option<String>], nodes: &[&str]) -> bool {
    let n = counts(owners);
    let per: Vec<usize> = nodes
        .iter()
        .map(|id| n.get(id).copied().unwrap_or(0))
        .collect();
    let (lo, hi) = (
        per.iter().copied().min().unwrap_or(0),
        per.iter().copied().max().unwrap_or(0),
    );
    covered(owners, nodes) && hi - lo <= 1
}

/// How much longer than its coverage bound a set may take to balance: balance is a guarantee
/// without a deadline (each member reads the set once a period, and a slow store — dynalite on a
/// loaded machine — takes a few rounds), coverage has one.
const BALANCE_GRACE: Duration = Duration::from_secs(12);

/// Reads the owners until the shards are balanced over `nodes`; answers the time it took and
/// the owners. Panics when they are not all owned by `nodes` after `within`, or not balanced
/// [`BALANCE_GRACE`] after that.
async fn until_balanced(
    store: &dyn LeaseStore,
    locks: &[LockName],
    nodes: &[&str],
    within: Duration,
    what: &str,
) -> (Duration, Vec<Option<String>>) {
    let began = Instant::now();
    loop {
        let now = owners(store, locks).await;
        if balanced(&now, nodes) {
            return (began.elapsed(), now);
        }
        assert!(
            began.elapsed() < within || covered(&now, nodes),
            "{what}: the {} shards were not all owned by {nodes:?} within {within:?}; owners \
             now: {:?}",
            locks.len(),
            counts(&now)
        );
        assert!(
            began.elapsed() < within + BALANCE_GRACE,
            "{what}: the {} shards were not balanced over {nodes:?} within {:?}; owners now: {:?}",
            locks.len(),
            within + BALANCE_GRACE,
            counts(&now)
        );
        sleep(POLL).await;
    }
}

fn new_set(tag: &str) -> (PartitionSet, Vec<LockName>) {
    let name = unique_name(tag);
    let set = valid(
        PartitionSet::builder(name.as_str(), SHARDS)
            .lease(LEASE)
            .build(),
        "partition set",
    );
    let locks = (0..SHARDS)
        .map(|k| match set.shard_lock(k) {
            Some(lock) => lock,
            None => panic!("conformance suite bug: shard {k} of {SHARDS} has no lock"),
        })
        .collect();
    (set, locks)
}

/// Three members join a set of 16 shards one after the other, each on its own client: after
/// each join, within a few periods, every shard has exactly one owner among the members and the
/// members' counts are within one of each other; no shard ever had two owners at once (each
/// member records its work on a shard from `Acquired` to the drop of the `ShardLease`), and each
/// shard's fence rose with every move.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn partition_joins_balance_with_one_owner_per_shard(factory: &dyn StoreFactory) {
    let (set, locks) = new_set("partition-joins");
    let observer = factory.make();
    let log = Tenures::default();
    let ids = ["member-a", "member-b", "member-c"];
    let mut nodes = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        nodes.push(Node::join(factory, id, &set, &log).await);
        // A join is seen at the others' next period, and taken at the newcomer's next period
        // once handed over: about two periods; the bound is generous for loaded machines.
        until_balanced(
            &*observer,
            &locks,
            &ids[..=k],
            2 * LEASE + SLACK,
            &format!("after {id} joined"),
        )
        .await;
    }
    // Settled: the assignment stays put.
    sleep(2 * PERIOD).await;
    let (_, settled) = until_balanced(&*observer, &locks, &ids, LEASE, "settled").await;
    let n = counts(&settled);
    for id in ids {
        let c = n.get(id).copied().unwrap_or(0);
        assert!(
            c == 5 || c == 6,
            "{id} owns {c} of 16 shards over 3 members"
        );
    }
    for node in nodes {
        node.leave().await;
    }
    let moved_in = log.all().len();
    assert!(
        moved_in >= SHARDS as usize + 8 + 5,
        "the joins must have moved shards: {moved_in} tenures"
    );
    log.assert_one_owner_at_a_time();
    for lock in &locks {
        assert!(
            ok(observer.state(lock, 1).await, "state").is_free(),
            "{lock}: free after every member left"
        );
    }
}

/// The three members of the cases that take one away, joined and balanced, a period later.
struct Three {
    set: PartitionSet,
    locks: Vec<LockName>,
    /// A store of its own that reads the shards' owners.
    observer: Arc<dyn LeaseStore>,
    log: Tenures,
    ids: [&'static str; 3],
    /// The first two members, which stay.
    staying: Vec<Node>,
    /// The third member, the one the case takes away (cut off from the store when
    /// `cuttable`).
    third: Node,
}

impl Three {
    async fn balanced(factory: &dyn StoreFactory, tag: &str, cuttable: bool) -> Self {
        let (set, locks) = new_set(tag);
        let observer = factory.make();
        let log = Tenures::default();
        let ids = ["member-a", "member-b", "member-c"];
        let mut staying = Vec::new();
        for id in ids {
            let cut = cuttable && id == "member-c";
            staying.push(Node::join_with(factory, id, &set, &log, cut).await);
        }
        until_balanced(&*observer, &locks, &ids, 3 * LEASE + SLACK, "three joined").await;
        sleep(PERIOD).await;
        let Some(third) = staying.pop() else {
            unreachable!("three members joined")
        };
        Self {
            set,
            locks,
            observer,
            log,
            ids,
            staying,
            third,
        }
    }
}

/// Of three balanced members, one leaves gracefully: once its `leave` returns, none of its
/// shards is still held by it (they were released, not left to expire), and the other two own
/// every shard, balanced, well within one lease; no shard had two owners at once.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn partition_graceful_leave_hands_over_without_expiry(factory: &dyn StoreFactory) {
    let Three {
        locks,
        observer,
        log,
        ids,
        staying: nodes,
        third: leaver,
        ..
    } = Three::balanced(factory, "partition-leave", false).await;
    let left_id = leaver.id.clone();
    let before = owners(&*observer, &locks).await;
    let its: Vec<usize> = (0..locks.len())
        .filter(|&k| before[k].as_deref() == Some(left_id.as_str()))
        .collect();
    assert!(!its.is_empty(), "{left_id} owned shards before it left");
    let left = Instant::now();
    leaver.leave().await;
    let leaving_took = left.elapsed();
    let after = owners(&*observer, &locks).await;
    for &k in &its {
        assert_ne!(
            after[k].as_deref(),
            Some(left_id.as_str()),
            "{}: still held by {left_id} after its leave returned (took {leaving_took:?}): a \
             graceful leave must release its shards, not leave them to expire",
            locks[k]
        );
    }
    // The others see the member gone at their next period and take its shards.
    let (took, _) = until_balanced(
        &*observer,
        &locks,
        &ids[..2],
        LEASE + SLACK,
        &format!("after {left_id} left"),
    )
    .await;
    assert!(
        leaving_took + took < LEASE + SLACK,
        "covered again {:?} after the leave began; expected about a period (lease {LEASE:?})",
        leaving_took + took
    );
    for node in nodes {
        node.leave().await;
    }
    log.assert_one_owner_at_a_time();
}

/// Of three balanced members, one is cut off from the store without leaving (every call it
/// makes fails, as a crash looks to the others): its shards are owned by the other two, balanced,
/// within about one lease plus a period — and never before its leases could end: each new
/// owner's tenure of one of its shards begins after the cut-off member's work on it stopped (at
/// its local deadline, when its lease was lost), and no earlier than half a lease after the cut
/// (its renewals ran every third of a lease until then).
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn partition_cut_off_member_is_replaced_after_its_leases(factory: &dyn StoreFactory) {
    let Three {
        locks,
        observer,
        log,
        ids,
        staying: nodes,
        third: crashed,
        ..
    } = Three::balanced(factory, "partition-crash", true).await;
    let before = owners(&*observer, &locks).await;
    let its: Vec<u32> = (0..SHARDS)
        .filter(|&k| before[k as usize].as_deref() == Some(crashed.id.as_str()))
        .collect();
    assert!(
        !its.is_empty(),
        "{} owned shards before the cut",
        crashed.id
    );
    let cut = Instant::now();
    crashed.cut_off();
    let (took, after) = until_balanced(
        &*observer,
        &locks,
        &ids[..2],
        LEASE + 3 * PERIOD + SLACK,
        &format!("after {} was cut off", crashed.id),
    )
    .await;
    assert!(
        after.iter().all(Option::is_some),
        "every shard owned again after {took:?}"
    );
    let tenures = log.all();
    for &k in &its {
        let mine = tenures
            .iter()
            .filter(|t| t.shard == k && t.node == crashed.id)
            .max_by_key(|t| t.start);
        let next = tenures
            .iter()
            .filter(|t| t.shard == k && t.node != crashed.id && t.start >= cut)
            .min_by_key(|t| t.start);
        let (Some(mine), Some(next)) = (mine, next) else {
            panic!("shard {k}: expected a tenure of the cut-off member and one after it");
        };
        assert!(
            next.start >= cut + LEASE / 2,
            "shard {k}: {} took it {:?} after {} was cut off, before its lease ({LEASE:?}, \
             renewed every {PERIOD:?}) could have ended",
            next.node,
            next.start - cut,
            crashed.id
        );
        assert!(
            mine.end.is_some_and(|end| end <= next.start),
            "shard {k}: the cut-off member's work (ended {:?}) overlapped {}'s tenure",
            mine.end.map(|e| e - cut),
            next.node
        );
    }
    crashed.driver.abort();
    for node in nodes {
        node.leave().await;
    }
    log.assert_one_owner_at_a_time();
}

/// Of three balanced members, one is cut off from the store (as a crash looks) and restarts at
/// once with the same node id (a stable pod name), on a fresh client: while its old process's
/// member slot is still live the node holds two slots, and it counts once (issue 39). So the two
/// other members hand nothing over — each keeps every shard it owned throughout — and the
/// restarted process takes exactly its old shards as their leases end; no shard had two owners
/// at once.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn partition_restart_with_the_same_node_id_counts_once(factory: &dyn StoreFactory) {
    let Three {
        set,
        locks,
        observer,
        log,
        ids,
        staying: mut nodes,
        third: crashed,
    } = Three::balanced(factory, "partition-restart", true).await;
    let before = owners(&*observer, &locks).await;
    let held = |owners: &[Option<String>], id: &str| -> Vec<usize> {
        (0..owners.len())
            .filter(|&k| owners[k].as_deref() == Some(id))
            .collect()
    };
    let kept: Vec<(&str, Vec<usize>)> =
        ids[..2].iter().map(|&id| (id, held(&before, id))).collect();
    let its = held(&before, &crashed.id);
    assert!(
        !its.is_empty(),
        "{} owned shards before the cut",
        crashed.id
    );
    crashed.cut_off();
    let restarted = Node::join(factory, &crashed.id, &set, &log).await;
    let members = set.member_lock();
    let slots = ok(observer.holders(&members).await, "read the member group");
    let twice = slots.iter().filter(|h| h.owner == crashed.id).count();
    assert_eq!(
        twice, 2,
        "right after the restart the old process's member slot is still live beside the new one"
    );
    // The old leases end within a lease of the cut; then the restarted process takes them.
    let began = Instant::now();
    loop {
        let now = owners(&*observer, &locks).await;
        for (id, shards) in &kept {
            for &k in shards {
                assert_eq!(
                    now[k].as_deref(),
                    Some(*id),
                    "{}: {id} handed it over {:?} after {} restarted with the same node id: the \
                     node was counted twice",
                    locks[k],
                    began.elapsed(),
                    crashed.id
                );
            }
        }
        if held(&now, &crashed.id) == its && began.elapsed() >= LEASE {
            break;
        }
        assert!(
            began.elapsed() < 2 * LEASE + SLACK,
            "{}'s old shards {its:?} were not all owned again within {:?}; owners now: {:?}",
            crashed.id,
            2 * LEASE + SLACK,
            counts(&now)
        );
        sleep(POLL).await;
    }
    crashed.driver.abort();
    nodes.push(restarted);
    for node in nodes {
        node.leave().await;
    }
    log.assert_one_owner_at_a_time();
}
