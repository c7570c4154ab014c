//! `FaultyStore`: the fault-injecting wrapper.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::LeaseStore;
use leasehold::store::{StoreAnswer, StoreCall, StoreLayer, StoreResult};
use tracing::debug;

use super::control::{FaultControl, FaultPoint, Op, Plan, Switches};

/// A fault-injecting wrapper around a real [`LeaseStore`]: every call is delegated to the wrapped
/// store, except that calls can be made to fail (before or after the store applied them) or to be
/// delayed, per operation, as the [`FaultControl`] says at the moment of the call.
///
/// * It is a [`StoreLayer`]: every call of the contract is faulted as the [`Op`] that
///   [`Op::of`] names for it (`holders`, `state_many`, `list_locks` and `period_record` as
///   [`Op::State`], `release_to` as [`Op::Release`], `clear_period_ledger` as
///   [`Op::ForceRelease`]). Release signals and the other capabilities are forwarded from the
///   wrapped store unchanged; `force_release` is forwarded like the other operations (and can
///   be faulted as [`Op::ForceRelease`]).
/// * Each lease renews on its own ([`renews_in_batches`](LeaseStore::renews_in_batches) is
///   false), so a fault on one renewal fails that lease alone;
///   [`passing_batches`](Self::passing_batches) forwards the wrapped store's batches instead.
///   An `extend_many` is one call of [`Op::Extend`] either way (a fault fails every entry, as
///   a request that failed as a whole does), and a `state_many` one call of [`Op::State`].
/// * [`acquire_is_cancel_safe`](LeaseStore::acquire_is_cancel_safe) is always `false`, whatever the
///   wrapped store says. An answer delay (or an [`AfterApply`](FaultPoint::AfterApply) failure)
///   means the wrapped store may grant a lease and the wrapper then yields before returning it, so
///   dropping the call there would leave the lease behind — exactly the situation of a networked
///   store. Because faults change at run time, possibly while a call is in flight, the only
///   answer that is always true is `false`; it makes the core hand an acquisition attempt whose
///   caller stopped waiting over to a cleanup task and release late grants, the same path real
///   network stores take.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use leasehold::{LeaseStore, MemoryStore};
/// use leasehold_testkit::fault::FaultyStore;
///
/// let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
/// assert!(!store.acquire_is_cancel_safe());
/// assert_eq!(store.describe(), "faulty(memory)");
/// # let _ = faults; }
/// ```
pub struct FaultyStore {
    inner: Arc<dyn LeaseStore>,
    switches: Arc<Switches>,
    /// Whether batched renewals pass through (the default) or each lease renews alone.
    batches: bool,
}

impl std::fmt::Debug for FaultyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyStore")
            .field("inner", &self.inner.describe())
            .finish_non_exhaustive()
    }
}

impl FaultyStore {
    /// Wraps `inner`; returns the wrapper and the handle that switches its faults. No fault is
    /// active at first.
    pub fn new(inner: Arc<dyn LeaseStore>) -> (Arc<Self>, FaultControl) {
        Self::build(inner, false)
    }

    /// Wraps `inner` as [`new`](Self::new) does, but passes batched renewals through: its
    /// [`renews_in_batches`](LeaseStore::renews_in_batches) is `inner`'s, and one
    /// `extend_many` is one call of [`Op::Extend`] (a fault fails every entry). A session
    /// store then keeps its one renewal per beat under faults.
    pub fn passing_batches(inner: Arc<dyn LeaseStore>) -> (Arc<Self>, FaultControl) {
        Self::build(inner, true)
    }

    fn build(inner: Arc<dyn LeaseStore>, batches: bool) -> (Arc<Self>, FaultControl) {
        let switches = Arc::new(Switches::default());
        let control = FaultControl::new(Arc::clone(&switches));
        (
            Arc::new(Self {
                inner,
                switches,
                batches,
            }),
            control,
        )
    }

    /// Another handle to this wrapper's switches.
    pub fn control(&self) -> FaultControl {
        FaultControl::new(Arc::clone(&self.switches))
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<dyn LeaseStore> {
        &self.inner
    }

    /// Runs one call of `op` through the current plan.
    async fn call<T, Fut>(&self, op: Op, forward: impl FnOnce() -> Fut) -> StoreResult<T>
    where
        Fut: Future<Output = StoreResult<T>>,
    {
        let plan = self.switches.plan(op);
        pause(plan.request_delay).await;
        if let Some((kind, FaultPoint::BeforeApply, call)) = plan.failure {
            debug!(%op, call, "injecting a fault before the store");
            return Err(Plan::error(op, kind, call));
        }
        let answer = forward().await;
        pause(plan.answer_delay).await;
        if let Some((kind, FaultPoint::AfterApply, call)) = plan.failure {
            debug!(%op, call, "dropping the store's answer and injecting a fault");
            return Err(Plan::error(op, kind, call));
        }
        answer
    }
}

async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

#[async_trait]
impl StoreLayer for FaultyStore {
    fn inner(&self) -> &dyn LeaseStore {
        &*self.inner
    }

    async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
        self.call(Op::of(call), move || answer).await
    }

    fn renews_in_batches(&self) -> bool {
        self.batches && self.inner.renews_in_batches()
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        false
    }

    fn describe(&self) -> String {
        format!("faulty({})", self.inner.describe())
    }
}
