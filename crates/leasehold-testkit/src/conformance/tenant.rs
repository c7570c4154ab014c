//! Tenant scoping.

use std::time::Duration;

use leasehold::{Error, error::NameError, store::Release};

use super::support::{elected, ms, node, ok, skipped};
use crate::factory::StoreFactory;
use crate::names::{random_hex, unique_name};

/// `for_tenant("a")` and `for_tenant("b")` on the same lock name do not contend (nor with the
/// unscoped name); the same tenant on another client does; the tenant's state reports the full
/// name `tenant:<id>:<name>`; bad tenant ids and lock names give typed errors, never a skip.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn tenant_scoping(factory: &dyn StoreFactory) {
    let name = unique_name("tenant");
    let (id_a, id_b) = (format!("a{}", random_hex()), format!("b{}", random_hex()));
    let base = node(factory, "conformance-a", Duration::ZERO, ms(30_000));
    let other = node(factory, "conformance-b", Duration::ZERO, ms(30_000));
    let ta = ok(base.for_tenant(&id_a), "tenant a");
    let tb = ok(other.for_tenant(&id_b), "tenant b");
    let ta_elsewhere = ok(other.for_tenant(&id_a), "tenant a on another client");

    let ga = elected(ta.try_acquire(&name).await, "tenant a acquires");
    let gb = elected(
        tb.try_acquire(&name).await,
        "tenant b on the same name while tenant a holds it",
    );
    let plain = elected(
        base.try_acquire(&name).await,
        "the unscoped name while both tenants hold theirs",
    );
    skipped(
        ta_elsewhere.try_acquire(&name).await,
        "tenant a on another client",
    );

    let full = format!("tenant:{id_a}:{name}");
    let state = ok(ta.state(&name).await, "tenant a's state");
    assert_eq!(
        state.lock.as_str(),
        full,
        "a tenant's state must report the full lock name"
    );
    assert_eq!(
        state.holder().map(|h| h.fence),
        Some(ga.fence()),
        "tenant a's state must show its holder"
    );
    assert_eq!(
        ga.lease().lock.as_str(),
        full,
        "a tenant's lease must carry the full lock name"
    );

    assert!(
        matches!(
            base.for_tenant("bad:id"),
            Err(NameError::ReservedSeparator { .. })
        ),
        "a tenant id with ':' must be rejected with NameError::ReservedSeparator"
    );
    assert!(
        matches!(base.for_tenant(""), Err(NameError::Empty)),
        "an empty tenant id must be rejected"
    );
    let bad = ta.run_if_leader("x:y", |_| async {}).await;
    assert!(
        matches!(bad, Err(Error::Name(NameError::ReservedSeparator { .. }))),
        "a tenant lock name with ':' must be a name error, got {bad:?}"
    );
    let bad = base.run_if_leader("bad name", |_| async {}).await;
    assert!(
        matches!(bad, Err(Error::Name(_))),
        "an invalid lock name must be a name error, got {bad:?}"
    );

    for g in [ga, gb, plain] {
        assert_eq!(ok(g.release().await, "release"), Release::Released);
    }
}
