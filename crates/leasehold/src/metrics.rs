//! Metric names and recording, through the `metrics` facade.
//!
//! Install any `metrics` recorder (for example `metrics-exporter-prometheus`) to collect them.
//! Every metric carries a `lock` label with the full lock name; keep lock names low-cardinality.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `leasehold_attempts_total` | counter | `lock` | elections started |
//! | `leasehold_acquired_total` | counter | `lock` | leases acquired |
//! | `leasehold_not_acquired_total` | counter | `lock`, `reason` = `contention` \| `error` | elections that did not acquire |
//! | `leasehold_acquire_seconds` | histogram | `lock` | time from the first attempt to the lease |
//! | `leasehold_action_seconds` | histogram | `lock` | time the action ran |
//! | `leasehold_action_failures_total` | counter | `lock` | actions that returned an error or panicked |
//! | `leasehold_active` | gauge | `lock` | leases held by this process |
//! | `leasehold_extended_total` | counter | `lock` | renewals |
//! | `leasehold_lost_total` | counter | `lock`, `reason` = `not_held` \| `deadline` \| `store_failed` | leases lost while held |
//! | `leasehold_released_total` | counter | `lock` | releases |

use std::time::Duration;

use metrics::{counter, gauge, histogram};

use crate::events::LostReason;
use crate::name::LockName;

/// `leasehold_attempts_total`
pub const ATTEMPTS: &str = "leasehold_attempts_total";
/// `leasehold_acquired_total`
pub const ACQUIRED: &str = "leasehold_acquired_total";
/// `leasehold_not_acquired_total`
pub const NOT_ACQUIRED: &str = "leasehold_not_acquired_total";
/// `leasehold_acquire_seconds`
pub const ACQUIRE_SECONDS: &str = "leasehold_acquire_seconds";
/// `leasehold_action_seconds`
pub const ACTION_SECONDS: &str = "leasehold_action_seconds";
/// `leasehold_action_failures_total`
pub const ACTION_FAILURES: &str = "leasehold_action_failures_total";
/// `leasehold_active`
pub const ACTIVE: &str = "leasehold_active";
/// `leasehold_extended_total`
pub const EXTENDED: &str = "leasehold_extended_total";
/// `leasehold_lost_total`
pub const LOST: &str = "leasehold_lost_total";
/// `leasehold_released_total`
pub const RELEASED: &str = "leasehold_released_total";

pub(crate) fn attempt(lock: &LockName) {
    counter!(ATTEMPTS, "lock" => lock.shared()).increment(1);
}

pub(crate) fn acquired(lock: &LockName, waited: Duration) {
    counter!(ACQUIRED, "lock" => lock.shared()).increment(1);
    histogram!(ACQUIRE_SECONDS, "lock" => lock.shared()).record(waited.as_secs_f64());
    gauge!(ACTIVE, "lock" => lock.shared()).increment(1.0);
}

pub(crate) fn not_acquired(lock: &LockName, error: bool) {
    let reason = if error { "error" } else { "contention" };
    counter!(NOT_ACQUIRED, "lock" => lock.shared(), "reason" => reason).increment(1);
}

pub(crate) fn action_finished(lock: &LockName, took: Duration, failed: bool) {
    histogram!(ACTION_SECONDS, "lock" => lock.shared()).record(took.as_secs_f64());
    if failed {
        counter!(ACTION_FAILURES, "lock" => lock.shared()).increment(1);
    }
}

pub(crate) fn extended(lock: &LockName) {
    counter!(EXTENDED, "lock" => lock.shared()).increment(1);
}

pub(crate) fn lost(lock: &LockName, reason: LostReason) {
    let reason = match reason {
        LostReason::NotHeld => "not_held",
        LostReason::DeadlinePassed => "deadline",
        LostReason::StoreFailed => "store_failed",
    };
    counter!(LOST, "lock" => lock.shared(), "reason" => reason).increment(1);
}

pub(crate) fn released(lock: &LockName) {
    counter!(RELEASED, "lock" => lock.shared()).increment(1);
    gauge!(ACTIVE, "lock" => lock.shared()).decrement(1.0);
}
