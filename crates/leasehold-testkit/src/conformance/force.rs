//! Break-glass release: `LeaseStore::force_release`.

use std::time::Duration;

use leasehold::store::AcquireRequest;
use leasehold::{
    LeaseStore, LostReason,
    store::{Extension, Release, Token},
};
use tokio::time::timeout;

use super::support::{elected, ms, node, node_with, ok, options};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// `force_release` frees every live slot of a lock whatever the token, returns the holders it
/// freed, keeps fences (the next grant of each slot gets a higher one), and leaves the old tokens
/// powerless (`NotHeld`); on a free lock it frees nothing.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_force_release_frees_every_slot(factory: &dyn StoreFactory) {
    let (store, operator) = (factory.make(), factory.make());
    let lock = unique_name("spi-force");
    let request =
        |owner: &str| AcquireRequest::new(lock.clone(), 2, owner, Token::random(), ms(30_000));
    let mut leases = Vec::new();
    for owner in ["spi-a", "spi-b"] {
        match ok(store.try_acquire(&request(owner)).await, "group acquire") {
            leasehold::store::Acquisition::Elected(lease) => leases.push(lease),
            _ => panic!("a free 2-slot group must grant two leases"),
        }
    }
    let freed = ok(
        operator.force_release(&lock, 2).await,
        "force_release of a held lock",
    );
    let mut seen: Vec<(u32, &str, u64)> = freed
        .iter()
        .map(|h| (h.slot, h.owner.as_str(), h.fence))
        .collect();
    seen.sort_unstable();
    let expected: Vec<(u32, &str, u64)> = leases
        .iter()
        .map(|l| (l.slot, l.owner.as_str(), l.fence))
        .collect();
    assert_eq!(
        seen, expected,
        "force_release must return the holders it freed"
    );
    for lease in &leases {
        let reported = freed
            .iter()
            .find(|h| h.slot == lease.slot)
            .map(|h| h.expires_at);
        assert_eq!(
            reported,
            Some(lease.expires_at),
            "force_release must report each holder as it was, with its original expiry"
        );
    }
    let state = ok(store.state(&lock, 2).await, "state after force_release");
    assert!(
        state.is_free(),
        "force_release must free every slot: {state:?}"
    );
    for lease in &leases {
        let extension = ok(store.extend(lease, ms(30_000)).await, "extend after force");
        assert_eq!(
            extension,
            Extension::NotHeld,
            "a forced-out token must not extend"
        );
        let release = ok(
            store.release(lease, Duration::ZERO).await,
            "release after force",
        );
        assert_eq!(
            release,
            Release::NotHeld,
            "a forced-out token must not release"
        );
    }
    let again = ok(
        store.try_acquire(&request("spi-c")).await,
        "acquire after force",
    );
    let leasehold::store::Acquisition::Elected(again) = again else {
        panic!("a force-released lock must be free");
    };
    let previous = leases
        .iter()
        .find(|l| l.slot == again.slot)
        .map_or(0, |l| l.fence);
    assert!(
        again.fence > previous,
        "fences survive force_release: {} after {previous}",
        again.fence
    );
    ok(store.release(&again, Duration::ZERO).await, "release");
    let none = ok(
        operator.force_release(&lock, 2).await,
        "force_release of a free lock",
    );
    assert!(
        none.is_empty(),
        "force_release of a free lock frees nothing: {none:?}"
    );
}

/// A holder whose lease was force-released by an operator on another client finds out: with
/// auto-extension its guard reports `NotHeld` at the next renewal (well within the lease), while
/// another node acquires at once with a higher fence.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn force_release_makes_the_holder_lost(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_millis(900);
    let name = unique_name("force-lost");
    let a = node_with(
        factory,
        options("conformance-a", Duration::ZERO, LEASE).auto_extend(true),
    );
    let guard = elected(a.try_acquire(&name).await, "holder acquires");
    let operator: std::sync::Arc<dyn LeaseStore> = factory.make();
    let freed = ok(
        operator.force_release(&guard.lease().lock, 1).await,
        "force_release",
    );
    assert_eq!(freed.len(), 1, "one holder freed: {freed:?}");
    let b = node(factory, "conformance-b", Duration::ZERO, ms(30_000));
    let successor = elected(
        b.try_acquire(&name).await,
        "another node right after force_release",
    );
    assert!(
        successor.fence() > guard.fence(),
        "the successor's fence must be higher"
    );
    match timeout(LEASE * 2, guard.lost()).await {
        Ok(reason) => assert_eq!(
            reason,
            LostReason::NotHeld,
            "a forced-out holder is told NotHeld"
        ),
        Err(_) => panic!("a forced-out holder must notice at its next renewal"),
    }
    assert_eq!(ok(guard.release().await, "stale release"), Release::NotHeld);
    assert_eq!(
        ok(successor.release().await, "successor release"),
        Release::Released
    );
}
