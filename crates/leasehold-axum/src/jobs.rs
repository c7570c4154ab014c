//! `LeaderJobs`: an application-owned set of leader-only periodic jobs.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use leasehold::{
    CancellationToken, Elector, Job, LeaderContext, Schedule, schedule::ScheduleHandle,
};
use tracing::info;

use crate::error::Error;
use crate::job_metrics;
use crate::management::Management;

/// How long a running action may take to finish after shutdown starts before it is cancelled,
/// unless [`LeaderJobs::grace_period`] says otherwise.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// The leader-only periodic jobs of one application, all over one [`Elector`].
///
/// Built from the elector by value, so a job set without an elector cannot be written, and every
/// job shares that elector's store client (no hidden second client per job). Each job is the
/// core's period-aligned [`Job`]: every instance attempts each period near its start (the current
/// one at once, unless [`Job::missed`] or [`Job::initial_delay`] says otherwise), and the store's
/// period ledger grants the period to one of them; an attempt never waits, a held lock or an
/// already-run period skips it, and an action error or panic is logged at WARN and the next
/// period runs. [`Job::fixed_delay`] opts a job out.
///
/// [`start`](Self::start) takes the shutdown token: pass the same token's
/// [`cancelled_owned`](CancellationToken::cancelled_owned) future to
/// `axum::serve(..).with_graceful_shutdown(..)`. Cancelling it stops scheduling, abandons an
/// acquisition in progress, gives a running action the [grace period](Self::grace_period) to
/// finish (then drops it), and releases the lease so another instance can take over at once.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{CancellationToken, Elector, Job, MemoryStore};
/// use leasehold_axum::LeaderJobs;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let shutdown = CancellationToken::new();
/// let jobs = LeaderJobs::new(elector)
///     .grace_period(Duration::from_secs(5))
///     .every("cleanup", Duration::from_secs(60), |_ctx| async { Ok::<_, String>(()) })
///     .job(
///         Job::every("report", Duration::from_secs(3600), |ctx| async move {
///             tracing::info!(fence = ctx.fence(), "report");
///             Ok::<_, String>(())
///         })
///         .initial_delay(Duration::from_secs(10)),
///     )
///     .start(shutdown.clone())?;
/// assert_eq!(jobs.lock_names(), ["cleanup", "report"]);
/// shutdown.cancel();
/// jobs.stopped().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "jobs do nothing until started"]
pub struct LeaderJobs {
    elector: Elector,
    jobs: Vec<Job>,
    grace: Duration,
}

impl LeaderJobs {
    /// An empty job set over `elector` (its node id, lease, `auto_extend` and store apply to
    /// every job; its `wait` is ignored: a tick never waits for a lock).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())));
    /// ```
    pub fn new(elector: Elector) -> Self {
        Self {
            elector,
            jobs: Vec::new(),
            grace: DEFAULT_GRACE_PERIOD,
        }
    }

    /// Adds a job named `name` (its lock name) that runs `action` every `period` on the leader.
    /// For an initial delay or at-most-once-per-period mode, build a [`Job`] and use
    /// [`job`](Self::job).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .every("sweep", Duration::from_secs(30), |_ctx| async { Ok::<_, String>(()) });
    /// ```
    pub fn every<F, Fut, E>(self, name: impl Into<String>, period: Duration, action: F) -> Self
    where
        F: Fn(LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display + 'static,
    {
        self.job(Job::every(name, period, action))
    }

    /// Adds a configured [`Job`] (initial delay, offset, missed-period policy, jitter, or fixed
    /// delay).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, Job, MemoryStore};
    /// let job = Job::every("sweep", Duration::from_secs(30), |_ctx| async { Ok::<_, String>(()) })
    ///     .initial_delay(Duration::from_secs(5));
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new()))).job(job);
    /// ```
    pub fn job(mut self, job: Job) -> Self {
        self.jobs.push(job);
        self
    }

    /// How long a running action may go on after shutdown starts before it is cancelled
    /// (default [`DEFAULT_GRACE_PERIOD`]). Keep it below your orchestrator's kill timeout.
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .grace_period(Duration::from_secs(10));
    /// ```
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Validates every job (lock name, non-zero period, options) and starts them on the current
    /// tokio runtime; cancelling `shutdown` stops them. An invalid job is an error here, at
    /// startup, never later.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let bad = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .every("not a lock name", Duration::from_secs(1), |_| async { Ok::<_, String>(()) })
    ///     .start(CancellationToken::new());
    /// assert!(bad.is_err());
    /// # }
    /// ```
    pub fn start(self, shutdown: CancellationToken) -> Result<RunningJobs, Error> {
        // The jobs' help texts, to the recorder their metrics will go to.
        leasehold::metrics::describe(leasehold::metrics::Source::Jobs);
        let names: Vec<String> = self.jobs.iter().map(|j| j.name().to_owned()).collect();
        let schedule = self
            .jobs
            .into_iter()
            .fold(Schedule::new(self.elector.clone()), Schedule::job)
            .grace_period(self.grace)
            .observe(job_metrics::record);
        let handle = schedule.start(shutdown.clone())?;
        info!(jobs = ?names, grace = ?self.grace, "leader-only jobs started");
        Ok(RunningJobs {
            handle,
            shutdown,
            elector: self.elector,
            names,
        })
    }
}

/// The started jobs of a [`LeaderJobs`] set.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// # use std::{sync::Arc, time::Duration};
/// # use leasehold::{CancellationToken, Elector, MemoryStore};
/// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
///     .every("sweep", Duration::from_secs(30), |_| async { Ok::<_, String>(()) })
///     .start(CancellationToken::new())?;
/// let signal = jobs.shutdown_signal(); // give this to with_graceful_shutdown
/// jobs.shutdown().await; // or cancel the token elsewhere and await `stopped()`
/// signal.await; // already resolved
/// # Ok(()) }
/// ```
///
/// Dropping it stops every job at once, so the compiler warns about an unused one:
///
/// ```compile_fail
/// # #![deny(unused_must_use)]
/// # fn demo(jobs: leasehold_axum::LeaderJobs) -> Result<(), leasehold_axum::Error> {
/// jobs.start(leasehold::CancellationToken::new())?; // error: unused `RunningJobs`
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "dropping the running jobs stops them at once: keep them, and await `stopped()` or `shutdown()`"]
pub struct RunningJobs {
    handle: ScheduleHandle,
    shutdown: CancellationToken,
    elector: Elector,
    names: Vec<String>,
}

impl RunningJobs {
    /// A future that resolves when shutdown starts: pass it to
    /// `axum::serve(..).with_graceful_shutdown(..)` so server and jobs stop together.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let token = CancellationToken::new();
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .start(token.clone())?;
    /// let signal = jobs.shutdown_signal();
    /// token.cancel();
    /// signal.await;
    /// # Ok(()) }
    /// ```
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shutdown.clone().cancelled_owned()
    }

    /// The shutdown token the jobs watch.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .start(CancellationToken::new())?;
    /// assert!(!jobs.shutdown_token().is_cancelled());
    /// # Ok(()) }
    /// ```
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// The jobs' lock names, in the order they were added.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .every("a", Duration::from_secs(1), |_| async { Ok::<_, String>(()) })
    ///     .start(CancellationToken::new())?;
    /// assert_eq!(jobs.lock_names(), ["a"]);
    /// # Ok(()) }
    /// ```
    pub fn lock_names(&self) -> &[String] {
        &self.names
    }

    /// A [`Management`] builder over the same elector, already listing the jobs' locks. It still
    /// needs an authentication decision before [`router`](Management::router) succeeds.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// use leasehold_axum::BearerToken;
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .every("a", Duration::from_secs(1), |_| async { Ok::<_, String>(()) })
    ///     .start(CancellationToken::new())?;
    /// let router: axum::Router = jobs.management().bearer_token(BearerToken::new("t0ken")?).router()?;
    /// # Ok(()) }
    /// ```
    pub fn management(&self) -> Management {
        Management::new(self.elector.clone()).locks(self.names.iter().cloned())
    }

    /// Resolves when every job has stopped (after the token is cancelled) and released its
    /// lease — also a lease the store granted after shutdown cancelled an acquisition in flight:
    /// the elector has [settled](Elector::settled) (waiting at most
    /// [`leasehold::limits::SETTLE_TIMEOUT`] for the store). Nothing the jobs started outlives it, so
    /// the process may exit right after.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future aborts the jobs still running (their leases are released in the
    /// background) and stops waiting: await it to the end before the process exits.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let token = CancellationToken::new();
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .start(token.clone())?;
    /// token.cancel();
    /// jobs.stopped().await;
    /// # Ok(()) }
    /// ```
    pub async fn stopped(self) {
        self.handle.stopped().await;
        info!("leader-only jobs stopped");
    }

    /// Cancels the token and waits for [`stopped`](Self::stopped).
    ///
    /// # Cancel safety
    ///
    /// As for [`stopped`](Self::stopped).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let jobs = leasehold_axum::LeaderJobs::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .start(CancellationToken::new())?;
    /// jobs.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.stopped().await;
    }
}
