//! Watching a store's answers without changing them: audit logs, custom metrics, simulations.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreResult;
use crate::name::LockName;
use crate::store::contract::{ClockSource, LeaseStore};
use crate::store::hand_off::HandOff;
use crate::store::lease::Acquisition;
use crate::store::lease::{
    AcquireRequest, Extension, Holder, Lease, LockState, Release, ReleasedTo,
};
use crate::store::list::{ListCursor, LockPage};
use crate::store::signal::ReleaseSignal;

/// Sees the calls an [`ObservedStore`] forwards and the answers it passes back. Every method has
/// an empty default, so an observer implements only what it needs. Observers run inline on the
/// calling task: keep them short and never block.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use leasehold::store::StoreObserver;
/// use leasehold::store::{Acquisition, AcquireRequest, StoreResult};
///
/// #[derive(Default)]
/// struct Grants(AtomicU32);
///
/// impl StoreObserver for Grants {
///     fn acquired(&self, _req: &AcquireRequest, answer: &StoreResult<Acquisition>) {
///         if matches!(answer, Ok(Acquisition::Elected(_))) {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
/// ```
pub trait StoreObserver: Send + Sync {
    /// An acquisition is about to be sent (seen even if the caller gives up before the answer).
    fn acquiring(&self, _req: &AcquireRequest) {}
    /// The store answered an acquisition.
    fn acquired(&self, _req: &AcquireRequest, _answer: &StoreResult<Acquisition>) {}
    /// The store answered an extension to `ttl`.
    fn extended(&self, _lease: &Lease, _ttl: Duration, _answer: &StoreResult<Extension>) {}
    /// The store answered a release with `linger` left of the minimum lease.
    fn released(&self, _lease: &Lease, _linger: Duration, _answer: &StoreResult<Release>) {}
}

/// A store that forwards every call unchanged to another store and shows the acquisitions,
/// extensions and releases, with their answers, to a [`StoreObserver`]. Elections through it
/// behave exactly as through the inner store (same answers, same release signal, same
/// cancel safety).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::{Arc, Mutex};
/// use leasehold::{Elector, MemoryStore, store::{ObservedStore, StoreObserver}};
/// use leasehold::store::{Acquisition, AcquireRequest, StoreResult};
///
/// #[derive(Default)]
/// struct Fences(Mutex<Vec<u64>>);
///
/// impl StoreObserver for Fences {
///     fn acquired(&self, _req: &AcquireRequest, answer: &StoreResult<Acquisition>) {
///         if let Ok(Acquisition::Elected(lease)) = answer {
///             self.0.lock().unwrap().push(lease.fence);
///         }
///     }
/// }
///
/// let store = Arc::new(ObservedStore::new(Arc::new(MemoryStore::new()), Fences::default()));
/// let elector = Elector::new(store.clone());
/// elector.run_if_leader("report", |_| async {}).await?;
/// elector.run_if_leader("report", |_| async {}).await?;
/// assert_eq!(*store.observer().0.lock().unwrap(), [1, 2]);
/// # Ok(()) }
/// ```
pub struct ObservedStore<O> {
    inner: Arc<dyn LeaseStore>,
    observer: O,
}

impl<O> ObservedStore<O> {
    /// Wraps `inner`, showing its answers to `observer`.
    pub fn new(inner: Arc<dyn LeaseStore>, observer: O) -> Self {
        Self { inner, observer }
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// The store every call goes to.
    pub fn inner(&self) -> &Arc<dyn LeaseStore> {
        &self.inner
    }
}

impl<O> std::fmt::Debug for ObservedStore<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedStore")
            .field("inner", &self.inner.describe())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<O: StoreObserver + 'static> LeaseStore for ObservedStore<O> {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.observer.acquiring(req);
        let answer = self.inner.try_acquire(req).await;
        self.observer.acquired(req, &answer);
        answer
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let answer = self.inner.extend(lease, ttl).await;
        self.observer.extended(lease, ttl, &answer);
        answer
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let answer = self.inner.release(lease, linger).await;
        self.observer.released(lease, linger, &answer);
        answer
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        let answer = self.inner.release_to(lease, linger, to).await;
        let kept_for_another = answer.as_ref().is_ok_and(|a| a.kept_for_another);
        let release = answer.map(|a| a.release);
        self.observer.released(lease, linger, &release);
        release.map(|release| ReleasedTo {
            release,
            kept_for_another,
        })
    }

    fn hands_off(&self) -> bool {
        self.inner.hands_off()
    }

    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        let answers = self.inner.extend_many(leases).await;
        for ((lease, ttl), answer) in leases.iter().zip(&answers) {
            self.observer.extended(lease, *ttl, answer);
        }
        answers
    }

    fn renews_in_batches(&self) -> bool {
        self.inner.renews_in_batches()
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }

    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        self.inner.holders(lock).await
    }

    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        self.inner.state_many(locks, slots).await
    }

    fn reads_in_batches(&self) -> bool {
        self.inner.reads_in_batches()
    }

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.inner.list_locks(after).await
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<crate::store::period::PeriodStart> {
        self.inner.start_period(lease).await
    }

    async fn period_record(
        &self,
        lock: &LockName,
    ) -> StoreResult<Option<crate::store::period::PeriodRecord>> {
        self.inner.period_record(lock).await
    }

    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> StoreResult<Option<crate::store::period::PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
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
