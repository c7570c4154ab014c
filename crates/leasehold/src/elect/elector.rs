//! `Elector`: election of one leader, or of up to N (`max_leaders`).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::elect::lead::LeadershipStream;
use crate::elect::shared::ElectorShared;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::name::{IntoLockName, NameError};
use crate::options::ElectionOptions;
use crate::outcome::Outcome;
use crate::store::contract::LeaseStore;
use crate::store::lease::LockState;
use crate::store::period::Period;
use crate::tenant::Tenant;

/// Election over a [`LeaseStore`]: run work on one node, skip it everywhere else — or on up to N
/// nodes at once with [`max_leaders`](crate::ElectionOptionsBuilder::max_leaders), each holder in
/// its own slot with its own fence.
///
/// Cheap to clone; clones share store, options and event channel.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{ElectionOptions, Elector, MemoryStore, Outcome};
///
/// let store = Arc::new(MemoryStore::new());
/// let elector = Elector::with_options(store, ElectionOptions::builder().wait(Duration::ZERO).build()?);
///
/// // Contention is not an error: the second caller skips while the first holds the lock.
/// let held = elector.try_acquire("report").await?.elected().expect("free");
/// assert_eq!(elector.run_if_leader("report", |_| async { "ran" }).await?, None);
/// held.release().await?;
///
/// let outcome = elector.run("report", |ctx| async move { Ok::<_, String>(ctx.fence()) }).await?;
/// assert_eq!(outcome, Outcome::Elected(2));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Elector {
    /// Shared by this elector's clones, tenants and reconfigured copies, and the leases they
    /// hold.
    pub(crate) shared: Arc<ElectorShared>,
    pub(crate) options: Arc<ElectionOptions>,
    pub(crate) slots: u32,
    pub(crate) tenant: Option<Arc<Tenant>>,
}

impl std::fmt::Debug for Elector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elector")
            .field("store", &self.shared.store.describe())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Elector {
    /// An elector with default options: wait 0 (one attempt, skip at once when the lock is held),
    /// a 15 s lease renewed while the action runs, and the action stopped if the lease is lost
    /// (see [`ElectionOptions`]).
    pub fn new(store: Arc<dyn LeaseStore>) -> Self {
        Self::with_options(store, ElectionOptions::default())
    }

    /// An elector with the given options.
    pub fn with_options(store: Arc<dyn LeaseStore>, options: ElectionOptions) -> Self {
        Self {
            shared: Arc::new(ElectorShared::new(store, &options)),
            slots: options.max_leaders,
            options: Arc::new(options),
            tenant: None,
        }
    }

    /// A copy with other options, sharing store and event channel.
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{ElectionOptions, Elector, MemoryStore};
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let quick = elector.reconfigured(ElectionOptions::builder().wait(Duration::ZERO).build()?);
    /// assert_eq!(quick.options().wait(), Duration::ZERO);
    /// # Ok::<(), leasehold::error::OptionsError>(())
    /// ```
    pub fn reconfigured(&self, options: ElectionOptions) -> Self {
        Self {
            slots: options.max_leaders,
            options: Arc::new(options),
            ..self.clone()
        }
    }

    /// The options.
    pub fn options(&self) -> &ElectionOptions {
        &self.options
    }

    /// How many nodes may hold a lock at once ([`ElectionOptions::max_leaders`]).
    pub fn max_leaders(&self) -> u32 {
        self.slots
    }

    /// Runs `action` at most once per `period` of the lock across every node that uses the same
    /// store: the run is granted only if this node wins the lock within `wait` **and** the lock's
    /// period ledger records no run for the store's current period (or a later one); the grant
    /// records the period atomically with the lease (see [`Period`]). Another node's run for this
    /// period is [`Outcome::AlreadyRan`] with when (store clock) and by whom it ran —
    /// returned at once, without waiting, since waiting could never change it. A lock held for
    /// the whole wait without such a record is [`Outcome::Taken`].
    ///
    /// The lease is released when the action ends, as with [`run`](Self::run); the period stays
    /// recorded. The granted period id is on the context's lease
    /// ([`LeaderContext::lease`](crate::LeaderContext::lease)`().period`).
    ///
    /// # Errors
    ///
    /// An invalid name, a store failure, or the lease lost with `cancel_on_lost`; never for
    /// contention or an already-run period.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future releases the lease (as for [`run`](Self::run)); a period granted
    /// before the drop stays recorded as run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{Elector, MemoryStore, Period, Outcome};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let (a, b) = (Elector::new(store.clone()), Elector::new(store));
    /// let hourly = Period::every(Duration::from_secs(3600))?;
    /// let first = a.run_once_per("report", hourly, |_| async { Ok::<_, String>("sent") }).await?;
    /// assert_eq!(first, Outcome::Elected("sent"));
    /// // The lock is free again, but this hour already ran:
    /// let second = b.run_once_per("report", hourly, |_| async { Ok::<_, String>("sent") }).await?;
    /// let record = second.already_ran().expect("refused by the ledger");
    /// assert_eq!(record.by, a.options().node_id());
    /// # Ok(()) }
    /// ```
    pub async fn run_once_per<T, E, F, Fut>(
        &self,
        name: impl IntoLockName,
        period: Period,
        action: F,
    ) -> Result<Outcome<T, E>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        self.run_result(name, Some(period), action).await
    }

    /// Acquires the lock for `period` of the ledger and returns the guard (for code that manages
    /// the lease itself, like [`try_acquire`](Self::try_acquire)): [`Outcome::Elected`] with the
    /// guard, [`Outcome::Taken`] when the lock stayed held for the whole wait, or
    /// [`Outcome::AlreadyRan`] when the ledger records a run for this period or a later one.
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future never leaves a lease behind (a late grant is released), but a period
    /// the store granted before the drop stays recorded as run.
    pub async fn try_acquire_for(
        &self,
        name: impl IntoLockName,
        period: Period,
    ) -> Result<Outcome<LeaderGuard>> {
        let lock = self.lock_name(name)?;
        self.claim(&lock, Some(period)).await
    }

    /// [`run`](Self::run), claiming `period` if given: the action's `Err` is
    /// [`Outcome::ActionFailed`].
    async fn run_result<T, E, F, Fut>(
        &self,
        name: impl IntoLockName,
        period: Option<Period>,
        action: F,
    ) -> Result<Outcome<T, E>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        let ran = self
            .run_claimed(name, period, action, |r| r.is_err())
            .await?;
        Ok(action_result(ran))
    }

    /// Runs `action` if this node wins the lock within `wait`; `Ok(None)` if another holder
    /// kept it for the whole wait. The lease is released when the action ends — also when it
    /// panics (then the panic resumes) or when this future is dropped. A store failure is
    /// `Err`, never a skip.
    ///
    /// # Errors
    ///
    /// An invalid name ([`Error::Name`](crate::Error::Name)), a store failure
    /// ([`Error::Store`](crate::Error::Store)), or, with `cancel_on_lost`, the lease lost while
    /// the action ran ([`Error::Lost`](crate::Error::Lost)). Contention is `Ok(None)`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the action and releases the lease in the background (an
    /// acquisition in flight is released when the store grants it late);
    /// [`settled`](Self::settled) waits for that.
    pub async fn run_if_leader<T, F, Fut>(
        &self,
        name: impl IntoLockName,
        action: F,
    ) -> Result<Option<T>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = T>,
    {
        self.run_guarded(name, action, |_| false).await
    }

    /// Like [`run_if_leader`](Self::run_if_leader) for actions returning `Result`:
    /// `Elected(value)`, `Skipped`, or `ActionFailed(error)` (the lease was released).
    ///
    /// # Errors
    ///
    /// As [`run_if_leader`](Self::run_if_leader); the action's own error is
    /// `Ok(Outcome::ActionFailed(e))`, not `Err`.
    ///
    /// # Cancel safety
    ///
    /// As [`run_if_leader`](Self::run_if_leader).
    pub async fn run<T, E, F, Fut>(
        &self,
        name: impl IntoLockName,
        action: F,
    ) -> Result<Outcome<T, E>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        self.run_result(name, None, action).await
    }

    /// Acquires the lock (waiting up to `wait`) and returns the guard, for code that manages
    /// the lease itself: [`Outcome::Elected`] with the guard, or [`Outcome::Taken`] on
    /// contention.
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves no lease behind: a grant that arrives after the drop is
    /// released in the background ([`settled`](Self::settled) waits for it).
    pub async fn try_acquire(&self, name: impl IntoLockName) -> Result<Outcome<LeaderGuard>> {
        let lock = self.lock_name(name)?;
        self.claim(&lock, None).await
    }

    /// A best-effort snapshot of the lock's holders (the full, namespaced name is reported).
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn state(&self, name: impl IntoLockName) -> Result<LockState> {
        let lock = self.lock_name(name)?;
        self.shared
            .store
            .state(&lock, self.slots)
            .await
            .map_err(|e| Error::store(&lock, e))
    }

    /// The lock's period ledger record: its latest claim of a period (the window, when and to
    /// whom it was granted, whether it ran) and its latest run; `None` for a lock never claimed
    /// with a period. Answers "did tonight's run happen, and where?".
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{Elector, MemoryStore, Period};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// assert!(elector.period_record("nightly").await?.is_none());
    /// let nightly = Period::every(Duration::from_secs(86_400))?;
    /// elector.run_once_per("nightly", nightly, |_| async { Ok::<_, std::io::Error>(()) }).await?;
    /// let record = elector.period_record("nightly").await?.expect("claimed");
    /// assert!(record.started);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn period_record(
        &self,
        name: impl IntoLockName,
    ) -> Result<Option<crate::PeriodRecord>> {
        let lock = self.lock_name(name)?;
        self.shared
            .store
            .period_record(&lock)
            .await
            .map_err(|e| Error::store(&lock, e))
    }

    /// Break-glass for operators: deletes the lock's period ledger record (tenant name applied)
    /// and returns it as it was (`None` for a lock without one), so that the current period
    /// runs again at its next claim — after a run that must be repeated, say. Only the record
    /// is deleted: a holder of the lock keeps its lease, and fences keep rising. A holder whose
    /// claim had not started yet can no longer start it (its action does not run); see
    /// [`LeaseStore::clear_period_ledger`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{Elector, MemoryStore, Period, Outcome};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let nightly = Period::every(Duration::from_secs(86_400))?;
    /// let job = |_| async { Ok::<_, std::convert::Infallible>("exported") };
    /// assert_eq!(elector.run_once_per("nightly", nightly, job).await?, Outcome::Elected("exported"));
    /// assert!(matches!(elector.run_once_per("nightly", nightly, job).await?, Outcome::AlreadyRan(_)));
    ///
    /// let cleared = elector.clear_period_ledger("nightly").await?.expect("a record");
    /// assert!(cleared.started);
    /// assert!(elector.period_record("nightly").await?.is_none());
    /// assert_eq!(elector.run_once_per("nightly", nightly, job).await?, Outcome::Elected("exported"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure (a transient one may have cleared the record or not:
    /// read it with [`period_record`](Self::period_record)).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the record cleared or not; call it again to be sure (a
    /// second clear returns `None`).
    pub async fn clear_period_ledger(
        &self,
        name: impl IntoLockName,
    ) -> Result<Option<crate::PeriodRecord>> {
        let lock = self.lock_name(name)?;
        let cleared = self
            .shared
            .store
            .clear_period_ledger(&lock)
            .await
            .map_err(|e| Error::store(&lock, e))?;
        if let Some(r) = &cleared {
            tracing::warn!(lock = %lock, period = r.period, by = %r.by, started = r.started, "period ledger cleared");
        }
        Ok(cleared)
    }

    /// Break-glass release for operators: frees every live slot of the lock (tenant name and
    /// slot count applied) whatever its holder, and returns the holders it freed. Their
    /// guards report the lease lost at their next renewal or release.
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may leave the release applied or not; call it again to be sure.
    pub async fn force_release(&self, name: impl IntoLockName) -> Result<Vec<crate::Holder>> {
        let lock = self.lock_name(name)?;
        let freed = self
            .shared
            .store
            .force_release(&lock, self.slots)
            .await
            .map_err(|e| Error::store(&lock, e))?;
        for h in &freed {
            tracing::warn!(lock = %lock, slot = h.slot, owner = %h.owner, fence = h.fence, "lease force-released");
        }
        Ok(freed)
    }

    /// A copy that maps every lock name to `tenant:<id>:<name>`, sharing store and events.
    pub fn for_tenant(&self, id: impl AsRef<str>) -> std::result::Result<Self, NameError> {
        Ok(self.for_namespace(Tenant::new(id)?))
    }

    /// A copy scoped to an explicit [`Tenant`] namespace (custom prefix).
    pub fn for_namespace(&self, tenant: Tenant) -> Self {
        Self {
            tenant: Some(Arc::new(tenant)),
            ..self.clone()
        }
    }

    /// Subscribes to this elector's events (shared with its tenant and reconfigured copies).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// The leases this elector holds now (shared with its clones, tenant and reconfigured
    /// copies): every guard not yet released, with when it was last renewed, by lock, slot and
    /// fence. A lease stays here after it is lost until its guard is released, so a health check
    /// can tell a leader that stopped renewing (see [`HeldLease`](crate::HeldLease)).
    pub fn held_leases(&self) -> Vec<crate::HeldLease> {
        self.shared.held.snapshot()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn LeaseStore> {
        &self.shared.store
    }

    /// Resolves when the cleanup work this elector started in the background has finished
    /// (at once if there is none). That work is shared by its clones, tenant copies and
    /// reconfigured copies, and is:
    ///
    /// * the release of a guard that was dropped instead of released (with its renewal
    ///   stopped first);
    /// * an acquisition attempt whose caller stopped waiting (a dropped `run_if_leader`,
    ///   `try_acquire` or schedule tick) while the request was in flight: when the store
    ///   grants it late, the lease is released at once;
    /// * freeing a lease the store may hold for this elector after a transient error: a release
    ///   that failed, or an acquisition that ended (gave up, failed or was dropped) after an
    ///   attempt answered with an error, which the store may have applied all the same. Those
    ///   are retried for at most [`LET_GO_PATIENCE`](crate::limits::LET_GO_PATIENCE).
    ///
    /// Await it after stopping your own work and before the process exits, so that no lease
    /// outlives the process for a whole lease period. Guards still held (and their renewal)
    /// are the caller's, not waited for: release them first. It waits as long as the store
    /// takes to answer; [`settled_within`](Self::settled_within) bounds the wait.
    /// [`ScheduleHandle::stopped`](crate::schedule::ScheduleHandle::stopped), the blocking facade and
    /// the integrations do this for you.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future only stops waiting; the cleanup goes on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use leasehold::{Elector, MemoryStore};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// drop(elector.try_acquire("report").await?.elected()); // released in the background
    /// elector.settled().await;
    /// assert!(elector.state("report").await?.is_free());
    /// # Ok(()) }
    /// ```
    pub async fn settled(&self) {
        self.shared.cleanup.settled().await;
    }

    /// [`settled`](Self::settled), waiting at most `limit` (the integrations use
    /// [`SETTLE_TIMEOUT`](crate::limits::SETTLE_TIMEOUT)). True if everything finished; false, with a
    /// warning logged, if the store did not answer in time: a lease it grants or keeps then
    /// ends at its expiry.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, like [`settled`](Self::settled).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use leasehold::{Elector, MemoryStore, limits::SETTLE_TIMEOUT};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// assert!(elector.settled_within(SETTLE_TIMEOUT).await);
    /// # }
    /// ```
    pub async fn settled_within(&self, limit: std::time::Duration) -> bool {
        self.shared.cleanup.settled_within(limit).await
    }

    /// Reads a stream only while this node holds `name`: the original library's guarded
    /// `Flux`/`Flow`. `make` builds the stream once the lock is acquired, at the first poll
    /// (waiting up to the options' `wait`); its items pass through while the lease holds. The
    /// lease is renewed while items flow when `auto_extend` is on; without it the stream is
    /// bounded by one lease. The stream ends when the inner stream ends (the lease is released
    /// first), when the lease is lost (no item is read after that), or at once when another
    /// node holds the lock; [`GuardedStream::end`](crate::lead::GuardedStream::end) says which.
    /// Dropping it releases the lease.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use leasehold::{Elector, MemoryStore, lead::StreamEnd};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let mut orders = elector.guarded_stream("orders-consumer", |ctx| {
    ///     let fence = ctx.fence();
    ///     futures::stream::iter(1..=3).map(move |n| (n, fence))
    /// })?;
    /// let read: Vec<_> = orders.by_ref().collect().await;
    /// assert_eq!(read, [(1, 1), (2, 1), (3, 1)]);
    /// assert!(matches!(orders.end(), Some(StreamEnd::Completed)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Name`](crate::Error::Name) for an invalid lock name. Store errors while electing
    /// or releasing end the stream with [`StreamEnd::Failed`](crate::lead::StreamEnd::Failed).
    pub fn guarded_stream<S, F>(
        &self,
        name: impl IntoLockName,
        make: F,
    ) -> Result<crate::lead::GuardedStream<S::Item>>
    where
        S: futures::Stream + Send + 'static,
        S::Item: Send + 'static,
        F: FnOnce(LeaderContext) -> S + Send + 'static,
    {
        let lock = self.lock_name(name)?;
        Ok(crate::lead::GuardedStream::new(self.clone(), lock, make))
    }

    /// A stream of the leadership of `name`, as any process sees it in the store: the current
    /// [`Leadership`](crate::lead::Leadership) first, then one item each time the holder changes (a new fence — a new
    /// term, also of the same node — or the lock becoming free). Polls the store's state every
    /// [`DEFAULT_LEADERSHIP_POLL`](crate::lead::DEFAULT_LEADERSHIP_POLL) (1 s); see
    /// [`leadership_every`](Self::leadership_every) for the lag and another interval. With
    /// `max_leaders` above 1 it follows slot 0's holder.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use leasehold::{Elector, MemoryStore};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let mut changes = elector.leadership("reconciler")?;
    /// assert!(changes.next().await.expect("never ends").is_free());
    /// let guard = elector.try_acquire("reconciler").await?.elected().expect("free");
    /// let change = changes.next().await.expect("never ends");
    /// assert_eq!(change.fence(), Some(guard.fence()));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Name`](crate::Error::Name) for an invalid lock name. Store errors while
    /// watching are not items: they are logged (a warning per run of failures) and the reading
    /// is retried every poll interval.
    pub fn leadership(&self, name: impl IntoLockName) -> Result<LeadershipStream> {
        self.leadership_stream(name, crate::elect::lead::DEFAULT_LEADERSHIP_POLL)
    }

    /// [`leadership`](Self::leadership), asking the store at least every `poll`.
    ///
    /// **Lag:** a release by a stopping or resigning leader is seen at once where the store
    /// has a release signal (memory, PostgreSQL, Redis, SQLite within one process); after any
    /// change the stream looks again within milliseconds (25 ms, doubling up to `poll`), so a
    /// successor is usually reported moments after. Otherwise — a crashed leader whose lease
    /// expires, a new leader after a quiet spell, a store without signals — a change is
    /// reported at most `poll` after it happened in the store (plus the store's answer time).
    /// Terms shorter than that may be missed; fences still only grow.
    ///
    /// ```
    /// # fn main() -> leasehold::Result<()> {
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{Elector, MemoryStore};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let _changes = elector.leadership_every("reconciler", Duration::from_millis(200))?;
    /// assert!(elector.leadership_every("reconciler", Duration::ZERO).is_err()); // busy loop
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Name`](crate::Error::Name) for an invalid lock name;
    /// [`Error::Limit`](crate::Error::Limit) for a `poll` shorter than
    /// [`MIN_LEADERSHIP_POLL`](crate::limits::MIN_LEADERSHIP_POLL) or longer than
    /// [`MAX_DURATION`](crate::limits::MAX_DURATION).
    pub fn leadership_every(
        &self,
        name: impl IntoLockName,
        poll: std::time::Duration,
    ) -> Result<LeadershipStream> {
        self.leadership_stream(name, poll)
    }
}

/// An elected action's `Result` as the outcome: `Err` is [`Outcome::ActionFailed`].
pub(crate) fn action_result<T, E>(ran: Outcome<std::result::Result<T, E>>) -> Outcome<T, E> {
    match ran {
        Outcome::Elected(result) => Outcome::from(result),
        Outcome::Taken(holder) => Outcome::Taken(holder),
        Outcome::AlreadyRan(record) => Outcome::AlreadyRan(record),
        Outcome::ActionFailed(never) => match never {},
    }
}
