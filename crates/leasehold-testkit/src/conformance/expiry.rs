//! Expiry and takeover, and what a stale owner can (not) do afterwards.

use std::time::Duration;

use leasehold::{
    LeaderGuard,
    store::{Extension, Release},
};
use tokio::time::Instant;

use super::support::{EARLY, SLACK, elected, ms, node, ok, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

const SHORT_LEASE: Duration = Duration::from_millis(600);

/// Node A acquires with a short lease and keeps its guard without extending; node B, waiting,
/// takes over once A's lease expired (not before), with a higher fence.
///
/// Returns both guards and the lock, for [`stale_owner_is_rejected`].
async fn take_over(
    factory: &dyn StoreFactory,
    tag: &str,
) -> (LeaderGuard, LeaderGuard, leasehold::Elector) {
    let name = unique_name(tag);
    let a = node(factory, "conformance-a", Duration::ZERO, SHORT_LEASE);
    let stale = elected(a.try_acquire(&name).await, "a acquires with a short lease");
    let acquired = Instant::now();
    let b = node(factory, "conformance-b", ms(4_000), ms(10_000));
    let successor = elected(
        b.try_acquire(&name).await,
        "b waits for a's lease to expire",
    );
    let after = acquired.elapsed();
    assert!(
        after + EARLY >= SHORT_LEASE,
        "b took over {after:?} after a's acquisition, before a's {SHORT_LEASE:?} lease could expire"
    );
    assert!(
        after < SHORT_LEASE + SLACK,
        "b needed {after:?} to take over an expired {SHORT_LEASE:?} lease"
    );
    assert!(
        successor.fence() > stale.fence(),
        "the successor's fence {} must exceed the expired holder's {}",
        successor.fence(),
        stale.fence()
    );
    (stale, successor, b)
}

/// An unextended lease expires and another node takes over; the old guard knows it is lost.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn expiry_allows_takeover(factory: &dyn StoreFactory) {
    let (stale, successor, _) = take_over(factory, "expiry").await;
    assert!(
        stale.is_lost(),
        "a guard whose lease expired (and was taken over) must report lost"
    );
    assert_eq!(
        ok(successor.release().await, "successor releases"),
        Release::Released
    );
    drop(stale);
}

/// After a takeover, the stale guard's `extend` is `NotHeld` and its `release` is `NotHeld`; the
/// successor's lease is untouched: the state shows the successor's owner and fence, other nodes
/// still skip, and the successor can extend and release.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn stale_owner_is_rejected(factory: &dyn StoreFactory) {
    let (stale, successor, b) = take_over(factory, "stale-owner").await;
    let name = successor.lease().lock;
    let extension = ok(stale.extend(ms(10_000)).await, "stale extend");
    assert_eq!(
        extension,
        Extension::NotHeld,
        "a stale owner's extend must be NotHeld"
    );
    let release = ok(stale.release().await, "stale release");
    assert_eq!(
        release,
        Release::NotHeld,
        "a stale owner's release must be NotHeld"
    );

    let state = ok(b.state(&name).await, "state after the stale owner's calls");
    let holder = match state.holder() {
        Some(h) => h.clone(),
        None => panic!(
            "the successor's lease must survive the stale owner's extend/release; state: {state:?}"
        ),
    };
    assert_eq!(
        holder.owner, "conformance-b",
        "the state must show the successor as owner"
    );
    assert_eq!(
        holder.fence,
        successor.fence(),
        "the state must show the successor's fence"
    );
    let c = node(factory, "conformance-c", Duration::ZERO, ms(10_000));
    skipped(
        c.try_acquire(&name).await,
        "a third node while the successor holds the lock",
    );
    match ok(successor.extend(ms(10_000)).await, "successor extends") {
        Extension::Extended { .. } => {}
        Extension::NotHeld => {
            panic!("the successor's extend must succeed after the stale owner's calls")
        }
    }
    assert_eq!(
        ok(successor.release().await, "successor releases"),
        Release::Released
    );
}
