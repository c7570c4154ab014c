//! The period ledger: a claim for the period containing the store's now is granted only if the
//! lock's latest claim was granted before the period's start, or never started (and its lease has
//! ended); decided by the store, by time, on its own clock.

use std::time::{Duration, SystemTime};

use futures::future::join_all;
use leasehold::store::{AcquireRequest, Acquisition, PeriodStart, StoreResult};
use leasehold::{
    Elector, Event, Lease, LeaseStore, LockName, Outcome, Period, PeriodRecord,
    error::PeriodError,
    limits::LET_GO_PATIENCE,
    store::{Extension, Release, Token},
};
use tokio::time::{Instant, sleep, timeout};

use super::support::{SLACK, ms, node, ok, options, valid};
use crate::factory::StoreFactory;
use crate::fault::{Fault, FaultyStore, Op};
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
        Ok(Acquisition::Elected(lease)) => lease,
        Ok(other) => panic!("{what}: expected a grant, got {other:?}"),
        Err(e) => panic!("{what}: expected a grant, got error: {e}"),
    }
}

/// A fresh lock named from `prefix`, acquired without a period (a plain lease of 30 s).
async fn plain_lease(store: &dyn LeaseStore, prefix: &str) -> (LockName, Lease) {
    let lock = unique_name(prefix);
    let req = AcquireRequest::new(lock.clone(), 1, "plain", Token::random(), ms(30_000));
    let lease = granted(store.try_acquire(&req).await, "a plain acquisition");
    (lock, lease)
}

/// Marks `lease`'s claim started, as the core does before the action runs.
async fn start(store: &dyn LeaseStore, lease: &Lease, what: &str) {
    let answer = ok(store.start_period(lease).await, what);
    assert_eq!(
        answer,
        PeriodStart::Started,
        "{what}: the holder's start must be recorded"
    );
}

/// A claim granted and started: what a run of a period leaves in the ledger.
async fn run_claim(store: &dyn LeaseStore, req: &AcquireRequest, what: &str) -> Lease {
    let lease = granted(store.try_acquire(req).await, what);
    start(store, &lease, what).await;
    lease
}

#[track_caller]
fn held(r: StoreResult<Acquisition>, what: &str) {
    match r {
        Ok(Acquisition::Taken(_)) => {}
        Ok(other) => {
            panic!("{what}: expected Held (a claim not yet started holds the lock), got {other:?}")
        }
        Err(e) => panic!("{what}: expected Held, got error: {e}"),
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

/// A claim for a period whose claim started is refused with `AlreadyRan` carrying the period,
/// its window, when (the grant's store time), by whom and *started* — while the lease is held
/// (the ledger wins over contention) and after its release. Before the holder started, another
/// claim finds the lock held (`Held`, not `AlreadyRan`). The holder's retry with its own token
/// still gets its own lease back.
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
    held(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a second claim while the first is held and not started",
    );
    let claimed = ok(b.period_record(&lock).await, "the record of a claim")
        .unwrap_or_else(|| panic!("a granted claim leaves a record"));
    assert!(
        !claimed.started,
        "a claim is not a run until it starts: {claimed:?}"
    );
    start(&*a, &lease, "the holder starts").await;
    start(&*a, &lease, "a retried start").await;

    let record = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a second claim while the first is held and started",
    );
    assert_eq!(record.period, lease.period.unwrap_or(i64::MIN));
    assert!(
        record.started,
        "the refusal says the period ran: {record:?}"
    );
    assert_eq!(
        record.by, "period-a",
        "the record names the owner it ran for"
    );
    assert!(
        close(record.at, lease.acquired_at),
        "the record's time is the grant's store time: {record:?} vs {lease:?}"
    );
    let id = record.period;
    assert_eq!(
        (record.from, record.until),
        (period.start_of(id), period.start_of(id + 1)),
        "the record carries the window claimed: {record:?}"
    );

    let released = ok(a.release(&lease, Duration::ZERO).await, "release");
    assert_eq!(released, Release::Released);
    let after = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim after the release",
    );
    assert_eq!(after, record, "the record survives release unchanged");
    assert_eq!(
        ok(b.period_record(&lock).await, "the record after the run"),
        Some(record),
        "period_record reads the same record"
    );
    let state = ok(b.state(&lock, 1).await, "state");
    assert!(
        state.is_free(),
        "a refused claim must not take the lock: {state:?}"
    );
    assert_eq!(
        ok(
            b.period_record(&unique_name("period-never")).await,
            "the record of a lock never claimed"
        ),
        None
    );
}

/// The record of a started claim survives expiry; plain acquisitions (no period) ignore and keep
/// it.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_record_survives_expiry(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-expiry");
    let period = forever();
    let lease = run_claim(
        &*a,
        &claim(&lock, "period-a", period, ms(300)),
        "the first claim",
    )
    .await;
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
            Acquisition::Elected(lease) => break lease,
            Acquisition::Taken(_) if Instant::now() < deadline => sleep(ms(100)).await,
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

/// A run counts for every period whose window contains (or ends after) the time it was granted,
/// whatever length it was claimed under: after a run claimed per second, a claim per hour is
/// refused for the hour; the next second's period is granted, with a higher period id.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_earlier_refused_next_granted(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("period-next");
    let second = valid(Period::every(ms(1000)), "1 s periods");
    let first = run_claim(
        &*store,
        &claim(&lock, "period-a", second, ms(30_000)),
        "a claim of a 1 s period",
    )
    .await;
    ok(store.release(&first, Duration::ZERO).await, "release");
    // The current hour contains the 1 s run.
    let earlier = already_ran(
        store
            .try_acquire(&claim(&lock, "period-b", forever(), ms(30_000)))
            .await,
        "an hourly claim after a run of this hour",
    );
    assert_eq!(earlier.period, first.period.unwrap_or(i64::MIN));
    assert_eq!(
        earlier.length(),
        ms(1000),
        "the record keeps the length it was claimed under"
    );

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
            Acquisition::Elected(lease) => break lease,
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
            Acquisition::Elected(lease) => grants.push(lease),
            Acquisition::Taken(_) | Acquisition::AlreadyRan(_) => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(
        grants.len(),
        1,
        "exactly one concurrent claim is granted: {grants:?}"
    );
    let winner = &grants[0];
    start(&*stores[0], winner, "the winner starts").await;
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
    let Some(Some(id)) = first.clone().elected() else {
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
        .elected()
        .unwrap_or_else(|| panic!("the lock is free"));
    let started = Instant::now();
    let third = ok(
        b.run_once_per(lock.as_str(), period, |_| async {
            Ok::<_, std::convert::Infallible>(None::<i64>)
        })
        .await,
        "a run while held",
    );
    assert!(matches!(third, Outcome::AlreadyRan(_)), "{third:?}");
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

/// Claims under `period` until the store grants one, within `limit`; every refusal must be
/// `AlreadyRan`. The grant.
async fn claim_until_granted(
    store: &dyn LeaseStore,
    lock: &LockName,
    period: Period,
    limit: Duration,
    what: &str,
) -> Lease {
    let deadline = Instant::now() + limit + SLACK;
    loop {
        match ok(
            store
                .try_acquire(&claim(lock, "period-c", period, ms(30_000)))
                .await,
            what,
        ) {
            Acquisition::Elected(lease) => return lease,
            Acquisition::AlreadyRan(_) => {}
            other => {
                panic!("{what}: the lock is free, expected a grant or AlreadyRan, got {other:?}")
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never granted within {limit:?}: a changed period must not refuse for ever"
        );
        sleep(ms(50)).await;
    }
}

/// A change of period length is judged by time, never by period numbers counted in another
/// unit: after a run claimed per 100 ms, a claim per second is refused only until the next
/// second starts (a bare period number, ten times larger, would refuse it for ever). The grant's
/// window starts after the recorded run.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_length_change_never_refuses_for_ever(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("period-length");
    let short = valid(Period::every(ms(100)), "100 ms periods");
    let first = run_claim(
        &*store,
        &claim(&lock, "period-a", short, ms(30_000)),
        "a run per 100 ms",
    )
    .await;
    ok(store.release(&first, Duration::ZERO).await, "release");
    let second = valid(Period::every(ms(1000)), "1 s periods");
    let next = claim_until_granted(&*store, &lock, second, ms(1000), "a claim per second").await;
    assert!(
        period_start(second, &next) > first.acquired_at
            || close(period_start(second, &next), first.acquired_at),
        "a 1 s period containing the 100 ms run must be refused: granted {next:?} after {first:?}"
    );
    assert_eq!(
        next.period,
        Some(second.id_at(next.acquired_at)),
        "the grant carries its own length's period id"
    );
    ok(store.release(&next, Duration::ZERO).await, "release");
}

fn period_start(period: Period, lease: &Lease) -> SystemTime {
    period.start_of(lease.period.unwrap_or(i64::MIN))
}

/// A changed offset never skips a period: a claim whose window starts after the recorded run is
/// granted at once, although its period id is the one that ran under the old offset.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_offset_change_skips_no_period(factory: &dyn StoreFactory) {
    const HOUR_MS: u64 = 3_600_000;
    let store = factory.make();
    let lock = unique_name("period-offset");
    let first = run_claim(
        &*store,
        &claim(&lock, "period-a", forever(), ms(30_000)),
        "an hourly run",
    )
    .await;
    ok(store.release(&first, Duration::ZERO).await, "release");
    // Hours that start 300 ms after the run, by the store's clock.
    let ran_ms = u64::try_from(leasehold::store::epoch_ms(first.acquired_at)).unwrap_or_default();
    let hourly = valid(Period::every(ms(HOUR_MS)), "an hourly period");
    let shifted = valid(hourly.offset(ms((ran_ms + 300) % HOUR_MS)), "a new offset");
    sleep(ms(600)).await;
    let next = granted(
        store
            .try_acquire(&claim(&lock, "period-b", shifted, ms(30_000)))
            .await,
        "an hour that starts after the last run",
    );
    assert!(
        period_start(shifted, &next) > first.acquired_at,
        "the granted window starts after the run: {next:?} after {first:?}"
    );
    ok(store.release(&next, Duration::ZERO).await, "release");
}

/// A claim is not a run: one whose holder never started is taken over by the next claim of the
/// same period once its lease ends — released or expired — with a higher fence; the record then
/// names the new holder, not started. The old holder can no longer start.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_unstarted_claim_is_taken_over(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-takeover");
    let period = forever();
    let first = granted(
        a.try_acquire(&claim(&lock, "period-a", period, ms(30_000)))
            .await,
        "a claim that will never start",
    );
    held(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim while the first is held and not started",
    );
    ok(
        a.release(&first, Duration::ZERO).await,
        "the first holder lets go",
    );
    let second = granted(
        b.try_acquire(&claim(&lock, "period-b", period, ms(300)))
            .await,
        "a claim after an unstarted claim was released",
    );
    assert!(second.fence > first.fence, "{second:?} after {first:?}");
    assert_eq!(second.period, first.period, "the same period");
    assert_eq!(
        ok(
            a.start_period(&first).await,
            "the first holder's late start"
        ),
        PeriodStart::NotHeld,
        "a released claim can no longer start"
    );
    let record = ok(a.period_record(&lock).await, "the record")
        .unwrap_or_else(|| panic!("a claim leaves a record"));
    assert_eq!(
        (record.by.as_str(), record.started),
        ("period-b", false),
        "the record names the new claim: {record:?}"
    );
    // The second one never starts either; its lease expires.
    let deadline = Instant::now() + ms(3000) + SLACK;
    let third = loop {
        match ok(
            a.try_acquire(&claim(&lock, "period-c", period, ms(30_000)))
                .await,
            "a claim after an unstarted claim expired",
        ) {
            Acquisition::Elected(lease) => break lease,
            Acquisition::Taken(_) if Instant::now() < deadline => sleep(ms(100)).await,
            other => panic!("an expired, unstarted claim must be taken over, got {other:?}"),
        }
    };
    assert!(third.fence > second.fence);
    start(&*a, &third, "the third holder starts").await;
    ok(a.release(&third, Duration::ZERO).await, "release");
    let record = already_ran(
        b.try_acquire(&claim(&lock, "period-d", period, ms(30_000)))
            .await,
        "a claim after the period ran",
    );
    assert_eq!((record.by.as_str(), record.started), ("period-c", true));
}

/// A claim that never started hides no earlier run: after a run of this hour, a claim of a
/// 1 ms period (granted: its window starts after the run) that never starts and is released
/// leaves the hour still run — an hourly claim is refused with a record that names the
/// unstarted claim and, as its [`last_run`](PeriodRecord::last_run), the hour's run. (A ledger
/// that kept only the latest claim would run the hour twice: a period length change and a lost
/// answer together, as in a rolling deploy.)
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_unstarted_claim_hides_no_earlier_run(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-hidden");
    let hour = forever();
    let run = run_claim(
        &*a,
        &claim(&lock, "period-a", hour, ms(30_000)),
        "a run of this hour",
    )
    .await;
    ok(a.release(&run, Duration::ZERO).await, "the run ends");
    // A 1 ms period claimed later: its window starts after the run, so the run does not count.
    let short = valid(Period::every(ms(1)), "1 ms periods");
    let deadline = Instant::now() + ms(3000) + SLACK;
    let unstarted = loop {
        sleep(ms(5)).await;
        match ok(
            b.try_acquire(&claim(&lock, "period-b", short, ms(30_000)))
                .await,
            "a claim of a 1 ms period after the run",
        ) {
            Acquisition::Elected(lease) => break lease,
            // Within the millisecond of the run (a store clock of coarse grain): the next one.
            Acquisition::AlreadyRan(_) if Instant::now() < deadline => {}
            other => panic!("a 1 ms period after the run must be granted, got {other:?}"),
        }
    };
    // Its holder never starts (its answer was lost, say) and lets go.
    ok(
        b.release(&unstarted, Duration::ZERO).await,
        "the unstarted claim is released",
    );
    let record = already_ran(
        a.try_acquire(&claim(&lock, "period-c", hour, ms(30_000)))
            .await,
        "an hourly claim after an unstarted claim of a shorter period",
    );
    assert_eq!(
        (record.by.as_str(), record.started),
        ("period-b", false),
        "the record is the latest claim, not started: {record:?}"
    );
    assert!(
        record.last_run().is_some_and(|r| close(r, run.acquired_at)),
        "the record keeps the run's grant as its last run: {record:?} after {run:?}"
    );
    assert_eq!(
        ok(a.period_record(&lock).await, "the record"),
        Some(record),
        "period_record reads the same record"
    );
    let state = ok(a.state(&lock, 1).await, "state");
    assert!(
        state.is_free(),
        "a refused claim must not take the lock: {state:?}"
    );
}

/// `start_period` is token-checked: a stranger's token, a plain lease (no claim) and a released
/// lease answer `NotHeld` and change nothing.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_start_checks_the_token(factory: &dyn StoreFactory) {
    let store = factory.make();
    let lock = unique_name("period-start");
    let lease = granted(
        store
            .try_acquire(&claim(&lock, "period-a", forever(), ms(30_000)))
            .await,
        "a claim",
    );
    let mut stranger = lease.clone();
    stranger.token = Token::random();
    assert_eq!(
        ok(store.start_period(&stranger).await, "a stranger's start"),
        PeriodStart::NotHeld
    );
    let record = ok(store.period_record(&lock).await, "the record");
    assert!(
        record.is_some_and(|r| !r.started),
        "a stranger cannot start the claim"
    );
    ok(store.release(&lease, Duration::ZERO).await, "release");
    assert_eq!(
        ok(store.start_period(&lease).await, "a start after release"),
        PeriodStart::NotHeld
    );
    let (plain_lock, plain) = plain_lease(store.as_ref(), "period-start-plain").await;
    assert_eq!(
        ok(store.start_period(&plain).await, "a plain lease's start"),
        PeriodStart::NotHeld,
        "a lease that claimed no period has nothing to start"
    );
    assert_eq!(ok(store.period_record(&plain_lock).await, "record"), None);
    ok(store.release(&plain, Duration::ZERO).await, "release");
}

/// An answer lost never skips a period everywhere: when the store applies a claim but its answer
/// is lost (the fault wrapper drops it), that elector fails without running and lets go of the
/// lease, and another elector then runs the period; the start's lost answer is retried, so the
/// run still happens.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_lost_claim_answer_still_runs(factory: &dyn StoreFactory) {
    let lock = unique_name("period-lost-answer");
    let period = forever();
    let (faulty, faults) = FaultyStore::new(factory.make());
    let a = Elector::with_options(
        faulty,
        valid(
            options("period-a", Duration::ZERO, ms(30_000)).build(),
            "options",
        ),
    );
    faults.fail(Op::TryAcquire, Fault::transient().times(1).after_apply());
    let lost = a
        .run_once_per(lock.as_str(), period, |_| async {
            Ok::<_, std::convert::Infallible>("a")
        })
        .await;
    assert!(lost.is_err(), "the claim's answer was dropped: {lost:?}");
    assert!(
        timeout(LET_GO_PATIENCE + SLACK, a.settled()).await.is_ok(),
        "the claim in doubt is let go within LET_GO_PATIENCE"
    );
    let record = ok(a.store().period_record(&lock).await, "the record");
    assert!(
        record.as_ref().is_some_and(|r| !r.started),
        "a claim whose answer was lost is not a run: {record:?}"
    );

    let (faulty, faults) = FaultyStore::new(factory.make());
    let b = Elector::with_options(
        faulty,
        valid(
            options("period-b", Duration::ZERO, ms(30_000)).build(),
            "options",
        ),
    );
    faults.fail(Op::StartPeriod, Fault::transient().times(1).after_apply());
    let ran = ok(
        b.run_once_per(lock.as_str(), period, |_| async {
            Ok::<_, std::convert::Infallible>("b")
        })
        .await,
        "another node's run of the period",
    );
    assert_eq!(ran, Outcome::Elected("b"), "the period still runs");
    let record = ok(b.store().period_record(&lock).await, "the record")
        .unwrap_or_else(|| panic!("a run leaves a record"));
    assert_eq!((record.by.as_str(), record.started), ("period-b", true));
    let again = ok(
        a.run_once_per(lock.as_str(), period, |_| async {
            Ok::<_, std::convert::Infallible>("a")
        })
        .await,
        "a claim after the run",
    );
    assert!(matches!(again, Outcome::AlreadyRan(_)), "{again:?}");
}

/// The record `clear_period_ledger` returns and deletes: `None` (nothing changed) for a lock
/// never claimed, and for a lock only ever held without a period — whose plain lease stays.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_clear_without_a_record_is_none(factory: &dyn StoreFactory) {
    let store = factory.make();
    let never = unique_name("period-clear-never");
    assert_eq!(
        ok(
            store.clear_period_ledger(&never).await,
            "a clear of a lock never claimed"
        ),
        None,
        "a lock never claimed has no record to clear"
    );
    assert_eq!(ok(store.period_record(&never).await, "the record"), None);

    let (plain_lock, plain) = plain_lease(store.as_ref(), "period-clear-plain").await;
    assert_eq!(
        ok(
            store.clear_period_ledger(&plain_lock).await,
            "a clear of a lock held without a period"
        ),
        None
    );
    let state = ok(store.state(&plain_lock, 1).await, "state");
    assert_eq!(
        state.holders.first().map(|h| (h.fence, h.owner.as_str())),
        Some((plain.fence, "plain")),
        "a clear leaves a plain lease alone: {state:?}"
    );
    assert_eq!(
        ok(store.release(&plain, Duration::ZERO).await, "release"),
        Release::Released
    );
}

/// After a run, `clear_period_ledger` returns the record as `period_record` read it and deletes
/// it: `period_record` is then `None`, a second clear finds nothing, and a new claim of the same
/// period is granted (the period runs again), with a higher fence, and recorded afresh.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_clear_lets_the_period_run_again(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-clear-again");
    let period = forever();
    let first = run_claim(
        &*a,
        &claim(&lock, "period-a", period, ms(30_000)),
        "a run of the period",
    )
    .await;
    ok(a.release(&first, Duration::ZERO).await, "the run ends");
    let ran = already_ran(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim after the run",
    );
    let read = ok(b.period_record(&lock).await, "the record before the clear");
    assert_eq!(read.as_ref(), Some(&ran), "period_record reads the record");

    let cleared = ok(b.clear_period_ledger(&lock).await, "the clear");
    assert_eq!(
        cleared, read,
        "the clear returns the record it deleted, as it was"
    );
    assert!(
        cleared
            .as_ref()
            .is_some_and(|r| r.started && r.by == "period-a"),
        "{cleared:?}"
    );
    assert_eq!(
        ok(a.period_record(&lock).await, "the record after the clear"),
        None,
        "the record is gone"
    );
    assert_eq!(
        ok(a.clear_period_ledger(&lock).await, "a second clear"),
        None,
        "a second clear finds nothing"
    );

    let again = run_claim(
        &*b,
        &claim(&lock, "period-b", period, ms(30_000)),
        "a claim of the same period after the clear",
    )
    .await;
    assert_eq!(again.period, first.period, "the same period runs again");
    assert!(
        again.fence > first.fence,
        "the fence keeps rising across a clear: {again:?} after {first:?}"
    );
    let record = ok(b.period_record(&lock).await, "the new record")
        .unwrap_or_else(|| panic!("the new claim leaves a record"));
    assert_eq!(
        (record.by.as_str(), record.started),
        ("period-b", true),
        "{record:?}"
    );
    assert!(
        close(record.at, again.acquired_at),
        "the new record is the new claim's: {record:?} vs {again:?}"
    );
    ok(b.release(&again, Duration::ZERO).await, "release");
    already_ran(
        a.try_acquire(&claim(&lock, "period-a", period, ms(30_000)))
            .await,
        "a claim after the second run",
    );
}

/// A clear changes nothing but the record: the live holder of the lock (whose claim ran) still
/// holds it with the same fence, extends and releases it; a claim meanwhile finds the lock held
/// (`Held`, no longer `AlreadyRan`); and the next grant's fence is above the holder's. A holder
/// whose claim had not started when its record was cleared can no longer start it.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_clear_keeps_the_live_lease(factory: &dyn StoreFactory) {
    let (a, b) = (factory.make(), factory.make());
    let lock = unique_name("period-clear-live");
    let period = forever();
    let holder = run_claim(
        &*a,
        &claim(&lock, "period-a", period, ms(30_000)),
        "a run of the period",
    )
    .await;
    let cleared = ok(b.clear_period_ledger(&lock).await, "a clear while held")
        .unwrap_or_else(|| panic!("a run leaves a record to clear"));
    assert_eq!(
        (cleared.by.as_str(), cleared.started),
        ("period-a", true),
        "{cleared:?}"
    );
    let state = ok(b.state(&lock, 1).await, "state after the clear");
    assert_eq!(
        state.holders.first().map(|h| (h.fence, h.owner.as_str())),
        Some((holder.fence, "period-a")),
        "the holder still holds the lock with its fence: {state:?}"
    );
    held(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim while the holder still holds the lock",
    );
    match ok(
        a.extend(&holder, ms(30_000)).await,
        "the holder extends after the clear",
    ) {
        Extension::Extended { .. } => {}
        Extension::NotHeld => panic!("a clear must not take the lease from its holder"),
    }
    assert_eq!(
        ok(
            a.release(&holder, Duration::ZERO).await,
            "the holder releases"
        ),
        Release::Released,
        "the holder still held its lease"
    );
    let next = granted(
        b.try_acquire(&claim(&lock, "period-b", period, ms(30_000)))
            .await,
        "a claim of the same period once the holder let go",
    );
    assert!(
        next.fence > holder.fence,
        "a grant after a clear gets a higher fence: {next:?} after {holder:?}"
    );
    // `next` has not started: a clear now leaves it nothing to start.
    let unstarted = ok(b.clear_period_ledger(&lock).await, "a clear of a claim")
        .unwrap_or_else(|| panic!("a claim leaves a record"));
    assert_eq!(
        (unstarted.by.as_str(), unstarted.started),
        ("period-b", false),
        "{unstarted:?}"
    );
    assert_eq!(
        ok(
            b.start_period(&next).await,
            "a start after its claim was cleared"
        ),
        PeriodStart::NotHeld,
        "a claim cleared before it started cannot start"
    );
    let state = ok(a.state(&lock, 1).await, "state");
    assert_eq!(
        state.holders.first().map(|h| h.fence),
        Some(next.fence),
        "its lease is still held: {state:?}"
    );
    ok(b.release(&next, Duration::ZERO).await, "release");
    let last = granted(
        a.try_acquire(&claim(&lock, "period-c", period, ms(30_000)))
            .await,
        "a claim after the unstarted claim was cleared and released",
    );
    assert!(last.fence > next.fence, "{last:?} after {next:?}");
    start(&*a, &last, "the last claim starts").await;
    ok(a.release(&last, Duration::ZERO).await, "release");
}

/// A clear deletes one lock's record only: the records of other locks — including names that
/// share a prefix with it (`x`, `x.b`, `x/b`) — stay as they were and still refuse their period.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn period_clear_leaves_other_locks_alone(factory: &dyn StoreFactory) {
    let store = factory.make();
    let period = forever();
    let base = unique_name("period-clear-one");
    let locks: Vec<LockName> = ["", ".b", "/b", ":1"]
        .iter()
        .map(|suffix| {
            valid(
                LockName::new(format!("{}{suffix}", base.as_str())),
                "a lock name",
            )
        })
        .collect();
    let mut records = Vec::new();
    for lock in &locks {
        let lease = run_claim(
            &*store,
            &claim(lock, "period-a", period, ms(30_000)),
            "a run of each lock",
        )
        .await;
        ok(store.release(&lease, Duration::ZERO).await, "release");
        records.push(
            ok(store.period_record(lock).await, "its record")
                .unwrap_or_else(|| panic!("a run leaves a record on {lock}")),
        );
    }
    let (cleared, others) = locks.split_first().unwrap_or_else(|| panic!("four locks"));
    assert_eq!(
        ok(
            store.clear_period_ledger(cleared).await,
            "the clear of one lock"
        ),
        records.first().cloned()
    );
    assert_eq!(ok(store.period_record(cleared).await, "its record"), None);
    for (lock, record) in others.iter().zip(records.iter().skip(1)) {
        assert_eq!(
            ok(store.period_record(lock).await, "another lock's record").as_ref(),
            Some(record),
            "clearing {cleared} must leave {lock}'s record alone"
        );
        let refused = already_ran(
            store
                .try_acquire(&claim(lock, "period-b", period, ms(30_000)))
                .await,
            "a claim of another lock after the clear",
        );
        assert_eq!(&refused, record, "{lock} still ran");
    }
    let again = granted(
        store
            .try_acquire(&claim(cleared, "period-b", period, ms(30_000)))
            .await,
        "a claim of the cleared lock",
    );
    ok(store.release(&again, Duration::ZERO).await, "release");
}
