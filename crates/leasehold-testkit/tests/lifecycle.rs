//! The lease lifecycle around stopping: nothing the core spawns outlives "stopped" (a late grant
//! of an abandoned acquisition, a dropped guard's release), and a failing renewal is announced
//! before the lease is lost. Paused tokio time with the memory store behind the fault wrapper,
//! except for the blocking facade, which runs its own real-time runtime.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, Event, Job, LeaseStore, LockName, LostReason, MemoryStore, Schedule,
    blocking, limits::SETTLE_TIMEOUT,
};
use leasehold_testkit::fault::{Fault, FaultControl, FaultyStore, Op};
use leasehold_testkit::unique_name;
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

/// How late the store answers an acquisition in these tests (as seen in the field).
const LATE: Duration = Duration::from_millis(300);

fn faulty() -> (Arc<MemoryStore>, Arc<FaultyStore>, FaultControl) {
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    (memory, store, faults)
}

fn elector(store: Arc<dyn LeaseStore>, auto_extend: bool) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id("a")
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(3))
        .auto_extend(auto_extend)
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

async fn is_free(memory: &MemoryStore, lock: &LockName) -> bool {
    memory.state(lock, 1).await.unwrap().is_free()
}

/// Waits (on paused time) until the store has seen `n` calls of `op`.
async fn calls_reach(faults: &FaultControl, op: Op, n: u64) {
    while faults.calls(op) < n {
        sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_late_grant_of_an_abandoned_acquisition_is_released_before_settled() {
    let (memory, store, faults) = faulty();
    let name = unique_name("late-grant");
    let a = elector(store, false);
    faults.delay_answer(Op::TryAcquire, LATE);
    // The caller gives up while the request is in flight; the store grants it anyway.
    assert!(
        timeout(LATE / 3, a.try_acquire(&name)).await.is_err(),
        "the answer is late"
    );
    assert!(!is_free(&memory, &name).await, "the store granted it");
    let start = Instant::now();
    assert!(a.settled_within(SETTLE_TIMEOUT).await);
    assert!(
        start.elapsed() >= LATE / 2,
        "settled waited for the late answer"
    );
    assert!(is_free(&memory, &name).await, "the late grant was released");
    assert_eq!(faults.calls(Op::Release), 1);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_guards_release_is_waited_for_by_every_copy_of_the_elector() {
    let (memory, store, faults) = faulty();
    let name = unique_name("dropped-guard");
    let a = elector(store, true);
    let tenant_copy = a.reconfigured(a.options().clone());
    let guard = a
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    let lock = guard.lease().lock;
    faults.delay_request(Op::Release, LATE);
    drop(guard);
    assert!(!is_free(&memory, &lock).await, "released in the background");
    tenant_copy.settled().await; // clones share the cleanup
    assert!(is_free(&memory, &lock).await);
}

#[tokio::test(start_paused = true)]
async fn a_store_that_never_answers_bounds_the_wait_to_settle() {
    let (memory, store, faults) = faulty();
    let name = unique_name("dead-store");
    let a = elector(store, false);
    faults.delay_answer(Op::TryAcquire, Duration::from_secs(3600));
    assert!(timeout(LATE, a.try_acquire(&name)).await.is_err());
    // The grant exists in the store; if the answer never comes it ends at its expiry.
    assert!(!is_free(&memory, &name).await);
    let start = Instant::now();
    assert!(!a.settled_within(SETTLE_TIMEOUT).await, "nothing answered");
    assert_eq!(start.elapsed(), SETTLE_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn schedule_stopped_returns_only_after_a_late_grant_was_released() {
    let (memory, store, faults) = faulty();
    let name = unique_name("schedule-late-grant");
    faults.delay_answer(Op::TryAcquire, LATE);
    let stop = CancellationToken::new();
    let handle = Schedule::new(elector(store, true))
        .job(Job::every(
            name.as_str(),
            Duration::from_secs(60),
            |_| async { Ok::<_, String>(()) },
        ))
        .start(stop.clone())
        .unwrap();
    calls_reach(&faults, Op::TryAcquire, 1).await;
    stop.cancel(); // shutdown while the first tick's acquisition is in flight
    let start = Instant::now();
    handle.stopped().await;
    assert!(start.elapsed() < SETTLE_TIMEOUT);
    assert!(
        is_free(&memory, &name).await,
        "a lease granted after shutdown must be released before stopped() returns"
    );
    assert_eq!(faults.calls(Op::Release), 1);
}

/// A store that does not answer an acquisition: the elector gives up on the attempt after its
/// attempt timeout (a transient store error, not a hang), and the lease the store granted is
/// released once the answer finally comes.
#[tokio::test(start_paused = true)]
async fn an_attempt_without_an_answer_ends_at_the_attempt_timeout() {
    let (memory, store, faults) = faulty();
    let name = unique_name("attempt-timeout");
    let opts = ElectionOptions::builder()
        .node_id("a")
        .lease(Duration::from_secs(30))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let a = Elector::with_options(store, opts);
    faults.delay_answer(Op::TryAcquire, Duration::from_secs(60));
    let start = Instant::now();
    let err = a.try_acquire(&name).await.unwrap_err();
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "gave up at the attempt timeout"
    );
    let leasehold::Error::Store { source, .. } = &err else {
        panic!("a store error, got {err}");
    };
    assert!(source.is_transient(), "{err}");
    assert!(err.to_string().contains("attempt timeout of 2s"), "{err}");
    // The store applied the grant; when its answer arrives the lease is released.
    assert!(!is_free(&memory, &name).await);
    assert!(a.settled_within(Duration::from_secs(120)).await);
    assert!(is_free(&memory, &name).await, "the late grant was released");
}

/// A store that fails at a period's start does not cost the period: the attempt is tried again
/// within it (1 s, then 2 s later), and runs once the store answers.
#[tokio::test(start_paused = true)]
async fn an_aligned_job_retries_a_failing_store_within_the_period() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("schedule-store-error");
    faults.fail(Op::TryAcquire, Fault::transient().times(2));
    let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = runs.clone();
    let start = Instant::now();
    let handle = Schedule::new(elector(store, false))
        .job(Job::every(
            name.as_str(),
            Duration::from_secs(3600),
            move |ctx| {
                seen.lock()
                    .unwrap()
                    .push((start.elapsed(), ctx.lease().period));
                async { Ok::<_, String>(()) }
            },
        ))
        .start(CancellationToken::new())
        .unwrap();
    sleep(Duration::from_secs(10)).await;
    handle.shutdown().await;
    let runs = runs.lock().unwrap().clone();
    assert_eq!(faults.injected(Op::TryAcquire), 2);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        runs[0].0,
        Duration::from_secs(3),
        "after 1 s and 2 s of retry pauses"
    );
    assert!(runs[0].1.is_some());
}

#[test]
fn dropping_the_last_blocking_handle_waits_for_a_dropped_guards_release() {
    let (memory, store, faults) = faulty();
    let name = unique_name("blocking-drop");
    let a = blocking::Elector::from_async(elector(store, true)).unwrap();
    let guard = a.try_acquire(&name).unwrap().elected().expect("free lock");
    faults.delay_request(Op::Release, LATE);
    drop(guard); // its release runs on the facade's runtime
    drop(a); // the last handle: shuts the runtime down, after the release
    let check = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    assert!(check.block_on(is_free(&memory, &name)));
}

/// The kinds of the events received so far.
fn kinds(rx: &mut broadcast::Receiver<Event>) -> Vec<&'static str> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .map(|e| e.kind())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_failing_renewal_is_announced_once_before_the_lease_is_lost() {
    let (_memory, store, faults) = faulty();
    let a = elector(store, true);
    let mut events = a.subscribe();
    let guard = a
        .try_acquire(unique_name("renewal-failing"))
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    faults.fail(Op::Extend, Fault::transient());
    assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
    assert!(faults.injected(Op::Extend) >= 3, "renewal was retried");
    assert_eq!(kinds(&mut events), ["elected", "renewal_failing", "lost"]);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_without_answer_is_announced_before_the_lease_is_lost() {
    let (_memory, store, faults) = faulty();
    let a = elector(store, true);
    let mut events = a.subscribe();
    let guard = a
        .try_acquire(unique_name("renewal-hangs"))
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    faults.delay_request(Op::Extend, Duration::from_secs(3600));
    assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
    let got: Vec<Event> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert_eq!(
        got.iter().map(Event::kind).collect::<Vec<_>>(),
        ["elected", "renewal_failing", "lost"]
    );
    assert!(
        matches!(&got[1], Event::RenewalFailing { error, .. } if error.contains("not answered")),
        "{:?}",
        got[1]
    );
}

#[tokio::test(start_paused = true)]
async fn each_outage_is_announced_once_and_a_recovery_keeps_the_lease() {
    let (_memory, store, faults) = faulty();
    let a = elector(store, true);
    let mut events = a.subscribe();
    let guard = a
        .try_acquire(unique_name("renewal-recovers"))
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    for _ in 0..2 {
        faults.fail(Op::Extend, Fault::transient().times(2));
        sleep(Duration::from_secs(3)).await;
        assert!(!guard.is_lost(), "a short outage is ridden out");
    }
    let got = kinds(&mut events);
    assert_eq!(
        got.iter().filter(|k| **k == "renewal_failing").count(),
        2,
        "{got:?}"
    );
    assert!(!got.contains(&"lost"), "{got:?}");
    // Each warning is followed by a successful renewal.
    let first = got.iter().position(|k| *k == "renewal_failing").unwrap();
    assert_eq!(got[first + 1], "extended", "{got:?}");
    guard.release().await.unwrap();
}
