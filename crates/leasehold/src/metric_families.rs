//! The registry of every metric family leasehold exports: its name, type, labels, unit, help
//! text and, for histograms, its buckets. Re-exported by [`crate::metrics`].
//!
//! Each exporter reads this one table, so names and help texts cannot drift apart: the core's
//! elections describe their families to the `metrics` recorder, leasehold-axum's
//! `PrometheusMetrics` describes the core's and the jobs' families and gives the histograms
//! their buckets, `leasehold serve` describes the holder families, and `leasehold run
//! --metrics-file` writes its HELP and TYPE lines from it.

use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};

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
/// `leasehold_renewal_margin_seconds`
pub const RENEWAL_MARGIN_SECONDS: &str = "leasehold_renewal_margin_seconds";
/// `leasehold_renewal_at_risk_total`
pub const RENEWAL_AT_RISK: &str = "leasehold_renewal_at_risk_total";
/// `leasehold_at_risk`
pub const AT_RISK: &str = "leasehold_at_risk";
/// `leasehold_store_clock_offset_seconds`
pub const STORE_CLOCK_OFFSET_SECONDS: &str = "leasehold_store_clock_offset_seconds";
/// `leader_election_master_status` (client-go's name; its one label is `name`).
pub const MASTER_STATUS: &str = "leader_election_master_status";

/// `leasehold_job_attempts_total` (leasehold-axum's `LeaderJobs`)
pub const JOB_ATTEMPTS: &str = "leasehold_job_attempts_total";
/// `leasehold_job_runs_total` (leasehold-axum's `LeaderJobs`)
pub const JOB_RUNS: &str = "leasehold_job_runs_total";
/// `leasehold_job_skips_total` (leasehold-axum's `LeaderJobs`)
pub const JOB_SKIPS: &str = "leasehold_job_skips_total";
/// `leasehold_job_period` (leasehold-axum's `LeaderJobs`)
pub const JOB_PERIOD: &str = "leasehold_job_period";
/// `leasehold_job_failures_total` (leasehold-axum's `LeaderJobs`)
pub const JOB_FAILURES: &str = "leasehold_job_failures_total";
/// `leasehold_job_duration_seconds` (leasehold-axum's `LeaderJobs`)
pub const JOB_DURATION_SECONDS: &str = "leasehold_job_duration_seconds";
/// `leasehold_job_shutdowns_total` (leasehold-axum's `LeaderJobs`)
pub const JOB_SHUTDOWNS: &str = "leasehold_job_shutdowns_total";
/// `leasehold_job_shutdown_seconds` (leasehold-axum's `LeaderJobs`)
pub const JOB_SHUTDOWN_SECONDS: &str = "leasehold_job_shutdown_seconds";

/// `leasehold_lock_state_ok` (`leasehold serve`)
pub const LOCK_STATE_OK: &str = "leasehold_lock_state_ok";
/// `leasehold_lock_slots` (`leasehold serve`)
pub const LOCK_SLOTS: &str = "leasehold_lock_slots";
/// `leasehold_lock_holders` (`leasehold serve`)
pub const LOCK_HOLDERS: &str = "leasehold_lock_holders";
/// `leasehold_lock_holder_info` (`leasehold serve`)
pub const LOCK_HOLDER_INFO: &str = "leasehold_lock_holder_info";
/// `leasehold_lock_fence` (`leasehold serve`)
pub const LOCK_FENCE: &str = "leasehold_lock_fence";
/// `leasehold_lock_expires_at_seconds` (`leasehold serve`)
pub const LOCK_EXPIRES_AT_SECONDS: &str = "leasehold_lock_expires_at_seconds";
/// `leasehold_lock_time_left_seconds` (`leasehold serve`)
pub const LOCK_TIME_LEFT_SECONDS: &str = "leasehold_lock_time_left_seconds";

/// `leasehold_job_start_timestamp_seconds` (`leasehold run --metrics-file`)
pub const RUN_START_TIMESTAMP_SECONDS: &str = "leasehold_job_start_timestamp_seconds";
/// `leasehold_job_last_run_timestamp_seconds` (`leasehold run --metrics-file`)
pub const RUN_LAST_RUN_TIMESTAMP_SECONDS: &str = "leasehold_job_last_run_timestamp_seconds";
/// `leasehold_job_last_success_timestamp_seconds` (`leasehold run --metrics-file`)
pub const RUN_LAST_SUCCESS_TIMESTAMP_SECONDS: &str = "leasehold_job_last_success_timestamp_seconds";
/// `leasehold_job_last_duration_seconds` (`leasehold run --metrics-file`)
pub const RUN_LAST_DURATION_SECONDS: &str = "leasehold_job_last_duration_seconds";
/// `leasehold_job_exit_code` (`leasehold run --metrics-file`)
pub const RUN_EXIT_CODE: &str = "leasehold_job_exit_code";
/// `leasehold_job_ran` (`leasehold run --metrics-file`)
pub const RUN_RAN: &str = "leasehold_job_ran";
/// `leasehold_job_skipped` (`leasehold run --metrics-file`)
pub const RUN_SKIPPED: &str = "leasehold_job_skipped";
/// `leasehold_job_fence` (`leasehold run --metrics-file`)
pub const RUN_FENCE: &str = "leasehold_job_fence";

/// `leasehold_dynamodb_request_seconds` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_REQUEST_SECONDS: &str = "leasehold_dynamodb_request_seconds";
/// `leasehold_dynamodb_throttles_total` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_THROTTLES: &str = "leasehold_dynamodb_throttles_total";
/// `leasehold_dynamodb_conditional_failures_total` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_CONDITIONAL_FAILURES: &str = "leasehold_dynamodb_conditional_failures_total";
/// `leasehold_dynamodb_consumed_capacity_units` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_CONSUMED_CAPACITY: &str = "leasehold_dynamodb_consumed_capacity_units";
/// `leasehold_dynamodb_stale_items` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_STALE_ITEMS: &str = "leasehold_dynamodb_stale_items";
/// `leasehold_dynamodb_stale_refreshes_total` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_STALE_REFRESHES: &str = "leasehold_dynamodb_stale_refreshes_total";
/// `leasehold_dynamodb_clock_skew_seconds` (leasehold-dynamodb's `DynamoDbStore`)
pub const DYNAMODB_CLOCK_SKEW_SECONDS: &str = "leasehold_dynamodb_clock_skew_seconds";

/// Buckets of `leasehold_acquire_seconds` (seconds). An uncontended acquisition is one store
/// round trip, a millisecond to a few tens of them; one that waited for a holder waits up to a
/// lease (15 s by default) or its `wait`; a `lead` campaign's follower may wait minutes.
pub const ACQUIRE_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0,
    300.0,
];

/// Buckets of `leasehold_action_seconds` and `leasehold_job_duration_seconds` (seconds): from
/// tens of milliseconds to two hours, with bounds at the usual leases (15 s, 30 s, 60 s) so that
/// actions that outlast the lease (a concern with `auto_extend` off) stand out.
pub const ACTION_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0, 7200.0,
];

/// Buckets of `leasehold_renewal_margin_seconds` (seconds). A healthy renewal answers with about
/// 0.57 × the lease left (8.5 s of the default 15 s lease, 17 s of 30 s, 34 s of 60 s); the
/// danger is near 0, so the low end is fine-grained (5 ms to 1 s) and the alert thresholds of
/// the manual (1 s, 2.5 s, 5 s) are bucket bounds. Margins above a minute (leases over
/// 100 s) all count as healthy.
pub const MARGIN_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0,
];

/// Buckets of `leasehold_job_shutdown_seconds` (seconds): a job stops within its grace period
/// (5 s by default) and a release's settling (at most 10 s), so 5 ms to a minute.
pub const SHUTDOWN_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0,
];

/// Buckets of `leasehold_dynamodb_request_seconds` (seconds): a DynamoDB request answers in a
/// few milliseconds inside a region; with the SDK's retries (3 attempts of at most 3 s each by
/// default, with back-off) one can take about ten seconds before it fails.
pub const DYNAMODB_REQUEST_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Buckets of `leasehold_dynamodb_consumed_capacity_units` (capacity units per request): a lease
/// write or a consistent read of a lease item costs 1 unit (an eventually consistent read 0.5);
/// a group's `BatchGetItem` up to 100, a page of a `Scan` of 1 000 items about 30 to 60.
pub const DYNAMODB_CAPACITY_BUCKETS: &[f64] =
    &[0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0];

/// What kind of Prometheus metric a family is (its `# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// Only goes up (`_total`); reset when the process restarts.
    Counter,
    /// A value that goes up and down, or a 0/1 state.
    Gauge,
    /// Observations counted into cumulative buckets (`_bucket{le}`, `_sum`, `_count`), which
    /// Prometheus can add up across replicas.
    Histogram,
}

impl Kind {
    /// The word of the `# TYPE` line: `counter`, `gauge` or `histogram`.
    ///
    /// ```
    /// assert_eq!(leasehold::metrics::Kind::Histogram.as_str(), "histogram");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// Who records a family, and so where it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// The core's elections ([`Elector`](crate::Elector) and everything built on it), through
    /// the `metrics` facade: any recorder, for example leasehold-axum's `/metrics`.
    Elector,
    /// leasehold-axum's `LeaderJobs`, through the `metrics` facade, beside the core's.
    Jobs,
    /// `leasehold serve`'s `/metrics`: the holders of its locks, read from the store at each
    /// scrape.
    Holders,
    /// `leasehold run --metrics-file`: the outcome of the last run, for node_exporter's textfile
    /// collector.
    RunFile,
    /// leasehold-dynamodb's `DynamoDbStore`: its requests to DynamoDB (latency, throttles,
    /// conditional failures, consumed capacity), its clock skew estimate and its stale-item
    /// count, through the `metrics` facade.
    DynamoDb,
}

/// One metric family: everything an exporter needs to write its `# HELP` and `# TYPE` lines and,
/// for a histogram, its buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Family {
    /// The metric name (for a histogram, the name before `_bucket`, `_sum` and `_count`).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// The labels of its series (besides a histogram's `le`).
    pub labels: &'static [&'static str],
    /// The unit, in the OpenMetrics spelling (`seconds`), if the value has one.
    pub unit: Option<&'static str>,
    /// The `# HELP` text: one line, no backslash.
    pub help: &'static str,
    /// The bucket bounds of a histogram, ascending (`+Inf` is implied); empty for the others.
    pub buckets: &'static [f64],
    /// Who records it.
    pub source: Source,
}

impl Family {
    const fn new(
        source: Source,
        name: &'static str,
        kind: Kind,
        labels: &'static [&'static str],
        help: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            labels,
            unit: None,
            help,
            buckets: &[],
            source,
        }
    }

    const fn seconds(mut self) -> Self {
        self.unit = Some("seconds");
        self
    }

    const fn buckets(mut self, buckets: &'static [f64]) -> Self {
        self.buckets = buckets;
        self
    }
}

const LOCK: &[&str] = &["lock"];
const LOCK_REASON: &[&str] = &["lock", "reason"];
const LOCK_SLOT: &[&str] = &["lock", "slot"];
const JOB: &[&str] = &["job"];
const JOB_REASON: &[&str] = &["job", "reason"];

use Kind::{Counter, Gauge, Histogram};
use Source::{DynamoDb, Elector, Holders, Jobs, RunFile};

/// Every metric family leasehold exports, grouped by [`Source`] in the order the manual lists
/// them.
///
/// ```
/// use leasehold::metrics::{self, Kind};
/// let margin = metrics::family(metrics::RENEWAL_MARGIN_SECONDS).expect("registered");
/// assert_eq!(margin.kind, Kind::Histogram);
/// assert_eq!(margin.buckets, metrics::MARGIN_BUCKETS);
/// assert!(metrics::FAMILIES.iter().all(|f| !f.help.is_empty()));
/// ```
pub const FAMILIES: &[Family] = &[
    Family::new(Elector, ATTEMPTS, Counter, LOCK, "Elections started for the lock."),
    Family::new(Elector, ACQUIRED, Counter, LOCK, "Leases of the lock acquired."),
    Family::new(
        Elector,
        NOT_ACQUIRED,
        Counter,
        LOCK_REASON,
        "Elections that did not acquire the lock, by reason: contention (held elsewhere), already_ran (the period ledger refused), error (the store failed).",
    ),
    Family::new(
        Elector,
        ACQUIRE_SECONDS,
        Histogram,
        LOCK,
        "Time from the first attempt of an election to the lease, for elections that acquired.",
    )
    .seconds()
    .buckets(ACQUIRE_BUCKETS),
    Family::new(
        Elector,
        ACTION_SECONDS,
        Histogram,
        LOCK,
        "Time the action ran under the lease (for lead, each term).",
    )
    .seconds()
    .buckets(ACTION_BUCKETS),
    Family::new(
        Elector,
        ACTION_FAILURES,
        Counter,
        LOCK,
        "Actions that returned an error or panicked (for lead, terms whose action panicked).",
    ),
    Family::new(
        Elector,
        ACTIVE,
        Gauge,
        LOCK,
        "Leases of the lock held by this process, until released (also after a loss).",
    ),
    Family::new(
        Elector,
        EXTENDED,
        Counter,
        LOCK,
        "Successful renewals (watchdog or extend).",
    ),
    Family::new(
        Elector,
        LOST,
        Counter,
        LOCK_REASON,
        "Leases lost while held, by reason: not_held (the store no longer had it), deadline (no renewal before the local deadline), store_failed.",
    ),
    Family::new(
        Elector,
        RELEASED,
        Counter,
        LOCK,
        "Releases attempted, including those that found the lease gone or failed.",
    ),
    Family::new(
        Elector,
        RENEWAL_MARGIN_SECONDS,
        Histogram,
        LOCK,
        "Time left to the local deadline when a renewal succeeded; near 0, a slow store nearly cost the lease. No series until the first renewal.",
    )
    .seconds()
    .buckets(MARGIN_BUCKETS),
    Family::new(
        Elector,
        RENEWAL_AT_RISK,
        Counter,
        LOCK,
        "Runs of failed renewals: one per RenewalFailing event, the warning before a loss.",
    ),
    Family::new(
        Elector,
        AT_RISK,
        Gauge,
        LOCK,
        "1 while a lease of the lock held by this process has failing renewals, else 0.",
    ),
    Family::new(
        Elector,
        STORE_CLOCK_OFFSET_SECONDS,
        Gauge,
        LOCK,
        "The store's clock minus this host's, estimated at the last renewal; only for stores with a clock of their own.",
    )
    .seconds(),
    Family::new(
        Elector,
        MASTER_STATUS,
        Gauge,
        &["name"],
        "1 while this process leads the lock (holds a lease of it that is neither lost nor released), else 0; name is the lock.",
    ),
    Family::new(
        Jobs,
        JOB_ATTEMPTS,
        Counter,
        JOB,
        "Attempts at the job's lock (about one per period and node).",
    ),
    Family::new(
        Jobs,
        JOB_RUNS,
        Counter,
        JOB,
        "Attempts where this node was elected and ran the job's action.",
    ),
    Family::new(
        Jobs,
        JOB_SKIPS,
        Counter,
        JOB_REASON,
        "Attempts that did not run the job, by reason: already_ran (the period ran elsewhere), contention (another node held the lock), store_error.",
    ),
    Family::new(
        Jobs,
        JOB_PERIOD,
        Gauge,
        JOB,
        "The last period this node ran the job for (the period id on the store's clock).",
    ),
    Family::new(
        Jobs,
        JOB_FAILURES,
        Counter,
        JOB_REASON,
        "Job actions that did not succeed, by reason: error, panic, cancelled (at shutdown), lost (the lease, while running).",
    ),
    Family::new(
        Jobs,
        JOB_DURATION_SECONDS,
        Histogram,
        JOB,
        "How long each run of the job's action took.",
    )
    .seconds()
    .buckets(ACTION_BUCKETS),
    Family::new(
        Jobs,
        JOB_SHUTDOWNS,
        Counter,
        &["job", "outcome"],
        "Jobs stopped at shutdown, by outcome: clean, or cancelled (the grace period ran out).",
    ),
    Family::new(
        Jobs,
        JOB_SHUTDOWN_SECONDS,
        Histogram,
        JOB,
        "Time from the shutdown signal to the job having stopped and released its lease.",
    )
    .seconds()
    .buckets(SHUTDOWN_BUCKETS),
    Family::new(
        Holders,
        LOCK_STATE_OK,
        Gauge,
        LOCK,
        "1 when the store answered for the lock at this scrape, 0 when reading it failed.",
    ),
    Family::new(
        Holders,
        LOCK_SLOTS,
        Gauge,
        LOCK,
        "The slots of the lock looked at (--slots).",
    ),
    Family::new(
        Holders,
        LOCK_HOLDERS,
        Gauge,
        LOCK,
        "Live holders of the lock at this scrape.",
    ),
    Family::new(
        Holders,
        LOCK_HOLDER_INFO,
        Gauge,
        &["lock", "slot", "owner"],
        "1 per live holder, naming its owner (node id).",
    ),
    Family::new(
        Holders,
        LOCK_FENCE,
        Gauge,
        LOCK_SLOT,
        "The fence of the holder's lease.",
    ),
    Family::new(
        Holders,
        LOCK_EXPIRES_AT_SECONDS,
        Gauge,
        LOCK_SLOT,
        "When the holder's lease ends unless renewed (Unix time, the store's clock).",
    )
    .seconds(),
    Family::new(
        Holders,
        LOCK_TIME_LEFT_SECONDS,
        Gauge,
        LOCK_SLOT,
        "The time left on the holder's lease by this machine's clock.",
    )
    .seconds(),
    Family::new(
        RunFile,
        RUN_START_TIMESTAMP_SECONDS,
        Gauge,
        LOCK,
        "When this run of leasehold run started (Unix time).",
    )
    .seconds(),
    Family::new(
        RunFile,
        RUN_LAST_RUN_TIMESTAMP_SECONDS,
        Gauge,
        LOCK,
        "When the last run of leasehold run ended, whether it ran the command, skipped or failed (Unix time).",
    )
    .seconds(),
    Family::new(
        RunFile,
        RUN_LAST_SUCCESS_TIMESTAMP_SECONDS,
        Gauge,
        LOCK,
        "When this node last ran the command to exit code 0 (Unix time); kept across skips and failures.",
    )
    .seconds(),
    Family::new(
        RunFile,
        RUN_LAST_DURATION_SECONDS,
        Gauge,
        LOCK,
        "How long the last run of leasehold run took, waiting for the lock included.",
    )
    .seconds(),
    Family::new(
        RunFile,
        RUN_EXIT_CODE,
        Gauge,
        LOCK,
        "The exit code of the last run of leasehold run.",
    ),
    Family::new(
        RunFile,
        RUN_RAN,
        Gauge,
        LOCK,
        "1 if the last run started the command on this node, else 0.",
    ),
    Family::new(
        RunFile,
        RUN_SKIPPED,
        Gauge,
        LOCK,
        "1 if the last run skipped the command: the lock was held elsewhere or the period had already run.",
    ),
    Family::new(
        RunFile,
        RUN_FENCE,
        Gauge,
        LOCK,
        "The fence of the lease the last run acquired (absent if it acquired none).",
    ),
    Family::new(
        DynamoDb,
        DYNAMODB_REQUEST_SECONDS,
        Histogram,
        &["operation", "outcome"],
        "Time of one DynamoDB request of the store, SDK retries included, by operation and outcome: ok, conditional_failed (contention or not held), throttled, error.",
    )
    .seconds()
    .buckets(DYNAMODB_REQUEST_BUCKETS),
    Family::new(
        DynamoDb,
        DYNAMODB_THROTTLES,
        Counter,
        &["operation"],
        "Attempts DynamoDB throttled (ProvisionedThroughputExceeded, RequestLimitExceeded, ThrottlingException), counting those the SDK retried.",
    ),
    Family::new(
        DynamoDb,
        DYNAMODB_CONDITIONAL_FAILURES,
        Counter,
        &["operation"],
        "Requests whose condition failed: contention on acquire, a lease no longer held on extend or release; normal, not errors.",
    ),
    Family::new(
        DynamoDb,
        DYNAMODB_CONSUMED_CAPACITY,
        Histogram,
        &["operation", "kind"],
        "Capacity units DynamoDB reported a successful request consumed, by operation and kind (read or write); the sum is the units used.",
    )
    .buckets(DYNAMODB_CAPACITY_BUCKETS),
    Family::new(
        DynamoDb,
        DYNAMODB_STALE_ITEMS,
        Gauge,
        &["state"],
        "Lease items that hold no lease but are still in the table (state expired), and those of them past their ttl (state past_ttl), at the last refresh.",
    ),
    Family::new(
        DynamoDb,
        DYNAMODB_STALE_REFRESHES,
        Counter,
        &["outcome"],
        "Refreshes of the stale-item count, by outcome: ok, truncated (stopped at the page cap, a lower bound), error.",
    ),
    Family::new(
        DynamoDb,
        DYNAMODB_CLOCK_SKEW_SECONDS,
        Gauge,
        &["bound"],
        "DynamoDB's clock minus this host's, from the Date headers of its answers: lower and upper bounds and their midpoint (bound estimate).",
    )
    .seconds(),
];

/// The family named `name`, if leasehold exports one.
///
/// ```
/// assert!(leasehold::metrics::family("leasehold_lost_total").is_some());
/// assert!(leasehold::metrics::family("leasehold_lost").is_none());
/// ```
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

/// The families recorded by `source`, in the table's order.
///
/// ```
/// use leasehold::metrics::{Source, families_of};
/// assert!(families_of(Source::Elector).any(|f| f.name == "leader_election_master_status"));
/// ```
pub fn families_of(source: Source) -> impl Iterator<Item = &'static Family> {
    FAMILIES.iter().filter(move |f| f.source == source)
}

/// Describes every family of `source` (its help text and unit) to the `metrics` recorder in
/// effect, which writes them as `# HELP` lines. A recorder shows a description only for a
/// family that has series, so describing creates none. The core describes its own
/// ([`Source::Elector`]) when it registers a lock's metrics; leasehold-axum's
/// `PrometheusMetrics` describes those and the jobs' when it is installed.
///
/// ```
/// use leasehold::metrics::{self as m, Source};
/// use metrics_util::debugging::DebuggingRecorder;
///
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, || {
///     m::describe(Source::Elector);
///     metrics::counter!(m::LOST, "lock" => "a", "reason" => "deadline").increment(1);
/// });
/// let seen = snapshotter.snapshot().into_vec();
/// assert_eq!(seen.len(), 1, "described, but only what was recorded has a series");
/// let (key, _unit, help, _value) = &seen[0];
/// assert_eq!(key.key().name(), m::LOST);
/// assert_eq!(help.as_deref(), Some(m::family(m::LOST).unwrap().help));
/// ```
pub fn describe(source: Source) {
    for f in families_of(source) {
        let unit = match f.unit {
            Some("seconds") => Some(Unit::Seconds),
            _ => None,
        };
        match f.kind {
            Kind::Counter => describe_counter!(f.name, f.help),
            Kind::Gauge => match unit {
                Some(unit) => describe_gauge!(f.name, unit, f.help),
                None => describe_gauge!(f.name, f.help),
            },
            Kind::Histogram => match unit {
                Some(unit) => describe_histogram!(f.name, unit, f.help),
                None => describe_histogram!(f.name, f.help),
            },
        }
    }
}
