//! A store outage: the store answers every write with a transient error for a window of ticks.

use std::sync::Arc;
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
use tokio::time::Instant;

use crate::sim::clock::Clock;

/// Wraps the simulated store: during ticks `from..from + ticks` every acquisition, extension,
/// release and period start is answered with a [transient](StoreError::transient) error before
/// it reaches the store (so nothing of it is applied), as a store that cannot be reached
/// answers. Reads (`state`, `holders`, the ledger) pass through: the driver reads the lock's
/// state for every frame, and that reading is the simulation's, not a node's.
pub(crate) struct OutageStore {
    inner: Arc<dyn LeaseStore>,
    clock: Clock,
    from: u32,
    until: u32,
}

impl OutageStore {
    /// `inner`, unreachable for writes during ticks `from..from + ticks` of `clock`.
    pub(crate) fn new(inner: Arc<dyn LeaseStore>, clock: Clock, from: u32, ticks: u32) -> Self {
        Self {
            inner,
            clock,
            from,
            until: from.saturating_add(ticks),
        }
    }

    /// An error if the store is down now.
    fn check(&self, call: &str) -> StoreResult<()> {
        let tick = self.clock.tick(Instant::now());
        if (self.from..self.until).contains(&tick) {
            Err(StoreError::transient(format!(
                "simulated outage: the store cannot be reached ({call})"
            )))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl LeaseStore for OutageStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.check("try_acquire")?;
        self.inner.try_acquire(req).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.check("extend")?;
        self.inner.extend(lease, ttl).await
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
        self.inner.period_record(lock).await
    }

    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
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

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
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
        format!("outage({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use leasehold::{MemoryStore, store::Token};

    use super::*;
    use crate::sim::clock::TICK;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn writes_fail_during_the_window_only_and_are_not_applied() {
        let memory = Arc::new(MemoryStore::new());
        let clock = Clock::new(Instant::now());
        let store = OutageStore::new(memory.clone(), clock, 1, 2);
        let lock = LockName::new("job").unwrap_or_else(|e| panic!("{e}"));
        let req = AcquireRequest::new(lock.clone(), 1, "node-a", Token::random(), TICK * 30);
        let held = |s: LockState| s.holders.len();

        tokio::time::sleep_until(clock.attempt_at(1, 0)).await;
        let refused = store.try_acquire(&req).await;
        assert!(refused.as_ref().is_err_and(StoreError::is_transient));
        assert_eq!(store.state(&lock, 1).await.ok().map(held), Some(0));

        tokio::time::sleep_until(clock.attempt_at(2, 0)).await;
        assert!(store.try_acquire(&req).await.is_err(), "tick 2 is down too");

        tokio::time::sleep_until(clock.attempt_at(3, 0)).await;
        assert!(matches!(
            store.try_acquire(&req).await,
            Ok(Acquisition::Elected(_))
        ));
        assert_eq!(store.state(&lock, 1).await.ok().map(held), Some(1));
    }
}
