//! A store outage: the store answers every write with a transient error for a window of ticks.

use std::sync::Arc;

use leasehold::LeaseStore;
use leasehold::store::{StoreAnswer, StoreCall, StoreError, StoreLayer, StoreResult, async_trait};
use tokio::time::Instant;

use crate::sim::clock::Clock;

/// Wraps the simulated store: during ticks `from..from + ticks` every acquisition, extension
/// (one or a batch), release and period start is answered with a
/// [transient](StoreError::transient) error before it reaches the store (so nothing of it is
/// applied), as a store that cannot be reached answers. Reads (`state`, `holders`, the ledger)
/// and the operators' break-glass writes pass through: the driver reads the lock's state for
/// every frame, and that reading is the simulation's, not a node's.
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
}

/// The name a simulated failure gives `call`: a batch is named as its single call, a release
/// with a hand-off as a release.
pub(crate) fn request_name(call: StoreCall) -> &'static str {
    match call {
        StoreCall::ExtendMany => "extend",
        StoreCall::ReleaseTo => "release",
        StoreCall::StateMany => "state",
        call => call.name(),
    }
}

#[async_trait]
impl StoreLayer for OutageStore {
    fn inner(&self) -> &dyn LeaseStore {
        &*self.inner
    }

    async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
        let gated = matches!(
            call,
            StoreCall::TryAcquire
                | StoreCall::Extend
                | StoreCall::ExtendMany
                | StoreCall::Release
                | StoreCall::ReleaseTo
                | StoreCall::StartPeriod
        );
        if gated && (self.from..self.until).contains(&self.clock.tick(Instant::now())) {
            return Err(StoreError::transient(format!(
                "simulated outage: the store cannot be reached ({})",
                request_name(call)
            )));
        }
        answer.await
    }

    fn describe(&self) -> String {
        format!("outage({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use leasehold::store::{AcquireRequest, Acquisition, Extension, LockState, Token};
    use leasehold::{LockName, MemoryStore};

    use super::*;
    use crate::sim::clock::TICK;

    /// The calls that reach a memory store.
    #[derive(Default)]
    struct Seen {
        inner: MemoryStore,
        calls: Mutex<Vec<StoreCall>>,
    }

    #[async_trait]
    impl StoreLayer for Seen {
        fn inner(&self) -> &dyn LeaseStore {
            &self.inner
        }

        async fn around<T: Send>(
            &self,
            call: StoreCall,
            answer: StoreAnswer<'_, T>,
        ) -> StoreResult<T> {
            self.calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(call);
            answer.await
        }
    }

    impl Seen {
        fn take(&self) -> Vec<StoreCall> {
            std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()))
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn batches_pass_through_and_fail_whole_during_the_window() {
        let seen = Arc::new(Seen::default());
        let clock = Clock::new(Instant::now());
        let store: Arc<dyn LeaseStore> = Arc::new(OutageStore::new(seen.clone(), clock, 1, 2));
        let memory = MemoryStore::new();
        assert_eq!(store.renews_in_batches(), memory.renews_in_batches());
        assert_eq!(store.reads_in_batches(), memory.reads_in_batches());

        let mut leases = Vec::new();
        for name in ["a", "b", "c"] {
            let lock = LockName::new(name).unwrap_or_else(|e| panic!("{e}"));
            let req = AcquireRequest::new(lock, 1, "node-a", Token::random(), TICK * 30);
            let Ok(Acquisition::Elected(lease)) = store.try_acquire(&req).await else {
                panic!("a free lock is granted before the outage");
            };
            leases.push((lease, TICK * 30));
        }
        seen.take();

        tokio::time::sleep_until(clock.attempt_at(1, 0)).await;
        let down = store.extend_many(&leases).await;
        assert_eq!(down.len(), 3);
        assert!(
            down.iter()
                .all(|a| a.as_ref().is_err_and(StoreError::is_transient)),
            "{down:?}"
        );
        assert!(seen.take().is_empty(), "nothing reached the store");

        tokio::time::sleep_until(clock.attempt_at(3, 0)).await;
        let up = store.extend_many(&leases).await;
        assert!(
            up.iter()
                .all(|a| matches!(a, Ok(Extension::Extended { .. }))),
            "{up:?}"
        );
        assert_eq!(
            seen.take(),
            [StoreCall::ExtendMany],
            "one batch, as the store renews"
        );
    }

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
