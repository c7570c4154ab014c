//! The stable leader (`Elector::lead`) and the leadership stream, on paused tokio time with the
//! memory store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use leasehold::store::{AcquireRequest, StoreResult};
use leasehold::{
    CancellationToken, ElectionOptions, Elector, Error, Event, Lease, LeaseStore, LockName,
    MemoryStore, TermEnd,
    lead::Leadership,
    limits::LimitError,
    store::{Extension, LockState, Release},
};
use tokio::time::{Instant, sleep, timeout};

const LEASE: Duration = Duration::from_secs(3);

fn node(store: &Arc<dyn LeaseStore>, id: &str) -> Elector {
    // `lead` renews its terms whatever the options say; a guard taken with `try_acquire` is left
    // alone here, so that a leaked one stands for a crashed holder.
    let options = ElectionOptions::builder()
        .node_id(id)
        .lease(LEASE)
        .auto_extend(false)
        .build()
        .expect("valid options");
    Elector::with_options(Arc::clone(store), options)
}

fn memory() -> Arc<dyn LeaseStore> {
    Arc::new(MemoryStore::new())
}

/// `(node, fence)` of every term begun, in order.
type Terms = Arc<Mutex<Vec<(String, u64)>>>;

/// Leads `lock` on `elector`: each term is recorded, lasts `term` (or until cancelled), then
/// resigns.
fn leader(
    elector: &Elector,
    lock: &'static str,
    stop: &CancellationToken,
    terms: &Terms,
    term: Duration,
) -> tokio::task::JoinHandle<leasehold::Result<()>> {
    let (elector, stop, terms) = (elector.clone(), stop.clone(), Arc::clone(terms));
    let id = elector.options().node_id().to_owned();
    tokio::spawn(async move {
        elector
            .lead(lock, stop, move |ctx| {
                terms.lock().unwrap().push((id.clone(), ctx.fence()));
                async move {
                    sleep(term).await;
                    TermEnd::Resign
                }
            })
            .await
    })
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn terms_follow_each_other_with_growing_fences() {
    let store = memory();
    let (a, b) = (node(&store, "node-a"), node(&store, "node-b"));
    let stop = CancellationToken::new();
    let terms = Terms::default();
    let ta = leader(&a, "reconciler", &stop, &terms, Duration::from_secs(10));
    sleep(Duration::from_millis(50)).await;
    let tb = leader(&b, "reconciler", &stop, &terms, Duration::from_secs(10));
    sleep(Duration::from_secs(35)).await;
    stop.cancel();
    ta.await.unwrap().unwrap();
    tb.await.unwrap().unwrap();

    let terms = terms.lock().unwrap().clone();
    assert!(terms.len() >= 3, "a term every 10 s: {terms:?}");
    assert_eq!(terms[0].0, "node-a", "the first to contend leads first");
    for pair in terms.windows(2) {
        assert!(pair[1].1 > pair[0].1, "fences grow: {terms:?}");
        assert_ne!(
            pair[1].0, pair[0].0,
            "a resigning leader lets the waiting node lead: {terms:?}"
        );
    }
    assert!(
        a.state("reconciler").await.unwrap().is_free(),
        "stop released the lease"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_term_lasts_while_the_action_runs_with_renewals() {
    let store = memory();
    let a = node(&store, "node-a");
    let stop = CancellationToken::new();
    let terms = Terms::default();
    let task = leader(&a, "long", &stop, &terms, Duration::from_secs(60));
    sleep(Duration::from_secs(30)).await; // ten leases long
    let holder = a
        .state("long")
        .await
        .unwrap()
        .holder()
        .cloned()
        .expect("held");
    assert_eq!(
        (holder.owner.as_str(), holder.fence),
        ("node-a", 1),
        "one renewed term"
    );
    assert_eq!(terms.lock().unwrap().len(), 1);
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(a.state("long").await.unwrap().is_free());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lost_lease_cancels_the_action_and_contends_again() {
    let store = memory();
    let a = node(&store, "node-a");
    let mut events = a.subscribe();
    let stop = CancellationToken::new();
    let terms = Terms::default();
    let dropped = Arc::new(AtomicBool::new(false));
    let task = {
        let (a, stop, terms, dropped) = (a.clone(), stop.clone(), terms.clone(), dropped.clone());
        tokio::spawn(async move {
            a.lead("lossy", stop, move |ctx| {
                terms.lock().unwrap().push(("node-a".into(), ctx.fence()));
                let flag = DropFlag(Arc::clone(&dropped));
                async move {
                    let _flag = flag;
                    std::future::pending::<TermEnd>().await
                }
            })
            .await
        })
    };
    sleep(Duration::from_millis(100)).await;
    // An operator breaks the lease: the next renewal finds it gone.
    let freed = a.force_release("lossy").await.unwrap();
    assert_eq!(freed.len(), 1);
    sleep(LEASE).await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the first term's action was dropped on loss"
    );
    let terms_now = terms.lock().unwrap().clone();
    assert_eq!(terms_now.len(), 2, "contended again and won: {terms_now:?}");
    assert!(terms_now[1].1 > terms_now[0].1);
    let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| e.kind())
        .filter(|k| *k != "extended")
        .collect();
    assert!(kinds.starts_with(&["elected", "lost"]), "{kinds:?}");
    assert!(
        kinds.contains(&"elected") && kinds.iter().filter(|k| **k == "elected").count() == 2,
        "{kinds:?}"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(a.state("lossy").await.unwrap().is_free());
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn stop_releases_and_drops_the_action_first() {
    let store = memory();
    let a = node(&store, "node-a");
    let mut events = a.subscribe();
    let stop = CancellationToken::new();
    let held_when_dropped = Arc::new(Mutex::new(None));
    let task = {
        let (a, stop, seen) = (a.clone(), stop.clone(), held_when_dropped.clone());
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            a.lead("worker", stop, move |_ctx| {
                let probe = HeldProbe {
                    store: Arc::clone(&store),
                    seen: Arc::clone(&seen),
                };
                async move {
                    let _probe = probe;
                    std::future::pending::<TermEnd>().await
                }
            })
            .await
        })
    };
    sleep(Duration::from_secs(1)).await;
    assert!(!a.state("worker").await.unwrap().is_free());
    stop.cancel();
    timeout(Duration::from_secs(1), task)
        .await
        .expect("stops at once")
        .unwrap()
        .unwrap();
    assert_eq!(
        *held_when_dropped.lock().unwrap(),
        Some(true),
        "the action ended while the lease was still held"
    );
    assert!(
        a.state("worker").await.unwrap().is_free(),
        "released on stop"
    );
    let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| e.kind())
        .collect();
    assert_eq!(kinds.first(), Some(&"elected"));
    assert_eq!(kinds.last(), Some(&"released"), "{kinds:?}");
}

/// Records, when dropped, whether the lock was still held in the store.
struct HeldProbe {
    store: Arc<dyn LeaseStore>,
    seen: Arc<Mutex<Option<bool>>>,
}
impl Drop for HeldProbe {
    fn drop(&mut self) {
        let store = Arc::clone(&self.store);
        let lock = LockName::new("worker").unwrap();
        // The memory store answers without yielding.
        let state = futures::FutureExt::now_or_never(store.state(&lock, 1))
            .expect("answers at once")
            .unwrap();
        *self.seen.lock().unwrap() = Some(!state.is_free());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_action_can_stop_leading() {
    let store = memory();
    let a = node(&store, "node-a");
    let mut calls = 0;
    a.lead("once", CancellationToken::new(), |ctx| {
        calls += 1;
        async move {
            assert_eq!(ctx.fence(), 1);
            TermEnd::Stop
        }
    })
    .await
    .unwrap();
    assert_eq!(calls, 1);
    assert!(a.state("once").await.unwrap().is_free());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn dropping_lead_leaves_no_lease_behind() {
    let store = memory();
    let a = node(&store, "node-a");
    let lead = a.lead("dropped", CancellationToken::new(), |_ctx| {
        std::future::pending::<TermEnd>()
    });
    assert!(
        timeout(Duration::from_secs(5), lead).await.is_err(),
        "leads until dropped"
    );
    a.settled().await;
    assert!(
        a.state("dropped").await.unwrap().is_free(),
        "the drop released the lease"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_panicking_action_releases_then_panics() {
    let store = memory();
    let a = node(&store, "node-a");
    let task = {
        let a = a.clone();
        tokio::spawn(async move {
            a.lead("panicky", CancellationToken::new(), |_ctx| async {
                panic!("boom");
            })
            .await
        })
    };
    let joined = task.await;
    assert!(joined.unwrap_err().is_panic());
    assert!(a.state("panicky").await.unwrap().is_free());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_follower_takes_over_within_lease_and_one_retry_interval() {
    let store = memory();
    let (a, b) = (node(&store, "node-a"), node(&store, "node-b"));
    let terms = Terms::default();
    let stop_b = CancellationToken::new();
    // node-a "crashes" while leading: its guard is leaked, so nothing releases its lease.
    let guard = a
        .try_acquire("crash")
        .await
        .unwrap()
        .elected()
        .expect("free");
    let crashed_at = Instant::now();
    std::mem::forget(guard);
    let tb = leader(&b, "crash", &stop_b, &terms, Duration::from_secs(3600));
    while terms.lock().unwrap().is_empty() {
        sleep(Duration::from_millis(5)).await;
    }
    let took = crashed_at.elapsed();
    let retry = b.options().retry().copied().unwrap_or_default().max();
    assert!(took >= LEASE, "not before the lease ended: {took:?}");
    assert!(
        took <= LEASE + retry + Duration::from_millis(20),
        "{took:?}"
    );
    assert_eq!(terms.lock().unwrap()[0], ("node-b".to_owned(), 2));
    stop_b.cancel();
    tb.await.unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_stream_reports_leaders_in_order_and_the_free_lock() {
    let store = memory();
    let (a, b) = (node(&store, "node-a"), node(&store, "node-b"));
    let watcher = node(&store, "watcher");
    let mut changes = watcher.leadership("stream").unwrap();
    let first = changes.next().await.unwrap();
    assert!(first.is_free(), "the current state comes first: {first:?}");

    let stop = CancellationToken::new();
    let terms = Terms::default();
    let ta = leader(&a, "stream", &stop, &terms, Duration::from_secs(10));
    let seen_a = changes.next().await.unwrap();
    assert_eq!((seen_a.owner(), seen_a.fence()), (Some("node-a"), Some(1)));
    assert!(seen_a.since().is_some());

    let tb = leader(&b, "stream", &stop, &terms, Duration::from_secs(3600));
    // a resigns after 10 s; b takes over within moments (a release signal wakes it).
    let mut seen = Vec::new();
    while seen.last().and_then(Leadership::owner) != Some("node-b") {
        let change = timeout(Duration::from_secs(12), changes.next())
            .await
            .expect("a change")
            .unwrap();
        seen.push(change);
    }
    let fences: Vec<_> = seen.iter().filter_map(Leadership::fence).collect();
    assert_eq!(fences, [2], "b's term, with the next fence: {seen:?}");

    // b stops: the stream reports the lock free.
    stop.cancel();
    ta.await.unwrap().unwrap();
    tb.await.unwrap().unwrap();
    let last = timeout(Duration::from_secs(2), changes.next())
        .await
        .expect("a change")
        .unwrap();
    assert!(last.is_free(), "{last:?}");
    // Nothing changes any more: no item.
    assert!(
        timeout(Duration::from_secs(10), changes.next())
            .await
            .is_err()
    );
}

/// A memory store without a release signal: the stream and contenders poll.
struct Silent(MemoryStore);

#[async_trait]
impl LeaseStore for Silent {
    async fn try_acquire(
        &self,
        req: &AcquireRequest,
    ) -> StoreResult<leasehold::store::Acquisition> {
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
    fn describe(&self) -> String {
        "silent memory".into()
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn without_a_signal_the_stream_lags_at_most_one_poll() {
    let store: Arc<dyn LeaseStore> = Arc::new(Silent(MemoryStore::new()));
    let a = node(&store, "node-a");
    let poll = Duration::from_millis(500);
    let mut changes = a.leadership_every("polled", poll).unwrap();
    assert!(changes.next().await.unwrap().is_free());
    sleep(Duration::from_secs(5)).await; // the stream backs off to its poll interval
    let guard = a.try_acquire("polled").await.unwrap().elected().unwrap();
    let at = Instant::now();
    let change = changes.next().await.unwrap();
    assert_eq!(change.fence(), Some(guard.fence()));
    assert!(
        at.elapsed() <= poll,
        "lag {:?} beyond the poll interval",
        at.elapsed()
    );
    guard.release().await.unwrap();
    let at = Instant::now();
    assert!(changes.next().await.unwrap().is_free());
    assert!(at.elapsed() <= poll);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn poll_intervals_beyond_the_limits_are_refused() {
    let a = node(&memory(), "node-a");
    let short = a
        .leadership_every("x", Duration::from_millis(1))
        .unwrap_err();
    assert!(
        matches!(short, Error::Limit(LimitError::DurationTooShort { min, .. }) if min == leasehold::limits::MIN_LEADERSHIP_POLL),
        "{short:?}"
    );
    assert!(
        short.to_string().contains("shorter than the minimum of"),
        "{short}"
    );
    let long = a.leadership_every("x", Duration::MAX).unwrap_err();
    assert!(
        matches!(long, Error::Limit(LimitError::DurationTooLong { .. })),
        "{long:?}"
    );
    assert!(matches!(a.leadership("bad\nname"), Err(Error::Name(_))));
    let bad = a
        .lead("bad\nname", CancellationToken::new(), |_| async {
            TermEnd::Stop
        })
        .await;
    assert!(matches!(bad, Err(Error::Name(_))), "{bad:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn elected_events_carry_each_terms_fence() {
    let store = memory();
    let a = node(&store, "node-a");
    let mut events = a.subscribe();
    let mut left = 3;
    a.lead("counted", CancellationToken::new(), |_ctx| {
        left -= 1;
        let end = if left == 0 {
            TermEnd::Stop
        } else {
            TermEnd::Resign
        };
        async move { end }
    })
    .await
    .unwrap();
    let fences: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e {
            Event::Elected { fence, .. } => Some(fence),
            _ => None,
        })
        .collect();
    assert_eq!(fences, [1, 2, 3]);
}

/// A memory store whose acquisitions fail: the first `transient` ones transiently, all of them
/// permanently if `permanent`.
struct Failing {
    inner: MemoryStore,
    transient: std::sync::atomic::AtomicU32,
    permanent: bool,
}

#[async_trait]
impl LeaseStore for Failing {
    async fn try_acquire(
        &self,
        req: &AcquireRequest,
    ) -> StoreResult<leasehold::store::Acquisition> {
        if self.permanent {
            return Err(leasehold::store::StoreError::permanent(
                "relation \"leases\" does not exist",
            ));
        }
        let left = self.transient.load(Ordering::SeqCst);
        if left > 0 {
            self.transient.store(left - 1, Ordering::SeqCst);
            return Err(leasehold::store::StoreError::transient("connection reset"));
        }
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
    fn acquire_is_cancel_safe(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        "failing memory".into()
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn transient_store_errors_are_retried_while_contending() {
    let store: Arc<dyn LeaseStore> = Arc::new(Failing {
        inner: MemoryStore::new(),
        transient: 20.into(),
        permanent: false,
    });
    let a = node(&store, "node-a");
    let fence = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&fence);
    a.lead("flaky", CancellationToken::new(), move |ctx| {
        *seen.lock().unwrap() = Some(ctx.fence());
        async { TermEnd::Stop }
    })
    .await
    .expect("transient errors are not the end of a campaign");
    assert_eq!(*fence.lock().unwrap(), Some(1));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_permanent_store_error_ends_lead_with_it() {
    let store: Arc<dyn LeaseStore> = Arc::new(Failing {
        inner: MemoryStore::new(),
        transient: 0.into(),
        permanent: true,
    });
    let a = node(&store, "node-a");
    let err = a
        .lead("broken", CancellationToken::new(), |_ctx| async {
            TermEnd::Stop
        })
        .await
        .unwrap_err();
    let store_error = err.as_store().expect("a store error");
    assert!(!store_error.is_transient());
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[test]
fn each_term_is_counted_as_an_action() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        rt.block_on(async {
            let a = node(&memory(), "node-a");
            let mut left = 2;
            a.lead("metered", CancellationToken::new(), |_ctx| {
                left -= 1;
                let end = if left == 0 {
                    TermEnd::Stop
                } else {
                    TermEnd::Resign
                };
                async move {
                    sleep(Duration::from_secs(1)).await;
                    end
                }
            })
            .await
            .unwrap();
        });
    });
    let terms: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| k.key().name() == leasehold::metrics::ACTION_SECONDS)
        .filter_map(|(.., v)| match v {
            DebugValue::Histogram(h) => Some(h.len()),
            _ => None,
        })
        .collect();
    assert_eq!(terms, [2], "two terms, one duration each");
}
