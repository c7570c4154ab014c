//! The store on a private 3-server ZooKeeper ensemble (started by the test itself): the leader
//! is killed while a lease is held.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;
#[path = "cluster/harness.rs"]
mod harness;

use std::sync::Arc;
use std::time::Duration;

use harness::Ensemble;
use leasehold::{ElectionOptions, Elector, RetryPolicy};
use leasehold_testkit::safety::FencedResource;
use leasehold_testkit::unique_name;
use leasehold_zookeeper::ZooKeeperStore;
use tokio::time::{Instant, sleep, timeout};

const LEASE: Duration = Duration::from_secs(3);

fn elector(url: &str, node: &str, wait: Duration) -> Elector {
    let options = common::options()
        .with_request_timeout(Duration::from_millis(800))
        .with_clock_skew_tolerance(Duration::from_millis(250));
    let store = Arc::new(ZooKeeperStore::connect_lazy(url, options).unwrap());
    Elector::with_options(
        store,
        ElectionOptions::builder()
            .node_id(node)
            .lease(LEASE)
            .wait(wait)
            .auto_extend(true)
            .retry(
                RetryPolicy::new(Duration::from_millis(50), Duration::from_millis(300), 0.5)
                    .unwrap(),
            )
            .build()
            .unwrap(),
    )
}

/// The leader server is killed while a lease is held: never two holders inside the fenced
/// section, the lease is reported lost (or kept, if renewals reach the new leader) before any
/// successor holds it, a new leader is elected, and a contender then acquires with a higher
/// fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_never_gives_the_lock_to_two_holders() {
    if !harness::installed() {
        return;
    }
    let mut ensemble = Ensemble::start().await;
    let prefix = common::options().prefix().to_owned();
    let url = format!("zk://{}?prefix={prefix}", ensemble.servers());
    let lock = unique_name("leader-kill");
    let resource = Arc::new(FencedResource::new("resource"));

    let holder = elector(&url, "holder", Duration::ZERO);
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let holder_fence = guard.fence();
    // The holder stays inside until it lets go (or is lost, when it no longer counts): were it
    // still sure of its lease when the contender enters, the resource records an overlap.
    let visit = resource.enter("holder", &guard.context());
    resource.write(guard.fence(), "holder").unwrap();
    sleep(LEASE / 2).await;
    assert!(!guard.is_lost());

    let leader = ensemble.leader(Duration::from_secs(5)).await;
    let killed = Instant::now();
    ensemble.kill(leader).await;
    println!("killed the leader (server {})", leader + 1);

    // A contender keeps trying from the moment the leader is gone, and enters the moment it
    // acquires.
    let contender = elector(&url, "contender", Duration::from_secs(40));
    let name = lock.clone();
    let section = Arc::clone(&resource);
    let contending = tokio::spawn(async move {
        let next = contender
            .try_acquire(&name)
            .await
            .unwrap()
            .elected()
            .expect("acquired");
        let inside = section.enter("contender", &next.context());
        section.write(next.fence(), "contender").unwrap();
        drop(inside);
        next
    });

    // The holder either loses its lease or keeps it through the new leader; give it 8 s.
    let lost = timeout(Duration::from_secs(8), guard.lost()).await;
    let new_leader = ensemble.leader(Duration::from_secs(30)).await;
    assert_ne!(new_leader, leader);
    println!(
        "new leader: server {} ({:?} after the kill); holder lost: {lost:?}",
        new_leader + 1,
        killed.elapsed()
    );
    let visit = if lost.is_err() {
        // Kept through the failover: it must still be the only holder; then it lets go.
        assert!(
            !contending.is_finished(),
            "no successor while the holder holds"
        );
        resource.write(guard.fence(), "holder").unwrap();
        drop(visit);
        guard.release().await.unwrap();
        None
    } else {
        Some(visit)
    };

    let next = timeout(Duration::from_secs(45), contending)
        .await
        .expect("the contender finishes")
        .unwrap();
    assert!(next.fence() > holder_fence);
    assert!(resource.write(holder_fence, "holder").is_err());
    drop(visit);
    println!(
        "contender acquired with fence {} after {:?}",
        next.fence(),
        killed.elapsed()
    );
    assert!(
        resource.violations().is_empty(),
        "two holders at once: {:?}",
        resource.violations()
    );
    next.release().await.unwrap();
}
