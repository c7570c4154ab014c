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
//! | `leasehold_renewal_margin_seconds` | histogram | `lock` | time left to the local deadline when a renewal succeeded: how close renewals come to losing the lease |
//! | `leasehold_renewal_at_risk_total` | counter | `lock` | runs of failed renewals (one per [`RenewalFailing`](crate::Event::RenewalFailing) event: the early warning before `Lost`) |
//! | `leasehold_at_risk` | gauge | `lock` | 1 while a lease of the lock held in this process has a failing renewal (from `RenewalFailing` until a renewal succeeds, or the lease is lost or released), else 0 |
//! | `leasehold_store_clock_offset_seconds` | gauge | `lock` | the store's clock minus this host's, estimated at each renewal; only for stores that read their own clock (see [`ClockSource`](crate::store::ClockSource)) |
//! | `leader_election_master_status` | gauge | `name` | 1 while this process leads the lock (holds a lease of it that is neither lost nor released), else 0: client-go's gauge of the same name, `name` being the full lock name |
//!
//! Every family leasehold exports (these, leasehold-axum's jobs', `leasehold serve`'s,
//! `leasehold run --metrics-file`'s and leasehold-dynamodb's store's) is in one registry, [`FAMILIES`]: name, type, labels, unit,
//! help text and, for the histograms, buckets. Exporters take their `# HELP` lines and buckets
//! from it; [`describe`] hands the help texts to the recorder in effect.
//!
//! Counters and the 0/1 and count gauges are registered once per lock name and elector (and its
//! clones), at its first election, with the recorder in effect at that moment: install the
//! recorder before the first election. They start at 0, a true reading (nothing happened yet),
//! so `rate()` and `increase()` see the first event. The histograms and the clock offset have no
//! reading before their first observation, so they are registered then and export no series
//! until it: a follower that never held a lease has no renewal margin at all, rather than a
//! margin of 0. Give the histograms the buckets of their [`Family`] (leasehold-axum's
//! `PrometheusMetrics` does): as Prometheus histograms they add up across replicas, which
//! summaries cannot.
//!
//! The two 0/1 gauges (`leader_election_master_status`, `leasehold_at_risk`) count the leases of
//! a lock process-wide, across electors, like the recorder they are written to: the gauge is 1
//! while at least one of them is in the state it shows.
//!
//! **The renewal margin.** The local deadline of a lease is the instant its last grant or
//! renewal was sent, plus the lease, minus a safety margin (a tenth of the lease). The watchdog
//! renews every third of the lease, so a healthy renewal succeeds with about 0.57 × the lease
//! left; a margin near 0 means the lease nearly ran out before the store answered.
//!
//! **The store clock offset.** A store whose times come from its own clock
//! ([`ClockSource::Server`](crate::store::ClockSource::Server): PostgreSQL, MySQL/MariaDB, Redis)
//! answers a renewal with an expiry of its clock at that moment plus the lease asked for. The
//! expiry minus the lease, against the midpoint of this host's clock between sending and the
//! answer, estimates the offset, within half the round trip. Stores on this host's clock (memory,
//! SQLite) or on the clients' clocks (DynamoDB, etcd, whose expiry is computed by the client)
//! have no other clock to compare with: the gauge is not recorded for them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime};

use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use crate::events::LostReason;
pub use crate::metric_families::{
    ACQUIRE_BUCKETS, ACQUIRE_SECONDS, ACQUIRED, ACTION_BUCKETS, ACTION_FAILURES, ACTION_SECONDS,
    ACTIVE, AT_RISK, ATTEMPTS, DYNAMODB_CAPACITY_BUCKETS, DYNAMODB_CLOCK_SKEW_SECONDS,
    DYNAMODB_CONDITIONAL_FAILURES, DYNAMODB_CONSUMED_CAPACITY, DYNAMODB_REQUEST_BUCKETS,
    DYNAMODB_REQUEST_SECONDS, DYNAMODB_STALE_ITEMS, DYNAMODB_STALE_REFRESHES, DYNAMODB_THROTTLES,
    EXTENDED, FAMILIES, Family, JOB_ATTEMPTS, JOB_DURATION_SECONDS, JOB_FAILURES, JOB_PERIOD,
    JOB_RUNS, JOB_SHUTDOWN_SECONDS, JOB_SHUTDOWNS, JOB_SKIPS, Kind, LOCK_EXPIRES_AT_SECONDS,
    LOCK_FENCE, LOCK_HOLDER_INFO, LOCK_HOLDERS, LOCK_SLOTS, LOCK_STATE_OK, LOCK_TIME_LEFT_SECONDS,
    LOST, MARGIN_BUCKETS, MASTER_STATUS, NOT_ACQUIRED, RELEASED, RENEWAL_AT_RISK,
    RENEWAL_MARGIN_SECONDS, RUN_EXIT_CODE, RUN_FENCE, RUN_LAST_DURATION_SECONDS,
    RUN_LAST_RUN_TIMESTAMP_SECONDS, RUN_LAST_SUCCESS_TIMESTAMP_SECONDS, RUN_RAN, RUN_SKIPPED,
    RUN_START_TIMESTAMP_SECONDS, SHUTDOWN_BUCKETS, STORE_CLOCK_OFFSET_SECONDS, Source, describe,
    families_of, family,
};
use crate::name::LockName;

/// The metric handles of one lock, registered once so that an election costs no registration.
pub(crate) struct LockMetrics {
    attempts: Counter,
    acquired: Counter,
    contention: Counter,
    error: Counter,
    already_ran: Counter,
    /// The histograms are registered at their first observation, so that a lock that never
    /// saw one (a follower never renews) exports no series of them rather than an empty one.
    acquire_seconds: OnceLock<Histogram>,
    action_seconds: OnceLock<Histogram>,
    action_failures: Counter,
    active: Gauge,
    extended: Counter,
    lost_not_held: Counter,
    lost_deadline: Counter,
    lost_store_failed: Counter,
    released: Counter,
    renewal_margin: OnceLock<Histogram>,
    renewal_at_risk: Counter,
    at_risk: Gauge,
    /// Registered at the first estimate, so a store without its own clock shows no offset
    /// (rather than a registered gauge at 0).
    clock_offset: OnceLock<Gauge>,
    master_status: Gauge,
    /// The process-wide counts behind the 0/1 gauges, shared with every other elector's
    /// handles of this lock.
    flags: Arc<FlagCounts>,
}

impl LockMetrics {
    fn register(lock: &LockName) -> Self {
        // The help texts go to the same recorder as the handles.
        describe(Source::Elector);
        let l = || lock.shared();
        Self {
            attempts: counter!(ATTEMPTS, "lock" => l()),
            acquired: counter!(ACQUIRED, "lock" => l()),
            contention: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "contention"),
            error: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "error"),
            already_ran: counter!(NOT_ACQUIRED, "lock" => l(), "reason" => "already_ran"),
            acquire_seconds: OnceLock::new(),
            action_seconds: OnceLock::new(),
            action_failures: counter!(ACTION_FAILURES, "lock" => l()),
            active: gauge!(ACTIVE, "lock" => l()),
            extended: counter!(EXTENDED, "lock" => l()),
            lost_not_held: counter!(LOST, "lock" => l(), "reason" => "not_held"),
            lost_deadline: counter!(LOST, "lock" => l(), "reason" => "deadline"),
            lost_store_failed: counter!(LOST, "lock" => l(), "reason" => "store_failed"),
            released: counter!(RELEASED, "lock" => l()),
            renewal_margin: OnceLock::new(),
            renewal_at_risk: counter!(RENEWAL_AT_RISK, "lock" => l()),
            at_risk: gauge!(AT_RISK, "lock" => l()),
            clock_offset: OnceLock::new(),
            master_status: gauge!(MASTER_STATUS, "name" => l()),
            flags: FlagCounts::of(lock),
        }
    }

    /// The histogram `name` of this lock, registered with the recorder in effect at its first
    /// observation.
    fn histogram<'a>(&self, cell: &'a OnceLock<Histogram>, name: &'static str) -> &'a Histogram {
        cell.get_or_init(|| histogram!(name, "lock" => self.flags.lock.shared()))
    }

    pub(crate) fn attempt(&self) {
        self.attempts.increment(1);
    }

    pub(crate) fn acquired(&self, waited: Duration) {
        self.acquired.increment(1);
        self.histogram(&self.acquire_seconds, ACQUIRE_SECONDS)
            .record(waited.as_secs_f64());
        self.active.increment(1.0);
    }

    pub(crate) fn already_ran(&self) {
        self.already_ran.increment(1);
    }

    pub(crate) fn not_acquired(&self, error: bool) {
        if error { &self.error } else { &self.contention }.increment(1);
    }

    pub(crate) fn action_finished(&self, took: Duration, failed: bool) {
        self.histogram(&self.action_seconds, ACTION_SECONDS)
            .record(took.as_secs_f64());
        if failed {
            self.action_failures.increment(1);
        }
    }

    /// A successful renewal that arrived with `margin` left to the local deadline.
    pub(crate) fn extended(&self, margin: Duration) {
        self.extended.increment(1);
        self.histogram(&self.renewal_margin, RENEWAL_MARGIN_SECONDS)
            .record(margin.as_secs_f64());
    }

    /// A `RenewalFailing` event: the first failure of a run of failed renewals.
    pub(crate) fn renewal_at_risk(&self) {
        self.renewal_at_risk.increment(1);
    }

    /// Counts one lease of this lock into (`true`) or out of the leading state.
    pub(crate) fn leading(&self, on: bool) {
        self.flag(Flag::Leading, on);
    }

    /// Counts one lease of this lock into (`true`) or out of the at-risk state.
    pub(crate) fn at_risk(&self, on: bool) {
        self.flag(Flag::AtRisk, on);
    }

    /// The store clock offset estimated at a renewal (see the module docs).
    pub(crate) fn clock_offset(&self, seconds: f64) {
        self.clock_offset
            .get_or_init(|| gauge!(STORE_CLOCK_OFFSET_SECONDS, "lock" => self.flags.lock.shared()))
            .set(seconds);
    }

    /// Moves one lease of this lock into or out of `flag`'s state and sets its gauge: 1 while
    /// any lease of the lock in this process is in it. The count and the gauge change under one
    /// lock (the lock's own, so no lookup per change), so concurrent changes leave the gauge
    /// matching the count.
    fn flag(&self, flag: Flag, on: bool) {
        let mut counts = self.flags.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = &mut counts[flag as usize];
        *count = if on {
            count.saturating_add(1)
        } else {
            count.saturating_sub(1)
        };
        let value = if *count > 0 { 1.0 } else { 0.0 };
        match flag {
            Flag::Leading => &self.master_status,
            Flag::AtRisk => &self.at_risk,
        }
        .set(value);
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

/// A state that a 0/1 gauge per lock shows (the index of its count in [`FlagCounts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    /// Held, neither lost nor released (`leader_election_master_status`).
    Leading = 0,
    /// Renewal failing (`leasehold_at_risk`).
    AtRisk = 1,
}

/// How many leases of one lock, process-wide, are in each flagged state. One per lock while any
/// elector has handles of it (a held lease keeps its handles), found through [`FLAGGED`] when
/// the handles are registered, so that changing a count needs no lookup.
struct FlagCounts {
    lock: LockName,
    counts: Mutex<[u32; 2]>,
}

/// The live [`FlagCounts`] by lock; an entry leaves when its counts are dropped, so this holds
/// only the locks some elector has handles of.
static FLAGGED: LazyLock<Mutex<HashMap<LockName, Weak<FlagCounts>>>> =
    LazyLock::new(Mutex::default);

impl FlagCounts {
    /// The counts of `lock`: the live ones if another elector has them, else new ones (at 0).
    fn of(lock: &LockName) -> Arc<Self> {
        let mut live = FLAGGED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(counts) = live.get(lock).and_then(Weak::upgrade) {
            return counts;
        }
        let counts = Arc::new(Self {
            lock: lock.clone(),
            counts: Mutex::new([0; 2]),
        });
        live.insert(lock.clone(), Arc::downgrade(&counts));
        counts
    }
}

impl Drop for FlagCounts {
    /// Leaves [`FLAGGED`], unless newer counts of the lock replaced this entry meanwhile.
    fn drop(&mut self) {
        let mut live = FLAGGED.lock().unwrap_or_else(|p| p.into_inner());
        if live
            .get(&self.lock)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), self))
        {
            live.remove(&self.lock);
        }
    }
}

/// The store's clock minus this host's, in seconds, from the store time `store_now` at which it
/// applied a request and this host's clock `answered_at` when the answer arrived, `round_trip`
/// after sending: the store applied it somewhere in that round trip, so its midpoint is the best
/// estimate, within half the round trip.
pub(crate) fn clock_offset(
    store_now: SystemTime,
    answered_at: SystemTime,
    round_trip: Duration,
) -> f64 {
    let midpoint = answered_at
        .checked_sub(round_trip / 2)
        .unwrap_or(answered_at);
    match store_now.duration_since(midpoint) {
        Ok(ahead) => ahead.as_secs_f64(),
        Err(behind) => -behind.duration().as_secs_f64(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_offset_is_measured_from_the_midpoint_of_the_round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let rtt = Duration::from_millis(200);
        // Answered at t, sent at t - 200 ms: the store applied it at about t - 100 ms.
        let at = |ms: u64| t - Duration::from_millis(100) + Duration::from_millis(ms);
        assert!((clock_offset(at(0), t, rtt) - 0.0).abs() < 1e-9);
        assert!((clock_offset(at(2_500), t, rtt) - 2.5).abs() < 1e-9);
        let behind = t - Duration::from_millis(1_100);
        assert!((clock_offset(behind, t, rtt) + 1.0).abs() < 1e-9);
        assert!((clock_offset(t, t, Duration::ZERO)).abs() < 1e-9);
    }
}
