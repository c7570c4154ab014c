//! The auto-extend watchdog.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};
use tracing::warn;

use crate::events::LostReason;
use crate::guard::{LeaseCell, safety_margin};
use crate::lease::Extension;
use crate::limits::deadline_after;
use crate::options::MIN_RENEWAL_PERIOD;

/// Renewal cadence: a third of the lease, at least 25 ms.
pub(crate) fn renewal_period(ttl: Duration) -> Duration {
    (ttl / 3).max(MIN_RENEWAL_PERIOD)
}

/// Renews `cell`'s lease until stopped or lost.
///
/// Each tick renews to the full lease unless the lease is already good for longer (a manual
/// extension further out is respected). Transient errors are retried sooner, until the local
/// deadline; "not held" and permanent errors mark the lease lost. A stop request never interrupts
/// an extension in flight, so a release never races a renewal.
pub(crate) async fn run(cell: Arc<LeaseCell>) {
    let period = renewal_period(cell.ttl);
    let mut next = deadline_after(Instant::now(), period);
    loop {
        if cell.stopping.load(Ordering::Acquire) {
            return;
        }
        tokio::select! {
            () = cell.stop.notified() => return,
            () = sleep_until(next) => {}
            () = sleep_until(cell.deadline()) => {}
        }
        if cell.stopping.load(Ordering::Acquire) || cell.lost_reason().is_some() {
            return;
        }
        let _one_at_a_time = cell.extending.lock().await;
        let now = Instant::now();
        let full = deadline_after(now, cell.ttl - safety_margin(cell.ttl));
        if cell.deadline() > full {
            // A manual extension reaches further than a renewal would: keep it.
            next = deadline_after(now, period);
            continue;
        }
        let lease = cell.lease();
        let deadline = cell.deadline();
        let outcome = tokio::select! {
            r = cell.store.extend(&lease, cell.ttl) => r,
            () = sleep_until(deadline) => {
                cell.mark_lost(LostReason::DeadlinePassed);
                return;
            }
        };
        match outcome {
            Ok(Extension::Extended { expires_at }) => {
                cell.extended(now, cell.ttl, expires_at);
                next = deadline_after(Instant::now(), period);
            }
            Ok(Extension::NotHeld) => {
                cell.mark_lost(LostReason::NotHeld);
                return;
            }
            Err(e) if e.is_transient() => {
                let retry = (period / 4).max(Duration::from_millis(5));
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, ?retry,
                    "leasehold: renewal failed; retrying before the local deadline");
                next = deadline_after(Instant::now(), retry);
            }
            Err(e) => {
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, "leasehold: renewal failed permanently");
                cell.mark_lost(LostReason::StoreFailed);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cadence_is_a_third_of_the_lease_but_at_least_25ms() {
        assert_eq!(
            renewal_period(Duration::from_secs(3)),
            Duration::from_secs(1)
        );
        assert_eq!(
            renewal_period(Duration::from_millis(30)),
            Duration::from_millis(25)
        );
    }
}
