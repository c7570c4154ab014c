//! `CountingStore`: counts the requests an elector sends to its store, client-side — the figure
//! of the session scenarios on stores without server statistics (memory, SQLite, DynamoDB
//! through dynalite, and NATS without a monitoring port except for hold-many's writes), and the
//! cross-check beside the server's own counters everywhere else.
//!
//! Every `LeaseStore` method that reaches the store counts as one request, and
//! [`extend_many`](LeaseStore::extend_many) counts as **one** (on a store that renews in
//! batches it is one statement or script; on the others its default issues one `extend` per
//! lease, which this wrapper does not see apart, so there it is one request per *call*, not per
//! lease: compare with the server figure).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use leasehold::store::StoreError;
use leasehold::store::{
    AcquireRequest, Acquisition, ClockSource, Extension, HandOff, Holder, Lease, ListCursor,
    LockPage, LockState, PeriodRecord, PeriodStart, Release, ReleaseSignal, ReleasedTo,
    StoreResult, async_trait,
};
use leasehold::{LeaseStore, LockName};

/// Requests counted, shared by every wrapper of one group of clients.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Every request.
    pub(crate) all: AtomicU64,
    /// `try_acquire` calls (for waiters: their polls).
    pub(crate) acquires: AtomicU64,
    /// `extend` and `extend_many` calls.
    pub(crate) extends: AtomicU64,
}

impl Calls {
    pub(crate) fn all(&self) -> u64 {
        self.all.load(Ordering::Relaxed)
    }

    fn count(&self, kind: Option<&AtomicU64>) {
        self.all.fetch_add(1, Ordering::Relaxed);
        if let Some(k) = kind {
            k.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A store that forwards every call unchanged and counts it in [`Calls`].
pub(crate) struct CountingStore {
    inner: Arc<dyn LeaseStore>,
    calls: Arc<Calls>,
    /// When set and true, every call fails before it reaches the store (and is not counted):
    /// a process killed, as the store sees it.
    cut: Option<Arc<AtomicBool>>,
}

impl CountingStore {
    pub(crate) fn wrap(inner: Arc<dyn LeaseStore>, calls: &Arc<Calls>) -> Arc<dyn LeaseStore> {
        Arc::new(Self {
            inner,
            calls: Arc::clone(calls),
            cut: None,
        })
    }

    /// As [`wrap`](Self::wrap), and every call fails from the moment `cut` is set: a process
    /// killed, as the store sees it (nothing it sends arrives), while the store keeps renewing
    /// in batches where it can (the testkit's `FaultyStore` renews each lease alone).
    pub(crate) fn wrap_cuttable(
        inner: Arc<dyn LeaseStore>,
        calls: &Arc<Calls>,
        cut: &Arc<AtomicBool>,
    ) -> Arc<dyn LeaseStore> {
        Arc::new(Self {
            inner,
            calls: Arc::clone(calls),
            cut: Some(Arc::clone(cut)),
        })
    }

    /// An error if the wrapper was cut off.
    fn check(&self) -> StoreResult<()> {
        match &self.cut {
            Some(cut) if cut.load(Ordering::Relaxed) => Err(cut_off()),
            _ => Ok(()),
        }
    }
}

/// The error of a call on a client the bench cut off: as a transient network failure looks.
fn cut_off() -> StoreError {
    StoreError::transient("cut off: the bench killed this client")
}

#[async_trait]
impl LeaseStore for CountingStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.check()?;
        self.calls.count(Some(&self.calls.acquires));
        self.inner.try_acquire(req).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.check()?;
        self.calls.count(Some(&self.calls.extends));
        self.inner.extend(lease, ttl).await
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.check()?;
        self.calls.count(None);
        self.inner.release(lease, linger).await
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        self.check()?;
        self.calls.count(None);
        self.inner.release_to(lease, linger, to).await
    }

    fn hands_off(&self) -> bool {
        self.inner.hands_off()
    }

    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        if self.check().is_err() {
            return leases.iter().map(|_| Err(cut_off())).collect();
        }
        self.calls.count(Some(&self.calls.extends));
        self.inner.extend_many(leases).await
    }

    fn renews_in_batches(&self) -> bool {
        self.inner.renews_in_batches()
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        self.check()?;
        self.calls.count(None);
        self.inner.start_period(lease).await
    }

    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.check()?;
        self.calls.count(None);
        self.inner.period_record(lock).await
    }

    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.check()?;
        self.calls.count(None);
        self.inner.clear_period_ledger(lock).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.check()?;
        self.calls.count(None);
        self.inner.state(lock, slots).await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.check()?;
        self.calls.count(None);
        self.inner.force_release(lock, slots).await
    }

    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        self.check()?;
        self.calls.count(None);
        self.inner.holders(lock).await
    }

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.check()?;
        self.calls.count(None);
        self.inner.list_locks(after).await
    }

    /// One call, however many locks (as a listing page is one).
    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        self.check()?;
        self.calls.count(None);
        self.inner.state_many(locks, slots).await
    }

    fn reads_in_batches(&self) -> bool {
        self.inner.reads_in_batches()
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }

    fn is_process_local(&self) -> bool {
        self.inner.is_process_local()
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        self.inner.acquire_is_cancel_safe()
    }

    fn clock_source(&self) -> ClockSource {
        self.inner.clock_source()
    }

    fn expiry_tolerance(&self) -> std::time::Duration {
        self.inner.expiry_tolerance()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use leasehold::{ElectionOptions, Elector, MemoryStore};

    use super::{Calls, CountingStore};

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_of_renewals_counts_once() -> Result<(), Box<dyn std::error::Error>> {
        let calls = Arc::new(Calls::default());
        let store = CountingStore::wrap(Arc::new(MemoryStore::new()), &calls);
        assert!(store.renews_in_batches());
        let options = ElectionOptions::builder()
            .lease(Duration::from_millis(600))
            .build()?;
        let elector = Elector::with_options(store, options);
        let mut guards = Vec::new();
        for i in 0..10 {
            guards.push(
                elector
                    .try_acquire(format!("count-{i}"))
                    .await?
                    .elected()
                    .ok_or("busy")?,
            );
        }
        assert_eq!(calls.all(), 10);
        // About three beats (lease / 3 = 200 ms): one request per beat, whatever the number
        // of leases.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let renewals = calls.extends.load(std::sync::atomic::Ordering::Relaxed);
        assert!((2..=5).contains(&renewals), "{renewals} renewal requests");
        assert!(guards.iter().all(|g| !g.is_lost()));
        for g in guards {
            g.release().await?;
        }
        Ok(())
    }
}
