//! Store layers: a store that wraps another and does the same thing around each of its calls
//! (fails it, counts it, delays it), forwarding everything else.
//!
//! A wrapper written by hand forwards each [`LeaseStore`] method one by one, and silently keeps
//! the contract's default for any method it forgets, so that when the contract grows (a batched
//! renewal, a batched read) the store behind the wrapper no longer behaves as it does alone. A
//! [`StoreLayer`] names its inner store and one [`around`](StoreLayer::around) hook instead; the
//! one implementation of [`LeaseStore`] for every layer sends each contract method through that
//! hook as a [`StoreCall`] and forwards every capability query, so a method added to the contract
//! reaches every layer at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreResult;
use crate::name::LockName;
use crate::store::batch::answer_each;
use crate::store::contract::{ClockSource, LeaseStore};
use crate::store::hand_off::HandOff;
use crate::store::lease::{
    AcquireRequest, Acquisition, Extension, Holder, Lease, LockState, Release, ReleasedTo,
};
use crate::store::list::{ListCursor, LockPage};
use crate::store::period::{PeriodRecord, PeriodStart};
use crate::store::signal::ReleaseSignal;

/// The inner store's answer to one call, not yet awaited: what a [`StoreLayer`] gets in
/// [`around`](StoreLayer::around). Awaiting it sends the call to the inner store; dropping it
/// unawaited sends nothing.
pub type StoreAnswer<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

/// One call of the [`LeaseStore`] contract that reaches the store: what a [`StoreLayer`] sees in
/// [`around`](StoreLayer::around). Capability queries ([`LeaseStore::renews_in_batches`],
/// [`LeaseStore::release_signal`], …) and [`LeaseStore::describe`] are not calls: they ask the
/// wrapper, not the store.
///
/// ```
/// use leasehold::store::StoreCall;
/// assert_eq!(StoreCall::ExtendMany.name(), "extend_many");
/// assert!(StoreCall::ExtendMany.writes());
/// assert!(!StoreCall::StateMany.writes());
/// assert_eq!(StoreCall::ALL.len(), 13);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoreCall {
    /// [`LeaseStore::try_acquire`].
    TryAcquire,
    /// [`LeaseStore::extend`].
    Extend,
    /// [`LeaseStore::extend_many`]: one call for the whole batch.
    ExtendMany,
    /// [`LeaseStore::release`].
    Release,
    /// [`LeaseStore::release_to`].
    ReleaseTo,
    /// [`LeaseStore::start_period`].
    StartPeriod,
    /// [`LeaseStore::period_record`].
    PeriodRecord,
    /// [`LeaseStore::clear_period_ledger`].
    ClearPeriodLedger,
    /// [`LeaseStore::state`].
    State,
    /// [`LeaseStore::state_many`]: one call for all the locks.
    StateMany,
    /// [`LeaseStore::holders`].
    Holders,
    /// [`LeaseStore::force_release`].
    ForceRelease,
    /// [`LeaseStore::list_locks`]: one call per page.
    ListLocks,
}

impl StoreCall {
    /// Every call, in the order of the contract.
    pub const ALL: [StoreCall; 13] = [
        StoreCall::TryAcquire,
        StoreCall::Extend,
        StoreCall::ExtendMany,
        StoreCall::Release,
        StoreCall::ReleaseTo,
        StoreCall::StartPeriod,
        StoreCall::PeriodRecord,
        StoreCall::ClearPeriodLedger,
        StoreCall::State,
        StoreCall::StateMany,
        StoreCall::Holders,
        StoreCall::ForceRelease,
        StoreCall::ListLocks,
    ];

    /// The contract method's name (`"try_acquire"`, `"extend_many"`, …).
    pub fn name(self) -> &'static str {
        match self {
            StoreCall::TryAcquire => "try_acquire",
            StoreCall::Extend => "extend",
            StoreCall::ExtendMany => "extend_many",
            StoreCall::Release => "release",
            StoreCall::ReleaseTo => "release_to",
            StoreCall::StartPeriod => "start_period",
            StoreCall::PeriodRecord => "period_record",
            StoreCall::ClearPeriodLedger => "clear_period_ledger",
            StoreCall::State => "state",
            StoreCall::StateMany => "state_many",
            StoreCall::Holders => "holders",
            StoreCall::ForceRelease => "force_release",
            StoreCall::ListLocks => "list_locks",
        }
    }

    /// True for the calls that may change the store: acquisitions, extensions (one or many),
    /// releases (with or without a hand-off), the start of a period claim, and the operators'
    /// break-glass writes (`force_release`, `clear_period_ledger`). False for the reads
    /// (`state`, `state_many`, `holders`, `period_record`, `list_locks`), which change nothing.
    pub fn writes(self) -> bool {
        match self {
            StoreCall::TryAcquire
            | StoreCall::Extend
            | StoreCall::ExtendMany
            | StoreCall::Release
            | StoreCall::ReleaseTo
            | StoreCall::StartPeriod
            | StoreCall::ClearPeriodLedger
            | StoreCall::ForceRelease => true,
            StoreCall::PeriodRecord
            | StoreCall::State
            | StoreCall::StateMany
            | StoreCall::Holders
            | StoreCall::ListLocks => false,
        }
    }
}

impl fmt::Display for StoreCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A store wrapped around another: every type that implements it is a [`LeaseStore`] that sends
/// each contract call to [`inner`](Self::inner) through [`around`](Self::around), and answers
/// each capability query as the inner store does unless the layer overrides it.
///
/// What the implementation of [`LeaseStore`] does for a layer:
///
/// * each contract method calls the same method of the inner store and passes that answer,
///   unawaited, to `around` with its [`StoreCall`]; what `around` returns is the answer;
/// * [`extend_many`](LeaseStore::extend_many) is one call ([`StoreCall::ExtendMany`]) of the inner
///   store's `extend_many`: an error from `around` fails every entry with that error (as a request
///   that fails as a whole does, see [`answer_each`](crate::store::answer_each)), and
///   [`state_many`](LeaseStore::state_many) is one call ([`StoreCall::StateMany`]), so a store that
///   renews or reads in batches still does behind the layer;
/// * [`describe`](LeaseStore::describe) and the capability queries
///   ([`renews_in_batches`](LeaseStore::renews_in_batches), [`hands_off`](LeaseStore::hands_off),
///   [`reads_in_batches`](LeaseStore::reads_in_batches),
///   [`release_signal`](LeaseStore::release_signal),
///   [`acquire_is_cancel_safe`](LeaseStore::acquire_is_cancel_safe),
///   [`is_process_local`](LeaseStore::is_process_local),
///   [`clock_source`](LeaseStore::clock_source),
///   [`expiry_tolerance`](LeaseStore::expiry_tolerance)) are this trait's methods of the same
///   names, which answer as the inner store does by default.
///
/// A layer whose `around` can yield after the inner store granted a lease (a delay of the answer,
/// a fault injected after the call) must answer `false` in
/// [`acquire_is_cancel_safe`](Self::acquire_is_cancel_safe), whatever the inner store says.
///
/// A layer that needs the typed answers (an [`ObservedStore`](crate::store::ObservedStore)) or
/// changes a call's arguments is not a layer: it implements [`LeaseStore`] itself.
///
/// Both traits name the capability queries, so with both in scope a method call on the layer's
/// own type is ambiguous: write `LeaseStore::describe(&layer)`, or use the layer as a
/// `dyn LeaseStore`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use leasehold::{LeaseStore, LockName, MemoryStore};
/// use leasehold::store::{
///     AcquireRequest, StoreAnswer, StoreCall, StoreLayer, StoreResult, Token, async_trait,
/// };
///
/// /// Counts the calls that may change the store.
/// struct CountingWrites {
///     inner: MemoryStore,
///     writes: AtomicU32,
/// }
///
/// #[async_trait]
/// impl StoreLayer for CountingWrites {
///     fn inner(&self) -> &dyn LeaseStore {
///         &self.inner
///     }
///
///     async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
///         if call.writes() {
///             self.writes.fetch_add(1, Ordering::Relaxed);
///         }
///         answer.await
///     }
/// }
///
/// let store = CountingWrites { inner: MemoryStore::new(), writes: AtomicU32::new(0) };
/// let lock = LockName::new("job")?;
/// let req = AcquireRequest::new(lock.clone(), 1, "me", Token::random(), Duration::from_secs(10));
/// store.try_acquire(&req).await?;
/// assert_eq!(store.state(&lock, 1).await?.holders.len(), 1);
/// assert_eq!(store.writes.load(Ordering::Relaxed), 1, "the read is not counted");
/// assert_eq!(LeaseStore::describe(&store), "memory");
/// # Ok(()) }
/// ```
#[async_trait]
pub trait StoreLayer: Send + Sync + 'static {
    /// The wrapped store, which every call is forwarded to.
    fn inner(&self) -> &dyn LeaseStore;

    /// Runs one call of the contract: `answer` is the inner store's answer to `call`, not yet
    /// awaited. The default awaits it. A layer may act before it (fail the call without sending
    /// it, by returning an error and dropping `answer`; delay it; count it) and after it (replace
    /// the answer with an error).
    ///
    /// # Errors
    ///
    /// The inner store's error, or the layer's own.
    ///
    /// # Cancel safety
    ///
    /// As the call it runs (see [`LeaseStore`]'s methods); a layer that yields after `answer`
    /// completed says so in [`acquire_is_cancel_safe`](Self::acquire_is_cancel_safe).
    async fn around<T: Send>(&self, call: StoreCall, answer: StoreAnswer<'_, T>) -> StoreResult<T> {
        let _ = call;
        answer.await
    }

    /// [`LeaseStore::describe`]; the default is the inner store's.
    fn describe(&self) -> String {
        self.inner().describe()
    }

    /// [`LeaseStore::renews_in_batches`]; the default is the inner store's.
    fn renews_in_batches(&self) -> bool {
        self.inner().renews_in_batches()
    }

    /// [`LeaseStore::hands_off`]; the default is the inner store's.
    fn hands_off(&self) -> bool {
        self.inner().hands_off()
    }

    /// [`LeaseStore::reads_in_batches`]; the default is the inner store's.
    fn reads_in_batches(&self) -> bool {
        self.inner().reads_in_batches()
    }

    /// [`LeaseStore::release_signal`]; the default is the inner store's.
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner().release_signal(lock)
    }

    /// [`LeaseStore::acquire_is_cancel_safe`]; the default is the inner store's. A layer whose
    /// [`around`](Self::around) can yield after the inner store answered answers `false`.
    fn acquire_is_cancel_safe(&self) -> bool {
        self.inner().acquire_is_cancel_safe()
    }

    /// [`LeaseStore::is_process_local`]; the default is the inner store's.
    fn is_process_local(&self) -> bool {
        self.inner().is_process_local()
    }

    /// [`LeaseStore::clock_source`]; the default is the inner store's.
    fn clock_source(&self) -> ClockSource {
        self.inner().clock_source()
    }

    /// [`LeaseStore::expiry_tolerance`]; the default is the inner store's.
    fn expiry_tolerance(&self) -> Duration {
        self.inner().expiry_tolerance()
    }
}

/// Every layer is a store: each call goes to the inner store through [`StoreLayer::around`].
#[async_trait]
impl<L: StoreLayer> LeaseStore for L {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        self.around(StoreCall::TryAcquire, self.inner().try_acquire(req))
            .await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.around(StoreCall::Extend, self.inner().extend(lease, ttl))
            .await
    }

    async fn extend_many(&self, leases: &[(Lease, Duration)]) -> Vec<StoreResult<Extension>> {
        let inner = self.inner();
        let answers = self
            .around(
                StoreCall::ExtendMany,
                Box::pin(async move { Ok(inner.extend_many(leases).await) }),
            )
            .await;
        match answers {
            Ok(answers) => answers,
            Err(e) => answer_each(Err(e), leases.len()),
        }
    }

    fn renews_in_batches(&self) -> bool {
        StoreLayer::renews_in_batches(self)
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.around(StoreCall::Release, self.inner().release(lease, linger))
            .await
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        self.around(
            StoreCall::ReleaseTo,
            self.inner().release_to(lease, linger, to),
        )
        .await
    }

    fn hands_off(&self) -> bool {
        StoreLayer::hands_off(self)
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        self.around(StoreCall::StartPeriod, self.inner().start_period(lease))
            .await
    }

    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.around(StoreCall::PeriodRecord, self.inner().period_record(lock))
            .await
    }

    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.around(
            StoreCall::ClearPeriodLedger,
            self.inner().clear_period_ledger(lock),
        )
        .await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.around(StoreCall::State, self.inner().state(lock, slots))
            .await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.around(
            StoreCall::ForceRelease,
            self.inner().force_release(lock, slots),
        )
        .await
    }

    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        self.around(StoreCall::Holders, self.inner().holders(lock))
            .await
    }

    async fn state_many(&self, locks: &[LockName], slots: u32) -> StoreResult<Vec<LockState>> {
        self.around(StoreCall::StateMany, self.inner().state_many(locks, slots))
            .await
    }

    fn reads_in_batches(&self) -> bool {
        StoreLayer::reads_in_batches(self)
    }

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.around(StoreCall::ListLocks, self.inner().list_locks(after))
            .await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        StoreLayer::release_signal(self, lock)
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        StoreLayer::acquire_is_cancel_safe(self)
    }

    fn is_process_local(&self) -> bool {
        StoreLayer::is_process_local(self)
    }

    fn clock_source(&self) -> ClockSource {
        StoreLayer::clock_source(self)
    }

    fn expiry_tolerance(&self) -> Duration {
        StoreLayer::expiry_tolerance(self)
    }

    fn describe(&self) -> String {
        StoreLayer::describe(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::error::StoreError;
    use crate::store::lease::Token;
    use crate::store::memory::MemoryStore;

    /// Records every call it sees; fails every call while `failing` is set.
    struct Recording {
        inner: MemoryStore,
        seen: Mutex<Vec<StoreCall>>,
        failing: bool,
    }

    impl Recording {
        fn new(failing: bool) -> Self {
            Self {
                inner: MemoryStore::new(),
                seen: Mutex::new(Vec::new()),
                failing,
            }
        }

        fn take(&self) -> Vec<StoreCall> {
            std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()))
        }
    }

    #[async_trait]
    impl StoreLayer for Recording {
        fn inner(&self) -> &dyn LeaseStore {
            &self.inner
        }

        async fn around<T: Send>(
            &self,
            call: StoreCall,
            answer: StoreAnswer<'_, T>,
        ) -> StoreResult<T> {
            self.seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(call);
            if self.failing {
                return Err(StoreError::transient(format!("failing {call}")));
            }
            answer.await
        }

        fn describe(&self) -> String {
            format!("recording({})", self.inner.describe())
        }
    }

    fn name(text: &str) -> LockName {
        LockName::new(text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Calls the contract method of `call` once. The match is exhaustive: a call added to
    /// [`StoreCall`] does not compile here until it is called.
    async fn call_once(store: &dyn LeaseStore, call: StoreCall, lease: &Lease) {
        let lock = name("layered");
        let ttl = Duration::from_secs(10);
        match call {
            StoreCall::TryAcquire => {
                let req = AcquireRequest::new(lock, 1, "other", Token::random(), ttl);
                let _ = store.try_acquire(&req).await;
            }
            StoreCall::Extend => {
                let _ = store.extend(lease, ttl).await;
            }
            StoreCall::ExtendMany => {
                let answers = store
                    .extend_many(&[(lease.clone(), ttl), (lease.clone(), ttl)])
                    .await;
                assert_eq!(answers.len(), 2);
            }
            StoreCall::Release => {
                let _ = store.release(lease, ttl).await;
            }
            StoreCall::ReleaseTo => {
                let _ = store.release_to(lease, ttl, HandOff::Anyone).await;
            }
            StoreCall::StartPeriod => {
                let _ = store.start_period(lease).await;
            }
            StoreCall::PeriodRecord => {
                let _ = store.period_record(&lock).await;
            }
            StoreCall::ClearPeriodLedger => {
                let _ = store.clear_period_ledger(&lock).await;
            }
            StoreCall::State => {
                let _ = store.state(&lock, 1).await;
            }
            StoreCall::StateMany => {
                let _ = store.state_many(&[lock.clone(), lock], 1).await;
            }
            StoreCall::Holders => {
                let _ = store.holders(&lock).await;
            }
            StoreCall::ForceRelease => {
                let _ = store.force_release(&lock, 1).await;
            }
            StoreCall::ListLocks => {
                let _ = store.list_locks(None).await;
            }
        }
    }

    async fn granted(store: &MemoryStore) -> Lease {
        let req = AcquireRequest::new(
            name("layered"),
            1,
            "me",
            Token::random(),
            Duration::from_secs(10),
        );
        match store.try_acquire(&req).await {
            Ok(Acquisition::Elected(lease)) => lease,
            _ => panic!("a free lock is granted"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn each_contract_method_is_one_call_of_its_kind() {
        let layer = Recording::new(false);
        let lease = granted(&layer.inner).await;
        for call in StoreCall::ALL {
            call_once(&layer, call, &lease).await;
            assert_eq!(layer.take(), [call], "{call}");
        }
        let mut names: Vec<_> = StoreCall::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            StoreCall::ALL.len(),
            "each call has its own name"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_batch_fails_every_entry_and_nothing_reaches_the_store() {
        let layer = Recording::new(true);
        let lease = granted(&layer.inner).await;
        let answers = layer
            .extend_many(&vec![(lease.clone(), Duration::from_secs(60)); 3])
            .await;
        assert_eq!(answers.len(), 3);
        assert!(
            answers
                .iter()
                .all(|a| a.as_ref().is_err_and(StoreError::is_transient))
        );
        assert_eq!(layer.take(), [StoreCall::ExtendMany]);
        let held = layer.inner.state(&lease.lock, 1).await.map(|s| s.holders);
        assert_eq!(
            held.ok().and_then(|h| h.first().map(|h| h.expires_at)),
            Some(lease.expires_at),
            "not extended"
        );
    }

    #[test]
    fn capabilities_and_description_are_the_inner_stores_unless_overridden() {
        let layer = Recording::new(false);
        let store: &dyn LeaseStore = &layer;
        let memory = MemoryStore::new();
        assert_eq!(store.renews_in_batches(), memory.renews_in_batches());
        assert_eq!(store.reads_in_batches(), memory.reads_in_batches());
        assert_eq!(store.hands_off(), memory.hands_off());
        assert_eq!(
            store.acquire_is_cancel_safe(),
            memory.acquire_is_cancel_safe()
        );
        assert_eq!(store.is_process_local(), memory.is_process_local());
        assert_eq!(store.clock_source(), memory.clock_source());
        assert_eq!(store.expiry_tolerance(), memory.expiry_tolerance());
        assert_eq!(
            store.release_signal(&name("x")).is_some(),
            memory.release_signal(&name("x")).is_some()
        );
        assert_eq!(store.describe(), "recording(memory)");
    }

    #[test]
    fn writes_are_the_calls_that_may_change_the_store() {
        let writes: Vec<_> = StoreCall::ALL
            .into_iter()
            .filter(|c| c.writes())
            .map(StoreCall::name)
            .collect();
        assert_eq!(
            writes,
            [
                "try_acquire",
                "extend",
                "extend_many",
                "release",
                "release_to",
                "start_period",
                "clear_period_ledger",
                "force_release"
            ]
        );
    }
}
