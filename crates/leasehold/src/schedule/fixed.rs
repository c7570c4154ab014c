//! Fixed-delay jobs ([`Job::fixed_delay`](super::Job::fixed_delay)): this node's own timer, a
//! lease per run, no ledger.

use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, warn};

use super::event::JobEvent;
use super::run::{JobRun, Stopped};
use crate::limits::deadline_after;

/// Attempts the job `period` after each previous attempt ended, until the token is cancelled.
pub(crate) async fn run(run: &JobRun) -> Stopped {
    let mut delay = run.job.initial_delay.unwrap_or(Duration::ZERO);
    loop {
        if let Err(stopped) = run.sleep_until(deadline_after(Instant::now(), delay)).await {
            return stopped;
        }
        delay = run.job.period;
        run.emit(JobEvent::Attempt { period: None });
        let guard = match run.attempt(run.elector.acquire_exact(&run.lock)).await {
            Err(stopped) => return stopped,
            Ok(Ok(Some(guard))) => guard,
            Ok(Ok(None)) => {
                run.emit(JobEvent::Skipped);
                debug!("schedule tick skipped, another node is leader");
                continue;
            }
            Ok(Err(e)) => {
                run.emit(JobEvent::StoreError);
                warn!(error = %e, "schedule tick could not reach the store; trying again next period");
                continue;
            }
        };
        if let Err(stopped) = run.run_elected(guard, None).await {
            return stopped;
        }
    }
}
