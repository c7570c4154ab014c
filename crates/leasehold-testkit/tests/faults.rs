//! Core behaviour under injected store faults, on paused tokio time (deterministic: the memory
//! store uses the tokio clock).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{elector, faulty, ms};
use leasehold::{
    ElectionOptionsBuilder, Error, ErrorKind, Event, LeaseStore, LostReason,
    store::{Extension, Release},
};
use leasehold_testkit::fault::{Fault, Op};
use leasehold_testkit::unique_name;
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep};

const LEASE: Duration = Duration::from_secs(3);

fn options(node: &str, wait: Duration) -> ElectionOptionsBuilder {
    common::options(node, wait, LEASE)
}

/// The reasons of the `Lost` events received so far.
fn lost_events(rx: &mut broadcast::Receiver<Event>) -> Vec<LostReason> {
    let mut reasons = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let Event::Lost { reason, .. } = event {
            reasons.push(reason);
        }
    }
    reasons
}

// (a) transient renewal failures for a short while are retried; the lease is kept.
#[tokio::test(start_paused = true)]
async fn auto_extend_rides_out_transient_extend_failures() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-transient-extend");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(true));
    let b = elector(memory, options("b", Duration::ZERO));
    let mut events = a.subscribe();
    let (lost, contender_won) = a
        .run_if_leader(&name, |ctx| {
            let (faults, b, name) = (faults.clone(), &b, &name);
            async move {
                sleep(ms(900)).await;
                // Renewals due at 1 s, 1.25 s, ... fail until 2.1 s: longer than a renewal period,
                // shorter than the local deadline (2.7 s).
                faults.fail(Op::Extend, Fault::transient());
                sleep(ms(1_200)).await;
                faults.heal(Op::Extend);
                sleep(ms(6_000)).await;
                (
                    ctx.is_lost(),
                    b.try_acquire(name).await.unwrap().elected().is_some(),
                )
            }
        })
        .await
        .unwrap()
        .expect("elected");
    assert!(
        !lost,
        "transient renewal failures shorter than the deadline must not lose the lease"
    );
    assert!(
        !contender_won,
        "the store must still hold the lease after 8 s of a 3 s lease"
    );
    assert!(
        faults.injected(Op::Extend) >= 3,
        "renewals must have been retried: {}",
        faults.injected(Op::Extend)
    );
    assert!(
        lost_events(&mut events).is_empty(),
        "no Lost event may be sent"
    );
}

// (b) permanent renewal failure: lost at once (StoreFailed), before the store's expiry.
#[tokio::test(start_paused = true)]
async fn permanent_extend_failure_reports_lost_before_store_expiry() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-permanent-extend");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(true));
    let mut events = a.subscribe();
    let start = Instant::now();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    faults.fail(Op::Extend, Fault::permanent());
    let reason = guard.lost().await;
    let lost_at = Instant::now();
    assert_eq!(reason, LostReason::StoreFailed);
    assert!(
        lost_at < start + LEASE,
        "lost must be reported before the store's expiry"
    );
    assert!(
        lost_at <= start + ms(1_100),
        "the first failed renewal (at lease/3) must report it, got {:?}",
        lost_at - start
    );
    assert_eq!(
        lost_events(&mut events),
        vec![LostReason::StoreFailed],
        "one Lost event"
    );
    // The store has not handed the lock on yet: it still shows the holder.
    let state = memory.state(&name, 1).await.unwrap();
    assert_eq!(
        state.holder().map(|h| h.fence),
        Some(guard.fence()),
        "the store still holds it when lost fires"
    );
}

// (b) transient renewal failure for longer than the lease: DeadlinePassed at the local deadline,
// while the store still holds the lease; the lock passes on only after the store's expiry.
#[tokio::test(start_paused = true)]
async fn persistent_transient_extend_failure_reports_deadline_before_store_expiry() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-long-extend-outage");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(true));
    let b = elector(memory.clone(), options("b", Duration::ZERO));
    let mut events = a.subscribe();
    let start = Instant::now();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    faults.fail(Op::Extend, Fault::transient());
    let reason = guard.lost().await;
    let lost_at = Instant::now();
    assert_eq!(reason, LostReason::DeadlinePassed);
    assert!(
        lost_at < start + LEASE,
        "lost at {:?}, store expiry at {LEASE:?}",
        lost_at - start
    );
    assert!(
        lost_at >= start + LEASE / 2,
        "lost too early: {:?}",
        lost_at - start
    );
    assert!(
        faults.injected(Op::Extend) >= 3,
        "renewals must have been retried until the deadline"
    );
    assert_eq!(lost_events(&mut events), vec![LostReason::DeadlinePassed]);
    assert!(
        b.try_acquire(&name).await.unwrap().elected().is_none(),
        "the store must still hold it when lost fires"
    );
    sleep_until_after(start + LEASE).await;
    let successor = b
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free after the store's expiry");
    assert!(successor.fence() > guard.fence());
}

async fn sleep_until_after(at: Instant) {
    tokio::time::sleep_until(at + ms(1)).await;
}

// (b) a renewal that hangs past the local deadline reports DeadlinePassed at the deadline.
#[tokio::test(start_paused = true)]
async fn hanging_extend_reports_deadline_before_store_expiry() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-hanging-extend");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(true));
    let start = Instant::now();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    faults.delay_request(Op::Extend, Duration::from_secs(3600));
    assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
    let lost_at = Instant::now() - start;
    assert!(
        lost_at < LEASE && lost_at >= LEASE / 2,
        "lost at {lost_at:?}"
    );
}

// (b) the store no longer holds the lease (removed behind the guard's back): NotHeld.
#[tokio::test(start_paused = true)]
async fn extend_not_held_reports_lost() {
    let (memory, store, _faults) = faulty();
    let name = unique_name("fault-not-held");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(true));
    let mut events = a.subscribe();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    assert_eq!(
        memory
            .release(&guard.lease(), Duration::ZERO)
            .await
            .unwrap(),
        Release::Released
    );
    assert_eq!(guard.lost().await, LostReason::NotHeld);
    assert_eq!(lost_events(&mut events), vec![LostReason::NotHeld]);
}

// (c) without auto_extend, lost fires with DeadlinePassed at the local deadline, before the
// store's expiry, and the store still holds the lease then.
#[tokio::test(start_paused = true)]
async fn without_auto_extend_lost_fires_at_local_deadline() {
    let (memory, store, _faults) = faulty();
    let name = unique_name("fault-deadline");
    let a = elector(store, options("a", Duration::ZERO).auto_extend(false));
    let start = Instant::now();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    assert!(!guard.is_lost());
    assert!(
        guard.local_deadline() < start + LEASE,
        "the local deadline must precede the store's expiry"
    );
    assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
    let lost_at = Instant::now();
    assert_eq!(
        lost_at,
        guard.local_deadline(),
        "lost must fire exactly at the local deadline"
    );
    assert!(
        lost_at >= start + LEASE / 2,
        "lost too early: {:?}",
        lost_at - start
    );
    assert!(guard.is_lost());
    let state = memory.state(&name, 1).await.unwrap();
    assert!(
        !state.is_free(),
        "the store must still hold the lease when the guard reports it lost"
    );
}

// (c, f) the local deadline counts from before the request: a slow answer does not push it past
// the store's expiry.
#[tokio::test(start_paused = true)]
async fn local_deadline_counts_from_before_a_slow_acquire() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-slow-answer");
    let a = elector(store, options("a", Duration::ZERO));
    faults.delay_answer(Op::TryAcquire, ms(800));
    let start = Instant::now();
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    assert!(start.elapsed() >= ms(800), "the answer delay must apply");
    let expiry = memory.state(&name, 1).await.unwrap();
    assert!(!expiry.is_free());
    // The store granted at `start` (its clock is the tokio clock) and expires at start + LEASE.
    assert!(
        guard.local_deadline() < start + LEASE,
        "local deadline {:?} after start must precede the store's expiry {LEASE:?}",
        guard.local_deadline() - start
    );
}

// (d) cancel_on_lost: the action is dropped on loss and run_if_leader returns Error::Lost; the lock
// is released at once.
#[tokio::test(start_paused = true)]
async fn cancel_on_lost_cancels_the_action() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-cancel-on-lost");
    let a = elector(
        store,
        options("a", Duration::ZERO)
            .auto_extend(true)
            .cancel_on_lost(true),
    );
    faults.fail(Op::Extend, Fault::permanent());
    let finished = AtomicBool::new(false);
    let start = Instant::now();
    let outcome = a
        .run_if_leader(&name, |_| async {
            sleep(Duration::from_secs(10)).await;
            finished.store(true, Ordering::SeqCst);
        })
        .await;
    let took = start.elapsed();
    match outcome {
        Err(Error::Lost { reason, .. }) => assert_eq!(reason, LostReason::StoreFailed),
        other => panic!("expected Error::Lost, got {other:?}"),
    }
    assert!(
        !finished.load(Ordering::SeqCst),
        "the action must have been cancelled"
    );
    assert!(
        took < LEASE,
        "cancelled at the loss, not at the action's end: {took:?}"
    );
    let b = elector(memory, options("b", Duration::ZERO));
    assert!(
        b.try_acquire(&name).await.unwrap().elected().is_some(),
        "the lease must be released after cancelling"
    );
}

// (d) without cancel_on_lost the action runs to completion and can see that it lost the lease.
#[tokio::test(start_paused = true)]
async fn without_cancel_on_lost_the_action_completes() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-no-cancel");
    let a = elector(
        store,
        options("a", Duration::ZERO)
            .auto_extend(true)
            .cancel_on_lost(false),
    );
    faults.fail(Op::Extend, Fault::permanent());
    let start = Instant::now();
    let lost = a
        .run_if_leader(&name, |ctx| async move {
            sleep(Duration::from_secs(10)).await;
            ctx.is_lost()
        })
        .await
        .unwrap()
        .expect("elected");
    assert!(
        lost,
        "the action must be able to see that its lease was lost"
    );
    assert!(
        start.elapsed() >= Duration::from_secs(10),
        "the action must run to completion"
    );
}

// (e) a transient acquire error with wait 0 is an error, never a skip (also when contended).
#[tokio::test(start_paused = true)]
async fn transient_acquire_error_with_wait_zero_is_an_error() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-acquire-wait0");
    let a = elector(store, options("a", Duration::ZERO));
    faults.fail(Op::TryAcquire, Fault::transient().times(1));
    let err = a
        .try_acquire(&name)
        .await
        .expect_err("a store error is not contention");
    assert_eq!(err.as_store().map(|e| e.kind()), Some(ErrorKind::Transient));

    let holder = elector(memory, options("h", Duration::ZERO))
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free");
    faults.fail(Op::TryAcquire, Fault::transient().times(1));
    let err = a
        .run_if_leader(&name, |_| async {})
        .await
        .expect_err("an error even while the lock is held");
    assert!(err.as_store().is_some_and(|e| e.is_transient()), "{err}");
    holder.release().await.unwrap();
}

// (e) transient errors that clear before the deadline are retried and end in election.
#[tokio::test(start_paused = true)]
async fn transient_acquire_errors_are_retried_within_the_wait() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-acquire-retry");
    let a = elector(store, options("a", Duration::from_secs(2)));
    faults.fail(Op::TryAcquire, Fault::transient().times(3));
    let ran = a
        .run_if_leader(&name, |ctx| async move { ctx.fence() })
        .await
        .unwrap();
    assert_eq!(
        ran,
        Some(1),
        "elected after the errors cleared, with the first fence"
    );
    assert_eq!(
        (
            faults.injected(Op::TryAcquire),
            faults.calls(Op::TryAcquire)
        ),
        (3, 4)
    );
}

// (e) an acquire the store applied but whose answer was lost is recognised on retry (same token):
// elected with that one grant, not skipped against itself.
#[tokio::test(start_paused = true)]
async fn lost_acquire_answer_is_recognised_on_retry() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-acquire-lost-answer");
    let a = elector(store, options("a", Duration::from_secs(2)));
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let guard = a
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("the retry must find its own lease");
    assert_eq!(
        guard.fence(),
        1,
        "the retry must return the first grant, not a new one"
    );
    let state = memory.state(&name, 1).await.unwrap();
    assert_eq!(state.active(), 1);
    assert_eq!(faults.calls(Op::TryAcquire), 2);
    guard.release().await.unwrap();
}

// (e) transient errors that persist surface as Err at the deadline (after retrying).
#[tokio::test(start_paused = true)]
async fn persistent_transient_acquire_errors_surface_at_the_deadline() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-acquire-persistent");
    let wait = Duration::from_secs(1);
    let a = elector(store, options("a", wait));
    faults.fail(Op::TryAcquire, Fault::transient());
    let start = Instant::now();
    let err = a
        .run_if_leader(&name, |_| async {})
        .await
        .expect_err("persistent errors are errors");
    let took = start.elapsed();
    assert!(err.as_store().is_some_and(|e| e.is_transient()), "{err}");
    assert!(
        took >= wait && took <= wait + ms(10),
        "surfaced after {took:?}, wait {wait:?}"
    );
    assert!(
        faults.calls(Op::TryAcquire) >= 5,
        "must retry during the wait"
    );
}

// (e) a permanent error surfaces at once, without retrying.
#[tokio::test(start_paused = true)]
async fn permanent_acquire_error_surfaces_at_once() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-acquire-permanent");
    let a = elector(store, options("a", Duration::from_secs(5)));
    faults.fail(Op::TryAcquire, Fault::permanent());
    let start = Instant::now();
    let err = a
        .try_acquire(&name)
        .await
        .expect_err("permanent errors are errors");
    assert_eq!(err.as_store().map(|e| e.kind()), Some(ErrorKind::Permanent));
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no waiting on a permanent error"
    );
    assert_eq!(
        faults.calls(Op::TryAcquire),
        1,
        "no retry on a permanent error"
    );
}

// (f) slow store calls still respect the wait budget: at most one slow attempt past the wait.
#[tokio::test(start_paused = true)]
async fn slow_acquire_respects_the_wait_budget() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-slow-acquire");
    let holder = elector(memory, options("h", Duration::ZERO))
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let wait = Duration::from_secs(1);
    let delay = ms(300);
    let a = elector(store, options("a", wait));
    faults.delay_request(Op::TryAcquire, delay);
    let start = Instant::now();
    assert!(
        a.try_acquire(&name).await.unwrap().elected().is_none(),
        "contention is a skip"
    );
    let took = start.elapsed();
    assert!(
        took >= wait && took <= wait + delay,
        "skipped after {took:?}, wait {wait:?}, delay {delay:?}"
    );
    assert!(
        faults.calls(Op::TryAcquire) >= 2,
        "slow attempts are still repeated within the wait"
    );

    holder.release().await.unwrap();
    let start = Instant::now();
    let guard = a
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free now");
    assert_eq!(
        start.elapsed(),
        delay,
        "an uncontended slow acquire takes one delay"
    );
    guard.release().await.unwrap();
}

// (g) store errors in state surface as Err of the right kind.
#[tokio::test(start_paused = true)]
async fn state_errors_surface() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-state");
    let a = elector(store, options("a", Duration::ZERO));
    faults.fail(Op::State, Fault::transient().times(1));
    let err = a.state(&name).await.expect_err("transient state error");
    assert!(err.as_store().is_some_and(|e| e.is_transient()), "{err}");
    assert!(
        err.to_string().contains(name.as_str()),
        "the error must name the lock: {err}"
    );
    assert!(
        a.state(&name).await.unwrap().is_free(),
        "the fault was used up"
    );
    faults.fail(Op::State, Fault::permanent());
    let err = a.state(&name).await.expect_err("permanent state error");
    assert_eq!(err.as_store().map(|e| e.kind()), Some(ErrorKind::Permanent));
}

// A failed release does not fail the run; the lease then ends at its expiry.
#[tokio::test(start_paused = true)]
async fn failed_release_leaves_the_lease_to_expire() {
    let (memory, store, faults) = faulty();
    let name = unique_name("fault-release");
    let a = elector(store, options("a", Duration::ZERO));
    let b = elector(memory, options("b", Duration::ZERO));
    faults.fail(Op::Release, Fault::permanent());
    let start = Instant::now();
    assert_eq!(
        a.run_if_leader(&name, |_| async { 5 }).await.unwrap(),
        Some(5),
        "the run itself succeeded"
    );
    assert!(
        b.try_acquire(&name).await.unwrap().elected().is_none(),
        "the unreleased lease is still held"
    );
    let guard = a.try_acquire(&name).await;
    assert!(
        matches!(guard, Ok(leasehold::Outcome::Taken(_))),
        "still held for the holder's elector too"
    );
    sleep_until_after(start + LEASE).await;
    let guard = b
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free after expiry");
    assert_eq!(faults.injected(Op::Release), 1);
    drop(guard);
}

// A manual release error is returned to the caller.
#[tokio::test(start_paused = true)]
async fn manual_release_error_is_returned() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-manual-release");
    let a = elector(store, options("a", Duration::ZERO));
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    faults.fail(Op::Release, Fault::transient().times(1));
    let err = guard.release().await.expect_err("release error");
    assert!(err.as_store().is_some_and(|e| e.is_transient()), "{err}");
}

// Manual extend errors are returned, and a successful one moves the local deadline.
#[tokio::test(start_paused = true)]
async fn manual_extend_errors_are_returned() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-manual-extend");
    let a = elector(store, options("a", Duration::ZERO));
    let guard = a.try_acquire(&name).await.unwrap().elected().expect("free");
    faults.fail(Op::Extend, Fault::transient().times(1));
    assert!(guard.extend(LEASE * 2).await.is_err());
    assert!(
        !guard.is_lost(),
        "a transient manual extend error does not lose the lease"
    );
    let before = guard.local_deadline();
    assert!(matches!(
        guard.extend(LEASE * 2).await.unwrap(),
        Extension::Extended { .. }
    ));
    assert!(
        guard.local_deadline() > before,
        "a successful extend moves the local deadline"
    );
}

// The fault wrapper itself: counts, limited faults, after-apply faults and delays.
#[tokio::test(start_paused = true)]
async fn fault_wrapper_delegates_and_counts() {
    let (memory, store, faults) = faulty();
    let lock = unique_name("fault-wrapper");
    assert!(!store.acquire_is_cancel_safe());
    assert!(
        store.release_signal(&lock).is_some(),
        "the wrapped store's release signal is forwarded"
    );
    faults.fail(Op::State, Fault::permanent().times(2));
    assert!(store.state(&lock, 1).await.is_err());
    assert!(store.state(&lock, 1).await.is_err());
    assert!(store.state(&lock, 1).await.is_ok());
    assert_eq!(
        (faults.calls(Op::State), faults.injected(Op::State)),
        (3, 2)
    );
    assert_eq!(faults.fault(Op::State), None, "a used-up fault is removed");

    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let req = leasehold::store::AcquireRequest::new(
        lock.clone(),
        1,
        "w",
        leasehold::store::Token::random(),
        LEASE,
    );
    assert!(store.try_acquire(&req).await.is_err());
    assert_eq!(
        memory.state(&lock, 1).await.unwrap().active(),
        1,
        "after_apply: the store applied the call"
    );

    let freed = store.force_release(&lock, 1).await.unwrap();
    assert_eq!(
        freed.len(),
        1,
        "force_release is forwarded to the wrapped store"
    );
    assert!(memory.state(&lock, 1).await.unwrap().is_free());
    faults.fail(Op::ForceRelease, Fault::permanent().times(1));
    assert!(store.force_release(&lock, 1).await.is_err());

    faults.delay_request(Op::State, ms(250));
    let start = Instant::now();
    store.state(&lock, 1).await.unwrap();
    assert_eq!(start.elapsed(), ms(250));
    faults.heal_all();
    let start = Instant::now();
    store.state(&lock, 1).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// A grant whose answer arrives after the lease's local deadline starts nothing: the action is
/// not polled at all (not even up to its first await), and the call reports the loss.
#[tokio::test(start_paused = true)]
async fn a_grant_answered_past_the_local_deadline_runs_nothing() {
    let (_memory, store, faults) = faulty();
    let name = unique_name("fault-late-grant");
    let a = elector(store, options("a", Duration::ZERO));
    faults.delay_answer(Op::TryAcquire, LEASE);
    let polled = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&polled);
    let got = a
        .run_if_leader(&name, |_ctx| async move {
            // Synchronous work before the first await: it must not happen either.
            seen.store(true, Ordering::SeqCst);
            sleep(Duration::from_millis(1)).await;
        })
        .await;
    assert!(matches!(got, Err(Error::Lost { .. })), "{got:?}");
    assert!(
        !polled.load(Ordering::SeqCst),
        "the action was polled past its deadline"
    );
}

/// With `passing_batches`, a batched renewal goes through the wrapper as one batch (a store that
/// renews in batches stays one that does), and a fault on it fails every entry, as a request that failed as a
/// whole does; the wrapped store's answer is kept entry by entry otherwise.
#[tokio::test(start_paused = true)]
async fn batched_renewals_pass_through_as_one_call() {
    let memory = Arc::new(leasehold::MemoryStore::new());
    assert!(memory.renews_in_batches());
    let (alone, _) = leasehold_testkit::fault::FaultyStore::new(memory.clone());
    assert!(
        !alone.renews_in_batches(),
        "by default each lease renews on its own"
    );
    let (store, faults) = leasehold_testkit::fault::FaultyStore::passing_batches(memory.clone());
    assert!(store.renews_in_batches(), "the wrapped store's answer");
    let mut leases = Vec::new();
    for n in 0..3 {
        let lock = leasehold::LockName::new(unique_name(&format!("fault-batch-{n}"))).unwrap();
        let req = leasehold::store::AcquireRequest::new(
            lock,
            1,
            "w",
            leasehold::store::Token::random(),
            LEASE,
        );
        let lease = store.try_acquire(&req).await.unwrap().elected().unwrap();
        leases.push((lease, LEASE));
    }
    let released = leases[2].0.clone();
    assert_eq!(
        memory.release(&released, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let answers = store.extend_many(&leases).await;
    assert!(
        matches!(
            answers[..],
            [
                Ok(Extension::Extended { .. }),
                Ok(Extension::Extended { .. }),
                Ok(Extension::NotHeld)
            ]
        ),
        "{answers:?}"
    );
    assert_eq!(faults.calls(Op::Extend), 1, "one call for the batch");
    faults.fail(Op::Extend, Fault::transient().times(1));
    let answers = store.extend_many(&leases).await;
    assert_eq!(answers.len(), 3);
    assert!(
        answers
            .iter()
            .all(|a| a.as_ref().is_err_and(|e| e.is_transient())),
        "{answers:?}"
    );
    assert_eq!(faults.calls(Op::Extend), 2);
}
