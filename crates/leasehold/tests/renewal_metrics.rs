//! The safety-margin metrics: renewal margins, the at-risk signal before `Lost`, client-go's
//! `leader_election_master_status`, the store clock offset, and the register of held leases
//! behind health checks. Paused tokio time on the memory store (behind the testkit's fault
//! wrapper where renewals must fail), except the clock offset, which compares with the wall clock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, Acquisition, ClockSource, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, LostReason, MemoryStore,
    metrics as m,
    store::{Extension, LockState, Release},
};
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use leasehold_testkit::unique_name;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::registry::{AtomicStorage, Registry};
use tokio::time::sleep;

const LEASE: Duration = Duration::from_secs(3);

fn elector(store: Arc<dyn LeaseStore>) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id("a")
        .wait(Duration::ZERO)
        .lease(LEASE)
        .auto_extend(true)
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

/// Runs `f` on a paused current-thread runtime with `recorder` as the metrics recorder.
fn paused<F: Future>(recorder: &Readings, f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(recorder, || rt.block_on(f))
}

/// A recorder on metrics-util's atomic registry, read at any moment without resetting anything
/// (the debugging recorder's snapshots reset gauges to 0, so a gauge that was set once and then
/// left alone could not be checked twice). Values are found by metric name and the value of the
/// metric's one label (`lock`, or `name` for client-go's gauge).
struct Readings(Registry<Key, AtomicStorage>);

impl Recorder for Readings {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.0
            .get_or_create_counter(key, |c| Counter::from_arc(Arc::clone(c)))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.0
            .get_or_create_gauge(key, |g| Gauge::from_arc(Arc::clone(g)))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.0
            .get_or_create_histogram(key, |h| Histogram::from_arc(Arc::clone(h)))
    }
}

impl Readings {
    fn new() -> Self {
        Self(Registry::atomic())
    }

    fn find<T>(
        handles: impl IntoIterator<Item = (Key, T)>,
        name: &str,
        lock: &LockName,
    ) -> Option<T> {
        handles.into_iter().find_map(|(key, handle)| {
            let labelled = key
                .labels()
                .any(|l| matches!(l.key(), "lock" | "name") && l.value() == lock.as_str());
            (key.name() == name && labelled).then_some(handle)
        })
    }

    fn counter(&self, name: &str, lock: &LockName) -> u64 {
        Self::find(self.0.get_counter_handles(), name, lock).map_or(0, |c| c.load(Ordering::SeqCst))
    }

    /// `None` when the gauge was never registered.
    fn gauge(&self, name: &str, lock: &LockName) -> Option<f64> {
        Self::find(self.0.get_gauge_handles(), name, lock)
            .map(|g| f64::from_bits(g.load(Ordering::SeqCst)))
    }

    fn samples(&self, name: &str, lock: &LockName) -> Vec<f64> {
        Self::find(self.0.get_histogram_handles(), name, lock)
            .map(|h| h.data())
            .unwrap_or_default()
    }
}

#[test]
fn each_renewal_records_the_time_left_to_the_local_deadline() {
    let seen = Readings::new();
    let lock = unique_name("margin");
    paused(&seen, async {
        let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
        let e = elector(store);
        let guard = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free lock");
        // Renewals every second; each is sent 1 s after the last, whose deadline was 2.7 s
        // (the lease less a tenth) after it was sent: 1.7 s left when the answer comes.
        sleep(Duration::from_millis(3500)).await;
        // A store that answers 800 ms late leaves 0.9 s; the next renewal is sent a period after
        // that answer, and answered 800 ms late again: 0.1 s left.
        faults.delay_answer(Op::Extend, Duration::from_millis(800));
        sleep(Duration::from_secs(4)).await;
        guard.release().await.unwrap();
    });
    let margins = seen.samples(m::RENEWAL_MARGIN_SECONDS, &lock);
    assert_eq!(
        margins.len() as u64,
        seen.counter(m::EXTENDED, &lock),
        "one margin per renewal: {margins:?}"
    );
    let near = |x: f64, want: f64| (x - want).abs() < 0.001;
    let want = [1.7, 1.7, 1.7, 0.9, 0.1];
    assert_eq!(margins.len(), want.len(), "{margins:?}");
    assert!(
        margins.iter().zip(want).all(|(&x, w)| near(x, w)),
        "{margins:?}"
    );
}

#[test]
fn the_at_risk_signal_is_counted_once_per_run_of_failures_and_cleared_by_recovery_or_loss() {
    let seen = Readings::new();
    let lock = unique_name("at-risk");
    paused(&seen, async {
        let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
        let e = elector(store);
        let guard = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free lock");
        assert_eq!(seen.gauge(m::AT_RISK, &lock), Some(0.0), "not at risk yet");
        for outage in 1..=2 {
            // Three failed renewals in a row (retried every 250 ms), then a success.
            faults.fail(Op::Extend, Fault::transient().times(3));
            sleep(Duration::from_millis(1100)).await;
            assert_eq!(seen.gauge(m::AT_RISK, &lock), Some(1.0), "outage {outage}");
            assert_eq!(
                seen.counter(m::RENEWAL_AT_RISK, &lock),
                outage,
                "once per run"
            );
            sleep(Duration::from_millis(1000)).await;
            assert!(!guard.is_lost(), "outage {outage} ridden out");
            assert_eq!(seen.gauge(m::AT_RISK, &lock), Some(0.0), "recovered");
        }
        faults.fail(Op::Extend, Fault::transient());
        assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
        assert_eq!(seen.counter(m::RENEWAL_AT_RISK, &lock), 3);
        assert_eq!(
            seen.gauge(m::AT_RISK, &lock),
            Some(0.0),
            "lost, not at risk"
        );
        guard.release().await.unwrap();
    });
}

#[test]
fn the_client_go_gauge_is_one_while_leading_and_zero_after_release_and_after_loss() {
    let seen = Readings::new();
    let lock = unique_name("master");
    paused(&seen, async {
        let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
        let e = elector(store);
        let status = || seen.gauge(m::MASTER_STATUS, &lock);

        let guard = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free lock");
        assert_eq!(status(), Some(1.0), "leading");
        sleep(Duration::from_secs(5)).await;
        assert_eq!(status(), Some(1.0), "still leading after renewals");
        guard.release().await.unwrap();
        assert_eq!(status(), Some(0.0), "released");

        let guard = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free again");
        assert_eq!(status(), Some(1.0), "leading again");
        faults.fail(Op::Extend, Fault::transient());
        assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
        assert_eq!(status(), Some(0.0), "lost, with the guard still held");
        assert_eq!(
            seen.gauge(m::ACTIVE, &lock),
            Some(1.0),
            "the guard is not released"
        );
        faults.heal(Op::Extend);
        guard.release().await.unwrap();
        assert_eq!(
            status(),
            Some(0.0),
            "released after the loss: no double count"
        );
    });
}

#[test]
fn two_holders_of_a_group_keep_the_gauge_at_one_until_both_are_gone() {
    let seen = Readings::new();
    let lock = unique_name("group");
    paused(&seen, async {
        let opts = ElectionOptions::builder()
            .wait(Duration::ZERO)
            .max_leaders(2)
            .build()
            .unwrap();
        let e = Elector::with_options(Arc::new(MemoryStore::new()), opts);
        let first = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("slot 0");
        let second = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("slot 1");
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(1.0));
        first.release().await.unwrap();
        assert_eq!(
            seen.gauge(m::MASTER_STATUS, &lock),
            Some(1.0),
            "slot 1 still held"
        );
        second.release().await.unwrap();
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(0.0));
    });
}

/// The gauge counts the lock's leases process-wide: across electors (each with its own metric
/// handles), also after the elector that first registered the lock is gone.
#[test]
fn holders_in_two_electors_keep_the_gauge_at_one_until_both_are_gone() {
    let seen = Readings::new();
    let lock = unique_name("shared");
    paused(&seen, async {
        let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
        let opts = ElectionOptions::builder()
            .wait(Duration::ZERO)
            .max_leaders(2)
            .build()
            .unwrap();
        let a = Elector::with_options(store.clone(), opts.clone());
        let b = Elector::with_options(store.clone(), opts.clone());
        let first = a
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("slot 0");
        let second = b
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("slot 1");
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(1.0));
        first.release().await.unwrap();
        drop(a);
        assert_eq!(
            seen.gauge(m::MASTER_STATUS, &lock),
            Some(1.0),
            "slot 1 still held by the other elector"
        );
        second.release().await.unwrap();
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(0.0));
        drop(b);
        // Every handle of the lock is gone; a new elector starts from a count of 0 again.
        let c = Elector::with_options(store, opts);
        let third = c.try_acquire(&lock).await.unwrap().elected().expect("free");
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(1.0));
        third.release().await.unwrap();
        assert_eq!(seen.gauge(m::MASTER_STATUS, &lock), Some(0.0));
    });
}

#[test]
fn held_leases_show_the_last_renewal_until_the_guard_is_released() {
    let seen = Readings::new();
    let lock = unique_name("held");
    paused(&seen, async {
        let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
        let e = elector(store);
        let other = e.reconfigured(e.options().clone());
        assert!(e.held_leases().is_empty());
        let guard = e
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free lock");
        let granted = e.held_leases();
        assert_eq!(granted.len(), 1);
        assert_eq!(
            (granted[0].lock.as_str(), granted[0].fence),
            (lock.as_str(), 1)
        );
        assert_eq!(granted[0].renewed_for, LEASE);
        assert_eq!(
            other.held_leases(),
            granted,
            "shared with reconfigured copies"
        );

        sleep(Duration::from_millis(2500)).await;
        let renewed = e.held_leases();
        assert_eq!(
            renewed[0].renewed_at - granted[0].renewed_at,
            Duration::from_secs(2),
            "renewed at 1 s and 2 s"
        );
        assert!(!renewed[0].renewal_failing && renewed[0].lost.is_none());

        faults.fail(Op::Extend, Fault::transient());
        sleep(Duration::from_millis(600)).await;
        let failing = e.held_leases();
        assert!(failing[0].renewal_failing);
        assert_eq!(failing[0].renewed_at, renewed[0].renewed_at);
        guard.lost().await;
        let lost = e.held_leases();
        assert_eq!(lost[0].lost, Some(LostReason::DeadlinePassed));
        assert!(lost[0].since_renewal() >= Duration::from_millis(2700));
        guard.release().await.unwrap();
        assert!(e.held_leases().is_empty());
    });
}

/// The memory store with its clock set `ahead` of this host's wall clock, declaring it the
/// store's own clock (as PostgreSQL and Redis do); every call goes to the memory store.
struct AheadClock(MemoryStore);

#[async_trait]
impl LeaseStore for AheadClock {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.0.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.0.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.0.release(lease, linger).await
    }
    async fn start_period(
        &self,
        lease: &Lease,
    ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
        self.0.start_period(lease).await
    }
    async fn period_record(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.0.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.0.state(lock, slots).await
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.0.force_release(lock, slots).await
    }
    fn clock_source(&self) -> ClockSource {
        ClockSource::Server
    }
    fn describe(&self) -> String {
        "memory, clock ahead".to_owned()
    }
}

/// Real time: the offset compares the store's clock with this host's wall clock.
#[test]
fn a_store_with_its_own_clock_reports_its_offset_and_others_report_none() {
    let seen = Readings::new();
    let (ahead, own) = (unique_name("clock-ahead"), unique_name("clock-own"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ahead_by = Duration::from_secs(5);
    metrics::with_local_recorder(&seen, || {
        rt.block_on(async {
            let server = elector(Arc::new(AheadClock(MemoryStore::with_clock_origin(
                SystemTime::now() + ahead_by,
            ))));
            let guard = server
                .try_acquire(&ahead)
                .await
                .unwrap()
                .elected()
                .expect("free");
            guard.extend(LEASE).await.unwrap();
            guard.release().await.unwrap();
            let client = elector(Arc::new(MemoryStore::new()));
            let guard = client
                .try_acquire(&own)
                .await
                .unwrap()
                .elected()
                .expect("free");
            guard.extend(LEASE).await.unwrap();
            guard.release().await.unwrap();
        });
    });
    let offset = seen
        .gauge(m::STORE_CLOCK_OFFSET_SECONDS, &ahead)
        .expect("recorded at the renewal");
    assert!((offset - 5.0).abs() < 0.5, "offset {offset}");
    assert_eq!(
        seen.gauge(m::STORE_CLOCK_OFFSET_SECONDS, &own),
        None,
        "the memory store's times are this host's clock: nothing to compare"
    );
}
