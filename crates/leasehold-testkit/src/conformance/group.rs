//! Group slot accounting.

use std::collections::BTreeSet;
use std::time::Duration;

use leasehold::{LeaderGuard, store::Release};
use tokio::time::{Instant, sleep};

use super::support::{SLACK, elected, group_node, ms, ok, skipped};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// With `max_leaders` N = 3 and four nodes: three holders get distinct slots, the fourth skips,
/// `active`/`available` are right, a release frees a slot at once for the fourth, and everything
/// is free after all release.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn group_slot_accounting(factory: &dyn StoreFactory) {
    const N: u32 = 3;
    let name = unique_name("group-slots");
    let nodes: Vec<_> = (0..=N)
        .map(|i| {
            group_node(
                factory,
                &format!("conformance-{i}"),
                N,
                Duration::ZERO,
                ms(30_000),
            )
        })
        .collect();
    let empty = ok(nodes[0].state(&name).await, "state before");
    assert_eq!(
        (empty.slots, empty.active(), empty.available()),
        (N, 0, N),
        "counts before: {empty:?}"
    );

    let mut guards: Vec<LeaderGuard> = Vec::new();
    for (i, n) in nodes.iter().take(N as usize).enumerate() {
        guards.push(elected(
            n.try_acquire(&name).await,
            &format!("holder {i} of {N}"),
        ));
        let state = ok(n.state(&name).await, "state while filling");
        let held = u32::try_from(i + 1).unwrap_or(u32::MAX);
        assert_eq!(
            (state.active(), state.available()),
            (held, N - held),
            "counts with {held} holders: {state:?}"
        );
    }
    let slots: BTreeSet<u32> = guards.iter().map(|g| g.slot()).collect();
    assert_eq!(
        slots,
        (0..N).collect(),
        "{N} holders must hold the distinct slots 0..{N}"
    );
    let extra = &nodes[N as usize];
    skipped(
        extra.try_acquire(&name).await,
        "holder N+1 while all slots are held",
    );

    let full = ok(extra.state(&name).await, "state when full");
    let owners: BTreeSet<&str> = full.holders.iter().map(|h| h.owner.as_str()).collect();
    assert_eq!(
        owners.len(),
        N as usize,
        "each slot must show its own owner: {full:?}"
    );

    let freed = guards.remove(1);
    let freed_slot = freed.slot();
    assert_eq!(
        ok(freed.release().await, "release one slot"),
        Release::Released
    );
    let state = ok(extra.state(&name).await, "state after one release");
    assert_eq!(
        (state.active(), state.available()),
        (N - 1, 1),
        "counts after one release: {state:?}"
    );
    let late = elected(
        extra.try_acquire(&name).await,
        "holder N+1 right after a release",
    );
    assert_eq!(
        late.slot(),
        freed_slot,
        "the freed slot must be granted to the next acquirer"
    );
    guards.push(late);
    for g in guards {
        assert_eq!(ok(g.release().await, "release"), Release::Released);
    }
    let after = ok(extra.state(&name).await, "state after all released");
    assert_eq!(
        (after.active(), after.available()),
        (0, N),
        "counts after: {after:?}"
    );
}

/// Expired group slots are reclaimed by the next acquirer, with a higher fence for that slot, and
/// expired holders disappear from the state.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn group_expired_slots_reclaimed(factory: &dyn StoreFactory) {
    const N: u32 = 2;
    const LEASE: Duration = Duration::from_millis(500);
    let name = unique_name("group-expiry");
    let a = group_node(factory, "conformance-a", N, Duration::ZERO, LEASE);
    let b = group_node(factory, "conformance-b", N, Duration::ZERO, ms(30_000));
    let first = elected(a.try_acquire(&name).await, "first holder");
    let second = elected(a.try_acquire(&name).await, "second holder");
    let mut old = [0u64; N as usize];
    for g in [&first, &second] {
        if let Some(slot) = old.get_mut(g.slot() as usize) {
            *slot = g.fence();
        }
    }
    skipped(
        b.try_acquire(&name).await,
        "a third holder while both slots are live",
    );

    let start = Instant::now();
    loop {
        let state = ok(b.state(&name).await, "state while waiting for expiry");
        if state.is_free() {
            break;
        }
        assert!(
            start.elapsed() < LEASE + SLACK,
            "expired holders must leave the state: {state:?}"
        );
        sleep(ms(50)).await;
    }
    let reclaimed = elected(
        b.try_acquire(&name).await,
        "acquire after both slots expired",
    );
    assert_eq!(
        reclaimed.slot(),
        0,
        "the lowest expired slot must be granted first"
    );
    assert!(
        reclaimed.fence() > old[0],
        "the reclaimed slot's fence {} must exceed its previous fence {}",
        reclaimed.fence(),
        old[0]
    );
    let state = ok(b.state(&name).await, "state after reclaiming");
    assert_eq!(
        (state.active(), state.available()),
        (1, N - 1),
        "counts after reclaiming: {state:?}"
    );
    drop((first, second));
    assert_eq!(ok(reclaimed.release().await, "release"), Release::Released);
}
