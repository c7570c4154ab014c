//! The limits every store enforces alike ([`leasehold::limits`]).

use std::time::Duration;

use leasehold::store::AcquireRequest;
use leasehold::{
    LockName,
    limits::{LimitError, MAX_NODE_ID_LEN, MAX_SLOTS},
    store::{StoreError, Token},
};
use tokio::time::Instant;

use super::support::{ms, ok};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// How long one call with [`MAX_SLOTS`] slots may take: generous for dynalite on a shared
/// machine, yet far below what a scan of every slot on the server would take at larger counts.
const MAX_SLOTS_CALL: Duration = Duration::from_secs(5);

fn request(lock: &LockName, slots: u32, owner: &str) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, owner, Token::random(), ms(30_000))
}

#[track_caller]
fn too_many_slots<T: std::fmt::Debug>(r: Result<T, StoreError>, slots: u32, what: &str) {
    match r {
        Err(e) => {
            assert_eq!(
                e.limit(),
                Some(&LimitError::TooManySlots {
                    slots,
                    max: MAX_SLOTS
                }),
                "{what}: the error must carry LimitError::TooManySlots (leasehold::store::check_slots), got: {e}"
            );
            assert!(
                !e.is_transient(),
                "{what}: a limit is a permanent error: {e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(&slots.to_string()) && msg.contains(&MAX_SLOTS.to_string()),
                "{what}: the message must name the count and the limit: {msg}"
            );
        }
        Ok(v) => panic!(
            "{what}: {slots} slots is above MAX_SLOTS ({MAX_SLOTS}) and must be rejected, got {v:?}"
        ),
    }
}

/// More than [`MAX_SLOTS`] slots (one more, and `u32::MAX`) are rejected by `try_acquire`,
/// `state` and `force_release` alike, with a permanent [`StoreError`] carrying
/// [`LimitError::TooManySlots`] and without taking anything; exactly [`MAX_SLOTS`] works and
/// answers promptly: two grants get slots 0 and 1, `state` sees both, `force_release` frees both.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_rejects_more_than_max_slots(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("spi-max-slots");
    for slots in [MAX_SLOTS + 1, u32::MAX] {
        too_many_slots(
            store.try_acquire(&request(&lock, slots, "spi-a")).await,
            slots,
            "try_acquire",
        );
        too_many_slots(store.state(&lock, slots).await, slots, "state");
        too_many_slots(
            store.force_release(&lock, slots).await,
            slots,
            "force_release",
        );
    }

    let started = Instant::now();
    let state = ok(store.state(&lock, MAX_SLOTS).await, "state with MAX_SLOTS");
    assert!(
        state.is_free(),
        "the rejected acquisitions must not have taken anything: {state:?}"
    );
    let mut slots = Vec::new();
    for owner in ["spi-a", "spi-b"] {
        match ok(
            store.try_acquire(&request(&lock, MAX_SLOTS, owner)).await,
            "try_acquire with MAX_SLOTS",
        ) {
            leasehold::store::Acquisition::Elected(lease) => slots.push(lease.slot),
            _ => panic!("a free lock of MAX_SLOTS slots must grant"),
        }
    }
    assert_eq!(slots, [0, 1], "grants take the lowest free slots");
    let state = ok(store.state(&lock, MAX_SLOTS).await, "state with MAX_SLOTS");
    assert_eq!(
        (state.slots, state.active()),
        (MAX_SLOTS, 2),
        "state must see both holders: {state:?}"
    );
    let one = ok(store.state(&lock, 1).await, "state of slot 0 only");
    assert_eq!(
        one.active(),
        1,
        "state(lock, 1) looks at slot 0 only: {one:?}"
    );
    let freed = ok(
        store.force_release(&lock, MAX_SLOTS).await,
        "force_release with MAX_SLOTS",
    );
    assert_eq!(freed.len(), 2, "force_release must free both: {freed:?}");
    let took = started.elapsed();
    assert!(
        took < MAX_SLOTS_CALL * 5,
        "five calls with MAX_SLOTS slots took {took:?}"
    );
}

/// A node id of [`MAX_NODE_ID_LEN`] bytes (multi-byte UTF-8 included) is recorded whole: the
/// lease and the state name exactly that owner.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_records_the_longest_node_id(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("spi-node-id");
    let mut owner = format!("{}{}", "ñ".repeat(100), "🔒".repeat(10));
    owner.push_str(&"x".repeat(MAX_NODE_ID_LEN - owner.len()));
    assert_eq!(owner.len(), MAX_NODE_ID_LEN);
    let lease = match ok(
        store.try_acquire(&request(&lock, 1, &owner)).await,
        "try_acquire with the longest node id",
    ) {
        leasehold::store::Acquisition::Elected(lease) => lease,
        _ => panic!("a free lock must grant"),
    };
    assert_eq!(lease.owner, owner, "the lease must carry the whole node id");
    let state = ok(store.state(&lock, 1).await, "state");
    assert_eq!(
        state.holder().map(|h| h.owner.as_str()),
        Some(owner.as_str()),
        "the store must record the whole node id"
    );
    ok(store.release(&lease, Duration::ZERO).await, "release");
}
