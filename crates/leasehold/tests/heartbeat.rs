//! One heartbeat per elector: on a store that renews in batches, every lease an elector holds
//! renews on the same beat, in one request, so the requests per second do not grow with the
//! number of leases held. Paused tokio time on the memory store, behind a wrapper that counts
//! the requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release},
};
use leasehold_testkit::unique_name;
use tokio::time::sleep;

/// The memory store, counting renewal requests; `batches` says whether it renews in batches.
struct Counting {
    inner: MemoryStore,
    batches: bool,
    extends: AtomicU64,
    batch_requests: AtomicU64,
    batched_leases: AtomicU64,
    /// How many more batches fail with a transient error (as an unreachable store would).
    failing_batches: AtomicU64,
}

impl Counting {
    fn new(batches: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::new(),
            batches,
            extends: AtomicU64::new(0),
            batch_requests: AtomicU64::new(0),
            batched_leases: AtomicU64::new(0),
            failing_batches: AtomicU64::new(0),
        })
    }

    /// Renewal requests so far: each `extend_many` counts once, each lone `extend` once.
    fn requests(&self) -> u64 {
        self.extends.load(Ordering::SeqCst) + self.batch_requests.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl LeaseStore for Counting {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.inner.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.extends.fetch_add(1, Ordering::SeqCst);
        self.inner.extend(lease, ttl).await
    }
    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        self.batch_requests.fetch_add(1, Ordering::SeqCst);
        self.batched_leases
            .fetch_add(leases.len() as u64, Ordering::SeqCst);
        let failing = self
            .failing_batches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return leasehold::store::answer_each(
                Err(leasehold::store::StoreError::transient("connection reset")),
                leases.len(),
            );
        }
        self.inner.extend_many(leases).await
    }
    fn renews_in_batches(&self) -> bool {
        self.batches
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }
    async fn start_period(&self, lease: &Lease) -> StoreResult<leasehold::store::PeriodStart> {
        self.inner.start_period(lease).await
    }
    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }
    fn describe(&self) -> String {
        "memory, counted".to_owned()
    }
}

const LEASE: Duration = Duration::from_secs(3);

/// Holds `n` leases (default options: auto-extension on) for `hold`, acquired over the first
/// second; the renewal requests sent while holding, and whether any lease was lost.
async fn hold(store: Arc<Counting>, n: usize, hold: Duration) -> (u64, bool) {
    let elector = Elector::with_options(
        store.clone(),
        ElectionOptions::builder().lease(LEASE).build().unwrap(),
    );
    let mut guards = Vec::new();
    for _ in 0..n {
        let guard = elector
            .try_acquire(&unique_name("beat"))
            .await
            .unwrap()
            .elected()
            .expect("a fresh lock is free");
        guards.push(guard);
        // Acquisitions spread over the first second, as a real process's would be.
        sleep(Duration::from_secs(1) / n as u32).await;
    }
    sleep(hold).await;
    let lost = guards.iter().any(|g| g.is_lost());
    let requests = store.requests();
    for guard in guards {
        assert_eq!(guard.release().await.unwrap(), Release::Released);
    }
    (requests, lost)
}

#[tokio::test(start_paused = true)]
async fn renewals_of_many_leases_cost_one_request_per_beat() {
    let hold_for = Duration::from_secs(30);
    let mut counts = Vec::new();
    for n in [1, 100, 1_000] {
        let store = Counting::new(true);
        let (requests, lost) = hold(store.clone(), n, hold_for).await;
        assert!(!lost, "{n} leases: none may be lost");
        assert_eq!(
            store.extends.load(Ordering::SeqCst),
            0,
            "{n} leases: no lone renewals"
        );
        assert!(
            store.batched_leases.load(Ordering::SeqCst) >= (n as u64) * 25,
            "{n} leases: each renewed about once a second"
        );
        counts.push((n, requests));
    }
    // One beat a second (a third of the lease) for 31 s, plus at most one more request per
    // beat for leases acquired during the first second: flat in the number of leases.
    for (n, requests) in &counts {
        assert!(
            (28..=40).contains(requests),
            "{n} leases: {requests} renewal requests in 31 s; expected one per beat"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_without_batches_renews_each_lease_alone() {
    let store = Counting::new(false);
    let (requests, lost) = hold(store.clone(), 10, Duration::from_secs(30)).await;
    assert!(!lost);
    assert_eq!(store.batch_requests.load(Ordering::SeqCst), 0);
    // Ten leases, each renewed once a second for about 30 s.
    assert!((280..=320).contains(&requests), "{requests}");
}

/// A beat whose request fails is a failed renewal for every lease it carried: each is retried
/// until its own deadline, and a store that answers again in time loses none of them; one that
/// stays away past the deadline loses every one, at its deadline, before the store could grant
/// the lock again.
#[tokio::test(start_paused = true)]
async fn a_failed_beat_is_retried_by_each_lease_until_its_deadline() {
    let store = Counting::new(true);
    let elector = Elector::with_options(
        store.clone(),
        ElectionOptions::builder().lease(LEASE).build().unwrap(),
    );
    let mut guards = Vec::new();
    for _ in 0..20 {
        guards.push(
            elector
                .try_acquire(&unique_name("beat-fail"))
                .await
                .unwrap()
                .elected()
                .expect("free"),
        );
    }
    // Two beats' worth of failures (the retries come every quarter period): recovered in time.
    store.failing_batches.store(6, Ordering::SeqCst);
    sleep(Duration::from_secs(5)).await;
    assert_eq!(
        store.failing_batches.load(Ordering::SeqCst),
        0,
        "the renewals met every failure"
    );
    assert!(
        guards.iter().all(|g| !g.is_lost()),
        "a store that answers again before the deadline loses no lease"
    );
    // Now it stays away.
    store.failing_batches.store(u64::MAX, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    for guard in &guards {
        assert_eq!(guard.lost().await, leasehold::LostReason::DeadlinePassed);
    }
    assert!(
        started.elapsed() < LEASE,
        "every lease is lost by its local deadline, within a lease of the last renewal"
    );
    store.failing_batches.store(0, Ordering::SeqCst);
    for guard in guards {
        let _ = guard.release().await;
    }
}
