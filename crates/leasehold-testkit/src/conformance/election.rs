//! Basic election: running once, repeating, contention and independent names.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use leasehold::{Outcome, store::Release};
use tokio::time::Instant;

use super::support::{SLACK, elected, ms, node, ok, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// An elected `run_if_leader` runs the action exactly once and returns its value; `run` returns
/// `Elected(value)`; the lock is free afterwards.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn elected_run_executes_once(factory: &dyn StoreFactory) {
    let name = unique_name("elected-once");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(10_000));
    let calls = AtomicU32::new(0);
    let value = elected(
        a.run_if_leader(&name, |ctx| {
            let calls = &calls;
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                (42, ctx.fence())
            }
        })
        .await,
        "run_if_leader on a free lock",
    );
    assert_eq!(value.0, 42, "run_if_leader must return the action's value");
    assert!(value.1 > 0, "fences start above zero, got {}", value.1);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the action must run exactly once"
    );

    let outcome = ok(
        a.run(&name, |_| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("done")
        })
        .await,
        "run on a free lock",
    );
    assert_eq!(
        outcome,
        Outcome::Elected("done"),
        "run must report Elected with the action's value"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "each elected run executes the action once"
    );
    assert!(
        ok(a.state(&name).await, "state").is_free(),
        "the lock must be free after the run"
    );
}

/// Repeated sequential acquisitions by one node all succeed at once (release frees the lock
/// immediately) with strictly increasing fences.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn sequential_acquisitions_work(factory: &dyn StoreFactory) {
    let name = unique_name("sequential");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(10_000));
    let mut last = 0;
    for round in 0..10 {
        let fence = elected(
            a.run_if_leader(&name, |ctx| async move { ctx.fence() })
                .await,
            &format!("sequential run {round} with wait 0"),
        );
        assert!(
            fence > last,
            "round {round}: fence {fence} must exceed the previous fence {last}"
        );
        last = fence;
        let guard = elected(
            a.try_acquire(&name).await,
            &format!("try_acquire {round} with wait 0"),
        );
        assert!(
            guard.fence() > last,
            "round {round}: guard fence must exceed {last}"
        );
        last = guard.fence();
        assert_eq!(
            ok(guard.release().await, "release"),
            Release::Released,
            "release of a live guard"
        );
    }
}

/// While another node holds the lock, a node with wait `W` skips (`Ok(None)` and
/// `Outcome::Taken`) after roughly `W`, without running its action; with wait 0 it skips at
/// once.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn contention_skips_after_wait(factory: &dyn StoreFactory) {
    let name = unique_name("contention");
    let wait = ms(600);
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let held = elected(a.try_acquire(&name).await, "holder acquires a free lock");

    let b = node(factory, "conformance-b", wait, ms(30_000));
    let ran = AtomicBool::new(false);
    let start = Instant::now();
    let outcome = b
        .run_if_leader(&name, |_| async {
            ran.store(true, Ordering::SeqCst);
        })
        .await;
    let took = start.elapsed();
    skipped(outcome, "contender while the lock is held");
    assert!(
        !ran.load(Ordering::SeqCst),
        "a skipped contender must not run its action"
    );
    assert!(
        took >= wait,
        "a contender must keep trying for its whole wait ({wait:?}); it gave up after {took:?}"
    );
    assert!(
        took < wait + SLACK,
        "a contender must give up soon after its wait ({wait:?}); it took {took:?}"
    );

    let start = Instant::now();
    let outcome = ok(
        b.run(&name, |_| async {
            ran.store(true, Ordering::SeqCst);
            Ok::<_, String>(())
        })
        .await,
        "run while the lock is held",
    );
    assert!(
        outcome.is_taken(),
        "run must report Taken on contention, got {outcome:?}"
    );
    assert!(
        start.elapsed() >= wait,
        "run must wait as long as run_if_leader"
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "a skipped run must not run its action"
    );

    let quick = node(factory, "conformance-c", Duration::ZERO, ms(30_000));
    let start = Instant::now();
    skipped(
        quick.run_if_leader(&name, |_| async {}).await,
        "contender with wait 0",
    );
    assert!(
        start.elapsed() < SLACK,
        "wait 0 must give up after one attempt, took {:?}",
        start.elapsed()
    );

    assert_eq!(
        ok(held.release().await, "holder releases"),
        Release::Released
    );
}

/// Locks with different names do not block each other.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn independent_names_do_not_block(factory: &dyn StoreFactory) {
    let (first, second) = (unique_name("independent-1"), unique_name("independent-2"));
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let b = node(factory, "conformance-b", Duration::ZERO, ms(30_000));
    let held_first = elected(a.try_acquire(&first).await, "a acquires the first lock");
    let value = elected(
        b.run_if_leader(&second, |_| async { 7 }).await,
        "b runs under the second lock while a holds the first",
    );
    assert_eq!(value, 7);
    let held_second = elected(b.try_acquire(&second).await, "b acquires the second lock");
    skipped(
        a.try_acquire(&second).await,
        "a on the second lock held by b",
    );
    skipped(b.try_acquire(&first).await, "b on the first lock held by a");
    assert_eq!(
        ok(held_first.release().await, "release first"),
        Release::Released
    );
    assert_eq!(
        ok(held_second.release().await, "release second"),
        Release::Released
    );
}
