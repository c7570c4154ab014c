//! A period claim's start: before the action of a granted claim runs, the store's ledger records
//! the claim as started (until then another node may take the period over once this lease ends,
//! see [`LeaseStore::start_period`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, sleep, timeout_at};

use crate::error::{Error, Result, StoreError};
use crate::hold::guard::LeaderGuard;
use crate::store::contract::LeaseStore;
use crate::store::period::PeriodStart;

/// The first pause between tries of a start whose answer was an error; doubled up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const MAX_PAUSE: Duration = Duration::from_millis(250);

/// Marks `guard`'s period claim started. A transient error or a missing answer is retried (the
/// step is idempotent for the token) until the lease's local deadline; each try waits at most
/// `attempt_timeout`. `Ok(None)` when the lease is no longer held (the guard is released and
/// reports the loss); `Err` when the store fails for good or the deadline passes first (the
/// guard is released: the claim stays *not started*, so the period can run elsewhere).
pub(crate) async fn start(
    store: &Arc<dyn LeaseStore>,
    guard: LeaderGuard,
    attempt_timeout: Duration,
) -> Result<Option<LeaderGuard>> {
    let lease = guard.lease();
    let mut pause = FIRST_PAUSE;
    let failure = loop {
        let deadline = guard.local_deadline();
        let limit = deadline.min(crate::limits::deadline_after(
            Instant::now(),
            attempt_timeout,
        ));
        let error = match timeout_at(limit, store.start_period(&lease)).await {
            Ok(Ok(PeriodStart::Started)) => return Ok(Some(guard)),
            Ok(Ok(PeriodStart::NotHeld)) => {
                tracing::warn!(lock = %lease.lock, fence = lease.fence,
                    "the period claim's lease ended before its action could start");
                let _ = guard.release().await;
                return Ok(None);
            }
            Ok(Err(e)) if !e.is_transient() => break e,
            Ok(Err(e)) => e,
            Err(_) => StoreError::transient(format!(
                "no answer to the period start within the attempt timeout of {} or before the \
                 lease's local deadline",
                crate::limits::Human(attempt_timeout)
            )),
        };
        if Instant::now() + pause >= deadline {
            break error;
        }
        tracing::debug!(lock = %lease.lock, error = %error, "marking the period started failed; retrying");
        sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    };
    tracing::warn!(lock = %lease.lock, error = %failure,
        "could not record the period as started; the action does not run, and the period stays open to another node");
    let _ = guard.release().await;
    Err(Error::store(&lease.lock, failure))
}
