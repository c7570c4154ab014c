//! `Schedule`: leader-only periodic jobs.

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio::time::sleep;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::elector::Elector;
use crate::error::{Error, Result};
use crate::guard::LeaderContext;
use crate::name::LockName;
use crate::options::OptionsError;

type JobFn =
    Arc<dyn Fn(LeaderContext) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

/// One leader-only periodic job.
///
/// Fixed delay: the next attempt starts `period` after the previous one ended (run or skipped).
/// The first attempt is immediate unless [`first_run_after_period`](Self::first_run_after_period)
/// or an [`initial_delay`](Self::initial_delay) says otherwise.
///
/// ```
/// use std::time::Duration;
/// use leasehold::Job;
///
/// let job = Job::every("cleanup", Duration::from_secs(60), |_ctx| async { Ok::<_, std::io::Error>(()) })
///     .initial_delay(Duration::from_secs(5))
///     .at_most_once_per_period();
/// assert_eq!(job.period(), Duration::from_secs(60));
/// ```
#[derive(Clone)]
pub struct Job {
    name: String,
    period: Duration,
    initial_delay: Option<Duration>,
    once_per_period: bool,
    action: JobFn,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("period", &self.period)
            .field("initial_delay", &self.initial_delay)
            .field("once_per_period", &self.once_per_period)
            .finish_non_exhaustive()
    }
}

impl Job {
    /// A job named `name` (its lock name) that runs `action` every `period` on the leader.
    pub fn every<F, Fut, E>(name: impl Into<String>, period: Duration, action: F) -> Self
    where
        F: Fn(LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Display + 'static,
    {
        let action: JobFn = Arc::new(move |ctx| {
            let fut = action(ctx);
            async move { fut.await.map_err(|e| e.to_string()) }.boxed()
        });
        Self {
            name: name.into(),
            period,
            initial_delay: None,
            once_per_period: false,
            action,
        }
    }

    /// Wait this long before the first attempt (default: none, the first run is immediate).
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = Some(delay);
        self
    }

    /// Make the first attempt one period after start instead of at once.
    #[must_use]
    pub fn first_run_after_period(mut self) -> Self {
        self.initial_delay = Some(self.period);
        self
    }

    /// Run at most once per period across all nodes: the lease is held until a full period after
    /// acquisition (min-lease = period), so nodes whose timers are out of phase skip instead of
    /// running the job again in the same period.
    #[must_use]
    pub fn at_most_once_per_period(mut self) -> Self {
        self.once_per_period = true;
        self
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A set of leader-only periodic jobs over one elector.
///
/// Each job, on each tick, makes one attempt at its lock with the elector's options (its `wait`
/// is ignored: a tick never waits, so a node never runs the job again right after another
/// node's run); contention skips the tick; an action error is logged at WARN and the schedule goes on; a panic is logged too.
/// Cancelling the token stops scheduling, abandons any wait for a lock, lets a running action
/// finish, and releases its lease; [`ScheduleHandle::stopped`] resolves when all of that is done.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::{sync::Arc, time::Duration};
/// use leasehold::{Elector, MemoryStore, Schedule};
/// use tokio_util::sync::CancellationToken;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let stop = CancellationToken::new();
/// let handle = Schedule::new(elector)
///     .every("heartbeat", Duration::from_secs(30), |ctx| async move {
///         tracing::info!(fence = ctx.fence(), "leader-only work");
///         Ok::<_, std::io::Error>(())
///     })
///     .start(stop.clone())?;
/// stop.cancel();
/// handle.stopped().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a schedule does nothing until started"]
pub struct Schedule {
    elector: Elector,
    jobs: Vec<Job>,
}

impl Schedule {
    /// An empty schedule over `elector`.
    pub fn new(elector: Elector) -> Self {
        Self {
            elector,
            jobs: Vec::new(),
        }
    }

    /// Adds a job that runs `action` every `period` on the leader.
    pub fn every<F, Fut, E>(self, name: impl Into<String>, period: Duration, action: F) -> Self
    where
        F: Fn(LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Display + 'static,
    {
        self.job(Job::every(name, period, action))
    }

    /// Adds a configured job.
    pub fn job(mut self, job: Job) -> Self {
        self.jobs.push(job);
        self
    }

    /// Validates every job and starts them on the current runtime; `stop` ends them.
    pub fn start(self, stop: CancellationToken) -> Result<ScheduleHandle> {
        let mut planned = Vec::with_capacity(self.jobs.len());
        for job in self.jobs {
            let lock = self.elector.lock_name_of(&job.name)?;
            if job.period.is_zero() {
                return Err(OptionsError::ZeroPeriod(job.name).into());
            }
            // A tick never waits for the lock: a node that waited would run the job again right
            // after the holder finished, in the same period.
            let mut opts = self.elector.options().to_builder().wait(Duration::ZERO);
            if job.once_per_period {
                let lease = self.elector.options().lease().max(job.period);
                opts = opts.lease(lease).min_lease(job.period);
            }
            let elector = self.elector.reconfigured(opts.build()?);
            planned.push((job, lock, elector));
        }
        let mut tasks = JoinSet::new();
        for (job, lock, elector) in planned {
            let span = info_span!("leasehold.schedule", lock = %lock);
            tasks.spawn(run_job(job, lock, elector, stop.clone()).instrument(span));
        }
        Ok(ScheduleHandle { tasks, stop })
    }
}

async fn run_job(job: Job, lock: LockName, elector: Elector, stop: CancellationToken) {
    let mut delay = job.initial_delay.unwrap_or(Duration::ZERO);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            () = sleep(delay) => {}
        }
        delay = job.period;
        let guard = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            g = elector.acquire_exact(&lock) => g,
        };
        let guard = match guard {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                debug!("leasehold: schedule tick skipped, another node is leader");
                continue;
            }
            Err(e) => {
                warn!(error = %e, "leasehold: schedule tick could not reach the store; trying again next period");
                continue;
            }
        };
        let outcome = AssertUnwindSafe((job.action)(guard.context()))
            .catch_unwind()
            .await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                warn!(error = %e, "leasehold: scheduled job failed; the schedule continues")
            }
            Err(_) => warn!("leasehold: scheduled job panicked; the schedule continues"),
        }
        let _ = guard.release().await;
    }
}

/// The running jobs of a started [`Schedule`].
#[derive(Debug)]
pub struct ScheduleHandle {
    tasks: JoinSet<()>,
    stop: CancellationToken,
}

impl ScheduleHandle {
    /// Resolves when every job has stopped (after the token is cancelled) and released its lease.
    pub async fn stopped(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Cancels the token and waits for [`stopped`](Self::stopped).
    pub async fn shutdown(self) {
        self.stop.cancel();
        self.stopped().await;
    }
}

impl Elector {
    pub(crate) fn lock_name_of(&self, name: &str) -> std::result::Result<LockName, Error> {
        self.engine().lock_name(name)
    }

    pub(crate) async fn acquire_exact(
        &self,
        lock: &LockName,
    ) -> Result<Option<crate::LeaderGuard>> {
        self.engine().acquire(lock).await
    }
}
