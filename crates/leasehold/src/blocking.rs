//! A blocking facade for synchronous code: the same elector, driven by a private runtime.
//!
//! The caller needs no runtime of its own. The action is a plain closure that runs on the
//! calling thread, outside any runtime (so it may block or use other blocking clients), while a
//! private one-thread tokio runtime renews the lease and watches its deadline. **A closure cannot
//! be dropped from outside, so `cancel_on_lost` (on by default) cannot stop it here**: a closure
//! that may outlive its lease must check [`LeaderContext::is_lost`] between steps and return
//! when it is true (the lease is then no longer this node's; another may already run the job),
//! and fence its writes.
//!
//! ```
//! use std::sync::Arc;
//! use leasehold::{blocking, MemoryStore};
//!
//! let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
//! let done = elector.run_if_leader("compaction", |ctx| {
//!     let mut done = 0;
//!     for _batch in 0..10 {
//!         if ctx.is_lost() {
//!             break; // the lease is gone: stop before another node's run overlaps this one
//!         }
//!         done += 1; // one batch of work, written with ctx.fence()
//!     }
//!     done
//! })?;
//! assert_eq!(done, Some(10));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//! Do not call these methods from inside an async context (they block the thread, and
//! tokio refuses to block inside a runtime); use [`crate::Elector`] there.

mod partition;

pub use partition::Partition;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::runtime::Runtime;

use crate::error::Result;
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::name::IntoLockName;
use crate::options::ElectionOptions;
use crate::outcome::Outcome;
use crate::store::contract::LeaseStore;
use crate::store::lease::{LockState, Release};

/// Blocking single-leader election.
///
/// ```
/// use std::sync::Arc;
/// use leasehold::{blocking, MemoryStore};
///
/// let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
/// let fence = elector.run_if_leader("nightly", |ctx| ctx.fence())?;
/// assert_eq!(fence, Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Elector {
    inner: crate::Elector,
    runtime: Arc<Private>,
}

/// The private runtime, shared by a blocking elector, its tenant copies and its guards. When
/// the last of them goes, it waits for the elector to settle (a dropped guard's release, a late
/// grant's release; at most [`SETTLE_TIMEOUT`](crate::limits::SETTLE_TIMEOUT)) before shutting the
/// runtime down, which would otherwise cancel that work and leave the lease held until expiry.
#[derive(Debug)]
struct Private {
    runtime: Runtime,
    cleanup: crate::cleanup::Cleanup,
}

impl std::ops::Deref for Private {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.runtime
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        // Blocking is impossible inside an async context (where dropping a runtime panics
        // anyway); there, the runtime's tasks end with it.
        if !self.cleanup.is_settled() && tokio::runtime::Handle::try_current().is_err() {
            self.runtime
                .block_on(self.cleanup.settled_within(crate::limits::SETTLE_TIMEOUT));
        }
    }
}

impl Elector {
    /// A blocking elector with default options (wait 0: skip at once when the lock is held) and
    /// its own runtime.
    pub fn new(store: Arc<dyn LeaseStore>) -> std::io::Result<Self> {
        Self::with_options(store, ElectionOptions::default())
    }

    /// A blocking elector with the given options and its own runtime.
    pub fn with_options(
        store: Arc<dyn LeaseStore>,
        options: ElectionOptions,
    ) -> std::io::Result<Self> {
        Self::from_async(crate::Elector::with_options(store, options))
    }

    /// Wraps an async elector (sharing its store and events) with a new private runtime.
    pub fn from_async(inner: crate::Elector) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("leasehold-blocking")
            .enable_all()
            .build()?;
        let cleanup = inner.shared.cleanup.clone();
        Ok(Self {
            inner,
            runtime: Arc::new(Private { runtime, cleanup }),
        })
    }

    /// The async elector behind this facade.
    pub fn as_async(&self) -> &crate::Elector {
        &self.inner
    }

    /// Runs `action` on this thread if elected; `Ok(None)` on contention. The lease is released
    /// when the closure returns or panics (the panic then resumes). Check
    /// [`LeaderContext::is_lost`] in long loops: a closure cannot be cancelled from outside.
    pub fn run_if_leader<T>(
        &self,
        name: impl IntoLockName,
        action: impl FnOnce(&LeaderContext) -> T,
    ) -> Result<Option<T>> {
        Ok(self.run_claimed(name, None, action, |_| false)?.elected())
    }

    /// Like [`run_if_leader`](Self::run_if_leader) for closures returning `Result`, with the
    /// [`Outcome`] of [`Elector::run`](crate::Elector::run).
    pub fn run<T, E>(
        &self,
        name: impl IntoLockName,
        action: impl FnOnce(&LeaderContext) -> std::result::Result<T, E>,
    ) -> Result<Outcome<T, E>> {
        let ran = self.run_claimed(name, None, action, |r| r.is_err())?;
        Ok(crate::elect::elector::action_result(ran))
    }

    /// Like [`Elector::run_once_per`](crate::Elector::run_once_per): runs the closure at most
    /// once per `period` of the lock across every node of the store (the period ledger).
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure; never contention or an already-run period.
    pub fn run_once_per<T, E>(
        &self,
        name: impl IntoLockName,
        period: crate::Period,
        action: impl FnOnce(&LeaderContext) -> std::result::Result<T, E>,
    ) -> Result<Outcome<T, E>> {
        let ran = self.run_claimed(name, Some(period), action, |r| r.is_err())?;
        Ok(crate::elect::elector::action_result(ran))
    }

    /// Acquires on the runtime (claiming `period`, if given), runs the closure on this thread
    /// (outside the runtime, so it may itself block or use other blocking clients), then
    /// releases on the runtime.
    fn run_claimed<T>(
        &self,
        name: impl IntoLockName,
        period: Option<crate::Period>,
        action: impl FnOnce(&LeaderContext) -> T,
        failed: fn(&T) -> bool,
    ) -> Result<Outcome<T>> {
        let claimed = self
            .runtime
            .block_on(self.inner.begin_claim(name, period))?;
        let running = match claimed {
            Outcome::Elected(running) => running,
            Outcome::Taken(holder) => return Ok(Outcome::Taken(holder)),
            Outcome::AlreadyRan(record) => return Ok(Outcome::AlreadyRan(record)),
            Outcome::ActionFailed(never) => match never {},
        };
        let ctx = running.context();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| action(&ctx)));
        let ran = self.runtime.block_on(running.finish(outcome, failed))?;
        Ok(ran.map_or(Outcome::Taken(None), Outcome::Elected))
    }

    /// Acquires the lock and returns a blocking guard: [`Outcome::Elected`] with it, or
    /// [`Outcome::Taken`] on contention.
    pub fn try_acquire(&self, name: impl IntoLockName) -> Result<Outcome<Guard>> {
        let outcome = self.runtime.block_on(self.inner.try_acquire(name))?;
        Ok(outcome.map(|guard| Guard {
            ctx: guard.context(),
            guard: Some(guard),
            runtime: Arc::clone(&self.runtime),
        }))
    }

    /// A best-effort snapshot of the lock.
    pub fn state(&self, name: impl IntoLockName) -> Result<LockState> {
        self.runtime.block_on(self.inner.state(name))
    }

    /// Break-glass release; see [`crate::Elector::force_release`].
    pub fn force_release(&self, name: impl IntoLockName) -> Result<Vec<crate::Holder>> {
        self.runtime.block_on(self.inner.force_release(name))
    }

    /// The lock's period ledger record; see [`crate::Elector::period_record`].
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure.
    pub fn period_record(&self, name: impl IntoLockName) -> Result<Option<crate::PeriodRecord>> {
        self.runtime.block_on(self.inner.period_record(name))
    }

    /// Break-glass: deletes the lock's period ledger record and returns it; see
    /// [`crate::Elector::clear_period_ledger`].
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{blocking, MemoryStore, Period, Outcome};
    /// let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
    /// let hourly = Period::every(Duration::from_secs(3600))?;
    /// let ran = elector.run_once_per("sync", hourly, |_| Ok::<_, std::convert::Infallible>(1))?;
    /// assert_eq!(ran, Outcome::Elected(1));
    /// assert!(elector.clear_period_ledger("sync")?.is_some_and(|r| r.started));
    /// assert_eq!(elector.period_record("sync")?, None);
    /// assert_eq!(elector.run_once_per("sync", hourly, |_| Ok::<_, std::convert::Infallible>(2))?, Outcome::Elected(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid name or a store failure (a transient one may have cleared the record or not).
    pub fn clear_period_ledger(
        &self,
        name: impl IntoLockName,
    ) -> Result<Option<crate::PeriodRecord>> {
        self.runtime.block_on(self.inner.clear_period_ledger(name))
    }

    /// A copy scoped to tenant `id` (sharing store, events and runtime).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{blocking, MemoryStore};
    /// let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
    /// let acme = elector.for_tenant("acme")?;
    /// let lock = acme.run_if_leader("report", |ctx| ctx.lock().to_string())?;
    /// assert_eq!(lock.as_deref(), Some("tenant:acme:report"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_tenant(
        &self,
        id: impl AsRef<str>,
    ) -> std::result::Result<Self, crate::error::NameError> {
        Ok(Self {
            inner: self.inner.for_tenant(id)?,
            runtime: Arc::clone(&self.runtime),
        })
    }

    /// Subscribes to the elector's events.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<crate::Event> {
        self.inner.subscribe()
    }

    /// Blocks until the elector's background cleanup has finished (the release of dropped
    /// guards, the release of a lease granted after its caller stopped waiting), at most
    /// `limit`; see [`crate::Elector::settled`]. True if it finished, false if the store did not
    /// answer in time. The last handle of the elector (including its guards) does this on drop,
    /// bounded by [`SETTLE_TIMEOUT`](crate::limits::SETTLE_TIMEOUT); call it yourself before
    /// `std::process::exit`, which runs no destructors.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use leasehold::{blocking, MemoryStore, limits::SETTLE_TIMEOUT};
    ///
    /// let elector = blocking::Elector::new(Arc::new(MemoryStore::new()))?;
    /// drop(elector.try_acquire("report")?); // released in the background
    /// assert!(elector.settled_within(SETTLE_TIMEOUT));
    /// assert!(elector.state("report")?.is_free());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn settled_within(&self, limit: std::time::Duration) -> bool {
        self.runtime.block_on(self.inner.settled_within(limit))
    }
}

/// A held lease in blocking code; dropping it releases the lease in the background.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lease at once"]
pub struct Guard {
    /// The context: fence, lease, lost check, extension (shared with the async guard).
    ctx: LeaderContext,
    /// Present until released; taken by `release` or `Drop`.
    guard: Option<LeaderGuard>,
    runtime: Arc<Private>,
}

impl Guard {
    /// The guard's context: fence, lock, slot, lost check, extension.
    pub fn context(&self) -> &LeaderContext {
        &self.ctx
    }
    /// Extends the lease to end `ttl` from now.
    pub fn extend(&self, ttl: std::time::Duration) -> Result<crate::store::Extension> {
        self.runtime.block_on(self.ctx.extend(ttl))
    }
    /// Releases the lease and waits for the store's answer.
    pub fn release(mut self) -> Result<Release> {
        match self.guard.take() {
            Some(g) => self.runtime.block_on(g.release()),
            None => Ok(Release::NotHeld),
        }
    }
}

impl std::ops::Deref for Guard {
    type Target = LeaderContext;

    /// The guard's lease: [`fence`](LeaderContext::fence), [`lease`](LeaderContext::lease),
    /// [`slot`](LeaderContext::slot), [`is_lost`](LeaderContext::is_lost) and the rest are the
    /// context's (its async `lost` and `extend` need a runtime: use this guard's blocking
    /// [`extend`](Guard::extend)).
    fn deref(&self) -> &LeaderContext {
        &self.ctx
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let _enter = self.runtime.enter();
            drop(guard);
        }
    }
}
