//! `Schedule`: leader-only periodic jobs, period-aligned and run at most once per period across
//! nodes by default.

mod aligned;
mod clock;
mod event;
mod fixed;
mod job;
mod run;

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span};

pub use event::{JobEvent, JobOutcome};
pub use job::{DEFAULT_MAX_JITTER, Job, MissedPeriods};

use crate::elect::elector::Elector;
use crate::error::{Error, Result};
use crate::hold::guard::LeaderContext;
use crate::limits::check_duration;
use crate::name::LockName;
use crate::outcome::Outcome;
use crate::store::period::{Period, check_period_slots};
use job::Timing;
use run::{JobRun, ObserverFn};

/// A set of leader-only periodic jobs over one elector.
///
/// **Each job runs at most once per period across every node that uses the same store**, at
/// the start of its periods (see [`Job`]): every replica attempts each period near its start on
/// the store's clock, one attempt per period without waiting, and the store's period ledger
/// grants the period to the first attempt only. The others skip it — as
/// [`JobEvent::AlreadyRan`] when the period already ran, as [`JobEvent::Skipped`] when another
/// node holds the lock. Replicas started at different times, or with timers and clocks apart,
/// therefore do not run a period twice. The lease is held only while the action runs; for a
/// leader that holds its role between runs, see [`Elector::lead`].
///
/// An action error is logged at WARN and the schedule goes on; a panic too. A store error is
/// retried within the period (after 1 s, doubling). Cancelling the token stops scheduling,
/// abandons an attempt in flight, lets a running action finish, and releases its lease;
/// [`ScheduleHandle::stopped`] resolves when all of that is done. With a
/// [`grace_period`](Self::grace_period) a running action that has not finished that long after
/// the cancellation is dropped (cancelled) and its lease released.
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
    /// # use leasehold::{Elector, MemoryStore, Schedule, schedule::JobEvent};
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

    /// Adds a job that runs `action` once per `period` across all nodes, period-aligned (see
    /// [`Job::every`]).
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
    /// A job's invalid lock name ([`Error::Name`]); a zero period, a jitter above half the
    /// period, period options on a fixed-delay job, or options the elector rejects
    /// ([`Error::Options`]); a period or offset that is not whole milliseconds, or an offset not
    /// below the period, or a period-aligned job on an elector with `max_leaders` above 1
    /// ([`Error::Period`]); a period, initial delay or grace period beyond
    /// [`MAX_DURATION`](crate::limits::MAX_DURATION) ([`Error::Limit`]).
    pub fn start(self, stop: CancellationToken) -> Result<ScheduleHandle> {
        if let Some(grace) = self.grace {
            check_duration("grace_period", grace)?;
        }
        let mut planned = Vec::with_capacity(self.jobs.len());
        for job in self.jobs {
            let lock = self.elector.lock_name_of(&job.name)?;
            let timing = job.timing()?;
            if matches!(timing, Timing::Aligned { .. }) {
                // The ledger keeps one record per lock: period claims need a single holder.
                check_period_slots(self.elector.max_leaders())?;
            }
            // An attempt never waits for the lock: a node that waited would run the job again
            // right after the holder finished, in the same period.
            let opts = self.elector.options().to_builder().wait(Duration::ZERO);
            let elector = self.elector.reconfigured(opts.build()?);
            planned.push((
                timing,
                JobRun {
                    job,
                    lock,
                    elector,
                    stop: stop.clone(),
                    grace: self.grace,
                    observer: self.observer.clone(),
                },
            ));
        }
        let mut tasks = JoinSet::new();
        let node = self.elector.options().node_id().to_owned();
        for (timing, run) in planned {
            let span = info_span!("leasehold.schedule", lock = %run.lock, node = %node);
            tasks.spawn(
                async move {
                    match timing {
                        Timing::Aligned {
                            period,
                            jitter,
                            missed,
                        } => aligned::run(&run, period, jitter, missed).await,
                        Timing::FixedDelay => fixed::run(&run).await,
                    };
                }
                .instrument(span),
            );
        }
        Ok(ScheduleHandle {
            tasks,
            stop,
            elector: self.elector,
        })
    }
}

/// The running jobs of a started [`Schedule`].
///
/// Dropping the handle aborts every job at once (their leases are released in the background), so
/// the compiler warns when a handle is dropped unused:
///
/// ```compile_fail
/// # #![deny(unused_must_use)]
/// # async fn demo(schedule: leasehold::Schedule) -> leasehold::Result<()> {
/// schedule.start(leasehold::CancellationToken::new())?; // error: unused `ScheduleHandle`
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "dropping the handle stops every job at once: keep it, and await `stopped()` after cancelling"]
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
    /// (waiting at most [`SETTLE_TIMEOUT`](crate::limits::SETTLE_TIMEOUT) for the store). Nothing the
    /// schedule started outlives this.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future aborts the jobs still running (a lease they hold is released in the
    /// background, as for a dropped guard) and stops waiting for the elector to settle; await
    /// it to the end before the process exits.
    pub async fn stopped(mut self) {
        while self.tasks.join_next().await.is_some() {}
        self.elector
            .settled_within(crate::limits::SETTLE_TIMEOUT)
            .await;
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
        self.lock_name(name)
    }

    pub(crate) async fn acquire_exact(
        &self,
        lock: &LockName,
    ) -> Result<Option<crate::LeaderGuard>> {
        self.acquire(lock).await
    }

    pub(crate) async fn claim_exact(
        &self,
        lock: &LockName,
        period: Period,
    ) -> Result<Outcome<crate::LeaderGuard>> {
        self.claim(lock, Some(period)).await
    }
}
