//! Metric names and recording, through the `metrics` facade.
//!
//! Install any `metrics` recorder (for example `metrics-exporter-prometheus`) to collect them.
//! Every metric carries a `lock` label with the full lock name; keep lock names low-cardinality.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `leasehold_attempts_total` | counter | `lock` | elections started |
//! | `leasehold_acquired_total` | counter | `lock` | leases acquired |
//! | `leasehold_not_acquired_total` | counter | `lock`, `reason` = `contention` \| `already_ran` \| `error` | elections that did not acquire (`already_ran`: refused by the period ledger) |
//! | `leasehold_acquire_seconds` | histogram | `lock` | time from the first attempt to the lease |
//! | `leasehold_action_seconds` | histogram | `lock` | time the action ran |
//! | `leasehold_action_failures_total` | counter | `lock` | actions that returned an error or panicked |
//! | `leasehold_active` | gauge | `lock` | leases held by this process |
//! | `leasehold_extended_total` | counter | `lock` | renewals |
//! | `leasehold_lost_total` | counter | `lock`, `reason` = `not_held` \| `deadline` \| `store_failed` | leases lost while held |
//! | `leasehold_released_total` | counter | `lock` | releases |
//!
//! Handles are registered once per lock name and elector (and its clones), with the recorder
//! in effect at that moment: install the recorder before the first election.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

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

/// The metric handles of one lock, registered once so that an election costs no registration.
pub(crate) struct LockMetrics {
    attempts: Counter,
    acquired: Counter,
    contention: Counter,
    error: Counter,
    already_ran: Counter,
    acquire_seconds: Histogram,
    action_seconds: Histogram,
    action_failures: Counter,
    active: Gauge,
    extended: Counter,
    lost_not_held: Counter,
    lost_deadline: Counter,
    lost_store_failed: Counter,
    released: Counter,
}

impl LockMetrics {
    fn register(lock: &LockName) -> Self {
        let l = || lock.shared();
        Self {
            attempts: counter!(ATTEMPTS, "lock" => l()),
            acquired: counter!(ACQUIRED, "lock" => l()),
            contention: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "contention"),
            error: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "error"),
            already_ran: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "already_ran"),
            acquire_seconds: histogram!(ACQUIRE_SECONDS, "lock" => l()),
            action_seconds: histogram!(ACTION_SECONDS, "lock" => l()),
            action_failures: counter!(ACTION_FAILURES, "lock" => l()),
            active: gauge!(ACTIVE, "lock" => l()),
            extended: counter!(EXTENDED, "lock" => l()),
            lost_not_held: counter!(LOST, "lock" => l(), "reason" => "not_held"),
            lost_deadline: counter!(LOST, "lock" => l(), "reason" => "deadline"),
            lost_store_failed: counter!(LOST, "lock" => l(), "reason" => "store_failed"),
            released: counter!(RELEASED, "lock" => l()),
        }
    }

    pub(crate) fn attempt(&self) {
        self.attempts.increment(1);
    }

    pub(crate) fn acquired(&self, waited: Duration) {
        self.acquired.increment(1);
        self.acquire_seconds.record(waited.as_secs_f64());
        self.active.increment(1.0);
    }

    pub(crate) fn already_ran(&self) {
        self.already_ran.increment(1);
    }

    pub(crate) fn not_acquired(&self, error: bool) {
        if error { &self.error } else { &self.contention }.increment(1);
    }

    pub(crate) fn action_finished(&self, took: Duration, failed: bool) {
        self.action_seconds.record(took.as_secs_f64());
        if failed {
            self.action_failures.increment(1);
        }
    }

    pub(crate) fn extended(&self) {
        self.extended.increment(1);
    }

    pub(crate) fn lost(&self, reason: LostReason) {
        match reason {
            LostReason::NotHeld => &self.lost_not_held,
            LostReason::DeadlinePassed => &self.lost_deadline,
            LostReason::StoreFailed => &self.lost_store_failed,
        }
        .increment(1);
    }

    pub(crate) fn released(&self) {
        self.released.increment(1);
        self.active.decrement(1.0);
    }
}

/// How many locks' handles an elector keeps before starting over (bounds memory when lock names
/// are generated, e.g. per tenant).
const CACHE_LIMIT: usize = 4096;

/// Per-lock handles, shared by an elector and its clones.
#[derive(Default)]
pub(crate) struct MetricsCache(
    Mutex<HashMap<LockName, Arc<LockMetrics>, foldhash::fast::RandomState>>,
);

impl MetricsCache {
    pub(crate) fn get(&self, lock: &LockName) -> Arc<LockMetrics> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = map.get(lock) {
            return Arc::clone(m);
        }
        if map.len() >= CACHE_LIMIT {
            map.clear();
        }
        let m = Arc::new(LockMetrics::register(lock));
        map.insert(lock.clone(), Arc::clone(&m));
        m
    }
}
