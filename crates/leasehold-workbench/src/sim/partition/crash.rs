//! A crashed node's view of the store: from the crash on, none of its requests arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leasehold::store::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, ClockSource, HandOff, ListCursor, LockPage, PeriodStart,
    ReleaseSignal, ReleasedTo, StoreError, StoreResult,
};
use leasehold::{
    Holder, Lease, LeaseStore, LockName, PeriodRecord,
    store::{Extension, LockState, Release},
};

/// Wraps the shared store for one node. Once [`crash`](Self::crash) was called, every call
/// the node makes is answered with a transient error before it reaches the store, reads
/// included: nothing of the node changes the store any more (no renewal, no release), as
/// when its process died. Its leases then end only by expiring.
pub(crate) struct CrashStore {
    inner: Arc<dyn LeaseStore>,
    crashed: AtomicBool,
}

impl CrashStore {
    pub(crate) fn new(inner: Arc<dyn LeaseStore>) -> Self {
        Self {
            inner,
            crashed: AtomicBool::new(false),
        }
    }

    /// From now on the node's requests no longer reach the store.
    pub(crate) fn crash(&self) {
        self.crashed.store(true, Ordering::SeqCst);
    }

    fn check(&self, call: &str) -> StoreResult<()> {
        if self.crashed.load(Ordering::SeqCst) {
            Err(unreachable(call))
        } else {
            Ok(())
        }
    }
}

/// The error a crashed node's `call` gets.
fn unreachable(call: &str) -> StoreError {
    StoreError::transient(format!(
        "simulated crash: the node's {call} never reaches the store"
    ))
}

#[async_trait]
impl LeaseStore for CrashStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.check("try_acquire")?;
        self.inner.try_acquire(req).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.check("extend")?;
        self.inner.extend(lease, ttl).await
    }

    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        if self.crashed.load(Ordering::SeqCst) {
            return leases.iter().map(|_| Err(unreachable("extend"))).collect();
        }
        self.inner.extend_many(leases).await
    }

    fn renews_in_batches(&self) -> bool {
        self.inner.renews_in_batches()
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.check("release")?;
        self.inner.release(lease, linger).await
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        self.check("release")?;
        self.inner.release_to(lease, linger, to).await
    }

    fn hands_off(&self) -> bool {
        self.inner.hands_off()
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        self.check("start_period")?;
        self.inner.start_period(lease).await
    }

    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.check("period_record")?;
        self.inner.period_record(lock).await
    }

    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.check("clear_period_ledger")?;
        self.inner.clear_period_ledger(lock).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.check("state")?;
        self.inner.state(lock, slots).await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.check("force_release")?;
        self.inner.force_release(lock, slots).await
    }

    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        self.check("holders")?;
        self.inner.holders(lock).await
    }

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.check("list_locks")?;
        self.inner.list_locks(after).await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        self.inner.acquire_is_cancel_safe()
    }

    fn is_process_local(&self) -> bool {
        self.inner.is_process_local()
    }

    fn clock_source(&self) -> ClockSource {
        self.inner.clock_source()
    }

    fn expiry_tolerance(&self) -> std::time::Duration {
        self.inner.expiry_tolerance()
    }

    fn describe(&self) -> String {
        format!("crashable({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use leasehold::{MemoryStore, store::Token};

    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn after_the_crash_nothing_reaches_the_store() {
        let memory: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
        let store = CrashStore::new(memory.clone());
        let lock = LockName::new("job").unwrap_or_else(|e| panic!("{e}"));
        let req = AcquireRequest::new(lock.clone(), 1, "node-c", Token::random(), TICK_30);
        let Ok(Acquisition::Elected(lease)) = store.try_acquire(&req).await else {
            panic!("a free lock is granted before the crash");
        };
        store.crash();
        assert!(store.extend(&lease, TICK_30).await.is_err());
        assert!(store.release(&lease, Duration::ZERO).await.is_err());
        assert!(store.state(&lock, 1).await.is_err());
        let held = memory.state(&lock, 1).await.map(|s| s.holders.len());
        assert_eq!(
            held.ok(),
            Some(1),
            "the crashed node's lease stays until it expires"
        );
    }

    const TICK_30: Duration = Duration::from_secs(30);
}
