//! State snapshots.

use std::time::{Duration, SystemTime};

use super::support::{elected, ms, node, ok, skipped};
use crate::factory::StoreFactory;
use crate::names::{random_hex, unique_name};

/// The state is empty before, shows the holder (owner = node id, fence, slot 0, expiry in the
/// future) during, and is empty after release; querying it never releases the lock.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn state_snapshots(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_secs(30);
    let name = unique_name("state");
    let owner = format!("conformance-state-{}", random_hex());
    let a = node(factory, &owner, Duration::ZERO, LEASE);
    let b = node(factory, "conformance-b", Duration::ZERO, LEASE);

    let before = ok(a.state(&name).await, "state before");
    assert!(
        before.is_free(),
        "a never-used lock must be free: {before:?}"
    );
    assert_eq!(
        (before.slots, before.active(), before.available()),
        (1, 0, 1),
        "counts before"
    );
    assert_eq!(before.lock, name, "the state must name the lock");

    let fence = elected(
        a.run_if_leader(&name, |ctx| {
            let (a, b, name, owner) = (&a, &b, &name, &owner);
            async move {
                for round in 0..3 {
                    let during = ok(b.state(name).await, "state during the run");
                    let Some(holder) = during.holder() else {
                        panic!("state query {round} during the run must show the holder: {during:?}");
                    };
                    assert_eq!(&holder.owner, owner, "the holder's owner must be the node id");
                    assert_eq!(holder.fence, ctx.fence(), "the holder's fence must be the lease's");
                    assert_eq!(holder.slot, 0, "a single-leader lock uses slot 0");
                    assert!(holder.expires_at > SystemTime::now(), "a 30 s lease must expire in the future: {holder:?}");
                    let length = holder.expires_at.duration_since(holder.acquired_at).unwrap_or_default();
                    assert!(
                        length > LEASE / 2 && length <= LEASE + ms(1_000),
                        "expires_at - acquired_at must be about the lease ({LEASE:?}), got {length:?}"
                    );
                    assert_eq!((during.active(), during.available()), (1, 0), "counts during the run");
                    let own = ok(a.state(name).await, "state from the holder's elector");
                    assert_eq!(own.holder().map(|h| h.fence), Some(ctx.fence()), "same state from both nodes");
                }
                skipped(b.try_acquire(name).await, "another node after state queries (they must not release)");
                ctx.fence()
            }
        })
        .await,
        "run",
    );
    let after = ok(a.state(&name).await, "state after");
    assert!(
        after.is_free(),
        "the lock must be free after release (was fence {fence}): {after:?}"
    );
}
