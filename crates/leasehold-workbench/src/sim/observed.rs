//! A pass-through [`LeaseStore`] that journals the real [`MemoryStore`]'s answers.

use std::time::Duration;

use leasehold::{
    AcquireRequest, Extension, Holder, Lease, LeaseStore, LockName, LockState, MemoryStore,
    Release, ReleaseSignal, StoreResult, async_trait,
};

use crate::sim::journal::Journal;

/// Forwards every call to the inner [`MemoryStore`] unchanged and writes its answer to the
/// [`Journal`]: the elector decides and the store answers exactly as without it. Needed because
/// some answers never reach an event (a contended first attempt, a release refused because the
/// lease had already been lost).
#[derive(Debug)]
pub(crate) struct ObservedStore {
    inner: MemoryStore,
    journal: Journal,
}

impl ObservedStore {
    pub(crate) fn new(inner: MemoryStore, journal: Journal) -> Self {
        Self { inner, journal }
    }
}

#[async_trait]
impl LeaseStore for ObservedStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        let answer = self.inner.try_acquire(req).await?;
        self.journal.acquired(req, answer.as_ref());
        Ok(answer)
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let answer = self.inner.extend(lease, ttl).await?;
        self.journal.extended(lease, &answer);
        Ok(answer)
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        let answer = self.inner.release(lease, linger).await?;
        self.journal.released(lease, linger, answer);
        Ok(answer)
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
