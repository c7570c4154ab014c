//! Fenced work partitioning on the memory store, in paused time: at most one owner per shard
//! (a checker records every shard's work intervals and finds no overlap), coverage after joins,
//! leaves and crashes, balance within one shard, minimal movement, hand-over without waiting for
//! expiry, fences rising per shard, release on drop, and the input refused at the edge.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::limits::{MAX_LOCK_NAME_LEN, MAX_SHARDS};
use leasehold::partition::{Partition, PartitionError, PartitionSet, ShardEvent};
use leasehold::{ElectionOptions, Elector, Error, LeaseStore, MemoryStore};
use leasehold_testkit::fault::{Fault, FaultControl, FaultyStore};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

const LEASE: Duration = Duration::from_secs(3);
/// The members' period: a third of the lease.
const PERIOD: Duration = Duration::from_secs(1);

/// One stretch of work on a shard, from its acquisition to the moment its worker stopped.
#[derive(Debug, Clone)]
struct Interval {
    shard: u32,
    node: String,
    fence: u64,
    start: Instant,
    end: Option<Instant>,
}

/// Every node's work intervals.
#[derive(Clone, Default)]
struct Checker(Arc<Mutex<Vec<Interval>>>);

impl Checker {
    fn start(&self, shard: u32, node: &str, fence: u64) -> usize {
        let mut all = self.0.lock().unwrap();
        all.push(Interval {
            shard,
            node: node.to_owned(),
            fence,
            start: Instant::now(),
            end: None,
        });
        all.len() - 1
    }

    fn end(&self, at: usize) {
        self.0.lock().unwrap()[at].end = Some(Instant::now());
    }

    /// No two intervals of one shard overlap, and each shard's fences rise interval after
    /// interval. Answers how many intervals were checked.
    fn assert_exclusive(&self) -> usize {
        let all = self.0.lock().unwrap().clone();
        let mut by_shard: BTreeMap<u32, Vec<Interval>> = BTreeMap::new();
        for i in &all {
            by_shard.entry(i.shard).or_default().push(i.clone());
        }
        for (shard, mut list) in by_shard {
            list.sort_by_key(|i| (i.start, i.fence));
            for pair in list.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let a_end = a.end.unwrap_or_else(|| {
                    panic!("shard {shard}: {a:?} still running while {b:?} started")
                });
                assert!(
                    a_end <= b.start,
                    "shard {shard}: {} worked until {:?} but {} started at {:?}",
                    a.node,
                    a_end,
                    b.node,
                    b.start
                );
                assert!(
                    b.fence > a.fence,
                    "shard {shard}: fence {} after {}",
                    b.fence,
                    a.fence
                );
            }
        }
        all.len()
    }
}

/// A node: its partition driven by a task that runs one worker per owned shard (the worker
/// stops when the shard's lease says its work must end, then keeps the lease a little longer,
/// as real work takes a moment to stop).
struct Node {
    id: String,
    faults: FaultControl,
    driver: JoinHandle<Partition>,
    stop: tokio::sync::oneshot::Sender<()>,
    moves_in: Arc<Mutex<u32>>,
}

const STOPPING_TAKES: Duration = Duration::from_millis(150);

async fn start(store: &Arc<MemoryStore>, id: &str, set: &PartitionSet, checker: &Checker) -> Node {
    let (faulty, faults) = FaultyStore::new(store.clone());
    let options = ElectionOptions::builder()
        .node_id(id)
        .lease(LEASE)
        .build()
        .unwrap();
    let elector = Elector::with_options(faulty, options);
    let mut partition = set.join(&elector).await.unwrap();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let moves_in = Arc::new(Mutex::new(0));
    let (checker, node, count) = (checker.clone(), id.to_owned(), moves_in.clone());
    let driver = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => return partition,
                event = partition.next() => match event {
                    Some(ShardEvent::Acquired(shard, lease)) => {
                        *count.lock().unwrap() += 1;
                        let at = checker.start(shard, &node, lease.fence());
                        let checker = checker.clone();
                        tokio::spawn(async move {
                            lease.ending().await;
                            if !lease.is_lost() {
                                sleep(STOPPING_TAKES).await;
                            }
                            checker.end(at);
                            drop(lease);
                        });
                    }
                    Some(_) => {}
                    None => return partition,
                },
            }
        }
    });
    Node {
        id: id.to_owned(),
        faults,
        driver,
        stop,
        moves_in,
    }
}

impl Node {
    /// Stops driving and leaves gracefully.
    async fn leave(self) {
        let _ = self.stop.send(());
        let partition = self.driver.await.unwrap();
        partition.leave().await.unwrap();
    }

    /// Cuts the node off from the store (as a crash or a network partition looks to the
    /// others): every call fails from now on.
    fn crash(&self) {
        self.faults.fail_all_ops(Fault::transient());
    }
}

/// The owner of each shard, read from the store.
async fn owners(store: &MemoryStore, set: &PartitionSet) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for k in 0..set.shards() {
        let state = store.state(&set.shard_lock(k).unwrap(), 1).await.unwrap();
        out.push(state.holders.first().map(|h| h.owner.clone()));
    }
    out
}

fn counts(owners: &[Option<String>]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for o in owners.iter().flatten() {
        *n.entry(o.clone()).or_insert(0) += 1;
    }
    n
}

/// Waits (in paused time) until every shard is owned by one of `nodes` and the counts are
/// within one of each other; answers how long it took.
async fn until_balanced(
    store: &MemoryStore,
    set: &PartitionSet,
    nodes: &[&str],
    within: Duration,
) -> Duration {
    let began = Instant::now();
    loop {
        let owners = owners(store, set).await;
        let n = counts(&owners);
        let covered = owners
            .iter()
            .all(|o| o.as_deref().is_some_and(|o| nodes.contains(&o)));
        let (lo, hi) = nodes.iter().fold((usize::MAX, 0), |(lo, hi), id| {
            let c = n.get(*id).copied().unwrap_or(0);
            (lo.min(c), hi.max(c))
        });
        if covered && hi - lo <= 1 {
            return began.elapsed();
        }
        assert!(
            began.elapsed() < within,
            "not balanced over {nodes:?} within {within:?}: {n:?}"
        );
        sleep(Duration::from_millis(50)).await;
    }
}

fn set(shards: u32) -> PartitionSet {
    PartitionSet::builder("work", shards).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn one_node_with_no_options_set_owns_every_shard_and_gives_all_back() {
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::new(store.clone());
    let set = PartitionSet::builder("jobs", 16).build().unwrap();
    let mut partition = set.join(&elector).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 16 {
        match partition.next().await.unwrap() {
            ShardEvent::Acquired(shard, lease) => {
                assert_eq!(lease.shard(), shard);
                assert_eq!(lease.fence(), 1, "a fresh lock's first fence");
                assert_eq!(lease.lock().as_str(), format!("jobs.shard-{shard}"));
                assert!(!lease.is_ending());
                got.push(shard);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    got.sort_unstable();
    assert_eq!(got, (0..16).collect::<Vec<_>>());
    assert_eq!(partition.owned(), got);
    let view = partition.wait_settled().await;
    assert_eq!(view.members().len(), 1);
    assert_eq!(view.members()[0].weight, 1);
    assert_eq!(view.owned_by(elector.options().node_id()).len(), 16);
    // The default lease is the elector's, 15 s: still held long after.
    sleep(Duration::from_secs(60)).await;
    assert_eq!(partition.owned().len(), 16);
    assert!(partition.try_next().is_none(), "nothing changed");
    partition.leave().await.unwrap();
    for k in 0..16 {
        assert!(
            store
                .state(&set.shard_lock(k).unwrap(), 1)
                .await
                .unwrap()
                .is_free()
        );
    }
    assert!(elector.state(set.member_lock()).await.unwrap().is_free());
}

#[tokio::test(start_paused = true)]
async fn joins_balance_within_one_shard_and_move_only_what_the_newcomer_needs() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(64);
    let ids = ["a", "b", "c", "d", "e"];
    let mut nodes = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        let before = owners(&store, &set).await;
        nodes.push(start(&store, id, &set, &checker).await);
        let took = until_balanced(&store, &set, &ids[..=k], LEASE).await;
        // A join is seen at the others' next period and handed over; each release wakes the
        // newcomer, which takes the shard then, not at its own next period.
        assert!(
            took <= PERIOD + STOPPING_TAKES * 2,
            "{id} joined: balanced after {took:?}"
        );
        sleep(2 * PERIOD).await; // let every member see the set settled
        let after = owners(&store, &set).await;
        let moved = before
            .iter()
            .zip(&after)
            .filter(|(b, a)| b.is_some() && b != a)
            .count();
        let newcomer = counts(&after)[*id];
        assert_eq!(
            moved,
            if k == 0 { 0 } else { newcomer },
            "join of {id}: only the newcomer's share moves"
        );
        let least = 64 / (k + 1);
        assert!(newcomer == least || newcomer == least + 1, "{newcomer}");
    }
    // Settled: no shard moves any more.
    let settled = owners(&store, &set).await;
    sleep(10 * PERIOD).await;
    assert_eq!(owners(&store, &set).await, settled);
    for node in nodes {
        node.leave().await;
    }
    assert!(checker.assert_exclusive() >= 64);
}

#[tokio::test(start_paused = true)]
async fn a_graceful_leave_hands_over_without_waiting_for_the_leases_to_expire() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    // A long lease: expiry would take 30 s.
    let set = PartitionSet::builder("work", 32)
        .lease(Duration::from_secs(30))
        .build()
        .unwrap();
    let a = start(&store, "a", &set, &checker).await;
    let b = start(&store, "b", &set, &checker).await;
    until_balanced(&store, &set, &["a", "b"], Duration::from_secs(60)).await;
    sleep(Duration::from_secs(25)).await; // both settled
    let left = Instant::now();
    b.leave().await;
    assert!(
        left.elapsed() <= STOPPING_TAKES * 2,
        "leave waits for the work only"
    );
    // b's shards are free at once, and their releases (and b's member slot's) wake a: it
    // takes them in a round trip, not at its next period (10 s), let alone after the 30 s lease.
    let took = until_balanced(&store, &set, &["a"], Duration::from_secs(30)).await;
    assert!(
        took <= Duration::from_millis(200),
        "taken over after {took:?}, not at the next period or after the 30 s lease"
    );
    a.leave().await;
    checker.assert_exclusive();
}

#[tokio::test(start_paused = true)]
async fn a_crashed_nodes_shards_are_covered_again_within_about_one_lease() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(48);
    let a = start(&store, "a", &set, &checker).await;
    let b = start(&store, "b", &set, &checker).await;
    let c = start(&store, "c", &set, &checker).await;
    until_balanced(&store, &set, &["a", "b", "c"], LEASE * 3).await;
    sleep(3 * PERIOD).await;
    c.crash();
    let took = until_balanced(&store, &set, &["a", "b"], LEASE * 4).await;
    // c's leases end a lease after their last renewal; a and b see it within a period.
    assert!(
        took <= LEASE + 2 * PERIOD,
        "covered again after {took:?} (lease {LEASE:?})"
    );
    let after = owners(&store, &set).await;
    assert_eq!(counts(&after).values().sum::<usize>(), 48);
    c.driver.abort();
    a.leave().await;
    b.leave().await;
    checker.assert_exclusive();
}

/// Issue 39: a node restarted with the same node id (a stable pod name) while its old
/// process's member slot is still live holds two slots until the old one runs out. It counts
/// once: the other member hands it nothing (counted twice, it would get five of eight shards
/// and `a` would hand one over, to take one back a lease later), and the restarted process
/// takes its old four shards as their leases end, and no other.
#[tokio::test(start_paused = true)]
async fn a_restart_with_the_same_node_id_counts_once_and_moves_no_shard_that_need_not() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(8);
    let a = start(&store, "a", &set, &checker).await;
    let b = start(&store, "b", &set, &checker).await;
    until_balanced(&store, &set, &["a", "b"], LEASE * 3).await;
    sleep(3 * PERIOD).await;
    let a_took = *a.moves_in.lock().unwrap();
    let mine = |owners: &[Option<String>], who: &str| {
        owners.iter().filter(|o| o.as_deref() == Some(who)).count()
    };
    assert_eq!(mine(&owners(&store, &set).await, "a"), 4);
    b.crash();
    let restarted = start(&store, "b", &set, &checker).await;
    let members = set.member_lock();
    let mut both_live = false;
    let began = Instant::now();
    while began.elapsed() < LEASE * 3 {
        let holders = store.holders(&members).await.unwrap();
        let slots_b = holders.iter().filter(|h| h.owner == "b").count();
        both_live |= slots_b == 2;
        let now = owners(&store, &set).await;
        assert_eq!(
            mine(&now, "a"),
            4,
            "a handed a shard over {:?} after b's restart: {now:?}, b's member slots {slots_b}",
            began.elapsed()
        );
        sleep(Duration::from_millis(50)).await;
    }
    assert!(
        both_live,
        "the old and the new process's slots were never live together"
    );
    let now = owners(&store, &set).await;
    assert_eq!((mine(&now, "a"), mine(&now, "b")), (4, 4), "{now:?}");
    assert_eq!(*a.moves_in.lock().unwrap(), a_took, "a took no shard");
    assert_eq!(
        *restarted.moves_in.lock().unwrap(),
        4,
        "the restarted b took its old four shards and no other"
    );
    b.driver.abort();
    a.leave().await;
    restarted.leave().await;
    checker.assert_exclusive();
}

#[tokio::test(start_paused = true)]
async fn churn_of_joins_leaves_and_crashes_never_gives_a_shard_two_owners() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(40);
    let mut live: Vec<Node> = Vec::new();
    let mut crashed: Vec<Node> = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..24 {
        match next(4) {
            0 | 1 if live.len() < 6 => {
                live.push(start(&store, &format!("n{round}"), &set, &checker).await);
            }
            2 if live.len() > 1 => {
                let k = next(live.len() as u64) as usize;
                live.remove(k).leave().await;
            }
            _ if live.len() > 1 => {
                let k = next(live.len() as u64) as usize;
                let node = live.remove(k);
                node.crash();
                crashed.push(node);
            }
            _ => live.push(start(&store, &format!("n{round}"), &set, &checker).await),
        }
        sleep(Duration::from_millis(next(2_000))).await;
    }
    let ids: Vec<String> = live.iter().map(|n| n.id.clone()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    until_balanced(&store, &set, &ids, LEASE * 3).await;
    for node in crashed {
        node.driver.abort();
    }
    for node in live {
        node.leave().await;
    }
    let checked = checker.assert_exclusive();
    assert!(checked > 40, "{checked} intervals");
}

#[tokio::test(start_paused = true)]
async fn a_shard_lost_without_a_change_of_members_is_owned_again() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(9);
    let a = start(&store, "a", &set, &checker).await;
    let b = start(&store, "b", &set, &checker).await;
    let c = start(&store, "c", &set, &checker).await;
    until_balanced(&store, &set, &["a", "b", "c"], LEASE * 3).await;
    sleep(3 * PERIOD).await; // every member settled: they read only the member group now
    // An operator frees every shard of b (break-glass): b finds each lease gone at its next
    // renewal, and the shard must be owned again although no member joined or left.
    let before = owners(&store, &set).await;
    let of_b: Vec<u32> = (0..9)
        .filter(|&k| before[k as usize].as_deref() == Some("b"))
        .collect();
    assert_eq!(of_b.len(), 3);
    for &k in &of_b {
        let freed = store
            .force_release(&set.shard_lock(k).unwrap(), 1)
            .await
            .unwrap();
        assert_eq!(freed.len(), 1);
    }
    let took = until_balanced(&store, &set, &["a", "b", "c"], LEASE * 3).await;
    assert!(took <= LEASE, "owned again after {took:?}");
    assert_eq!(
        b.moves_in.lock().unwrap().clone(),
        6,
        "b took its three shards again"
    );
    for node in [a, b, c] {
        node.leave().await;
    }
    checker.assert_exclusive();
}

/// The freed shard goes to another member than the one that lost it: that member is settled
/// and reads only the member group, so the loser has to make every member look again.
#[tokio::test(start_paused = true)]
async fn a_shard_lost_and_assigned_to_a_settled_member_is_taken_by_it() {
    let store = Arc::new(MemoryStore::new());
    let checker = Checker::default();
    let set = set(10);
    // Joined in this order, b ends with the extra shard (4, 3, 3).
    let b = start(&store, "b", &set, &checker).await;
    until_balanced(&store, &set, &["b"], LEASE * 3).await;
    let c = start(&store, "c", &set, &checker).await;
    until_balanced(&store, &set, &["b", "c"], LEASE * 3).await;
    let a = start(&store, "a", &set, &checker).await;
    until_balanced(&store, &set, &["a", "b", "c"], LEASE * 3).await;
    sleep(3 * PERIOD).await;
    let before = owners(&store, &set).await;
    assert_eq!(counts(&before)["b"], 4);
    let one_of_b = (0..10)
        .find(|&k| before[k as usize].as_deref() == Some("b"))
        .unwrap();
    store
        .force_release(&set.shard_lock(one_of_b).unwrap(), 1)
        .await
        .unwrap();
    // Now all hold 3: the round-up goes to the first node id, a, which is not reading.
    let took = until_balanced(&store, &set, &["a", "b", "c"], LEASE * 3).await;
    assert!(took <= LEASE, "owned again after {took:?}");
    let after = owners(&store, &set).await;
    assert_eq!(after[one_of_b as usize].as_deref(), Some("a"));
    assert_eq!(
        *a.moves_in.lock().unwrap(),
        4,
        "a took its three, then the freed one"
    );
    for node in [a, b, c] {
        node.leave().await;
    }
    checker.assert_exclusive();
}

#[tokio::test(start_paused = true)]
async fn dropping_the_partition_releases_every_lease() {
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::new(store.clone());
    let set = set(8);
    let mut partition = set.join(&elector).await.unwrap();
    partition.wait_settled().await;
    assert_eq!(partition.owned().len(), 8);
    drop(partition);
    elector.settled().await;
    for k in 0..8 {
        assert!(
            store
                .state(&set.shard_lock(k).unwrap(), 1)
                .await
                .unwrap()
                .is_free(),
            "shard {k}"
        );
    }
    assert!(elector.state(set.member_lock()).await.unwrap().is_free());
    assert!(elector.held_leases().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_task_dropped_mid_join_or_mid_run_leaves_nothing_behind() {
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::new(store.clone());
    let set = set(4);
    let task = {
        let (elector, set) = (elector.clone(), set.clone());
        tokio::spawn(async move {
            let mut partition = set.join(&elector).await.unwrap();
            partition.wait_settled().await;
            panic!("the owner of the partition panics");
        })
    };
    assert!(task.await.unwrap_err().is_panic());
    elector.settled().await;
    assert!(elector.held_leases().is_empty());
    for k in 0..4 {
        assert!(
            store
                .state(&set.shard_lock(k).unwrap(), 1)
                .await
                .unwrap()
                .is_free()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn weights_share_the_shards_in_proportion() {
    let store = Arc::new(MemoryStore::new());
    let make = |id: &str| {
        let options = ElectionOptions::builder()
            .node_id(id)
            .lease(LEASE)
            .build()
            .unwrap();
        Elector::with_options(store.clone(), options)
    };
    let light = PartitionSet::builder("work", 30).build().unwrap();
    let heavy = PartitionSet::builder("work", 30).weight(2).build().unwrap();
    let a = light.join(&make("a")).await.unwrap();
    let b = heavy.join(&make("b")).await.unwrap();
    // Nobody reads the events here: each hand-over waits out the drain (a period) for the
    // shard leases the events still carry.
    sleep(6 * PERIOD).await;
    let n = counts(&owners(&store, &light).await);
    assert_eq!((n["a"], n["b"]), (10, 20));
    let view = b.assignment();
    let weights: Vec<(String, u32)> = view
        .members()
        .iter()
        .map(|m| (m.node.to_string(), m.weight))
        .collect();
    assert_eq!(weights, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
    // One member slot each, naming the node and (unless it is 1) its weight.
    let mut slots: Vec<String> = store
        .holders(&light.member_lock())
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.owner)
        .collect();
    slots.sort();
    assert_eq!(slots, ["a", "b#2"]);
    a.leave().await.unwrap();
    b.leave().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn bad_input_is_refused_with_a_typed_error() {
    assert!(matches!(
        PartitionSet::builder("work", 0).build(),
        Err(PartitionError::NoShards)
    ));
    assert!(matches!(
        PartitionSet::builder("work", MAX_SHARDS + 1).build(),
        Err(PartitionError::TooManyShards { shards, max: MAX_SHARDS }) if shards == MAX_SHARDS + 1
    ));
    let long = "w".repeat(MAX_LOCK_NAME_LEN - 5);
    assert!(matches!(
        PartitionSet::builder(long.clone(), 2).build(),
        Err(PartitionError::NameTooLong { .. })
    ));
    assert!(matches!(
        PartitionSet::builder("bad name", 2).build(),
        Err(PartitionError::Name(_))
    ));
    // Fits alone, but not inside a tenant's namespace: refused at join, before any store call.
    let store = Arc::new(MemoryStore::new());
    let tenant = Elector::new(store.clone()).for_tenant("acme").unwrap();
    let fits = PartitionSet::builder("w".repeat(MAX_LOCK_NAME_LEN - 12), 2)
        .build()
        .unwrap();
    let refused = fits.join(&tenant).await.unwrap_err();
    assert!(
        matches!(
            refused,
            Error::Name(_) | Error::Partition(PartitionError::NameTooLong { .. })
        ),
        "{refused:?}"
    );
    let page = store.list_locks(None).await.unwrap();
    assert!(page.locks.is_empty(), "nothing was taken");
}

#[tokio::test(start_paused = true)]
async fn a_tenant_partition_lives_under_the_tenants_names() {
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::new(store.clone()).for_tenant("acme").unwrap();
    let set = set(3);
    let mut partition = set.join(&elector).await.unwrap();
    partition.wait_settled().await;
    let lease = partition.context(2).expect("owns shard 2");
    assert_eq!(lease.lock().as_str(), "tenant:acme:work.shard-2");
    partition.leave().await.unwrap();
    assert!(
        store
            .state(&"tenant:acme:work.shard-2".parse().unwrap(), 1)
            .await
            .unwrap()
            .is_free()
    );
}

/// A shard freed under its owner (an operator's forced release) is lost, and this node takes it
/// again only once the lost tenure's work has ended (its `ShardLease` dropped): one node never
/// runs two tenures of a shard at once, however soon the assignment gives it back.
#[tokio::test(start_paused = true)]
async fn a_lost_shard_is_taken_again_only_after_its_old_work_ended() {
    let store = Arc::new(MemoryStore::new());
    let elector = Elector::with_options(
        store.clone(),
        ElectionOptions::builder().lease(LEASE).build().unwrap(),
    );
    let set = set(4);
    let mut partition = set.join(&elector).await.unwrap();
    let mut leases = HashMap::new();
    while leases.len() < 4 {
        if let Some(ShardEvent::Acquired(shard, lease)) = partition.next().await {
            leases.insert(shard, lease);
        }
    }
    let old = leases.remove(&2).unwrap();
    let lock = set.shard_lock(2).unwrap();
    assert_eq!(store.force_release(&lock, 1).await.unwrap().len(), 1);
    match tokio::time::timeout(LEASE * 2, partition.next()).await {
        Ok(Some(ShardEvent::Lost(2, _))) => {}
        Ok(Some(other)) => panic!("before the loss: {other:?}"),
        Ok(None) | Err(_) => panic!("the forced release was never noticed"),
    }
    // The old work goes on for a while (its lease is lost; fences guard what it writes).
    let winding = tokio::time::timeout(LEASE * 3, partition.next()).await;
    assert!(
        winding.is_err(),
        "shard 2 taken again while its old work still ran: {winding:?}"
    );
    let stopped = Instant::now();
    drop(old);
    match tokio::time::timeout(LEASE, partition.next()).await {
        Ok(Some(ShardEvent::Acquired(2, again))) => {
            assert!(
                stopped.elapsed() <= Duration::from_millis(100),
                "taken again {:?} after the old work ended",
                stopped.elapsed()
            );
            assert!(again.fence() > 1, "a new grant: fence {}", again.fence());
            leases.insert(2, again);
        }
        other => panic!("shard 2 was not taken again: {other:?}"),
    }
    drop(leases);
    partition.leave().await.unwrap();
}
