//! The store contract itself ([`LeaseStore`](leasehold::LeaseStore)), called directly.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{
    Lease, LeaseStore, LockName,
    store::{Extension, Release, Token},
};
use tokio::time::{Instant, sleep};

use super::support::{EARLY, SLACK, ms, ok};
use crate::factory::StoreFactory;
use crate::names::unique_name;

fn request(lock: &LockName, slots: u32, owner: &str, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, owner, Token::random(), ttl)
}

/// Stores keep timestamps at their own precision (e.g. microseconds); compare expiries loosely.
const PRECISION: Duration = Duration::from_millis(10);

fn close(a: SystemTime, b: SystemTime) -> bool {
    a.duration_since(b)
        .or_else(|_| b.duration_since(a))
        .is_ok_and(|d| d <= PRECISION)
}

#[track_caller]
fn granted(r: leasehold::store::StoreResult<Acquisition>, what: &str) -> Lease {
    match r {
        Ok(Acquisition::Elected(lease)) => lease,
        Ok(other) => panic!("{what}: expected a grant, got {other:?}"),
        Err(e) => panic!("{what}: expected a grant, got error: {e}"),
    }
}

#[track_caller]
fn contended(r: leasehold::store::StoreResult<Acquisition>, what: &str) {
    match r {
        Ok(Acquisition::Taken(_)) => {}
        Ok(other) => panic!("{what}: expected contention (Ok(Held)), got {other:?}"),
        Err(e) => panic!("{what}: contention must be Ok(Held), never an error; got: {e}"),
    }
}

/// A granted lease names the request's lock, owner and token in slot 0 with a fence above zero
/// and an expiry after its start; a second `try_acquire` with the same token returns the same
/// lease (a retried request is recognised), while other tokens, on this or another client, get
/// `Ok(None)`.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_acquire_is_idempotent(factory: &dyn StoreFactory) {
    let (store, other) = (factory.make(), factory.make());
    let lock = unique_name("spi-idempotent");
    let req = request(&lock, 1, "spi-a", ms(10_000));
    let lease = granted(store.try_acquire(&req).await, "first try_acquire");
    assert_eq!(
        (&lease.lock, lease.slot, lease.owner.as_str(), lease.token),
        (&lock, 0, "spi-a", req.token),
        "the lease must carry the request's lock, slot 0, owner and token"
    );
    assert!(lease.fence > 0, "fences start above zero");
    assert!(
        lease.expires_at > lease.acquired_at,
        "expiry must follow acquisition: {lease:?}"
    );

    let again = granted(store.try_acquire(&req).await, "retry with the same token");
    assert_eq!(
        (again.slot, again.fence, again.token),
        (lease.slot, lease.fence, lease.token),
        "a retry with the holder's token must return the same lease, not a new grant"
    );
    let again = granted(
        other.try_acquire(&req).await,
        "retry with the same token on another client",
    );
    assert_eq!(
        again.fence, lease.fence,
        "the retry must be recognised on every client"
    );

    contended(
        store
            .try_acquire(&request(&lock, 1, "spi-b", ms(10_000)))
            .await,
        "another token",
    );
    contended(
        other
            .try_acquire(&request(&lock, 1, "spi-b", ms(10_000)))
            .await,
        "another token, other client",
    );
    assert_eq!(
        ok(store.release(&lease, Duration::ZERO).await, "release"),
        Release::Released
    );
}

/// Extend and release are token-checked: a forged lease (right lock and slot, wrong token) gets
/// `NotHeld` and changes nothing; the holder's extend moves the expiry later; releasing twice
/// gives `NotHeld` the second time.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_operations_check_the_token(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("spi-token");
    let lease = granted(
        store
            .try_acquire(&request(&lock, 1, "spi-a", ms(10_000)))
            .await,
        "acquire",
    );
    let forged = Lease {
        token: Token::random(),
        ..lease.clone()
    };
    assert_eq!(
        ok(store.extend(&forged, ms(60_000)).await, "forged extend"),
        Extension::NotHeld,
        "forged extend"
    );
    assert_eq!(
        ok(
            store.release(&forged, Duration::ZERO).await,
            "forged release"
        ),
        Release::NotHeld,
        "forged release"
    );
    let state = ok(store.state(&lock, 1).await, "state after forged calls");
    let unchanged = state
        .holder()
        .is_some_and(|h| h.fence == lease.fence && close(h.expires_at, lease.expires_at));
    assert!(
        unchanged,
        "forged calls must not change the lease {lease:?}: {state:?}"
    );

    match ok(store.extend(&lease, ms(20_000)).await, "holder extends") {
        Extension::Extended { expires_at } => {
            assert!(
                expires_at > lease.expires_at,
                "extending 10 s → 20 s must move the expiry later"
            );
            let state = ok(store.state(&lock, 1).await, "state after extend");
            let shown = state.holder().map(|h| h.expires_at);
            assert!(
                shown.is_some_and(|at| close(at, expires_at)),
                "the state must show the new expiry {expires_at:?}: {state:?}"
            );
        }
        Extension::NotHeld => panic!("the holder's extend of a live lease must succeed"),
    }
    assert_eq!(
        ok(store.release(&lease, Duration::ZERO).await, "release"),
        Release::Released
    );
    assert!(
        ok(store.state(&lock, 1).await, "state after release").is_free(),
        "released lock must be free"
    );
    assert_eq!(
        ok(
            store.release(&lease, Duration::ZERO).await,
            "second release"
        ),
        Release::NotHeld
    );
}

/// Release with a linger shortens the lease to end `linger` from now but never lengthens it; the
/// lock stays held until then (other tokens get `Ok(None)`), and is free afterwards.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_release_linger_never_lengthens(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("spi-linger-long");
    let lease = granted(
        store
            .try_acquire(&request(&lock, 1, "spi-a", ms(2_000)))
            .await,
        "acquire",
    );
    let released = ok(
        store.release(&lease, ms(30_000)).await,
        "release with a linger past the expiry",
    );
    assert_eq!(released, Release::Released);
    let state = ok(store.state(&lock, 1).await, "state after a long linger");
    match state.holder() {
        Some(h) => assert!(
            h.expires_at <= lease.expires_at + PRECISION,
            "a linger must never lengthen a lease: expiry moved from {:?} to {:?}",
            lease.expires_at,
            h.expires_at
        ),
        None => panic!("a release with linger must keep the lease until it ends: {state:?}"),
    }
    contended(
        store
            .try_acquire(&request(&lock, 1, "spi-b", ms(1_000)))
            .await,
        "during a linger",
    );

    const LINGER: Duration = Duration::from_millis(500);
    let lock = unique_name("spi-linger-short");
    let lease = granted(
        store
            .try_acquire(&request(&lock, 1, "spi-a", ms(30_000)))
            .await,
        "acquire",
    );
    let released_at = Instant::now();
    assert_eq!(
        ok(
            store.release(&lease, LINGER).await,
            "release with a short linger"
        ),
        Release::Released
    );
    let state = ok(store.state(&lock, 1).await, "state after a short linger");
    let shortened = state.holder().map(|h| h.expires_at);
    match shortened {
        Some(at) => assert!(
            at + ms(20_000) < lease.expires_at,
            "a 500 ms linger must shorten a 30 s lease; expiry {at:?} vs {:?}",
            lease.expires_at
        ),
        None => panic!("a release with linger must keep the lease for the linger: {state:?}"),
    }
    let contender = request(&lock, 1, "spi-b", ms(1_000));
    loop {
        match ok(
            store.try_acquire(&contender).await,
            "contender during and after the linger",
        ) {
            Acquisition::Elected(_) => break,
            _ => {
                assert!(
                    released_at.elapsed() < LINGER + SLACK,
                    "the lock must be free soon after the linger"
                );
                sleep(ms(25)).await;
            }
        }
    }
    let after = released_at.elapsed();
    assert!(
        after + EARLY >= LINGER,
        "the lock was free {after:?} after a release lingering {LINGER:?}"
    );
}

/// After a lease expires, its extend and release are `NotHeld` and the lock is free.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_extend_after_expiry_is_not_held(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("spi-expired");
    let lease = granted(
        store
            .try_acquire(&request(&lock, 1, "spi-a", ms(300)))
            .await,
        "acquire",
    );
    sleep(ms(800)).await;
    assert_eq!(
        ok(
            store.extend(&lease, ms(10_000)).await,
            "extend after expiry"
        ),
        Extension::NotHeld
    );
    assert_eq!(
        ok(
            store.release(&lease, Duration::ZERO).await,
            "release after expiry"
        ),
        Release::NotHeld
    );
    assert!(
        ok(store.state(&lock, 1).await, "state after expiry").is_free(),
        "an expired lease must not be reported"
    );
    let next = granted(
        store
            .try_acquire(&request(&lock, 1, "spi-b", ms(1_000)))
            .await,
        "acquire after expiry",
    );
    assert!(next.fence > lease.fence, "the fence must rise after expiry");
    assert_eq!(
        ok(store.release(&next, Duration::ZERO).await, "release"),
        Release::Released
    );
}

/// Groups: the store grants the lowest free slot, reports contention when all are held, and a
/// released slot is granted again with a higher fence.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn store_group_grants_lowest_free_slot(factory: &dyn StoreFactory) {
    let store: Arc<dyn LeaseStore> = factory.make();
    let lock = unique_name("spi-group");
    let mut leases = Vec::new();
    for expected in 0..3u32 {
        let lease = granted(
            store
                .try_acquire(&request(&lock, 3, "spi", ms(10_000)))
                .await,
            "group acquire",
        );
        assert_eq!(lease.slot, expected, "the lowest free slot must be granted");
        leases.push(lease);
    }
    contended(
        store
            .try_acquire(&request(&lock, 3, "spi", ms(10_000)))
            .await,
        "a full group",
    );
    let state = ok(store.state(&lock, 3).await, "group state");
    let slots: Vec<u32> = state.holders.iter().map(|h| h.slot).collect();
    assert_eq!(
        slots,
        vec![0, 1, 2],
        "state holders must be ordered by slot: {state:?}"
    );
    assert_eq!(
        ok(
            store.release(&leases[1], Duration::ZERO).await,
            "release slot 1"
        ),
        Release::Released
    );
    let again = granted(
        store
            .try_acquire(&request(&lock, 3, "spi", ms(10_000)))
            .await,
        "reacquire",
    );
    assert_eq!(again.slot, 1, "the released slot must be granted again");
    assert!(
        again.fence > leases[1].fence,
        "a slot's fence must rise after release"
    );
    for lease in [&leases[0], &again, &leases[2]] {
        assert_eq!(
            ok(store.release(lease, Duration::ZERO).await, "release"),
            Release::Released
        );
    }
}
