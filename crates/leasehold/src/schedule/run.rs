//! What every job's task shares: its context, events, and running an elected action.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::OptionFuture;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::event::{JobEvent, JobOutcome};
use super::job::Job;
use crate::elect::elector::Elector;
use crate::hold::guard::LeaderGuard;
use crate::name::LockName;

pub(crate) type ObserverFn = Arc<dyn Fn(&str, &JobEvent) + Send + Sync>;

/// One job's task: its lock, its elector (configured for ticks), and the schedule's settings.
pub(crate) struct JobRun {
    pub(crate) job: Job,
    pub(crate) lock: LockName,
    pub(crate) elector: Elector,
    pub(crate) stop: CancellationToken,
    pub(crate) grace: Option<Duration>,
    pub(crate) observer: Option<ObserverFn>,
}

/// The job stopped: the token was cancelled, and nothing it started is left.
pub(crate) struct Stopped;

impl JobRun {
    pub(crate) fn emit(&self, event: JobEvent) {
        if let Some(hook) = &self.observer {
            hook(&self.job.name, &event);
        }
    }

    /// Reports the stop that began at `since`.
    pub(crate) fn stopped(&self, since: Instant, cancelled_action: bool) -> Stopped {
        self.emit(JobEvent::Stopped {
            took: since.elapsed(),
            cancelled_action,
        });
        Stopped
    }

    /// Sleeps until `at`, or stops.
    pub(crate) async fn sleep_until(&self, at: Instant) -> Result<(), Stopped> {
        tokio::select! {
            biased;
            () = self.stop.cancelled() => Err(self.stopped(Instant::now(), false)),
            () = sleep_until(at) => Ok(()),
        }
    }

    /// Awaits `attempt` (an acquisition), or stops: an acquisition abandoned this way leaves
    /// no lease behind (the elector releases a late grant; [`Elector::settled`] waits for it).
    pub(crate) async fn attempt<T>(&self, attempt: impl Future<Output = T>) -> Result<T, Stopped> {
        tokio::select! {
            biased;
            () = self.stop.cancelled() => Err(self.stopped(Instant::now(), false)),
            answer = attempt => Ok(answer),
        }
    }

    /// Runs the action under `guard` to its end — or, once the token is cancelled, for at most
    /// the grace period; or, with `cancel_on_lost`, until the lease is lost — reports how it
    /// ended, and releases the lease. A run whose lease was lost reports
    /// [`JobOutcome::Lost`] whether or not its action was dropped: it was not exclusive.
    pub(crate) async fn run_elected(
        &self,
        guard: LeaderGuard,
        period: Option<i64>,
    ) -> Result<(), Stopped> {
        self.emit(JobEvent::Elected { period });
        let started = Instant::now();
        let ctx = guard.context();
        let action = OptionFuture::from(Some(
            AssertUnwindSafe((self.job.action)(ctx.clone())).catch_unwind(),
        ));
        tokio::pin!(action);
        let lost = ctx.lost();
        tokio::pin!(lost);
        let cancel_on_lost = self.elector.options().cancel_on_lost();
        let mut was_lost = false;
        let mut grace_ran_out = false;
        let mut stopping: Option<Instant> = None;
        let outcome = loop {
            let grace_over = async {
                match (stopping, self.grace) {
                    (Some(since), Some(grace)) => {
                        sleep_until(crate::limits::deadline_after(since, grace)).await;
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                r = &mut action => break r,
                _ = &mut lost, if !was_lost => {
                    was_lost = true;
                    if cancel_on_lost {
                        break None;
                    }
                }
                () = self.stop.cancelled(), if stopping.is_none() => stopping = Some(Instant::now()),
                () = grace_over => {
                    grace_ran_out = true;
                    break None;
                }
            }
        };
        let outcome = match outcome {
            _ if was_lost => {
                let action = match outcome {
                    None => "the action was dropped (cancel_on_lost)",
                    Some(_) => "the action ran to its end without exclusivity",
                };
                warn!("the lease was lost while the scheduled job ran; {action}");
                JobOutcome::Lost
            }
            Some(Ok(Ok(()))) => JobOutcome::Succeeded,
            Some(Ok(Err(e))) => {
                warn!(error = %e, "scheduled job failed; the schedule continues");
                JobOutcome::Failed
            }
            Some(Err(_)) => {
                warn!("scheduled job panicked; the schedule continues");
                JobOutcome::Panicked
            }
            None => {
                warn!(grace = ?self.grace, "scheduled job outlived the shutdown grace period and was cancelled");
                JobOutcome::Cancelled
            }
        };
        self.emit(JobEvent::Finished {
            took: started.elapsed(),
            outcome,
            period,
        });
        // The action (if it was dropped) is gone before the lease is released.
        action.set(None.into());
        let _ = guard.release().await;
        match stopping {
            Some(since) => Err(self.stopped(since, grace_ran_out)),
            None => Ok(()),
        }
    }
}
