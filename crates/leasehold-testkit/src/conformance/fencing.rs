//! Fences strictly increase across release, expiry and takeover, per lock and per group slot.

use std::collections::BTreeMap;
use std::time::Duration;

use leasehold::{LeaderGuard, store::Release};

use super::support::{elected, group_node, ms, node, ok};
use crate::factory::StoreFactory;
use crate::names::unique_name;

#[track_caller]
fn rises(previous: &mut u64, next: u64, how: &str) {
    assert!(
        next > *previous,
        "fence after {how} must exceed {previous}, got {next}"
    );
    *previous = next;
}

/// Fences of one lock strictly increase across release, run, expiry and takeover by another
/// client.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn fences_increase(factory: &dyn StoreFactory) {
    let name = unique_name("fences");
    let a = node(factory, "conformance-a", Duration::ZERO, ms(400));
    let b = node(factory, "conformance-b", ms(4_000), ms(400));
    let first = elected(a.try_acquire(&name).await, "first acquisition");
    let mut last = first.fence();
    assert_eq!(ok(first.release().await, "release"), Release::Released);

    let second = elected(a.try_acquire(&name).await, "acquisition after release");
    rises(&mut last, second.fence(), "release");
    assert_eq!(ok(second.release().await, "release"), Release::Released);

    let ran = elected(
        a.run_if_leader(&name, |ctx| async move { ctx.fence() })
            .await,
        "run",
    );
    rises(&mut last, ran, "a run");

    let expiring = elected(a.try_acquire(&name).await, "acquisition left to expire");
    rises(&mut last, expiring.fence(), "a run's release");
    let taken = elected(
        b.try_acquire(&name).await,
        "takeover after expiry by another client",
    );
    rises(&mut last, taken.fence(), "expiry and takeover");
    drop(expiring);
    assert_eq!(ok(taken.release().await, "release"), Release::Released);

    let after = elected(
        a.run_if_leader(&name, |ctx| async move { ctx.fence() })
            .await,
        "run after takeover",
    );
    rises(&mut last, after, "takeover and release");
}

/// In a group, each slot's fences strictly increase across release, expiry and takeover.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn group_fences_increase_per_slot(factory: &dyn StoreFactory) {
    let name = unique_name("group-fences");
    let a = group_node(factory, "conformance-a", 2, Duration::ZERO, ms(400));
    let b = group_node(factory, "conformance-b", 2, ms(4_000), ms(400));
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    let mut record = |guards: &[LeaderGuard], how: &str| {
        let mut slots: Vec<u32> = guards.iter().map(|g| g.slot()).collect();
        slots.sort_unstable();
        assert_eq!(
            slots,
            vec![0, 1],
            "two holders of a 2-slot group must hold slots 0 and 1 ({how})"
        );
        for g in guards {
            let previous = last.entry(g.slot()).or_insert(0);
            rises(previous, g.fence(), &format!("{how} (slot {})", g.slot()));
        }
    };

    let first = vec![
        elected(a.try_acquire(&name).await, "first holder"),
        elected(a.try_acquire(&name).await, "second holder"),
    ];
    record(&first, "first acquisitions");
    for g in first {
        assert_eq!(ok(g.release().await, "release"), Release::Released);
    }
    let second = vec![
        elected(a.try_acquire(&name).await, "first holder after release"),
        elected(a.try_acquire(&name).await, "second holder after release"),
    ];
    record(&second, "release");
    let third = vec![
        elected(b.try_acquire(&name).await, "first holder after expiry"),
        elected(b.try_acquire(&name).await, "second holder after expiry"),
    ];
    record(&third, "expiry and takeover");
    drop(second);
    for g in third {
        assert_eq!(ok(g.release().await, "release"), Release::Released);
    }
}
