//! The minimum lease: the caller returns at once, the lock stays held until the minimum passes.

use std::time::Duration;

use tokio::time::Instant;

use super::support::{EARLY, SLACK, elected, ms, node, node_with, ok, options, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// With `min_lease` M, a fast action returns promptly (well before M), yet no other node can
/// acquire until about M after the acquisition; then one can.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn min_lease_holds_lock(factory: &dyn StoreFactory) {
    const MIN: Duration = Duration::from_millis(1500);
    let name = unique_name("min-lease");
    let a = node_with(
        factory,
        options("conformance-a", Duration::ZERO, ms(10_000)).min_lease(MIN),
    );
    let start = Instant::now();
    let entered = elected(
        a.run_if_leader(&name, |_| async { Instant::now() }).await,
        "run with a minimum lease",
    );
    let returned = start.elapsed();
    assert!(
        returned < MIN / 2,
        "a fast action must return promptly despite min_lease {MIN:?}, took {returned:?}"
    );

    let quick = node(factory, "conformance-b", Duration::ZERO, ms(10_000));
    skipped(
        quick.try_acquire(&name).await,
        "another node right after the run (minimum lease not yet over)",
    );
    let state = ok(quick.state(&name).await, "state during the minimum lease");
    assert!(
        !state.is_free(),
        "the lock must show as held during the minimum lease: {state:?}"
    );

    let patient = node(factory, "conformance-c", ms(5_000), ms(10_000));
    let guard = elected(
        patient.try_acquire(&name).await,
        "another node waiting out the minimum lease",
    );
    let after = entered.elapsed();
    assert!(
        after + EARLY >= MIN,
        "another node acquired {after:?} after the acquisition, before min_lease {MIN:?} was over"
    );
    assert!(
        after < MIN + SLACK,
        "the lock must be free soon after min_lease {MIN:?}, took {after:?}"
    );
    let _ = ok(guard.release().await, "release");
}
