//! Quiet followers: with default options, a task waiting for a lock held elsewhere, on a store
//! whose release signal reaches every client, asks the store again only when the holder's lease
//! could end (or when the signal says it was released), and writes nothing meanwhile. Paused
//! tokio time on the memory store, behind a wrapper that makes it look like a store over a
//! network (not process-local) and counts the requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, Acquisition, ReleaseSignal, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release},
};
use tokio::time::{Instant, sleep};

/// The memory store as a store over a network would look: its refusals name no holder, it
/// counts attempts and state reads, and the expiries it reports are on this host's wall clock,
/// as a server's whose clock agrees with the host's would be. (The memory store's own clock
/// advances with paused tokio time, while `SystemTime::now()`, which the core compares expiries
/// with, advances with real time: mixed, a follower on a loaded machine would wake before the
/// expiry by the real time the test took so far, be refused and wait a whole lease again.)
struct Remote {
    inner: MemoryStore,
    /// The memory store's clock at `(tokio instant, store time)`.
    origin: (Instant, SystemTime),
    attempts: AtomicU64,
    reads: AtomicU64,
}

impl Remote {
    fn new() -> Arc<Self> {
        let origin = SystemTime::now();
        Arc::new(Self {
            inner: MemoryStore::with_clock_origin(origin),
            origin: (Instant::now(), origin),
            attempts: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        })
    }

    /// `at`, a time of the memory store's clock, on this host's wall clock.
    fn on_host_clock(&self, at: SystemTime) -> SystemTime {
        let store_now = self.origin.1 + (Instant::now() - self.origin.0);
        match at.duration_since(store_now) {
            Ok(ahead) => SystemTime::now() + ahead,
            Err(behind) => SystemTime::now() - behind.duration(),
        }
    }
    fn requests(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst) + self.reads.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl LeaseStore for Remote {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Ok(match self.inner.try_acquire(req).await? {
            Acquisition::Taken(_) => Acquisition::Taken(None),
            other => other,
        })
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
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
        self.reads.fetch_add(1, Ordering::SeqCst);
        let mut state = self.inner.state(lock, slots).await?;
        for holder in &mut state.holders {
            holder.acquired_at = self.on_host_clock(holder.acquired_at);
            holder.expires_at = self.on_host_clock(holder.expires_at);
        }
        Ok(state)
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }
    fn hands_off(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        "memory, as if remote".to_owned()
    }
}

const LEASE: Duration = Duration::from_secs(3);

fn elector(store: Arc<Remote>, wait: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .lease(LEASE)
        .wait(wait)
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

#[tokio::test(start_paused = true)]
async fn a_waiting_follower_asks_only_when_the_lease_could_end_and_wakes_on_release() {
    let store = Remote::new();
    let holder = elector(store.clone(), Duration::ZERO);
    let guard = holder
        .try_acquire("quiet")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let follower = elector(store.clone(), Duration::from_secs(120));
    let before = store.requests();
    let waiting = tokio::spawn(async move {
        let outcome = follower.try_acquire("quiet").await.unwrap();
        (
            Instant::now(),
            outcome.elected().expect("won after the release"),
        )
    });
    // 30 s of a held, renewed lease: the follower asks when the lease it saw could end, about
    // every two thirds of a lease (an attempt and a read each time).
    sleep(Duration::from_secs(30)).await;
    let waited = store.requests() - before;
    assert!(
        waited <= 2 * (30 / 2 + 2),
        "{waited} requests in 30 s of waiting; polling every 250 ms would be 120"
    );
    assert!(waited >= 2, "the follower tried at least once: {waited}");
    let released = Instant::now();
    guard.release().await.unwrap();
    let (won_at, won) = waiting.await.unwrap();
    assert!(
        won_at - released < Duration::from_millis(100),
        "the release signal woke the follower at once: {:?}",
        won_at - released
    );
    won.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_quiet_follower_takes_over_from_a_crashed_holder_within_the_lease() {
    let store = Remote::new();
    let crashed = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .lease(LEASE)
            .auto_extend(false)
            .build()
            .unwrap(),
    );
    let guard = crashed
        .try_acquire("crash")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let acquired = Instant::now();
    // The holder's process is gone: no renewal, no release.
    std::mem::forget(guard);
    let follower = elector(store.clone(), Duration::from_secs(60));
    let won = follower
        .try_acquire("crash")
        .await
        .unwrap()
        .elected()
        .expect("the lease ran out");
    let took = Instant::now() - acquired;
    assert!(
        took >= LEASE && took <= LEASE + Duration::from_millis(300),
        "taken over {took:?} after the crash; the lease is {LEASE:?}"
    );
    won.release().await.unwrap();
}
