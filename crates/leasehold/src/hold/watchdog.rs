//! The auto-extend watchdog.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};
use tracing::{Instrument, debug, info, warn};

use crate::events::LostReason;
use crate::hold::cell::{LeaseCell, safety_margin};
use crate::hold::suspend;
use crate::limits::deadline_after;
use crate::options::MIN_RENEWAL_PERIOD;
use crate::spans::{self, Outcome};
use crate::store::lease::Extension;

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
///
/// The first failure of a run of failures (an error, or no answer within a renewal period) is
/// reported once, as a warning and a `RenewalFailing` event, ahead of any `Lost`; the retries
/// that follow log at DEBUG only, until a renewal succeeds again.
pub(crate) async fn run(cell: Arc<LeaseCell>) {
    let period = renewal_period(cell.ttl);
    let retry = (period / 4).max(Duration::from_millis(5));
    let heartbeat = &cell.shared.heartbeat;
    // Counted from the grant, not from this task's start: a watchdog started after the
    // action's first step renews at once if a renewal is due by then.
    let mut next = heartbeat.next_renewal(cell.acquired, period);
    let mut failing = false;
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
        let Some(_turn) = cell.extension_turn().await else {
            return;
        };
        let now = Instant::now();
        let full = deadline_after(now, cell.ttl - safety_margin(cell.ttl));
        if cell.deadline() > full {
            // A manual extension reaches further than a renewal would: keep it.
            next = heartbeat.next_renewal(now, period);
            continue;
        }
        let lease = cell.lease();
        let deadline = cell.deadline();
        let sent_offset = suspend::offset();
        let slow_at = deadline_after(now, period);
        let span = spans::renew(&lease, &cell.shared.store_label);
        let extend = heartbeat.extend(&lease, cell.ttl).instrument(span.clone());
        tokio::pin!(extend);
        let outcome = loop {
            tokio::select! {
                biased;
                r = &mut extend => break r,
                () = sleep_until(deadline) => {
                    spans::record_outcome(&span, Outcome::Deadline);
                    cell.mark_lost(LostReason::DeadlinePassed);
                    return;
                }
                () = sleep_until(slow_at), if !failing => {
                    failing = true;
                    cell.renewal_failing(&format!(
                        "the store has not answered the renewal within {period:?}"
                    ));
                }
            }
        };
        spans::record_outcome(&span, spans::extension_outcome(&outcome));
        match outcome {
            Ok(Extension::Extended { expires_at }) => {
                if failing {
                    info!(lock = %lease.lock, slot = lease.slot, "lease renewal recovered");
                    failing = false;
                }
                cell.extended(now, sent_offset, cell.ttl, expires_at);
                next = heartbeat.next_renewal(Instant::now(), period);
            }
            Ok(Extension::NotHeld) => {
                cell.mark_lost(LostReason::NotHeld);
                return;
            }
            Err(e) if e.is_transient() => {
                if failing {
                    debug!(lock = %lease.lock, slot = lease.slot, error = %e, ?retry,
                        "renewal failed again; retrying before the local deadline");
                } else {
                    failing = true;
                    cell.renewal_failing(&e.to_string());
                }
                next = deadline_after(Instant::now(), retry);
            }
            Err(e) => {
                if !failing {
                    cell.renewal_failing(&e.to_string());
                }
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, "renewal failed permanently");
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
