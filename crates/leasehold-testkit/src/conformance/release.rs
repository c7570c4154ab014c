//! Leases are released whatever way the action ends: error, panic or a dropped future.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leasehold::{Elector, Outcome, limits::LET_GO_PATIENCE, store::Release};
use tokio::time::{Instant, timeout};

use super::support::{SLACK, deliberate_panic, elected, ms, node, ok, options, valid};
use crate::factory::StoreFactory;
use crate::fault::{Fault, FaultyStore, Op};
use crate::names::unique_name;

/// An action that returns `Err` gives `Outcome::ActionFailed(err)` (not a skip, not an elector
/// error) and releases the lock: another node acquires at once with wait 0.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn action_error_releases(factory: &dyn StoreFactory) {
    let name = unique_name("action-error");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let outcome = ok(
        a.run(&name, |_| async { Err::<u32, _>("boom".to_owned()) })
            .await,
        "run with a failing action",
    );
    assert_eq!(
        outcome,
        Outcome::ActionFailed("boom".to_owned()),
        "a failing action must be reported as ActionFailed"
    );
    let b = node(factory, "conformance-b", Duration::ZERO, ms(30_000));
    elected(
        b.run_if_leader(&name, |_| async {}).await,
        "another node right after an action failed (the lock must have been released)",
    );
}

/// A panicking action releases the lock and the panic propagates to the caller (seen here as a
/// panicked task); another node then acquires at once with wait 0.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn action_panic_releases(factory: &dyn StoreFactory) {
    let name = unique_name("action-panic");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let lock = name.clone();
    let task = tokio::spawn(async move {
        a.run_if_leader(&lock, |_| async { deliberate_panic() })
            .await
    });
    match task.await {
        Err(e) if e.is_panic() => {}
        Err(e) => panic!("the task running a panicking action ended without a panic: {e}"),
        Ok(r) => panic!(
            "a panic in the action must propagate to the caller, but run_if_leader returned {r:?}"
        ),
    }
    let b = node(factory, "conformance-b", Duration::ZERO, ms(30_000));
    elected(
        b.run_if_leader(&name, |_| async {}).await,
        "another node right after an action panicked (the lock must have been released)",
    );
}

/// Dropping a `run_if_leader` future while its action is pending releases the lock: with a 30 s
/// lease, another node waiting up to 5 s acquires well before the lease could have expired.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn dropped_future_releases(factory: &dyn StoreFactory) {
    let name = unique_name("dropped-future");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let entered = AtomicBool::new(false);
    {
        let run = a.run_if_leader(&name, |_| async {
            entered.store(true, Ordering::SeqCst);
            std::future::pending::<()>().await;
        });
        tokio::pin!(run);
        // Polled until the action has started (a first acquisition on a new client may take a
        // while on a loaded machine), then dropped mid-action.
        let give_up = Instant::now() + SLACK * 4;
        while !entered.load(Ordering::SeqCst) && Instant::now() < give_up {
            if timeout(ms(20), &mut run).await.is_ok() {
                panic!("the pending action must still be running when its future is dropped");
            }
        }
    } // The action's future is dropped here, mid-action.
    assert!(
        entered.load(Ordering::SeqCst),
        "the first node must have been elected and entered its action"
    );

    let b = node(factory, "conformance-b", ms(5_000), ms(30_000));
    let start = Instant::now();
    elected(
        b.run_if_leader(&name, |_| async {}).await,
        "another node after the holder's future was dropped",
    );
    let took = start.elapsed();
    assert!(
        took < ms(3_000),
        "a dropped future must release its lease at once; the next node needed {took:?} (lease 30 s)"
    );
}

/// Dropping a `run_if_leader` future while it is still *waiting* for the lock leaves nothing
/// behind: after the holder releases, another node acquires promptly (no lease granted to the
/// abandoned waiter lingers until expiry).
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn abandoned_wait_leaves_no_lock(factory: &dyn StoreFactory) {
    let name = unique_name("abandoned-wait");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let held = elected(a.try_acquire(&name).await, "holder acquires");
    let waiter = node(factory, "conformance-waiter", ms(5_000), ms(30_000));
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let abandoned = timeout(
        ms(300),
        waiter.run_if_leader(&name, |_| async move {
            flag.store(true, Ordering::SeqCst);
        }),
    )
    .await;
    assert!(
        abandoned.is_err(),
        "the waiter must still be waiting when dropped, got {abandoned:?}"
    );
    assert_eq!(
        ok(held.release().await, "holder releases"),
        Release::Released
    );

    let b = node(factory, "conformance-b", ms(5_000), ms(30_000));
    let start = Instant::now();
    elected(
        b.run_if_leader(&name, |_| async {}).await,
        "another node after a waiter was abandoned",
    );
    let took = start.elapsed();
    assert!(
        took < ms(3_000),
        "an abandoned waiter must not keep the lock; the next node needed {took:?}"
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "the abandoned waiter's action must never run"
    );
}

/// An attempt the store applied but answered with an error (here: the answer dropped by the
/// fault wrapper), in an acquisition that then gives up (`wait` 0): the lease its token got is
/// freed in the background — the lock is not left taken for the whole lease — while a sibling
/// slot held under the same node id is kept. Relies on the store's `state` naming the owner
/// and its `release` freeing only the token's own lease.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn lost_grant_answer_leaves_no_lock(factory: &dyn StoreFactory) {
    let name = unique_name("lost-grant-answer");
    let (store, faults) = FaultyStore::new(factory.make());
    let builder = options("conformance-a", Duration::ZERO, ms(30_000)).max_leaders(2);
    let a = Elector::with_options(store, valid(builder.build(), "options"));
    let first = elected(a.try_acquire(&name).await, "slot 0 is free");
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let second = a.try_acquire(&name).await;
    assert!(
        second.is_err(),
        "the second attempt's answer was dropped: {:?}",
        second.map(|g| g.map(|g| g.slot()))
    );
    assert!(
        timeout(LET_GO_PATIENCE + SLACK, a.settled()).await.is_ok(),
        "the lease in doubt is freed within LET_GO_PATIENCE"
    );
    let state = ok(a.state(&name).await, "state");
    let held: Vec<_> = state.holders.iter().map(|h| (h.slot, h.fence)).collect();
    assert_eq!(
        held,
        vec![(first.slot(), first.fence())],
        "only the first task's lease is left"
    );
    assert!(!first.is_lost());
    assert_eq!(
        ok(first.release().await, "the first task releases"),
        Release::Released
    );
}
