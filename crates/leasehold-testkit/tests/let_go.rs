//! A lease the elector no longer wants but may still hold after a transient store error is
//! freed in the background: an acquisition that ended after an attempt the store applied but
//! answered with an error, and a release that failed. On paused tokio time, over the memory
//! store behind the fault wrapper.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{elector, faulty, ms};
use leasehold::{ElectionOptionsBuilder, LeaseStore, limits::LET_GO_PATIENCE};
use leasehold_testkit::fault::{Fault, Op};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, timeout};

const LEASE: Duration = Duration::from_secs(30);

fn options(node: &str, wait: Duration) -> ElectionOptionsBuilder {
    common::options(node, wait, LEASE)
}

/// With no wait, an attempt the store granted but whose answer was lost used to leave the lock
/// taken for the whole lease: every replica skipped, and the job ran nowhere.
#[tokio::test(start_paused = true)]
async fn a_grant_answered_with_an_error_is_freed_when_the_acquisition_gives_up() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-lost-grant");
    let a = elector(store, options("a", Duration::ZERO));
    let b = elector(memory.clone(), options("b", Duration::ZERO));
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let ran = AtomicBool::new(false);
    let err = a
        .run_if_leader(&name, |_| async { ran.store(true, Ordering::SeqCst) })
        .await
        .expect_err("the attempt's answer was an error");
    assert!(err.as_store().is_some_and(|e| e.is_transient()), "{err}");
    assert!(!ran.load(Ordering::SeqCst), "nothing ran without a lease");
    let start = Instant::now();
    a.settled().await;
    assert!(
        start.elapsed() < ms(10),
        "freed at once: {:?}",
        start.elapsed()
    );
    assert!(memory.state(&name, 1).await.unwrap().is_free());
    let guard = b.try_acquire(&name).await.unwrap().elected();
    assert!(guard.is_some(), "another replica gets the lock at once");
}

/// The same with a wait whose every attempt is granted and answered with an error: the
/// acquisition fails at its deadline and frees the lease its token holds.
#[tokio::test(start_paused = true)]
async fn a_wait_that_ends_in_errors_frees_what_its_token_was_granted() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-persistent");
    let a = elector(store, options("a", Duration::from_secs(1)));
    faults.fail(Op::TryAcquire, Fault::transient().after_apply());
    assert!(a.try_acquire(&name).await.is_err());
    assert!(faults.calls(Op::TryAcquire) > 1, "retried within the wait");
    assert_eq!(
        memory.state(&name, 1).await.unwrap().active(),
        1,
        "the store holds the token's lease"
    );
    a.settled().await;
    assert!(memory.state(&name, 1).await.unwrap().is_free());
}

/// An acquisition dropped while in doubt (its caller timed out) frees the lease too.
#[tokio::test(start_paused = true)]
async fn an_acquisition_dropped_in_doubt_frees_the_lease() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-dropped");
    let a = elector(store, options("a", Duration::from_secs(5)));
    faults.fail(Op::TryAcquire, Fault::transient().after_apply());
    assert!(
        timeout(ms(150), a.try_acquire(&name)).await.is_err(),
        "still retrying when dropped"
    );
    assert_eq!(memory.state(&name, 1).await.unwrap().active(), 1);
    a.settled().await;
    assert!(memory.state(&name, 1).await.unwrap().is_free());
}

/// Only the token in doubt is let go: a sibling task of the same elector (same node id) keeps
/// its slot of a group lock.
#[tokio::test(start_paused = true)]
async fn a_sibling_lease_under_the_same_node_id_is_kept() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-sibling");
    let a = elector(store, options("a", Duration::ZERO).max_leaders(2));
    let first = a
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("slot 0 is free");
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    assert!(a.try_acquire(&name).await.is_err());
    a.settled().await;
    let state = memory.state(&name, 2).await.unwrap();
    assert_eq!(state.active(), 1, "{state:?}");
    assert_eq!(
        (state.holders[0].slot, state.holders[0].fence),
        (first.slot(), first.fence()),
        "the first task's lease"
    );
    assert!(!first.is_lost());
    assert_eq!(
        first.release().await.unwrap(),
        leasehold::store::Release::Released
    );
}

/// An attempt refused outright leaves nothing to let go of, and nothing is asked of the store
/// for it: the doubt ends with a definite answer.
#[tokio::test(start_paused = true)]
async fn a_definite_answer_after_an_error_ends_the_doubt() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-definite");
    let holder = elector(memory.clone(), options("h", Duration::ZERO));
    let held = holder
        .try_acquire(&name)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let a = elector(store, options("a", ms(250)));
    faults.fail(Op::TryAcquire, Fault::transient().times(1));
    assert!(
        a.try_acquire(&name).await.unwrap().elected().is_none(),
        "held"
    );
    a.settled().await;
    assert_eq!(faults.calls(Op::State), 0, "no doubt was left to settle");
    assert!(!held.is_lost());
}

/// A release that failed with a transient error is retried in the background; the run itself
/// succeeded, and the lock is free long before the lease would have ended.
#[tokio::test(start_paused = true)]
async fn a_transient_release_failure_is_retried() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-release");
    let a = elector(store, options("a", Duration::ZERO));
    faults.fail(Op::Release, Fault::transient().times(2));
    assert_eq!(
        a.run_if_leader(&name, |_| async { 7 }).await.unwrap(),
        Some(7)
    );
    let start = Instant::now();
    a.settled().await;
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(faults.calls(Op::Release), 3, "two failures, then released");
    assert!(memory.state(&name, 1).await.unwrap().is_free());
}

/// A release retried later keeps no more of the minimum lease than the first one would have:
/// the lock is free when the minimum lease, counted from the grant, is over.
#[tokio::test(start_paused = true)]
async fn a_retried_release_keeps_only_what_is_left_of_the_minimum_lease() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-min-lease");
    let a = elector(
        store,
        options("a", Duration::ZERO).min_lease(Duration::from_secs(2)),
    );
    let start = Instant::now();
    // The release and the first retry (at once) fail; the next retry comes 50 ms later.
    faults.fail(Op::Release, Fault::transient().times(2));
    a.run_if_leader(&name, |_| async {}).await.unwrap();
    a.settled().await;
    assert_eq!(start.elapsed(), ms(50), "the retry came after a pause");
    assert_eq!(faults.calls(Op::Release), 3);
    assert_eq!(
        memory.state(&name, 1).await.unwrap().active(),
        1,
        "kept for the minimum lease"
    );
    tokio::time::sleep_until(start + Duration::from_secs(2) + ms(1)).await;
    assert!(
        memory.state(&name, 1).await.unwrap().is_free(),
        "the retry did not lengthen the minimum lease"
    );
}

/// A store that keeps failing is given up on within [`LET_GO_PATIENCE`]: the stop paths are
/// not held up longer, and the lease ends at its expiry as before.
#[tokio::test(start_paused = true)]
async fn an_unreachable_store_is_given_up_on_within_the_patience() {
    let (memory, store, faults) = faulty();
    let name = unique_name("let-go-unreachable");
    let a = elector(store, options("a", Duration::ZERO));
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    faults.fail(Op::State, Fault::transient());
    assert!(a.try_acquire(&name).await.is_err());
    let start = Instant::now();
    a.settled().await;
    let took = start.elapsed();
    assert!(took <= LET_GO_PATIENCE, "{took:?}");
    assert!(faults.calls(Op::State) > 1, "retried");
    assert_eq!(memory.state(&name, 1).await.unwrap().active(), 1);
    faults.heal_all();
}
