//! Regression tests for core bugs found while building the testkit: each failed before its fix.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, ElectionOptionsBuilder, Elector, LeaseStore, MemoryStore, RetryPolicy,
    store::Extension,
};
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, sleep_until};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[allow(clippy::unwrap_used)] // test helper: constant, valid input
fn options(node: &str, wait: Duration, lease: Duration) -> ElectionOptionsBuilder {
    ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .lease(lease)
        .retry(RetryPolicy::new(ms(200), ms(200), 0.0).unwrap())
}

#[allow(clippy::unwrap_used)] // test helper: constant, valid input
fn elector(store: Arc<dyn LeaseStore>, builder: ElectionOptionsBuilder) -> Elector {
    Elector::with_options(store, builder.build().unwrap())
}

/// Fixed bug 1 (engine.rs `acquire`/`elected`): when an acquisition attempt was applied by the store but
/// its answer was lost, the retry (same token) gets the *same* lease back, whose store expiry was
/// fixed by the first attempt; yet the guard's local deadline is computed from the retry's
/// `sent_at`. The guard then believes it holds the lock after the store has handed it on.
#[tokio::test(start_paused = true)]
async fn retried_acquire_local_deadline_must_not_outlive_the_store_lease() {
    const LEASE: Duration = Duration::from_secs(1);
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    let name = unique_name("bug-retry-deadline");
    let a = elector(store, options("a", Duration::from_secs(5), LEASE));
    // The first four answers are lost after the store applied the request (t = 0, .2, .4, .6 s).
    faults.fail(Op::TryAcquire, Fault::transient().times(4).after_apply());
    let start = Instant::now();
    let guard = a
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("elected by the retry");
    assert_eq!(start.elapsed(), ms(800), "four lost answers, 200 ms apart");
    assert_eq!(guard.fence(), 1, "the retry returned the first grant");

    // The store's lease started at `start` and ends at start + 1 s.
    sleep_until(start + LEASE + ms(10)).await;
    let b = elector(memory, options("b", Duration::ZERO, LEASE));
    let successor = b.try_acquire(&name).await.unwrap().elected();
    assert!(
        successor.is_some(),
        "the store hands the lock on at its expiry"
    );
    assert!(
        guard.is_lost(),
        "the old guard still believes it holds the lock (local deadline {:?} after start) while the \
         successor holds it",
        guard.local_deadline() - start
    );
}

/// Fixed bug 2 (guard.rs `LeaseCell::extended`): a manual `extend` with a ttl shorter than the time
/// left makes the store *shorten* the lease (SPI: "the new expiry is store-now + ttl"), but the
/// cell keeps the later local deadline (and expiry) with `max`, so the guard believes it holds
/// the lock after the store's new expiry.
#[tokio::test(start_paused = true)]
async fn shorter_manual_extend_must_not_leave_the_local_deadline_beyond_store_expiry() {
    let memory = Arc::new(MemoryStore::new());
    let name = unique_name("bug-short-extend");
    let a = elector(
        memory.clone(),
        options("a", Duration::ZERO, Duration::from_secs(2)),
    );
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    let new_expiry = match guard.extend(ms(300)).await.unwrap() {
        Extension::Extended { expires_at } => expires_at,
        Extension::NotHeld => panic!("live lease"),
    };
    assert_eq!(
        memory
            .state(&name, 1)
            .await
            .unwrap()
            .holder()
            .map(|h| h.expires_at),
        Some(new_expiry),
        "the store shortened the lease to 300 ms"
    );

    sleep(ms(400)).await;
    let b = elector(memory, options("b", Duration::ZERO, Duration::from_secs(2)));
    let successor = b.try_acquire(&name).await.unwrap().elected();
    assert!(
        successor.is_some(),
        "the store hands the lock on after the shortened expiry"
    );
    assert!(
        guard.is_lost(),
        "the old guard still believes it holds the lock while the successor holds it"
    );
    assert_eq!(
        guard.expires_at(),
        new_expiry,
        "the guard reports an expiry the store no longer has"
    );
}

/// Fixed bug 3 (guard.rs `LeaderGuard::release`): `release` sets `done = true` before awaiting
/// `finish`. If the future is dropped while `finish` is pending — waiting for the watchdog task to
/// stop, or for a slow store's release — the guard's `Drop` sees `done` and does nothing, so the
/// lease stays until expiry. `run_if_leader` awaits `guard.release()`, so dropping a run (timeout,
/// select, shutdown) at that moment leaves the lock behind, against design §3.2.
#[tokio::test(start_paused = true)]
async fn dropping_a_run_during_its_release_must_still_release() {
    let memory = Arc::new(MemoryStore::new());
    let name = unique_name("bug-drop-during-release");
    let a = elector(
        memory.clone(),
        options("a", Duration::ZERO, Duration::from_secs(30)).auto_extend(true),
    );
    {
        // An action that goes on after its first step, so that its watchdog runs.
        let run = a.run_if_leader(&name, |_| tokio::task::yield_now());
        let mut run = std::pin::pin!(run);
        // First poll: elected, the action yields, the watchdog starts.
        assert!(futures::poll!(&mut run).is_pending(), "the action yielded");
        // Second poll: the action finishes, the release waits for the watchdog task to stop.
        assert!(
            futures::poll!(&mut run).is_pending(),
            "the release is waiting for the watchdog"
        );
        assert!(
            !memory.state(&name, 1).await.unwrap().is_free(),
            "still held during the release"
        );
    } // dropped here, mid-release
    sleep(ms(100)).await;
    let b = elector(
        memory,
        options("b", Duration::ZERO, Duration::from_secs(30)),
    );
    assert!(
        b.try_acquire(&name).await.unwrap().elected().is_some(),
        "a dropped run must release its lease; the lock is held until its 30 s expiry"
    );
}

/// Fixed bug 3, through a slow store and a plain timeout: the release request is slow, the caller's
/// timeout fires during it, and the lease stays until expiry.
#[tokio::test(start_paused = true)]
async fn timeout_during_a_slow_release_must_still_release() {
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    let name = unique_name("bug-timeout-during-release");
    let a = elector(store, options("a", Duration::ZERO, Duration::from_secs(30)));
    faults.delay_request(Op::Release, ms(500));
    let outcome = tokio::time::timeout(ms(200), a.run_if_leader(&name, |_| async {})).await;
    assert!(
        outcome.is_err(),
        "the timeout fires while the release is in flight"
    );
    sleep(ms(1_000)).await;
    let b = elector(
        memory,
        options("b", Duration::ZERO, Duration::from_secs(30)),
    );
    assert!(
        b.try_acquire(&name).await.unwrap().elected().is_some(),
        "a dropped run must release its lease; the lock is held until its 30 s expiry"
    );
}
