//! Hand-off ([`LeaseStore::hands_off`](leasehold::LeaseStore::hands_off)): a store that keeps a
//! line of waiting electors lets a release keep the freed lock for one of them. Stores that do
//! not hand off pass these tests without running them.

use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, HAND_OFF_HOLD, HandOff, WaiterId};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Release, Token},
};
use tokio::time::{Instant, sleep};

use super::support::{ms, ok};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// A single-slot request of `owner`, made by `waiter` (or by a caller that does not wait).
fn request(lock: &LockName, owner: &str, waiter: Option<WaiterId>) -> AcquireRequest {
    let req = AcquireRequest::new(lock.clone(), 1, owner, Token::random(), ms(30_000));
    match waiter {
        Some(w) => req.waiting_as(w),
        None => req,
    }
}

async fn attempt(
    store: &dyn LeaseStore,
    lock: &LockName,
    owner: &str,
    w: Option<WaiterId>,
) -> Acquisition {
    match store.try_acquire(&request(lock, owner, w)).await {
        Ok(answer) => answer,
        Err(e) => panic!("try_acquire by {owner}: {e}"),
    }
}

#[track_caller]
fn granted(answer: Acquisition, what: &str) -> Lease {
    match answer {
        Acquisition::Elected(lease) => lease,
        other => panic!("{what}: expected a grant, got {other:?}"),
    }
}

#[track_caller]
fn refused(answer: &Acquisition, what: &str) {
    assert!(
        matches!(answer, Acquisition::Taken(_)),
        "{what}: expected a refusal, got {answer:?}"
    );
}

/// A round in which this machine answered too slowly to judge a keep: an attempt that should
/// have been refused came back granted, but only after [`HAND_OFF_HOLD`] had passed since the
/// release that kept the lock, so the keep may rightly have lapsed.
#[derive(Debug)]
struct TooSlow;

/// `answer` to an attempt made while a release sent at `kept_at` keeps the lock for someone
/// else must be a refusal — unless the hold had passed by the time the answer came back (a
/// loaded machine), which makes the round inconclusive instead of wrong.
#[track_caller]
fn refused_while_kept(answer: Acquisition, kept_at: Instant, what: &str) -> Result<(), TooSlow> {
    match answer {
        Acquisition::Taken(_) => Ok(()),
        Acquisition::Elected(_) if kept_at.elapsed() >= HAND_OFF_HOLD => Err(TooSlow),
        other => panic!("{what}: expected a refusal within the hold, got {other:?}"),
    }
}

/// Releases `lease` with `to`; returns whether the store kept the lock for another elector.
async fn release_to(store: &dyn LeaseStore, lease: &Lease, to: HandOff) -> bool {
    match store.release_to(lease, Duration::ZERO, to).await {
        Ok(answer) => {
            assert_eq!(
                answer.release,
                Release::Released,
                "release_to({to:?}) of a live lease"
            );
            answer.kept_for_another
        }
        Err(e) => panic!("release_to({to:?}): {e}"),
    }
}

/// On a store that hands off: a release to the longest waiter keeps the freed lock for the
/// elector refused first (not the one refused later, not a caller that does not wait) until it
/// takes it; a release that keeps the lock for its own elector refuses everyone else and lets
/// that elector in; the releasing elector is never chosen by its own `Longest`; and a keep for
/// an elector that does not come lapses after [`HAND_OFF_HOLD`], which also drops that elector
/// from the line. The lock is free (no holder) all the while, and fences keep rising.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_hands_off_to_the_longest_waiter(factory: &dyn StoreFactory) {
    let store = factory.make();
    if !store.hands_off() {
        return;
    }
    // A keep lasts HAND_OFF_HOLD (50 ms): on a loaded machine a round may be too slow to judge
    // (see `refused_while_kept`); it is then run again on a new lock, never skipped.
    const ROUNDS: usize = 20;
    for _ in 0..ROUNDS {
        if hand_off_round(&*store).await.is_ok() {
            return;
        }
    }
    panic!("{ROUNDS} hand-off rounds in a row were too slow to judge a {HAND_OFF_HOLD:?} keep");
}

/// One round of [`store_hands_off_to_the_longest_waiter`] on a lock of its own.
async fn hand_off_round(store: &dyn LeaseStore) -> Result<(), TooSlow> {
    let lock = unique_name("hand-off");
    let (a, b, c) = (WaiterId::random(), WaiterId::random(), WaiterId::random());
    let held_by_a = granted(
        attempt(store, &lock, "a", Some(a)).await,
        "a's first attempt",
    );
    // B is refused first, then C (a few ms apart: stores record times in milliseconds).
    refused(
        &attempt(store, &lock, "b", Some(b)).await,
        "b while a holds",
    );
    sleep(ms(5)).await;
    refused(
        &attempt(store, &lock, "c", Some(c)).await,
        "c while a holds",
    );
    refused(
        &attempt(store, &lock, "c", Some(c)).await,
        "c again (its place is kept)",
    );
    let kept_at = Instant::now();
    assert!(
        release_to(store, &held_by_a, HandOff::Longest(a)).await,
        "b waits: the lock is kept for it"
    );
    let state = ok(store.state(&lock, 1).await, "state of a kept lock");
    assert!(
        state.holders.is_empty(),
        "a kept lock has no holder: {state:?}"
    );
    refused_while_kept(
        attempt(store, &lock, "c", Some(c)).await,
        kept_at,
        "c while the lock is kept for b",
    )?;
    refused_while_kept(
        attempt(store, &lock, "x", None).await,
        kept_at,
        "a caller that does not wait, while kept for b",
    )?;
    let held_by_b = granted(
        attempt(store, &lock, "b", Some(b)).await,
        "b, the lock kept for it",
    );
    assert!(
        held_by_b.fence > held_by_a.fence,
        "fences rise across a hand-off"
    );
    // B keeps the lock for itself (its next task): others are refused, B gets in.
    let kept_at = Instant::now();
    assert!(
        !release_to(store, &held_by_b, HandOff::Keep(b)).await,
        "a keep for oneself is not for another"
    );
    refused_while_kept(
        attempt(store, &lock, "c", Some(c)).await,
        kept_at,
        "c while the lock is kept for b's next task",
    )?;
    let again = granted(attempt(store, &lock, "b", Some(b)).await, "b's next task");
    // B's own Longest never picks B (B's refusals above do not count once it is granted): C.
    refused(
        &attempt(store, &lock, "a", Some(a)).await,
        "a, now waiting behind c",
    );
    let kept_at = Instant::now();
    assert!(
        release_to(store, &again, HandOff::Longest(b)).await,
        "c waits longest"
    );
    refused_while_kept(
        attempt(store, &lock, "b", Some(b)).await,
        kept_at,
        "b while the lock is kept for c",
    )?;
    refused_while_kept(
        attempt(store, &lock, "a", Some(a)).await,
        kept_at,
        "a while the lock is kept for c",
    )?;
    let held_by_c = granted(
        attempt(store, &lock, "c", Some(c)).await,
        "c, the lock kept for it",
    );
    // A waited before B was refused again: A is kept for, but does not come.
    assert!(
        release_to(store, &held_by_c, HandOff::Longest(c)).await,
        "a waits longest"
    );
    sleep(HAND_OFF_HOLD + ms(100)).await;
    let late = granted(
        attempt(store, &lock, "x", None).await,
        "anyone, once the keep for a lapsed",
    );
    // The lapsed keep dropped A from the line; B is the only waiter left.
    assert!(
        release_to(store, &late, HandOff::Longest(c)).await,
        "b still waits"
    );
    let held_by_b = granted(attempt(store, &lock, "b", Some(b)).await, "b, kept for");
    assert!(
        !release_to(store, &held_by_b, HandOff::Longest(b)).await,
        "nobody else waits: a was dropped when its keep lapsed"
    );
    granted(
        attempt(store, &lock, "x", None).await,
        "anyone, after a release that kept nothing",
    );
    Ok(())
}
