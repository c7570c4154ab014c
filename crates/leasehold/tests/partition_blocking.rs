//! The blocking form of a partition set: joining, events on the caller's thread, a graceful
//! leave and a drop that leave no lease behind. Real time, with a short lease.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::partition::{PartitionSet, ShardEvent, ShardLease};
use leasehold::{ElectionOptions, MemoryStore, blocking};

const LEASE: Duration = Duration::from_millis(300);

fn node(store: &Arc<MemoryStore>, id: &str) -> blocking::Elector {
    let options = ElectionOptions::builder()
        .node_id(id)
        .lease(LEASE)
        .build()
        .unwrap();
    blocking::Elector::with_options(store.clone(), options).unwrap()
}

/// Reads the events of up to 20 ms, keeping the leases of the shards `partition` owns and
/// dropping those whose work must end (the work on them has stopped).
fn pump(partition: &mut blocking::Partition, leases: &mut Vec<ShardLease>) {
    leases.retain(|l| !l.is_ending());
    let first = partition.next_event_timeout(Duration::from_millis(20));
    for event in first
        .into_iter()
        .chain(std::iter::from_fn(|| partition.try_next_event()))
    {
        if let ShardEvent::Acquired(_, lease) = event {
            leases.push(lease);
        }
    }
    leases.retain(|l| !l.is_ending());
}

/// Pumps until `partition` owns `n` shards.
fn until_owning(partition: &mut blocking::Partition, leases: &mut Vec<ShardLease>, n: usize) {
    let began = Instant::now();
    while partition.owned().len() != n || leases.len() != n {
        assert!(began.elapsed() < LEASE * 20, "owns {:?}", partition.owned());
        pump(partition, leases);
    }
}

#[test]
fn two_blocking_members_share_the_shards_and_hand_them_back() {
    let store = Arc::new(MemoryStore::new());
    let set = PartitionSet::builder("regions", 6).build().unwrap();
    let (a, b) = (node(&store, "a"), node(&store, "b"));
    let mut pa = a.join_partition(&set).unwrap();
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    until_owning(&mut pa, &mut la, 6);
    let mut pb = b.join_partition(&set).unwrap();
    let began = Instant::now();
    while pb.owned().len() != 3 || lb.len() != 3 {
        assert!(began.elapsed() < LEASE * 20, "b owns {:?}", pb.owned());
        pump(&mut pa, &mut la);
        pump(&mut pb, &mut lb);
    }
    let mut fences: Vec<u64> = lb.iter().map(|l| l.fence()).collect();
    fences.sort_unstable();
    assert_eq!(fences, [2, 2, 2], "each moved shard's second lease");
    assert_eq!(pa.assignment().members().len(), 2);
    // b leaves: its leases are dropped first (its work ended), a takes its shards.
    drop(lb);
    pb.leave().unwrap();
    until_owning(&mut pa, &mut la, 6);
    drop(la);
    drop(pa); // leaves in the background on a's runtime
    drop(a); // waits for that before the runtime goes
    let reader = node(&store, "reader");
    for k in 0..6 {
        let state = reader.state(set.shard_lock(k).unwrap()).unwrap();
        assert!(state.is_free(), "shard {k} left behind");
    }
    assert!(reader.state(set.member_lock()).unwrap().is_free());
}
