//! Nothing the integrations start outlives their `stopped()`: a store that answers an
//! acquisition late (after shutdown cancelled it) still has that grant released before
//! `stopped()` returns, so a process that exits right after leaves no lock behind. Paused tokio
//! time, the memory store behind the testkit's fault wrapper.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    CancellationToken, ElectionOptions, Elector, LeaseStore, LockName, MemoryStore,
    limits::SETTLE_TIMEOUT,
};
use leasehold_axum::{LeaderJobs, LeaderOnly};
use leasehold_testkit::fault::{FaultControl, FaultyStore, Op};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep};

/// How late the store answers (as seen with a real store in the field).
const LATE: Duration = Duration::from_millis(300);

fn late_store() -> (Arc<MemoryStore>, Elector, FaultControl) {
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    faults.delay_answer(Op::TryAcquire, LATE);
    let opts = ElectionOptions::builder()
        .node_id("a")
        .lease(Duration::from_secs(30))
        .build()
        .unwrap();
    (memory, Elector::with_options(store, opts), faults)
}

async fn is_free(memory: &MemoryStore, lock: &LockName) -> bool {
    memory.state(lock, 1).await.unwrap().is_free()
}

/// Waits until the first acquisition is in flight (the store applied it; its answer is late).
async fn acquisition_in_flight(faults: &FaultControl) {
    while faults.calls(Op::TryAcquire) == 0 {
        sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn leader_jobs_stopped_returns_after_a_late_grant_is_released() {
    let (memory, elector, faults) = late_store();
    let name = unique_name("jobs-late-grant");
    let shutdown = CancellationToken::new();
    let jobs = LeaderJobs::new(elector)
        .every(name.as_str(), Duration::from_secs(60), |_| async {
            Ok::<_, String>(())
        })
        .start(shutdown.clone())
        .unwrap();
    acquisition_in_flight(&faults).await;
    assert!(!is_free(&memory, &name).await, "the store granted it");
    shutdown.cancel();
    let start = Instant::now();
    jobs.stopped().await;
    assert!(start.elapsed() < SETTLE_TIMEOUT);
    assert!(
        is_free(&memory, &name).await,
        "stopped() returned while the late grant was still held"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn leader_only_stopped_returns_after_a_late_grant_is_released() {
    let (memory, elector, faults) = late_store();
    let name = unique_name("leader-only-late-grant");
    let shutdown = CancellationToken::new();
    let leader = LeaderOnly::builder(&elector, name.as_str())
        .start(shutdown.clone())
        .unwrap();
    acquisition_in_flight(&faults).await;
    assert!(!is_free(&memory, &name).await, "the store granted it");
    shutdown.cancel();
    let start = Instant::now();
    leader.stopped().await;
    assert!(start.elapsed() < SETTLE_TIMEOUT);
    assert!(!leader.is_leader());
    assert!(
        is_free(&memory, &name).await,
        "stopped() returned while the late grant was still held"
    );
    leader.stopped().await; // a second call returns too
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn dropping_every_handle_ends_the_campaign_and_releases_the_lock() {
    let memory = Arc::new(MemoryStore::new());
    let elector = Elector::new(memory.clone());
    let lock = LockName::new(unique_name("dropped")).unwrap();
    let shutdown = CancellationToken::new();
    let leader = LeaderOnly::builder(&elector, lock.as_str())
        .start(shutdown.clone())
        .unwrap();
    let layer = leader.layer();
    let start = Instant::now();
    while !leader.is_leader() {
        assert!(start.elapsed() < Duration::from_secs(5), "never elected");
        sleep(Duration::from_millis(10)).await;
    }
    drop(leader);
    // A layer still serves the routes: the campaign goes on.
    sleep(Duration::from_secs(60)).await;
    assert!(
        !is_free(&memory, &lock).await,
        "still led while a layer lives"
    );
    drop(layer);
    let start = Instant::now();
    while !is_free(&memory, &lock).await {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the lock is still held for nobody"
        );
        sleep(Duration::from_millis(10)).await;
    }
    assert!(!shutdown.is_cancelled(), "the caller's token is left alone");
}
