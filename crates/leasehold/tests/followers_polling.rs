//! Quiet followers on stores whose release signal does not reach other processes (MySQL/MariaDB,
//! DynamoDB): with default options a waiting task asks the store at most once per
//! `max(1 s, lease / 3)`, sooner only when a refusal names a holder whose lease ends first, never
//! past its `wait`; a release in its own process still wakes it at once.
//!
//! Paused tokio time on one memory store seen through two wrappers, each standing for one
//! process: a wrapper's signal reaches only the releases made through it
//! ([`SignalReach::ThisClient`]), and it counts the requests sent through it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, ReleaseNotifier, ReleaseSignal, SignalReach, StoreResult,
};
use leasehold::{
    ElectionOptions, Elector, Holder, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release},
};
use tokio::time::{Instant, sleep};

/// The store as one process sees it.
struct Process {
    inner: Arc<MemoryStore>,
    /// When the memory store's clock started, by tokio's clock and by its own.
    epoch: (Instant, SystemTime),
    /// This process's fan-out of its own releases.
    notifier: ReleaseNotifier,
    /// Whether a refusal names the holder (as the memory store's do) or not (as SQL's).
    names_holder: bool,
    /// How long the store keeps a lock past the expiry its refusals name (DynamoDB's and
    /// ZooKeeper's clock-skew tolerance); zero for the memory store itself.
    tolerance: Duration,
    /// Whether its signal stands for one that reaches every client (a watch).
    every_client: bool,
    attempts: AtomicU64,
    reads: AtomicU64,
}

/// One memory store, and the tokio instant and wall time its clock started from.
fn shared_store() -> (Arc<MemoryStore>, (Instant, SystemTime)) {
    let epoch = (Instant::now(), SystemTime::now());
    (Arc::new(MemoryStore::with_clock_origin(epoch.1)), epoch)
}

impl Process {
    fn new(store: &(Arc<MemoryStore>, (Instant, SystemTime)), names_holder: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::clone(&store.0),
            epoch: store.1,
            notifier: ReleaseNotifier::default(),
            names_holder,
            tolerance: Duration::ZERO,
            every_client: false,
            attempts: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        })
    }

    /// A process of a store that names holders and keeps a lock `tolerance` past the expiry it
    /// names, with a signal that reaches every client or not.
    fn tolerant(
        store: &(Arc<MemoryStore>, (Instant, SystemTime)),
        tolerance: Duration,
        every_client: bool,
    ) -> Arc<Self> {
        Arc::new(Self {
            tolerance,
            every_client,
            ..Arc::into_inner(Self::new(store, true)).unwrap()
        })
    }

    fn requests(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst) + self.reads.load(Ordering::SeqCst)
    }

    /// `holder` with its expiry on this host's wall clock: the memory store's clock runs with
    /// paused tokio time, the host's does not.
    fn on_host_clock(&self, mut holder: Holder) -> Holder {
        let store_now = self.epoch.1 + (Instant::now() - self.epoch.0);
        let left = holder
            .expires_at
            .duration_since(store_now)
            .unwrap_or_default();
        holder.expires_at = SystemTime::now() + left - self.tolerance;
        holder
    }
}

#[async_trait]
impl LeaseStore for Process {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Ok(match self.inner.try_acquire(req).await? {
            Acquisition::Taken(holder) if self.names_holder => {
                Acquisition::Taken(holder.map(|h| self.on_host_clock(h)))
            }
            Acquisition::Taken(_) => Acquisition::Taken(None),
            other => other,
        })
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let released = self.inner.release(lease, linger).await?;
        self.notifier.notify(&lease.lock);
        Ok(released)
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
        self.inner.state(lock, slots).await
    }
    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        let signal = self.notifier.subscribe(lock);
        assert_eq!(signal.reach(), SignalReach::ThisClient);
        Some(signal.reaching_every_client_if(self.every_client))
    }
    fn expiry_tolerance(&self) -> Duration {
        self.tolerance
    }
    fn describe(&self) -> String {
        "memory, as one process of several sees it".to_owned()
    }
}

const LEASE: Duration = Duration::from_secs(3);
/// `max(1 s, LEASE / 3)`.
const INTERVAL: Duration = Duration::from_secs(1);
/// What a wake-up may take on paused time: one attempt.
const PROMPTLY: Duration = Duration::from_millis(50);

fn elector(store: Arc<Process>, lease: Duration, wait: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .lease(lease)
        .wait(wait)
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

/// A holder whose process is gone (no renewal, no release), elected at the returned instant.
async fn crashed_holder(process: Arc<Process>, lease: Duration, lock: &str) -> Instant {
    let crashed = Elector::with_options(
        process,
        ElectionOptions::builder()
            .lease(lease)
            .auto_extend(false)
            .build()
            .unwrap(),
    );
    let guard = crashed.try_acquire(lock).await.unwrap().elected().unwrap();
    let acquired = Instant::now();
    std::mem::forget(guard);
    acquired
}

#[tokio::test(start_paused = true)]
async fn followers_without_a_signal_ask_once_a_third_of_the_lease() {
    const FOLLOWERS: u64 = 8;
    const WATCHED: Duration = Duration::from_secs(30);
    let store = shared_store();
    let (holding, following) = (Process::new(&store, false), Process::new(&store, false));
    let guard = elector(holding.clone(), LEASE, Duration::ZERO)
        .try_acquire("poll")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let mut waiting = tokio::task::JoinSet::new();
    for _ in 0..FOLLOWERS {
        let follower = elector(following.clone(), LEASE, Duration::from_secs(300));
        waiting.spawn(async move {
            let won = follower
                .try_acquire("poll")
                .await
                .unwrap()
                .elected()
                .unwrap();
            (Instant::now(), won)
        });
    }
    sleep(WATCHED).await;
    let per_second = following.requests() as f64 / FOLLOWERS as f64 / WATCHED.as_secs_f64();
    assert!(
        per_second <= 1.5,
        "{per_second:.2} requests per follower per second; the cap is one per {INTERVAL:?}"
    );
    assert!(
        per_second >= 0.5,
        "the followers still poll: {per_second:.2} requests per follower per second"
    );
    assert!(!guard.is_lost(), "the holder renewed throughout");

    // Released by the other process: unseen until the next poll, at most an interval later.
    let released = Instant::now();
    guard.release().await.unwrap();
    let (won_at, won) = waiting.join_next().await.unwrap().unwrap();
    assert!(
        won_at - released <= INTERVAL + PROMPTLY,
        "a release in another process is seen within an interval: {:?}",
        won_at - released
    );
    // Released in the followers' own process: the next one wakes at once.
    let released = Instant::now();
    won.release().await.unwrap();
    let (won_at, won) = waiting.join_next().await.unwrap().unwrap();
    assert!(
        won_at - released <= PROMPTLY,
        "a release in the same process wakes a follower at once: {:?}",
        won_at - released
    );
    won.release().await.unwrap();
    waiting.abort_all();
}

#[tokio::test(start_paused = true)]
async fn a_crashed_holder_is_replaced_within_the_lease_and_one_interval() {
    let store = shared_store();
    let acquired = crashed_holder(Process::new(&store, false), LEASE, "crash").await;
    let following = Process::new(&store, false);
    let won = elector(following.clone(), LEASE, Duration::from_secs(60))
        .try_acquire("crash")
        .await
        .unwrap()
        .elected()
        .expect("the lease ran out");
    let took = Instant::now() - acquired;
    assert!(
        took >= LEASE && took <= LEASE + INTERVAL + PROMPTLY,
        "taken over {took:?} after the crash; the lease is {LEASE:?}, the interval {INTERVAL:?}"
    );
    // An attempt per interval until the lease ran out, and the winning one.
    let sent = following.requests();
    assert!(sent <= 5, "{sent} requests in {took:?}");
    won.release().await.unwrap();
}

/// A lease of 2.5 s is polled at 0, 1 and 2 s; the refusal at 2 s names an expiry at 2.5 s,
/// sooner than the next poll, and the follower asks then.
#[tokio::test(start_paused = true)]
async fn a_named_expiry_sooner_than_the_next_poll_is_not_overslept() {
    let lease = Duration::from_millis(2_500);
    let store = shared_store();
    let acquired = crashed_holder(Process::new(&store, true), lease, "named").await;
    let following = Process::new(&store, true);
    let won = elector(following.clone(), lease, Duration::from_secs(60))
        .try_acquire("named")
        .await
        .unwrap()
        .elected()
        .expect("the lease ran out");
    let took = Instant::now() - acquired;
    assert!(
        took >= lease && took <= lease + PROMPTLY,
        "taken over {took:?} after the crash: the refusal said the lease ends at {lease:?}"
    );
    won.release().await.unwrap();
}

/// With a 30 s lease the interval is 10 s, yet a follower whose `wait` is 2.5 s gives up then,
/// after its first attempt and one at the deadline.
#[tokio::test(start_paused = true)]
async fn the_interval_never_outlasts_the_wait() {
    let lease = Duration::from_secs(30);
    let wait = Duration::from_millis(2_500);
    let store = shared_store();
    let holding = Process::new(&store, false);
    let guard = elector(holding, lease, Duration::ZERO)
        .try_acquire("patience")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let following = Process::new(&store, false);
    let started = Instant::now();
    let outcome = elector(following.clone(), lease, wait)
        .try_acquire("patience")
        .await
        .unwrap();
    let took = Instant::now() - started;
    assert!(outcome.elected().is_none(), "the lock stays held");
    assert!(
        took >= wait && took <= wait + PROMPTLY,
        "gave up after {took:?}; the wait is {wait:?}"
    );
    let sent = following.requests();
    assert!(sent <= 2, "{sent} requests within a {wait:?} wait");
    guard.release().await.unwrap();
}

/// DynamoDB and ZooKeeper keep a lock for their clock-skew tolerance past the expiry a refusal
/// names. A follower with a 30 s lease (so a 10 s poll) asked at the named expiry, was refused
/// with that expiry already past and asked again a second later: a SIGKILLed holder was
/// replaced after 1.87 leases in the bench. It now asks when the store lets go (the expiry plus
/// [`LeaseStore::expiry_tolerance`]), with a signal that reaches every client or without one.
#[tokio::test(start_paused = true)]
async fn a_follower_asks_when_the_store_lets_go_not_at_the_named_expiry() {
    let tolerance = Duration::from_millis(1_500);
    for every_client in [false, true] {
        let store = shared_store();
        let acquired = crashed_holder(
            Process::tolerant(&store, tolerance, every_client),
            LEASE,
            "tolerant",
        )
        .await;
        let following = Process::tolerant(&store, tolerance, every_client);
        let won = elector(
            following.clone(),
            Duration::from_secs(30),
            Duration::from_secs(60),
        )
        .try_acquire("tolerant")
        .await
        .unwrap()
        .elected()
        .expect("the lease ran out");
        let took = Instant::now() - acquired;
        assert!(
            took >= LEASE && took <= LEASE + PROMPTLY,
            "taken over {took:?} after the crash (signal to every client: {every_client}); the \
             store lets go at {LEASE:?}"
        );
        let sent = following.attempts.load(Ordering::SeqCst);
        assert_eq!(
            sent, 2,
            "one refused attempt and the winning one (signal to every client: {every_client})"
        );
        won.release().await.unwrap();
    }
}
