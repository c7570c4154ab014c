//! Period-aligned jobs (the default): attempts near each period's start on the store's clock,
//! each claiming its period in the lock's ledger.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::clock::StoreClock;
use super::event::JobEvent;
use super::job::MissedPeriods;
use super::run::{JobRun, Stopped};
use crate::limits::deadline_after;
use crate::outcome::Outcome;
use crate::store::period::{Period, epoch_ms};

/// The first pause before trying the store again within a period, doubling up to
/// [`MAX_RETRY_PAUSE`].
const FIRST_RETRY_PAUSE: Duration = Duration::from_secs(1);
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// How long after a period's start (by this node's estimate of the store's clock) the first
/// attempt is made, before the jitter: the estimate is whole milliseconds, so an attempt right
/// at the start could reach the store a millisecond before it and claim the previous period.
const START_MARGIN_MS: i64 = 2;

/// Attempts each period of `period` near its start until the token is cancelled.
pub(crate) async fn run(
    run: &JobRun,
    period: Period,
    jitter: Duration,
    missed: MissedPeriods,
) -> Stopped {
    let mut clock = StoreClock::new();
    if let Some(delay) = run.job.initial_delay
        && let Err(stopped) = run.sleep_until(deadline_after(Instant::now(), delay)).await
    {
        return stopped;
    }
    let mut due = match missed {
        MissedPeriods::RunOnce => Instant::now(),
        MissedPeriods::Skip => next_start(&mut clock, period, jitter),
    };
    let mut failures = 0u32;
    loop {
        if let Err(stopped) = run.sleep_until(due).await {
            return stopped;
        }
        let target = period.id_at_ms(clock.now_ms());
        run.emit(JobEvent::Attempt {
            period: Some(target),
        });
        let claimed = match run
            .attempt(run.elector.claim_exact(&run.lock, period))
            .await
        {
            Ok(claimed) => claimed,
            Err(stopped) => return stopped,
        };
        let mut retry = None;
        match claimed {
            Ok(Outcome::Elected(guard)) => {
                failures = 0;
                let lease = guard.lease();
                clock.learn(epoch_ms(lease.acquired_at), Instant::now());
                if let Err(stopped) = run.run_elected(guard, lease.period).await {
                    return stopped;
                }
            }
            Ok(Outcome::AlreadyRan(record)) => {
                failures = 0;
                if record.period < target {
                    // The store is still in an earlier period than this node thought: its
                    // clock is behind this estimate. Attempt again just after its next start.
                    let store_next = epoch_ms(period.start_of(record.period.saturating_add(1)));
                    clock.learn_below(store_next, Instant::now());
                }
                debug!(period = record.period, by = %record.by, "schedule tick skipped, this period already ran");
                run.emit(JobEvent::AlreadyRan(record));
            }
            Ok(Outcome::Taken(_)) => {
                failures = 0;
                debug!("schedule tick skipped, another node holds the lock");
                run.emit(JobEvent::Skipped);
            }
            Ok(Outcome::ActionFailed(never)) => match never {},
            Err(e) => {
                run.emit(JobEvent::StoreError);
                let pause = FIRST_RETRY_PAUSE
                    .saturating_mul(1 << failures.min(5))
                    .min(MAX_RETRY_PAUSE);
                failures = failures.saturating_add(1);
                warn!(error = %e, retry_in = ?pause, "schedule tick could not reach the store; trying again within the period");
                retry = Some(pause);
            }
        }
        let now_ms = clock.now_ms();
        let current = period.id_at_ms(now_ms);
        let period_end = epoch_ms(period.start_of(current.saturating_add(1)));
        due = match retry {
            // A failed attempt is tried again while the period lasts.
            Some(pause) if now_ms.saturating_add(millis(pause)) < period_end => {
                deadline_after(Instant::now(), pause)
            }
            // The attempt (or the run) went on past the start of a later period: that start was
            // missed.
            _ if current > target && missed == MissedPeriods::RunOnce => Instant::now(),
            _ => next_start(&mut clock, period, jitter),
        };
    }
}

/// When to attempt the next period: its start on the store's clock plus a random jitter.
fn next_start(clock: &mut StoreClock, period: Period, jitter: Duration) -> Instant {
    let current = period.id_at_ms(clock.now_ms());
    let start = epoch_ms(period.start_of(current.saturating_add(1)));
    let spread = rand::rng().random_range(0..=millis(jitter));
    clock.instant_at(start.saturating_add(START_MARGIN_MS).saturating_add(spread))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
