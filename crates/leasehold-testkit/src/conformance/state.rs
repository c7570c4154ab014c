//! State snapshots.

use std::time::{Duration, SystemTime};

use super::support::{elected, group_node, ms, node, ok, skipped};
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

/// `state_many` answers each lock asked for, in the order asked (a lock named twice twice), as
/// `state` answers it: a held lock with its holder (owner, fence, slot), a lock never used and
/// a released one free, a group's holders by slot among the slots asked for; an empty list
/// gets an empty answer.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave leases behind until their expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_state_many_answers_each_lock(factory: &dyn StoreFactory) {
    const LEASE: Duration = Duration::from_secs(30);
    let store = factory.make();
    let a = node(factory, "conformance-many-a", Duration::ZERO, LEASE);
    let (held, never, released) = (
        unique_name("many-held"),
        unique_name("many-never"),
        unique_name("many-released"),
    );
    let guard = elected(a.try_acquire(&held).await, "acquire the held lock");
    let gone = elected(
        a.try_acquire(&released).await,
        "acquire the lock to release",
    );
    ok(gone.release().await, "release");

    let asked = [held.clone(), never.clone(), held.clone(), released.clone()];
    let answers = ok(
        store.state_many(&asked, 1).await,
        "state_many of single locks",
    );
    assert_eq!(
        answers.iter().map(|s| s.lock.clone()).collect::<Vec<_>>(),
        asked.to_vec(),
        "one answer per lock asked for, in the order asked"
    );
    for (answer, lock) in answers.iter().zip(&asked) {
        let alone = ok(store.state(lock, 1).await, "state of the same lock");
        let who = |s: &leasehold::store::LockState| {
            s.holders
                .iter()
                .map(|h| (h.slot, h.owner.clone(), h.fence))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            who(answer),
            who(&alone),
            "{lock}: state_many and state differ"
        );
        assert_eq!(answer.slots, 1, "{lock}: the slots asked for");
    }
    let holder = answers[0].holder().map(|h| (h.owner.as_str(), h.fence));
    assert_eq!(
        holder,
        Some(("conformance-many-a", guard.fence())),
        "the held lock's holder"
    );
    assert!(answers[1].is_free(), "a lock never used is free");
    assert!(answers[3].is_free(), "a released lock is free");

    let (g1, g2) = (unique_name("many-group1"), unique_name("many-group2"));
    let members: Vec<_> = (0..3)
        .map(|i| {
            group_node(
                factory,
                &format!("conformance-many-g{i}"),
                3,
                Duration::ZERO,
                LEASE,
            )
        })
        .collect();
    let mut guards = Vec::new();
    for (i, lock) in [(0, &g1), (1, &g1), (2, &g2)] {
        guards.push(elected(
            members[i].try_acquire(lock).await,
            "acquire a group slot",
        ));
    }
    let groups = ok(
        store.state_many(&[g1.clone(), g2.clone()], 3).await,
        "state_many of groups",
    );
    let shape: Vec<(u32, u32, Vec<u32>)> = groups
        .iter()
        .map(|s| {
            (
                s.slots,
                s.active(),
                s.holders.iter().map(|h| h.slot).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![(3, 2, vec![0, 1]), (3, 1, vec![0])],
        "each group's holders by slot, among the slots asked for"
    );
    assert!(
        ok(store.state_many(&[], 1).await, "state_many of no lock").is_empty(),
        "no lock asked for, no answer"
    );
    for g in guards {
        ok(g.release().await, "release a group slot");
    }
    ok(guard.release().await, "release the held lock");
}
