//! `Observed`: a store wrapper that remembers which locks were asked for, so the safety run can
//! look at the store's state of its (randomly named) lock afterwards.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{
    AcquireRequest, Extension, Holder, Lease, LeaseStore, LockName, LockState, Release,
    ReleaseSignal, StoreResult, async_trait,
};

/// The lock names seen, shared by every wrapper of one run.
pub(crate) type Seen = Arc<Mutex<BTreeSet<LockName>>>;

/// Delegates every call to `inner` unchanged and records the lock of each acquire.
pub(crate) struct Observed {
    inner: Arc<dyn LeaseStore>,
    seen: Seen,
}

impl Observed {
    pub(crate) fn wrap(inner: Arc<dyn LeaseStore>, seen: &Seen) -> Arc<dyn LeaseStore> {
        Arc::new(Self {
            inner,
            seen: Arc::clone(seen),
        })
    }
}

#[async_trait]
impl LeaseStore for Observed {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if !seen.contains(&req.lock) {
                seen.insert(req.lock.clone());
            }
        }
        self.inner.try_acquire(req).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        self.inner.acquire_is_cancel_safe()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
