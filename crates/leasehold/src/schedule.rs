//! `Schedule`: leader-only periodic jobs.

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::elector::Elector;
use crate::error::{Error, Result};
use crate::guard::LeaderContext;
use crate::limits::check_duration;
use crate::name::LockName;
use crate::options::OptionsError;

type JobFn =
    Arc<dyn Fn(LeaderContext) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

type ObserverFn = Arc<dyn Fn(&str, &JobEvent) + Send + Sync>;

/// Something that happened to one job of a [`Schedule`], reported to its
/// [`observe`](Schedule::observe) hook with the job's name (for metrics or audit).
///
/// Per tick the order is `Attempt`, then `Skipped`, `StoreError`, or `Elected` followed by
/// `Finished`; `Stopped` is the last event of a job, after its lease was released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobEvent {
    /// A tick started an attempt at the job's lock.
    Attempt,
    /// This node acquired the lock; the action starts now.
    Elected,
    /// Another node holds the lock; the tick is skipped.
    Skipped,
    /// The store could not be reached; the tick is skipped.
    StoreError,
    /// The action ended (its lease is released next).
    Finished {
        /// How long the action ran.
        took: Duration,
        /// How it ended.
        outcome: JobOutcome,
    },
    /// The job stopped after the token was cancelled and released its lease.
    Stopped {
        /// Time from noticing the cancellation to having stopped.
        took: Duration,
        /// True when a running action outlived the grace period and was cancelled.
        cancelled_action: bool,
    },
}

/// How a job's action ended; see [`JobEvent::Finished`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobOutcome {
    /// It returned `Ok`.
    Succeeded,
    /// It returned `Err` (logged at WARN).
    Failed,
    /// It panicked (logged at WARN).
    Panicked,
    /// Shutdown's grace period ran out and the action was dropped.
    Cancelled,
}

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
/// With a [`grace_period`](Self::grace_period) a running action that has not finished that long
/// after the cancellation is dropped (cancelled) and its lease released.
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
#[must_use = "a schedule does nothing until started"]
pub struct Schedule {
    elector: Elector,
    jobs: Vec<Job>,
    grace: Option<Duration>,
    observer: Option<ObserverFn>,
}

impl std::fmt::Debug for ObserverHook<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
struct ObserverHook<'a>(&'a Option<ObserverFn>);

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule")
            .field("elector", &self.elector)
            .field("jobs", &self.jobs)
            .field("grace", &self.grace)
            .field("observer", &ObserverHook(&self.observer))
            .finish()
    }
}

impl Schedule {
    /// An empty schedule over `elector`.
    pub fn new(elector: Elector) -> Self {
        Self {
            elector,
            jobs: Vec::new(),
            grace: None,
            observer: None,
        }
    }

    /// On cancellation, give a running action at most `grace` to finish, then drop it and
    /// release its lease (default: wait for it however long it takes).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore, Schedule};
    /// let schedule = Schedule::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .grace_period(Duration::from_secs(10));
    /// ```
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Calls `hook(job_name, event)` for every [`JobEvent`] of every job (replacing an earlier
    /// hook). It runs on the job's task: keep it short and non-blocking (count, don't wait).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, JobEvent, MemoryStore, Schedule};
    /// let schedule = Schedule::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .observe(|job, event| {
    ///         if matches!(event, JobEvent::Skipped) {
    ///             tracing::debug!(job, "skipped");
    ///         }
    ///     });
    /// ```
    pub fn observe(mut self, hook: impl Fn(&str, &JobEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(hook));
        self
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
    ///
    /// # Errors
    ///
    /// A job's invalid lock name ([`Error::Name`]), a zero period or options the elector rejects
    /// ([`Error::Options`]), or a period, initial delay or grace period beyond
    /// [`MAX_DURATION`](crate::MAX_DURATION) ([`Error::Limit`]).
    pub fn start(self, stop: CancellationToken) -> Result<ScheduleHandle> {
        if let Some(grace) = self.grace {
            check_duration("grace_period", grace)?;
        }
        let mut planned = Vec::with_capacity(self.jobs.len());
        for job in self.jobs {
            let lock = self.elector.lock_name_of(&job.name)?;
            if job.period.is_zero() {
                return Err(OptionsError::ZeroPeriod(job.name).into());
            }
            check_duration("period", job.period)?;
            if let Some(delay) = job.initial_delay {
                check_duration("initial_delay", delay)?;
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
            let ctx = JobRun {
                lock,
                elector,
                stop: stop.clone(),
                grace: self.grace,
                observer: self.observer.clone(),
            };
            tasks.spawn(run_job(job, ctx).instrument(span));
        }
        Ok(ScheduleHandle {
            tasks,
            stop,
            elector: self.elector,
        })
    }
}

struct JobRun {
    lock: LockName,
    elector: Elector,
    stop: CancellationToken,
    grace: Option<Duration>,
    observer: Option<ObserverFn>,
}

impl JobRun {
    fn emit(&self, job: &Job, event: JobEvent) {
        if let Some(hook) = &self.observer {
            hook(&job.name, &event);
        }
    }

    fn stopped(&self, job: &Job, since: Instant, cancelled_action: bool) {
        self.emit(
            job,
            JobEvent::Stopped {
                took: since.elapsed(),
                cancelled_action,
            },
        );
    }
}

async fn run_job(job: Job, run: JobRun) {
    let stop = &run.stop;
    let mut delay = job.initial_delay.unwrap_or(Duration::ZERO);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return run.stopped(&job, Instant::now(), false),
            () = sleep(delay) => {}
        }
        delay = job.period;
        run.emit(&job, JobEvent::Attempt);
        let guard = tokio::select! {
            biased;
            () = stop.cancelled() => return run.stopped(&job, Instant::now(), false),
            g = run.elector.acquire_exact(&run.lock) => g,
        };
        let guard = match guard {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                run.emit(&job, JobEvent::Skipped);
                debug!("leasehold: schedule tick skipped, another node is leader");
                continue;
            }
            Err(e) => {
                run.emit(&job, JobEvent::StoreError);
                warn!(error = %e, "leasehold: schedule tick could not reach the store; trying again next period");
                continue;
            }
        };
        run.emit(&job, JobEvent::Elected);
        let started = Instant::now();
        let action = AssertUnwindSafe((job.action)(guard.context())).catch_unwind();
        tokio::pin!(action);
        let (outcome, stopping) = tokio::select! {
            biased;
            r = &mut action => (Some(r), None),
            () = stop.cancelled() => {
                let since = Instant::now();
                let r = match run.grace {
                    None => Some(action.await),
                    Some(grace) => tokio::time::timeout(grace, action).await.ok(),
                };
                (r, Some(since))
            }
        };
        let outcome = match outcome {
            Some(Ok(Ok(()))) => JobOutcome::Succeeded,
            Some(Ok(Err(e))) => {
                warn!(error = %e, "leasehold: scheduled job failed; the schedule continues");
                JobOutcome::Failed
            }
            Some(Err(_)) => {
                warn!("leasehold: scheduled job panicked; the schedule continues");
                JobOutcome::Panicked
            }
            None => {
                warn!(grace = ?run.grace, "leasehold: scheduled job outlived the shutdown grace period and was cancelled");
                JobOutcome::Cancelled
            }
        };
        run.emit(
            &job,
            JobEvent::Finished {
                took: started.elapsed(),
                outcome,
            },
        );
        let _ = guard.release().await;
        if let Some(since) = stopping {
            return run.stopped(&job, since, outcome == JobOutcome::Cancelled);
        }
    }
}

/// The running jobs of a started [`Schedule`].
#[derive(Debug)]
pub struct ScheduleHandle {
    tasks: JoinSet<()>,
    stop: CancellationToken,
    /// The schedule's elector: its jobs' copies share its cleanup tasks.
    elector: Elector,
}

impl ScheduleHandle {
    /// Resolves when every job has stopped (after the token is cancelled) and released its lease,
    /// and the elector has [settled](Elector::settled): an attempt that was in flight when the
    /// token was cancelled has had its answer, and a lease it was granted late has been released
    /// (waiting at most [`SETTLE_TIMEOUT`](crate::SETTLE_TIMEOUT) for the store). Nothing the
    /// schedule started outlives this.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future aborts the jobs still running (a lease they hold is released in the
    /// background, as for a dropped guard) and stops waiting for the elector to settle; await
    /// it to the end before the process exits.
    pub async fn stopped(mut self) {
        while self.tasks.join_next().await.is_some() {}
        self.elector.settled_within(crate::SETTLE_TIMEOUT).await;
    }

    /// Cancels the token and waits for [`stopped`](Self::stopped).
    ///
    /// # Cancel safety
    ///
    /// As for [`stopped`](Self::stopped).
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
