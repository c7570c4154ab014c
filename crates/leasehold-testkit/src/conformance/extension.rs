//! Keeping a lease: auto-extension and manual extension.

use std::time::{Duration, SystemTime};

use leasehold::store::{Extension, Release};
use tokio::time::{Instant, sleep};

use super::support::{elected, ms, node, node_with, ok, options, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// With `auto_extend`, a lease survives an action three times its length: a contender with wait
/// 0 keeps skipping during it, the store's expiry moves forward, the guard is never lost, and the
/// lock is free afterwards.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn auto_extend_keeps_lease(factory: &dyn StoreFactory) {
    // Renewals every 500 ms, each with 1.35 s to arrive: a loaded machine's emulator (dynalite
    // under four builds on two cores) answered the first renewal of a 900 ms lease too late.
    const LEASE: Duration = Duration::from_millis(1_500);
    let name = unique_name("auto-extend");
    let a = node_with(
        factory,
        options("conformance-a", Duration::ZERO, LEASE).auto_extend(true),
    );
    let b = node(factory, "conformance-b", Duration::ZERO, ms(10_000));
    let (lost, skips, stretched) = elected(
        a.run_if_leader(&name, |ctx| {
            let (b, name) = (&b, &name);
            async move {
                let end = Instant::now() + LEASE * 3;
                let mut skips = 0u32;
                while Instant::now() < end {
                    skipped(
                        b.try_acquire(name).await,
                        "a contender during an auto-extended action",
                    );
                    skips += 1;
                    sleep(ms(150)).await;
                }
                let state = ok(b.state(name).await, "state during an auto-extended action");
                let stretched = state
                    .holder()
                    .and_then(|h| h.expires_at.duration_since(h.acquired_at).ok())
                    .unwrap_or_default();
                (ctx.is_lost(), skips, stretched)
            }
        })
        .await,
        "run with auto_extend",
    );
    assert!(
        !lost,
        "an auto-extended lease must not be lost during an action of 3 × the lease"
    );
    assert!(
        skips >= 5,
        "the contender must have been turned away repeatedly, only {skips} attempts"
    );
    assert!(
        stretched > LEASE,
        "after 3 × the lease the store's expiry must have moved past acquired_at + lease, got {stretched:?}"
    );
    assert!(
        ok(b.state(&name).await, "state after the run").is_free(),
        "the lock must be free after the run"
    );
    elected(
        b.run_if_leader(&name, |_| async {}).await,
        "the contender after the run",
    );
}

/// A manual `extend` pushes the store's expiry out: the lock outlives its original lease, the
/// guard is not lost, and the new expiry is later than the old one.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn manual_extend_keeps_lease(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_millis(500);
    let name = unique_name("manual-extend");
    let a = node(factory, "conformance-a", Duration::ZERO, LEASE);
    let guard = elected(a.try_acquire(&name).await, "acquire");
    let before: SystemTime = guard.expires_at();
    let after = match ok(guard.extend(ms(10_000)).await, "extend a live lease") {
        Extension::Extended { expires_at } => expires_at,
        Extension::NotHeld => panic!("extending a live lease must succeed"),
    };
    assert!(
        after > before,
        "the extended expiry {after:?} must be later than {before:?}"
    );
    assert_eq!(
        guard.expires_at(),
        after,
        "the guard must show the extended expiry"
    );
    sleep(LEASE * 2).await;
    assert!(
        !guard.is_lost(),
        "an extended guard must not report lost at its original deadline"
    );
    let b = node(factory, "conformance-b", Duration::ZERO, ms(10_000));
    skipped(
        b.try_acquire(&name).await,
        "another node after the original lease ended",
    );
    assert_eq!(ok(guard.release().await, "release"), Release::Released);
}
