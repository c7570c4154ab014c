//! Cancellation and lost answers: a caller that gives up while an acquire is in flight leaves no
//! lock behind, and an acquire applied whose answer was lost is recognised as ours on retry.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, RetryPolicy};
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, timeout};

fn options(wait: Duration) -> ElectionOptions {
    ElectionOptions::builder()
        .wait(wait)
        .lease(Duration::from_secs(30))
        .retry(RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(50), 0.5).unwrap())
        .build()
        .unwrap()
}

/// The store grants the lease, but its answer is slow; the caller gives up (its future is
/// dropped) before the answer arrives. The core releases the late grant: the lock is free long
/// before the 30 s lease would end, and the action never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquisition_dropped_mid_flight_leaves_no_lock() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store: Arc<dyn LeaseStore> = Arc::new(common::store(&endpoint));
    let (slow, faults) = FaultyStore::new(Arc::clone(&store));
    faults.delay_answer(Op::TryAcquire, Duration::from_millis(600));
    let elector = Elector::with_options(slow, options(Duration::from_secs(5)));
    let name = unique_name("dropped-acquire");
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let dropped = timeout(
        Duration::from_millis(200),
        elector.run_if_leader(&name, |_| async move { flag.store(true, Ordering::SeqCst) }),
    )
    .await;
    assert!(
        dropped.is_err(),
        "the acquisition must still be in flight when dropped"
    );
    assert_eq!(faults.calls(Op::TryAcquire), 1);

    let lock = leasehold::LockName::new(&name).unwrap();
    // The grant happened on the store while the answer was delayed...
    let held = store.state(&lock, 1).await.unwrap();
    assert_eq!(held.active(), 1, "the store granted the lease: {held:?}");
    // ...and is handed back once the late answer arrives.
    let start = Instant::now();
    while !store.state(&lock, 1).await.unwrap().is_free() {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "a late grant must be released, not left until its 30 s lease ends"
        );
        sleep(Duration::from_millis(50)).await;
    }
    let other = Elector::with_options(Arc::new(common::store(&endpoint)), options(Duration::ZERO));
    assert!(
        other
            .run_if_leader(&name, |_| async {})
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "the abandoned action must never run"
    );
}

/// The same with a plain deadline and no fault injection: whatever moment the caller gives up,
/// nothing stays locked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquisitions_cut_at_any_moment_leave_no_lock() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store: Arc<dyn LeaseStore> = Arc::new(common::store(&endpoint));
    let elector = Elector::with_options(Arc::clone(&store), options(Duration::from_secs(5)));
    for cut_us in [0u64, 200, 500, 1_000, 2_000, 4_000, 8_000] {
        let name = unique_name("cut-acquire");
        let _ = timeout(
            Duration::from_micros(cut_us),
            elector.run_if_leader(&name, |_| std::future::pending::<()>()),
        )
        .await;
        let lock = leasehold::LockName::new(&name).unwrap();
        let start = Instant::now();
        while !store.state(&lock, 1).await.unwrap().is_free() {
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "cut after {cut_us} µs: the lock stayed held"
            );
            sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The acquire is applied but its answer is lost (a transient error); the elector's next attempt
/// carries the same token, and the store recognises the lease as ours instead of reporting
/// contention — no waiting for expiry, same fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_acquire_whose_answer_was_lost_is_recognised() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let store: Arc<dyn LeaseStore> = Arc::new(common::store(&endpoint));
    let (lossy, faults) = FaultyStore::new(Arc::clone(&store));
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let elector = Elector::with_options(lossy, options(Duration::from_secs(2)));
    let name = unique_name("lost-answer");
    let start = Instant::now();
    let guard = elector
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("recognised as ours");
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(faults.injected(Op::TryAcquire), 1);
    assert_eq!(faults.calls(Op::TryAcquire), 2);
    let state = elector.state(&name).await.unwrap();
    assert_eq!(state.holder().map(|h| h.fence), Some(guard.fence()));
    assert_eq!(
        guard.release().await.unwrap(),
        leasehold::store::Release::Released
    );
}
