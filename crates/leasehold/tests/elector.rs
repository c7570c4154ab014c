//! Elector behaviour on paused tokio time with the memory store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use leasehold::store::{AcquireRequest, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Event, Lease, LeaseStore, LockName, LostReason, MemoryStore, Outcome,
    RetryPolicy,
    store::{Extension, LockState, Release},
};
use leasehold_testkit::fault::{FaultControl, FaultyStore, Op};
use tokio::time::{Instant, sleep, timeout};

const MS: Duration = Duration::from_millis(1);

/// Options with renewal and cancellation on loss off (both on by default, see tests/defaults.rs):
/// these tests look at what a lease left alone does — expiry, takeover, the local deadline.
fn opts() -> leasehold::ElectionOptionsBuilder {
    ElectionOptions::builder()
        .node_id("node-a")
        .auto_extend(false)
        .cancel_on_lost(false)
}

fn elector(store: &Arc<MemoryStore>, o: leasehold::ElectionOptionsBuilder) -> Elector {
    Elector::with_options(store.clone(), o.build().expect("valid options"))
}

/// Counts acquisition attempts on a memory store; optionally hides its release signal.
struct Counting {
    inner: MemoryStore,
    attempts: AtomicU32,
    signal: bool,
    /// Delay before each acquisition reaches the store (a slow network); makes the store not
    /// cancel-safe.
    delay: Duration,
    /// Set: each acquisition panics after its delay (a store with a bug).
    panics: AtomicBool,
}

impl Counting {
    fn new(signal: bool, delay: Duration) -> Self {
        Self {
            inner: MemoryStore::new(),
            attempts: AtomicU32::new(0),
            signal,
            delay,
            panics: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl LeaseStore for Counting {
    async fn try_acquire(
        &self,
        req: &AcquireRequest,
    ) -> StoreResult<leasehold::store::Acquisition> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        sleep(self.delay).await;
        assert!(!self.panics.load(Ordering::SeqCst), "the store's bug");
        self.inner.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }
    async fn start_period(
        &self,
        lease: &Lease,
    ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
        self.inner.start_period(lease).await
    }
    async fn period_record(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }
    fn release_signal(&self, lock: &LockName) -> Option<leasehold::store::ReleaseSignal> {
        if self.signal {
            self.inner.release_signal(lock)
        } else {
            None
        }
    }
    fn acquire_is_cancel_safe(&self) -> bool {
        self.delay.is_zero()
    }
    fn describe(&self) -> String {
        "counting".into()
    }
}

#[tokio::test(start_paused = true)]
async fn elected_action_runs_once_and_returns_its_value() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts());
    let calls = AtomicU32::new(0);
    let v = e
        .run_if_leader("job", |_| async {
            calls.fetch_add(1, Ordering::SeqCst) + 42
        })
        .await
        .unwrap();
    assert_eq!(v, Some(42));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(
        e.state("job").await.unwrap().is_free(),
        "released after the action"
    );
}

#[tokio::test(start_paused = true)]
async fn contention_skips_exactly_at_the_wait_deadline() {
    let store = Arc::new(MemoryStore::new());
    let holder = elector(&store, opts())
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let e = elector(&store, opts().wait(Duration::from_secs(2)));
    let start = Instant::now();
    let ran = AtomicBool::new(false);
    let out = e
        .run_if_leader("job", |_| async { ran.store(true, Ordering::SeqCst) })
        .await
        .unwrap();
    let waited = start.elapsed();
    assert_eq!(out, None);
    assert!(!ran.load(Ordering::SeqCst));
    assert!(
        waited >= Duration::from_secs(2) && waited <= Duration::from_secs(2) + MS,
        "{waited:?}"
    );
    holder.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn zero_wait_makes_exactly_one_attempt() {
    let store = Arc::new(Counting::new(true, Duration::ZERO));
    let a = Elector::with_options(store.clone(), opts().build().unwrap());
    let _held = a.try_acquire("job").await.unwrap().elected().unwrap();
    let b = Elector::with_options(store.clone(), opts().wait(Duration::ZERO).build().unwrap());
    let start = Instant::now();
    assert!(b.try_acquire("job").await.unwrap().elected().is_none());
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(store.attempts.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_with_jitter_within_bounds() {
    let store = Arc::new(Counting::new(false, Duration::ZERO));
    let retry =
        RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(80), 0.5).unwrap();
    let _held = Elector::with_options(store.clone(), opts().build().unwrap())
        .try_acquire("job")
        .await
        .unwrap()
        .elected();
    let b = Elector::with_options(
        store.clone(),
        opts()
            .wait(Duration::from_secs(1))
            .retry(retry)
            .build()
            .unwrap(),
    );
    store.attempts.store(0, Ordering::SeqCst);
    assert!(b.try_acquire("job").await.unwrap().elected().is_none());
    let n = store.attempts.load(Ordering::SeqCst);
    // Pauses of 5-10, 10-20, 20-40, 40-80 ms, then 40-80 ms: between ~13 and ~26 attempts in 1 s.
    assert!((12..=28).contains(&n), "{n} attempts");
}

#[tokio::test(start_paused = true)]
async fn a_release_wakes_a_waiter_long_before_its_next_poll() {
    let store = Arc::new(MemoryStore::new());
    let slow_polls =
        RetryPolicy::new(Duration::from_secs(10), Duration::from_secs(10), 0.0).unwrap();
    let holder = elector(&store, opts())
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let waiter = elector(
        &store,
        opts().wait(Duration::from_secs(30)).retry(slow_polls),
    );
    let start = Instant::now();
    let task = tokio::spawn(async move {
        waiter
            .try_acquire("job")
            .await
            .map(|g| (g.is_elected(), Instant::now()))
    });
    sleep(Duration::from_millis(100)).await;
    holder.release().await.unwrap();
    let (got, at) = task.await.unwrap().unwrap();
    assert!(got);
    assert!(
        at - start < Duration::from_millis(101),
        "woken at {:?}",
        at - start
    );
}

#[tokio::test(start_paused = true)]
async fn min_lease_holds_the_lock_from_acquisition_then_frees_it() {
    let store = Arc::new(MemoryStore::new());
    let blocker = elector(&store, opts())
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let e = elector(
        &store,
        opts()
            .wait(Duration::from_secs(5))
            .min_lease(Duration::from_secs(1)),
    );
    let other = elector(&store, opts().wait(Duration::ZERO));
    // The job waits 2 s for the blocker; the minimum lease is counted from acquisition, not from the call.
    tokio::spawn(async move {
        sleep(Duration::from_secs(2)).await;
        blocker.release().await.unwrap();
    });
    let start = Instant::now();
    assert_eq!(
        e.run_if_leader("job", |_| async { 1 }).await.unwrap(),
        Some(1)
    );
    let acquired = start.elapsed();
    assert!(
        acquired >= Duration::from_secs(2) && acquired < Duration::from_millis(2010),
        "{acquired:?}"
    );
    sleep(Duration::from_millis(900)).await;
    assert!(
        other.try_acquire("job").await.unwrap().elected().is_none(),
        "still inside the minimum lease"
    );
    sleep(Duration::from_millis(101)).await;
    assert!(
        other.try_acquire("job").await.unwrap().elected().is_some(),
        "free after the minimum lease"
    );
}

#[tokio::test(start_paused = true)]
async fn auto_extend_keeps_the_lease_through_a_long_action() {
    let store = Arc::new(MemoryStore::new());
    let lease = Duration::from_millis(300);
    let e = elector(
        &store,
        opts().lease(lease).auto_extend(true).wait(Duration::ZERO),
    );
    let mut events = e.subscribe();
    let other = elector(&store, opts().wait(Duration::ZERO));
    let runner = e.clone();
    let task = tokio::spawn(async move {
        runner
            .run_if_leader("job", |ctx| async move {
                sleep(lease * 3).await;
                ctx.is_lost()
            })
            .await
    });
    for _ in 0..8 {
        sleep(lease / 3).await;
        assert!(
            other.try_acquire("job").await.unwrap().elected().is_none(),
            "renewed lease must still be held"
        );
    }
    assert_eq!(task.await.unwrap().unwrap(), Some(false), "not lost");
    let mut extended = 0;
    while let Ok(ev) = events.try_recv() {
        extended += usize::from(matches!(ev, Event::Extended { .. }));
    }
    assert!(extended >= 8, "{extended} renewals");
    assert!(other.try_acquire("job").await.unwrap().elected().is_some());
}

#[tokio::test(start_paused = true)]
async fn guard_reports_lost_at_its_local_deadline_before_the_store_expiry() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().lease(Duration::from_secs(1)));
    let mut events = e.subscribe();
    let start = Instant::now();
    let guard = e.try_acquire("job").await.unwrap().elected().unwrap();
    assert!(!guard.is_lost());
    assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(900),
        "lease minus a tenth"
    );
    // The store still holds it at that moment: nobody else could have taken over yet.
    assert_eq!(
        e.state("job").await.unwrap().holder().map(|h| h.fence),
        Some(guard.fence())
    );
    let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| e.kind())
        .collect();
    assert_eq!(kinds, ["elected", "lost"]);
}

#[tokio::test(start_paused = true)]
async fn cancel_on_lost_drops_the_action_and_reports_lost() {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let store = Arc::new(MemoryStore::new());
    let e = elector(
        &store,
        opts().lease(Duration::from_secs(1)).cancel_on_lost(true),
    );
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let start = Instant::now();
    let r = e
        .run_if_leader("job", |_| async move {
            let _g = SetOnDrop(flag);
            sleep(Duration::from_secs(5)).await;
        })
        .await;
    assert!(
        matches!(
            r,
            Err(leasehold::Error::Lost {
                reason: LostReason::DeadlinePassed,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_millis(900));
    assert!(dropped.load(Ordering::SeqCst));
    assert!(
        e.state("job").await.unwrap().is_free(),
        "released after cancellation"
    );
}

#[tokio::test(start_paused = true)]
async fn without_cancel_on_lost_the_action_completes_and_loss_is_announced() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().lease(Duration::from_secs(1)));
    let mut events = e.subscribe();
    let start = Instant::now();
    let r = e
        .run_if_leader("job", |ctx| async move {
            sleep(Duration::from_secs(2)).await;
            ctx.is_lost()
        })
        .await
        .unwrap();
    assert_eq!(r, Some(true));
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| e.kind())
        .collect();
    assert_eq!(
        kinds,
        ["elected", "lost"],
        "lost once; the late release finds it no longer held"
    );
}

#[tokio::test(start_paused = true)]
async fn panic_releases_the_lease_then_resumes() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts());
    let runner = e.clone();
    let joined = tokio::spawn(async move {
        runner
            .run_if_leader("job", |_| async { panic!("boom") })
            .await
    })
    .await;
    assert!(joined.unwrap_err().is_panic());
    assert!(e.state("job").await.unwrap().is_free());
    assert_eq!(
        e.run_if_leader("job", |c| async move { c.fence() })
            .await
            .unwrap(),
        Some(2)
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_future_releases_the_lease() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts());
    let r = timeout(
        Duration::from_millis(100),
        e.run_if_leader("job", |_| std::future::pending::<()>()),
    )
    .await;
    assert!(r.is_err(), "timed out");
    tokio::task::yield_now().await;
    assert!(
        e.state("job").await.unwrap().is_free(),
        "released by the dropped guard"
    );
}

#[tokio::test(start_paused = true)]
async fn run_tells_elected_skipped_and_failed_apart() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().wait(Duration::ZERO));
    assert_eq!(
        e.run("job", |_| async { Ok::<_, String>(()) })
            .await
            .unwrap(),
        Outcome::Elected(())
    );
    let failed = e
        .run("job", |_| async { Err::<(), _>("bad".to_string()) })
        .await
        .unwrap();
    assert_eq!(failed, Outcome::ActionFailed("bad".to_string()));
    assert!(
        e.state("job").await.unwrap().is_free(),
        "released after failure"
    );
    let _g = e.try_acquire("job").await.unwrap().elected().unwrap();
    let taken = e
        .run("job", |_| async { Ok::<_, String>(()) })
        .await
        .unwrap();
    assert!(taken.is_taken(), "{taken:?}");
}

#[tokio::test(start_paused = true)]
async fn fences_increase_across_release_expiry_and_takeover() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(
        &store,
        opts()
            .lease(Duration::from_millis(100))
            .wait(Duration::ZERO),
    );
    let b = elector(
        &store,
        opts().node_id("node-b").wait(Duration::from_secs(1)),
    );
    let f1 = a.try_acquire("job").await.unwrap().elected().unwrap();
    let first = f1.fence();
    f1.release().await.unwrap();
    let f2 = a.try_acquire("job").await.unwrap().elected().unwrap();
    let stale = f2.lease();
    let taken = b.try_acquire("job").await.unwrap().elected().unwrap(); // after expiry
    assert!(first < stale.fence && stale.fence < taken.fence());
    assert_eq!(
        store.release(&stale, Duration::ZERO).await.unwrap(),
        Release::NotHeld
    );
    assert_eq!(
        store.extend(&stale, Duration::from_secs(1)).await.unwrap(),
        Extension::NotHeld
    );
    let held = b.state("job").await.unwrap();
    assert_eq!(
        held.holder().map(|h| (h.owner.as_str(), h.fence)),
        Some(("node-b", taken.fence()))
    );
    drop(f2);
}

#[tokio::test(start_paused = true)]
async fn state_reports_holder_and_frees_after_release() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().lease(Duration::from_secs(10)));
    assert!(e.state("job").await.unwrap().is_free());
    let g = e.try_acquire("job").await.unwrap().elected().unwrap();
    let s = e.state("job").await.unwrap();
    let h = s.holder().unwrap();
    assert_eq!(
        (h.owner.as_str(), h.fence, h.slot),
        ("node-a", g.fence(), 0)
    );
    assert_eq!(h.expires_at, g.expires_at());
    assert_eq!(
        LockState::time_left(h, h.acquired_at),
        Duration::from_secs(10)
    );
    assert!(
        !e.state("job").await.unwrap().is_free(),
        "state does not release"
    );
    g.release().await.unwrap();
    assert!(e.state("job").await.unwrap().is_free());
}

#[tokio::test(start_paused = true)]
async fn manual_extend_moves_the_deadline_and_the_watchdog_respects_it() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(
        &store,
        opts().lease(Duration::from_millis(300)).auto_extend(true),
    );
    let g = e.try_acquire("job").await.unwrap().elected().unwrap();
    let before = g.local_deadline();
    assert!(matches!(
        g.extend(Duration::from_secs(10)).await.unwrap(),
        Extension::Extended { .. }
    ));
    assert!(g.local_deadline() >= before + Duration::from_secs(8));
    let long = g.expires_at();
    sleep(Duration::from_secs(1)).await;
    assert_eq!(
        g.expires_at(),
        long,
        "the watchdog did not shorten the manual extension"
    );
    assert!(!g.is_lost());
}

#[tokio::test(start_paused = true)]
async fn group_never_exceeds_max_leaders_and_each_slot_has_its_fence() {
    let store = Arc::new(MemoryStore::new());
    let g = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .max_leaders(3)
            .wait(Duration::ZERO)
            .node_id("n")
            .build()
            .unwrap(),
    );
    let a = g.try_acquire("pool").await.unwrap().elected().unwrap();
    let b = g.try_acquire("pool").await.unwrap().elected().unwrap();
    let c = g.try_acquire("pool").await.unwrap().elected().unwrap();
    assert_eq!([a.slot(), b.slot(), c.slot()], [0, 1, 2]);
    assert!(g.try_acquire("pool").await.unwrap().elected().is_none());
    assert_eq!(g.state("pool").await.unwrap().active(), 3);
    let b_fence = b.fence();
    b.release().await.unwrap();
    let again = g.try_acquire("pool").await.unwrap().elected().unwrap();
    assert_eq!(again.slot(), 1);
    assert!(again.fence() > b_fence);
    assert_eq!(g.max_leaders(), 3);
    drop((a, c));
}

#[tokio::test(start_paused = true)]
async fn tenants_do_not_contend_and_report_full_names() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().wait(Duration::ZERO));
    let a = e.for_tenant("a").unwrap();
    let b = e.for_tenant("b").unwrap();
    let ga = a.try_acquire("job").await.unwrap().elected().unwrap();
    let gb = b.try_acquire("job").await.unwrap().elected().unwrap();
    assert_eq!(ga.lease().lock.as_str(), "tenant:a:job");
    assert_eq!(a.state("job").await.unwrap().lock.as_str(), "tenant:a:job");
    assert!(
        e.try_acquire("job").await.unwrap().elected().is_some(),
        "unscoped name is separate"
    );
    assert!(matches!(
        a.try_acquire("x:y").await,
        Err(leasehold::Error::Name(_))
    ));
    assert!(e.for_tenant("a:b").is_err());
    drop((ga, gb));
}

#[tokio::test(start_paused = true)]
async fn bad_names_are_typed_errors_not_skips() {
    let e = elector(&Arc::new(MemoryStore::new()), opts());
    for bad in ["", "a b", "-x"] {
        let r = e.run_if_leader(bad, |_| async {}).await;
        assert!(
            matches!(r, Err(leasehold::Error::Name(_))),
            "{bad:?}: {r:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn events_follow_the_lifecycle() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().wait(Duration::ZERO));
    let mut rx = e.subscribe();
    let g = e.try_acquire("job").await.unwrap().elected().unwrap();
    assert!(e.try_acquire("job").await.unwrap().elected().is_none());
    g.release().await.unwrap();
    let got: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert!(
        matches!(&got[0], Event::Elected { fence: 1, slot: 0, owner, .. } if &**owner == "node-a")
    );
    assert!(matches!(&got[1], Event::Skipped { lock } if lock.as_str() == "job"));
    assert!(matches!(&got[2], Event::Released { fence: 1, linger, .. } if linger.is_zero()));
    assert_eq!(got.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_lease_granted_after_the_caller_gave_up_is_released() {
    let store = Arc::new(Counting::new(true, Duration::from_millis(100)));
    let e = Elector::with_options(
        store.clone(),
        opts().wait(Duration::from_secs(5)).build().unwrap(),
    );
    // The caller gives up while its request is still on the wire; the store grants it later.
    let r = timeout(Duration::from_millis(10), e.try_acquire("job")).await;
    assert!(r.is_err());
    sleep(Duration::from_millis(200)).await;
    assert_eq!(store.attempts.load(Ordering::SeqCst), 1);
    assert!(
        store
            .inner
            .state(&LockName::new("job").unwrap(), 1)
            .await
            .unwrap()
            .is_free(),
        "late lease released"
    );
    let fence = e
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .map(|g| g.fence());
    assert_eq!(
        fence,
        Some(2),
        "the late grant did happen (fence 1) and was handed back"
    );
}

/// A memory store behind the testkit's fault wrapper (whose acquisitions are not cancel-safe,
/// so the elector hands an attempt its caller stopped waiting for over to a cleanup task).
fn faulty() -> (Arc<MemoryStore>, Arc<FaultyStore>, FaultControl) {
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    (memory, store, faults)
}

#[tokio::test(start_paused = true)]
async fn a_late_answer_does_not_release_the_lease_a_retry_got_back() {
    let (_, store, faults) = faulty();
    let e = Elector::with_options(
        store,
        opts()
            .wait(Duration::from_secs(30))
            .attempt_timeout(Duration::from_secs(1))
            .build()
            .unwrap(),
    );
    // The first attempt is granted but its answer is late: the caller times out and retries
    // with the same token, and the store hands the same lease back.
    faults.delay_answer(Op::TryAcquire, Duration::from_secs(3));
    let acquiring = tokio::spawn({
        let e = e.clone();
        async move { e.try_acquire("job").await }
    });
    while faults.calls(Op::TryAcquire) == 0 {
        sleep(MS).await;
    }
    faults.heal(Op::TryAcquire);
    let guard = acquiring
        .await
        .unwrap()
        .unwrap()
        .elected()
        .expect("elected");
    assert!(faults.calls(Op::TryAcquire) >= 2);
    // Then the first answer arrives, nobody waiting for it: the lease is the caller's.
    sleep(Duration::from_secs(5)).await;
    e.settled().await;
    let state = e.state("job").await.unwrap();
    assert_eq!(
        state.holders.first().map(|h| h.fence),
        Some(guard.fence()),
        "the caller's lease is still held: {state:?}"
    );
    assert!(!guard.is_lost());
    assert!(guard.release().await.is_ok());
    assert!(e.state("job").await.unwrap().is_free());
}

#[tokio::test(start_paused = true)]
async fn an_attempt_in_flight_when_the_caller_is_dropped_is_finished_and_its_grant_released() {
    let (_, store, faults) = faulty();
    faults.delay_request(Op::TryAcquire, MS);
    let e = Elector::with_options(store, opts().build().unwrap());
    let mut call = Box::pin(e.try_acquire("job"));
    assert!(futures::poll!(call.as_mut()).is_pending());
    // The attempt is on its way to the store; the caller stops waiting for it.
    drop(call);
    e.settled().await;
    assert_eq!(faults.calls(Op::TryAcquire), 1);
    assert!(
        e.state("job").await.unwrap().is_free(),
        "the grant nobody read is released"
    );
    let fence = e
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .map(|g| g.fence());
    assert_eq!(
        fence,
        Some(2),
        "the abandoned attempt was granted (fence 1) and then released"
    );
}

#[tokio::test(start_paused = true)]
async fn a_store_panicking_in_an_acquisition_is_a_transient_error_not_a_panic() {
    let store = Arc::new(Counting::new(true, MS));
    store.panics.store(true, Ordering::SeqCst);
    let e = Elector::with_options(store.clone(), opts().build().unwrap());
    let err = e.try_acquire("job").await.expect_err("the store panicked");
    assert!(err.as_store().is_some_and(|s| s.is_transient()), "{err}");
    assert!(err.to_string().contains("panicked"), "{err}");
    // The elector is still usable once the store behaves.
    store.panics.store(false, Ordering::SeqCst);
    assert!(e.try_acquire("job").await.unwrap().elected().is_some());
}

#[tokio::test(start_paused = true)]
async fn an_attempt_the_caller_stopped_waiting_for_still_counts_until_answered() {
    let (_, store, faults) = faulty();
    faults.delay_request(Op::TryAcquire, Duration::from_secs(2));
    let e = Elector::with_options(store, opts().build().unwrap());
    let mut call = Box::pin(e.try_acquire("job"));
    assert!(futures::poll!(call.as_mut()).is_pending());
    drop(call);
    // The handed-over attempt is pending work: the elector has not settled until it answered.
    assert!(
        timeout(Duration::from_secs(1), e.settled()).await.is_err(),
        "settled with an attempt still in flight"
    );
    e.settled().await;
    assert!(e.state("job").await.unwrap().is_free());
}

#[tokio::test(start_paused = true)]
async fn an_extension_in_flight_never_lengthens_a_lease_after_its_release() {
    let (_, store, faults) = faulty();
    // Extensions reach the store 100 ms after they are sent.
    faults.delay_request(Op::Extend, Duration::from_millis(100));
    let e = Elector::with_options(
        store,
        opts()
            .lease(Duration::from_secs(30))
            .min_lease(Duration::from_secs(10))
            .auto_extend(false)
            .build()
            .unwrap(),
    );
    let guard = e
        .try_acquire("job")
        .await
        .unwrap()
        .elected()
        .expect("elected");
    let ctx = guard.context();
    let extension = tokio::spawn(async move { ctx.extend(Duration::from_secs(30)).await });
    tokio::task::yield_now().await; // the extension is on its way
    // The release shortens the lease to what is left of min_lease (10 s) ...
    guard.release().await.unwrap();
    // ... and the extension, sent before it, does not lengthen it again afterwards.
    let _ = extension.await.unwrap();
    let state = e.state("job").await.unwrap();
    let holder = state.holders.first().expect("still held for min_lease");
    let left = holder
        .expires_at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    assert!(left <= Duration::from_secs(11), "{left:?} left: {state:?}");
    // And an extension after the release is refused without asking the store.
    let late = e
        .try_acquire("other")
        .await
        .unwrap()
        .elected()
        .expect("elected");
    let ctx = late.context();
    late.release().await.unwrap();
    assert_eq!(
        ctx.extend(Duration::from_secs(30)).await.unwrap(),
        Extension::NotHeld
    );
}

#[tokio::test(start_paused = true)]
async fn force_release_frees_live_slots_and_keeps_fences() {
    let store = Arc::new(MemoryStore::new());
    let e = elector(&store, opts().wait(Duration::ZERO));
    let g = e.try_acquire("job").await.unwrap().elected().unwrap();
    let lock = LockName::new("job").unwrap();
    let freed = store.force_release(&lock, 1).await.unwrap();
    assert_eq!(
        freed.iter().map(|h| (h.slot, h.fence)).collect::<Vec<_>>(),
        [(0, g.fence())]
    );
    assert!(
        store.force_release(&lock, 1).await.unwrap().is_empty(),
        "nothing left to free"
    );
    let next = e.try_acquire("job").await.unwrap().elected().unwrap();
    assert!(next.fence() > g.fence());
    assert_eq!(
        g.extend(Duration::from_secs(1)).await.unwrap(),
        Extension::NotHeld
    );
    assert!(g.is_lost());
}

#[tokio::test(start_paused = true)]
async fn elector_force_release_applies_the_tenant_and_slot_count() {
    let store = Arc::new(MemoryStore::new());
    let group = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .max_leaders(2)
            .wait(Duration::ZERO)
            .build()
            .unwrap(),
    )
    .for_tenant("acme")
    .unwrap();
    let a = group.try_acquire("pool").await.unwrap().elected().unwrap();
    let b = group.try_acquire("pool").await.unwrap().elected().unwrap();
    let freed = group.force_release("pool").await.unwrap();
    assert_eq!(
        freed.iter().map(|h| h.fence).collect::<Vec<_>>(),
        [a.fence(), b.fence()]
    );
    assert!(group.state("pool").await.unwrap().is_free());
    assert!(a.extend(Duration::from_secs(1)).await.unwrap() == Extension::NotHeld);
    assert!(a.is_lost());
    drop(b);
}

/// A tenant's `run_if_leader`, `run` and `run_once_per` scope the name once (`tenant:a:job`), as
/// `try_acquire` does.
#[tokio::test(start_paused = true)]
async fn a_tenant_runs_under_its_scoped_name() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, opts().wait(Duration::ZERO))
        .for_tenant("a")
        .unwrap();
    let ran = a.run_if_leader("job", |ctx| async move { ctx.lock().clone() });
    assert_eq!(ran.await.unwrap().unwrap().as_str(), "tenant:a:job");
    let ran = a.run("job", |ctx| async move { Ok::<_, ()>(ctx.lock().clone()) });
    assert!(
        matches!(ran.await.unwrap(), leasehold::Outcome::Elected(l) if l.as_str() == "tenant:a:job")
    );
    let hourly = leasehold::Period::every(Duration::from_secs(3600)).unwrap();
    let ran = a.run_once_per("job", hourly, |ctx| async move {
        Ok::<_, ()>(ctx.lock().clone())
    });
    assert!(
        matches!(ran.await.unwrap(), leasehold::Outcome::Elected(l) if l.as_str() == "tenant:a:job")
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_names_the_holder_where_the_store_says_who_it_is() {
    let store = Arc::new(MemoryStore::new());
    let a = elector(&store, opts().node_id("node-a"));
    let b = elector(&store, opts().node_id("node-b"));
    let held = a.try_acquire("job").await.unwrap().elected().unwrap();
    let refused = b.try_acquire("job").await.unwrap();
    assert!(refused.is_taken() && !refused.ran(), "{refused:?}");
    let holder = refused.holder().expect("the memory store names the holder");
    assert_eq!(
        (holder.owner.as_str(), holder.fence),
        ("node-a", held.fence())
    );
    // `run` reports the same refusal, and the action does not run.
    let ran = b
        .run("job", |_| async { Ok::<_, String>(()) })
        .await
        .unwrap();
    assert_eq!(ran.holder().map(|h| h.owner.as_str()), Some("node-a"));
    held.release().await.unwrap();
    assert!(b.try_acquire("job").await.unwrap().is_elected());
}
