//! The period ledger: a run for period P of a lock is granted only if no run for P or a later
//! period was granted before, decided by the store on its own clock.

use std::time::{Duration, SystemTime};

use futures::future::join_all;
use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{
    Event, Lease, LockName, Period, PeriodError, PeriodOutcome, PeriodRecord, Release, Token,
};
use tokio::time::{Instant, sleep, timeout};

use super::support::{SLACK, ms, node, ok, valid};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// An hour-long period that started half an hour ago (by this host's clock), so the claims of
/// one test fall in the same period even against a store whose clock is minutes off. An hour
/// fits every store's limits (DynamoDB refuses periods longer than its TTL padding, 1 h by
/// default).
fn forever() -> Period {
    const HOUR_MS: u64 = 3_600_000;
    let now = u64::try_from(leasehold::store::epoch_ms(SystemTime::now())).unwrap_or_default();
    let offset = (now + HOUR_MS - HOUR_MS / 2) % HOUR_MS;
    let hourly = valid(Period::every(ms(HOUR_MS)), "an hourly period");
    valid(hourly.offset(ms(offset)), "an offset within the hour")
}

fn claim(lock: &LockName, owner: &str, period: Period, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), 1, owner, Token::random(), ttl).with_period(period)
}

/// Stores keep times at their own precision; compare loosely.
fn close(a: SystemTime, b: SystemTime) -> bool {
    a.duration_since(b)
        .or_else(|_| b.duration_since(a))
        .is_ok_and(|d| d <= ms(10))
}

#[track_caller]
fn granted(r: StoreResult<Acquisition>, what: &str) -> Lease {
    match r {
        Ok(Acquisition::Granted(lease)) => lease,
        Ok(other) => panic!("{what}: expected a grant, got {other:?}"),
        Err(e) => panic!("{what}: expected a grant, got error: {e}"),
    }
}

#[track_caller]
fn already_ran(r: StoreResult<Acquisition>, what: &str) -> PeriodRecord {
    match r {
        Ok(Acquisition::AlreadyRan(record)) => record,
        Ok(other) => panic!("{what}: expected AlreadyRan from the period ledger, got {other:?}"),
        Err(e) => panic!("{what}: a refusal by the ledger must be Ok(AlreadyRan), got error: {e}"),
    }
}

/// A claim for the period a grant was recorded for is refused with `AlreadyRan` carrying the
/// period, when (the grant's store time) and by whom — while the lease is held (the ledger wins
/// over contention) and after its release; the holder's retry with its own token still gets its
/// own lease back.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_same_period_is_refused(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-same");
    let period = forever();
    let req = claim(&lock, "period-a", period, ms(30_000));
    let lease = granted(a.try_acquire(&req).await, "the first claim of a period");
    assert_eq!(
        lease.period,
        Some(period.id_at(lease.acquired_at)),
        "a granted claim carries the period id of its store time: {lease:?}"
    );
    let again = granted(a.try_acquire(&req).await, "a retry with the holder's token");
    assert_eq!(
        (again.fence, again.period),
        (lease.fence, lease.period),
        "a retried claim must return its own grant"
    );

    let record = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a second claim while the first is held",
    );
    assert_eq!(record.period, lease.period.unwrap_or(i64::MIN));
    assert_eq!(
        record.by, "period-a",
        "the record names the owner it ran for"
    );
    assert!(
        close(record.at, lease.acquired_at),
        "the record's time is the grant's store time: {record:?} vs {lease:?}"
    );

    let released = ok(a.release(&lease, Duration::ZERO).await, "release");
    assert_eq!(released, Release::Released);
    let after = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim after the release",
    );
    assert_eq!(after, record, "the record survives release unchanged");
    let state = ok(b.state(&lock, 1).await, "state");
    assert!(
        state.is_free(),
        "a refused claim must not take the lock: {state:?}"
    );
}

/// The record survives expiry; plain acquisitions (no period) ignore and keep it.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_record_survives_expiry(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-expiry");
    let period = forever();
    let lease = granted(
        a.try_acquire(&claim(&lock, "period-a", period, ms(300)))
            .await,
        "the first claim",
    );
    sleep(ms(900)).await;
    let record = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(300)))
            .await,
        "a claim after the first lease expired",
    );
    assert_eq!(
        (record.period, record.by.as_str()),
        (lease.period.unwrap_or(i64::MIN), "period-a")
    );
    let plain = AcquireRequest::new(lock.clone(), 1, "plain", Token::random(), ms(300));
    // Some stores free an expired lease a little late (etcd rounds leases up to whole seconds).
    let deadline = Instant::now() + ms(3000) + SLACK;
    let plain = loop {
        match ok(
            b.try_acquire(&plain).await,
            "a plain acquisition of the lock",
        ) {
            Acquisition::Granted(lease) => break lease,
            Acquisition::Held if Instant::now() < deadline => sleep(ms(100)).await,
            other => {
                panic!("a plain acquisition of the expired lock: expected a grant, got {other:?}")
            }
        }
    };
    assert_eq!(plain.period, None, "a plain grant claims no period");
    assert!(plain.fence > lease.fence);
    ok(b.release(&plain, Duration::ZERO).await, "release");
    let still = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(300)))
            .await,
        "a claim after a plain grant",
    );
    assert_eq!(still, record, "plain grants leave the record as it was");
}

/// A claim for an earlier period than the recorded one is refused (the ledger only rises);
/// the next period is granted, with a higher period id.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_earlier_refused_next_granted(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("period-next");
    let second = valid(Period::every(ms(1000)), "1 s periods");
    let first = granted(
        store
            .try_acquire(&claim(&lock, "period-a", second, ms(30_000)))
            .await,
        "a claim of a 1 s period",
    );
    ok(store.release(&first, Duration::ZERO).await, "release");
    // The current hour's period id is far below the current 1 s period id.
    let earlier = already_ran(
        store
            .try_acquire(&claim(&lock, "period-b", forever(), ms(30_000)))
            .await,
        "a claim of an earlier period",
    );
    assert_eq!(earlier.period, first.period.unwrap_or(i64::MIN));

    // Keep claiming until the store's clock reaches the next second: every refusal names the
    // first period, and the grant is for a later one.
    let deadline = Instant::now() + ms(3000) + SLACK;
    let next = loop {
        match ok(
            store
                .try_acquire(&claim(&lock, "period-c", second, ms(30_000)))
                .await,
            "a claim of the next period",
        ) {
            Acquisition::Granted(lease) => break lease,
            Acquisition::AlreadyRan(r) => assert_eq!(r.period, earlier.period),
            other => panic!("the lock is free, expected a grant or AlreadyRan, got {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "the next 1 s period was never granted"
        );
        sleep(ms(50)).await;
    };
    assert!(
        next.period > first.period,
        "the next grant is for a later period: {next:?} after {first:?}"
    );
    assert!(next.fence > first.fence);
    ok(store.release(&next, Duration::ZERO).await, "release");
}

/// Concurrent claims of one period from several clients: exactly one is granted; afterwards
/// every claim is refused by the ledger.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_concurrent_claims_grant_once(factory: &dyn StoreFactory) {
    let lock = unique_name("period-race");
    let period = forever();
    let stores: Vec<_> = (0..8).map(|_| factory.make()).collect();
    let answers = join_all(stores.iter().enumerate().map(|(i, store)| {
        let req = claim(&lock, &format!("racer-{i}"), period, ms(30_000));
        async move { store.try_acquire(&req).await }
    }))
    .await;
    let mut grants = Vec::new();
    for answer in answers {
        match ok(answer, "a concurrent claim") {
            Acquisition::Granted(lease) => grants.push(lease),
            Acquisition::Held | Acquisition::AlreadyRan(_) => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(
        grants.len(),
        1,
        "exactly one concurrent claim is granted: {grants:?}"
    );
    let winner = &grants[0];
    ok(stores[0].release(winner, Duration::ZERO).await, "release");
    for (i, store) in stores.iter().enumerate() {
        let record = already_ran(
            store
                .try_acquire(&claim(&lock, &format!("late-{i}"), period, ms(30_000)))
                .await,
            "a claim after the race",
        );
        assert_eq!(record.by, winner.owner);
    }
}

/// `AlreadyRan` is not contention: an elector that would wait 10 s returns at once, with the
/// record, an `AlreadyRan` event, and without running the action — also while the lock is held.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_already_ran_stops_waiting(factory: &dyn StoreFactory) {
    let lock = unique_name("period-wait");
    let period = forever();
    let a = node(factory, "period-a", Duration::ZERO, ms(30_000));
    let first = ok(
        a.run_once_per(lock.as_str(), period, |ctx| async move {
            Ok::<_, std::convert::Infallible>(ctx.lease().period)
        })
        .await,
        "the first run",
    );
    let Some(Some(id)) = first.clone().value() else {
        panic!("the first run of a period must run with its period id, got {first:?}");
    };

    let b = node(factory, "period-b", ms(10_000), ms(30_000));
    let mut events = b.subscribe();
    let started = Instant::now();
    let ran = std::sync::atomic::AtomicBool::new(false);
    let second = ok(
        timeout(
            ms(10_000),
            b.run_once_per(lock.as_str(), period, |_| async {
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(None::<i64>)
            }),
        )
        .await
        .unwrap_or_else(|_| panic!("a refused period claim must not wait")),
        "the second run",
    );
    let record = second
        .already_ran()
        .unwrap_or_else(|| panic!("expected AlreadyRan, got {second:?}"))
        .clone();
    assert!(
        started.elapsed() < SLACK,
        "AlreadyRan must return at once, took {:?}",
        started.elapsed()
    );
    assert!(
        !ran.load(std::sync::atomic::Ordering::SeqCst),
        "the action must not run"
    );
    assert_eq!((record.period, record.by.as_str()), (id, "period-a"));
    let event = timeout(ms(1000), events.recv()).await;
    assert!(
        matches!(&event, Ok(Ok(Event::AlreadyRan { record: r, .. })) if *r == record),
        "an AlreadyRan event carries the record, got {event:?}"
    );

    // Held by a plain lease and already run: still AlreadyRan at once, not a 10 s wait.
    let held = ok(a.try_acquire(lock.as_str()).await, "a plain acquisition")
        .unwrap_or_else(|| panic!("the lock is free"));
    let started = Instant::now();
    let third = ok(
        b.run_once_per(lock.as_str(), period, |_| async {
            Ok::<_, std::convert::Infallible>(None::<i64>)
        })
        .await,
        "a run while held",
    );
    assert!(matches!(third, PeriodOutcome::AlreadyRan(_)), "{third:?}");
    assert!(started.elapsed() < SLACK);
    ok(held.release().await, "release");
}

/// A period claim on a lock of more than one slot is a typed, permanent error.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_needs_a_single_slot(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("period-slots");
    for slots in [0, 2] {
        let req = AcquireRequest::new(lock.clone(), slots, "period-a", Token::random(), ms(1000))
            .with_period(forever());
        match store.try_acquire(&req).await {
            Err(e) => {
                assert!(!e.is_transient(), "{e}");
                assert_eq!(
                    e.period(),
                    Some(&PeriodError::NeedsSingleSlot { slots }),
                    "the error carries PeriodError::NeedsSingleSlot: {e}"
                );
            }
            Ok(other) => panic!("a period claim with {slots} slots must fail, got {other:?}"),
        }
    }
    let state = ok(store.state(&lock, 2).await, "state");
    assert!(state.is_free());
}
