//! The store's own operations metrics, through the `metrics` facade (as the core's elections):
//! what each DynamoDB request cost and how it ended, DynamoDB's clock against this host's, and
//! the stale items left in the table.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `leasehold_dynamodb_request_seconds` | histogram | `operation`, `outcome` | time of one request, the SDK's retries included |
//! | `leasehold_dynamodb_throttles_total` | counter | `operation` | attempts DynamoDB throttled, those the SDK retried included |
//! | `leasehold_dynamodb_conditional_failures_total` | counter | `operation` | requests whose condition failed (contention, not held): normal, not errors |
//! | `leasehold_dynamodb_consumed_capacity_units` | histogram | `operation`, `kind` | capacity units DynamoDB reported per successful request |
//! | `leasehold_dynamodb_stale_items` | gauge | `state` = `expired` \| `past_ttl` | the stale-item count at the last refresh |
//! | `leasehold_dynamodb_stale_refreshes_total` | counter | `outcome` = `ok` \| `truncated` \| `error` | refreshes of that count |
//! | `leasehold_dynamodb_clock_skew_seconds` | gauge | `bound` = `lower` \| `estimate` \| `upper` | DynamoDB's clock minus this host's |
//!
//! Every label value comes from a fixed set: `operation` from [`Operation`], `outcome` of a
//! request from [`Outcome`], `kind` is `read` or `write` ([`Operation::capacity_kind`]). No
//! label carries a lock, key, table or prefix, so the series stay few whatever the
//! application does. The families are in the core's registry
//! ([`leasehold::metrics::FAMILIES`], source [`DynamoDb`](leasehold::metrics::Source::DynamoDb)),
//! with their help texts and buckets.
//!
//! **When series appear.** A store registers its counters of requests (throttles for every
//! operation, conditional failures for the conditional writes) when it is created, at 0, with
//! the recorder in effect then: install the recorder first. The histograms, the gauges and the
//! refresh counters have no reading before their first observation and appear with it. Series
//! are per process, not per store: several stores in one process add up into the same counters
//! and histograms, and the last one to observe sets a gauge.
//!
//! **Throttles** are counted per attempt from inside the SDK's retry loop, so a request the SDK
//! retried into success still counts the throttled attempts; a request whose last attempt was
//! throttled also ends with outcome `throttled`. **Consumed capacity** is asked for on every
//! request (`ReturnConsumedCapacity = TOTAL`) and observed when DynamoDB answers with it: a
//! failed request (a failed condition included) reports none, although DynamoDB charges a
//! conditional write that fails like one that succeeds (1 write unit for a lease item).
//!
//! **Clock skew.** DynamoDB conditions have no clock, so the store judges leases with the
//! clients' clocks and a [tolerance](crate::DynamoDbOptions::clock_skew_tolerance). The skew it
//! measures is DynamoDB's clock (which AWS keeps on Amazon Time Sync) minus this host's, from the
//! `Date` header of every answer. The header has whole seconds, so one answer only says that
//! the skew lies between `date − received` and `date + 1 s − sent`; the store keeps the
//! intersection of those intervals over its last [`SKEW_SAMPLES`] answers (starting again from
//! the newest answer when they stop overlapping, as after a clock step), whose bounds and
//! midpoint are the gauge's `lower`, `upper` and `estimate`. Answers at different fractions of a
//! second narrow it to a round trip or so. Two hosts whose skews to DynamoDB are each within
//! half the tolerance are within the tolerance of each other.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::batch_get_item::{BatchGetItemError, BatchGetItemOutput};
use aws_sdk_dynamodb::operation::get_item::{GetItemError, GetItemOutput};
use aws_sdk_dynamodb::operation::scan::{ScanError, ScanOutput};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::primitives::{DateTime, DateTimeFormat};
use leasehold::metrics::{
    DYNAMODB_CLOCK_SKEW_SECONDS, DYNAMODB_CONDITIONAL_FAILURES, DYNAMODB_CONSUMED_CAPACITY,
    DYNAMODB_REQUEST_SECONDS, DYNAMODB_STALE_ITEMS, DYNAMODB_STALE_REFRESHES, DYNAMODB_THROTTLES,
    Source,
};
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use crate::protocol::stale::StaleCount;

/// How many answers the clock skew estimate keeps (see the module docs).
pub const SKEW_SAMPLES: usize = 64;

/// What the store asked DynamoDB for: the `operation` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// The conditional `UpdateItem` of an acquisition attempt (a period claim too).
    Acquire,
    /// The conditional `UpdateItem` of a renewal.
    Extend,
    /// The conditional `UpdateItem` of a release (freeing, or shortening to a minimum lease).
    Release,
    /// The conditional `UpdateItem` marking a period claim started.
    StartPeriod,
    /// The conditional `UpdateItem` clearing the period ledger.
    ClearLedger,
    /// The conditional `UpdateItem` of a forced release, per held slot.
    ForceRelease,
    /// A consistent `GetItem` (state, the ledger's record, a group of one, `check`).
    Read,
    /// A consistent `BatchGetItem` of a group's slots.
    ReadBatch,
    /// A `Scan` page of `list_locks`.
    List,
    /// A `Scan` page of a stale-item count.
    StaleCount,
    /// The conditional `UpdateItem` creating a session item (once per session).
    OpenSession,
    /// The conditional `UpdateItem` renewing a session: one per session per beat, for all its
    /// leases.
    RenewSession,
    /// The conditional `UpdateItem` of a forced release revoking a token in its session item.
    Revoke,
}

impl Operation {
    /// Every operation, in label order.
    pub const ALL: [Self; 13] = [
        Self::Acquire,
        Self::Extend,
        Self::Release,
        Self::StartPeriod,
        Self::ClearLedger,
        Self::ForceRelease,
        Self::Read,
        Self::ReadBatch,
        Self::List,
        Self::StaleCount,
        Self::OpenSession,
        Self::RenewSession,
        Self::Revoke,
    ];

    /// The label value.
    ///
    /// ```
    /// use leasehold_dynamodb::metrics::Operation;
    /// assert_eq!(Operation::StartPeriod.as_str(), "start_period");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Extend => "extend",
            Self::Release => "release",
            Self::StartPeriod => "start_period",
            Self::ClearLedger => "clear_ledger",
            Self::ForceRelease => "force_release",
            Self::Read => "read",
            Self::ReadBatch => "read_batch",
            Self::List => "list",
            Self::StaleCount => "stale_count",
            Self::OpenSession => "open_session",
            Self::RenewSession => "renew_session",
            Self::Revoke => "revoke",
        }
    }

    /// The capacity the operation consumes, the `kind` label of the consumed capacity: `write`
    /// for the conditional writes, `read` for reads and scans.
    ///
    /// ```
    /// use leasehold_dynamodb::metrics::Operation;
    /// assert_eq!(Operation::Extend.capacity_kind(), "write");
    /// assert_eq!(Operation::ReadBatch.capacity_kind(), "read");
    /// ```
    pub fn capacity_kind(self) -> &'static str {
        if self.is_conditional() {
            "write"
        } else {
            "read"
        }
    }

    /// Whether the operation is a conditional write, whose condition can fail (and is counted
    /// in `leasehold_dynamodb_conditional_failures_total`).
    ///
    /// ```
    /// use leasehold_dynamodb::metrics::Operation;
    /// assert!(Operation::Acquire.is_conditional());
    /// assert!(!Operation::List.is_conditional());
    /// ```
    pub fn is_conditional(self) -> bool {
        matches!(
            self,
            Self::Acquire
                | Self::Extend
                | Self::Release
                | Self::StartPeriod
                | Self::ClearLedger
                | Self::ForceRelease
                | Self::OpenSession
                | Self::RenewSession
                | Self::Revoke
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a request ended: the `outcome` label of `leasehold_dynamodb_request_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// DynamoDB applied it (or answered the read).
    Ok,
    /// The condition failed: contention on an acquisition, a lease no longer held on a renewal
    /// or release. Normal, not an error.
    ConditionalFailed,
    /// Throttled on its last attempt (see [`is_throttling_code`]).
    Throttled,
    /// Any other failure: server or network errors, timeouts, access or validation errors.
    Error,
}

impl Outcome {
    /// Every outcome, in label order.
    pub const ALL: [Self; 4] = [
        Self::Ok,
        Self::ConditionalFailed,
        Self::Throttled,
        Self::Error,
    ];

    /// The label value.
    ///
    /// ```
    /// use leasehold_dynamodb::metrics::Outcome;
    /// assert_eq!(Outcome::ConditionalFailed.as_str(), "conditional_failed");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ConditionalFailed => "conditional_failed",
            Self::Throttled => "throttled",
            Self::Error => "error",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Error codes of throttling: DynamoDB refusing a request for the table's or account's
/// throughput, or the SDK's and AWS's generic throttling codes.
const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "RequestLimitExceededException",
    "ThrottlingException",
    "Throttling",
    "ThrottledException",
    "TooManyRequestsException",
];

/// Whether a DynamoDB error code is throttling (`ProvisionedThroughputExceededException`,
/// `RequestLimitExceeded`, `ThrottlingException` and the like). Throttling is a transient
/// error ([`classify_code`](crate::classify_code)), retried by the SDK with the store's
/// back-off.
///
/// ```
/// use leasehold_dynamodb::metrics::is_throttling_code;
/// assert!(is_throttling_code("ProvisionedThroughputExceededException"));
/// assert!(is_throttling_code("ThrottlingException"));
/// assert!(!is_throttling_code("ConditionalCheckFailedException"));
/// assert!(!is_throttling_code("InternalServerError"));
/// ```
pub fn is_throttling_code(code: &str) -> bool {
    THROTTLING_CODES.contains(&code)
}

/// The code meaning a failed condition.
const CONDITIONAL_CODE: &str = "ConditionalCheckFailedException";

/// The outcome of a request that failed with `err`: a service error is a failed condition,
/// throttling or another error by its code; every other failure (timeout, network, a response
/// that could not be read) is an error.
///
/// ```
/// use aws_sdk_dynamodb::error::{ErrorMetadata, SdkError};
/// use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
/// use aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException;
/// use leasehold_dynamodb::metrics::{Outcome, outcome_of};
///
/// // As the SDK reads it from DynamoDB's answer: the code is in the error's metadata.
/// let code = "ProvisionedThroughputExceededException";
/// let throttled = UpdateItemError::ProvisionedThroughputExceededException(
///     ProvisionedThroughputExceededException::builder()
///         .message("slow down")
///         .meta(ErrorMetadata::builder().code(code).build())
///         .build(),
/// );
/// let err: SdkError<UpdateItemError, ()> = SdkError::service_error(throttled, ());
/// assert_eq!(outcome_of(&err), Outcome::Throttled);
/// ```
pub fn outcome_of<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Outcome {
    match err {
        SdkError::ServiceError(service) => outcome_of_code(service.err().code()),
        _ => Outcome::Error,
    }
}

/// The outcome of a service error with `code`.
fn outcome_of_code(code: Option<&str>) -> Outcome {
    match code {
        Some(CONDITIONAL_CODE) => Outcome::ConditionalFailed,
        Some(code) if is_throttling_code(code) => Outcome::Throttled,
        _ => Outcome::Error,
    }
}

/// The capacity a successful answer reports, if it reports any.
pub(crate) trait Consumed {
    /// The capacity units of the answer, `None` when it has none.
    fn consumed_units(&self) -> Option<f64>;
}

impl Consumed for UpdateItemOutput {
    fn consumed_units(&self) -> Option<f64> {
        self.consumed_capacity().and_then(|c| c.capacity_units())
    }
}

impl Consumed for GetItemOutput {
    fn consumed_units(&self) -> Option<f64> {
        self.consumed_capacity().and_then(|c| c.capacity_units())
    }
}

impl Consumed for ScanOutput {
    fn consumed_units(&self) -> Option<f64> {
        self.consumed_capacity().and_then(|c| c.capacity_units())
    }
}

impl Consumed for BatchGetItemOutput {
    /// One entry per table; the store reads one.
    fn consumed_units(&self) -> Option<f64> {
        let units: Vec<f64> = self
            .consumed_capacity()
            .iter()
            .filter_map(|c| c.capacity_units())
            .collect();
        (!units.is_empty()).then(|| units.iter().sum())
    }
}

/// The metric handles of a store (and of its stale-item refresher), shared by the per-request
/// probes.
pub(crate) struct StoreMetrics {
    /// Per operation, registered at creation.
    throttles: [Counter; Operation::ALL.len()],
    /// Per operation; a no-op handle for the operations without a condition.
    conditional: [Counter; Operation::ALL.len()],
    /// Per operation and outcome, registered at the first observation.
    latency: [[OnceLock<Histogram>; Outcome::ALL.len()]; Operation::ALL.len()],
    /// Per operation, registered at the first observation.
    capacity: [OnceLock<Histogram>; Operation::ALL.len()],
    /// `expired`, `past_ttl`: registered at the first refresh.
    stale: OnceLock<[Gauge; 2]>,
    /// `ok`, `truncated`, `error`: registered at the first refresh.
    refreshes: OnceLock<[Counter; 3]>,
    /// `lower`, `estimate`, `upper`: registered at the first answer with a `Date`.
    skew: OnceLock<[Gauge; 3]>,
    window: Mutex<SkewWindow>,
}

impl std::fmt::Debug for StoreMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreMetrics").finish_non_exhaustive()
    }
}

impl StoreMetrics {
    /// Describes the families and registers the counters, with the recorder in effect.
    pub(crate) fn register() -> Arc<Self> {
        leasehold::metrics::describe(Source::DynamoDb);
        Arc::new(Self {
            throttles: Operation::ALL
                .map(|op| counter!(DYNAMODB_THROTTLES, "operation" => op.as_str())),
            conditional: Operation::ALL.map(|op| {
                if op.is_conditional() {
                    counter!(DYNAMODB_CONDITIONAL_FAILURES, "operation" => op.as_str())
                } else {
                    Counter::noop()
                }
            }),
            latency: Default::default(),
            capacity: Default::default(),
            stale: OnceLock::new(),
            refreshes: OnceLock::new(),
            skew: OnceLock::new(),
            window: Mutex::new(SkewWindow::default()),
        })
    }

    /// The interceptor that watches the attempts of one request of `operation`.
    pub(crate) fn probe(self: &Arc<Self>, operation: Operation) -> AttemptProbe {
        AttemptProbe {
            operation,
            metrics: Arc::clone(self),
            sent: Mutex::new(None),
        }
    }

    /// Records a request of `operation` that took `took` and ended with `result`.
    pub(crate) fn finished<T: Consumed, E: ProvideErrorMetadata, R>(
        &self,
        operation: Operation,
        took: Duration,
        result: &Result<T, SdkError<E, R>>,
    ) {
        let outcome = match result {
            Ok(output) => {
                if let Some(units) = output.consumed_units() {
                    self.capacity[operation.index()]
                        .get_or_init(|| {
                            histogram!(
                                DYNAMODB_CONSUMED_CAPACITY,
                                "operation" => operation.as_str(),
                                "kind" => operation.capacity_kind()
                            )
                        })
                        .record(units);
                }
                Outcome::Ok
            }
            Err(err) => outcome_of(err),
        };
        if outcome == Outcome::ConditionalFailed {
            self.conditional[operation.index()].increment(1);
        }
        self.latency[operation.index()][outcome.index()]
            .get_or_init(|| {
                histogram!(
                    DYNAMODB_REQUEST_SECONDS,
                    "operation" => operation.as_str(),
                    "outcome" => outcome.as_str()
                )
            })
            .record(took.as_secs_f64());
    }

    /// One throttled attempt of `operation`.
    fn throttled(&self, operation: Operation) {
        self.throttles[operation.index()].increment(1);
    }

    /// One answer dated `date` (whole seconds, DynamoDB's clock) to an attempt sent at `sent`
    /// and answered at `received` (this host's clock).
    fn dated(&self, date: SystemTime, sent: SystemTime, received: SystemTime) {
        let seconds = |t: SystemTime| match t.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        let (date, sent, received) = (seconds(date), seconds(sent), seconds(received));
        let sample = (date - received, date + 1.0 - sent);
        let (lower, upper) = self
            .window
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(sample);
        let gauges = self.skew.get_or_init(|| {
            ["lower", "estimate", "upper"]
                .map(|bound| gauge!(DYNAMODB_CLOCK_SKEW_SECONDS, "bound" => bound))
        });
        gauges[0].set(lower);
        gauges[1].set((lower + upper) / 2.0);
        gauges[2].set(upper);
    }

    /// The result of one refresh of the stale-item count.
    pub(crate) fn stale_refreshed(&self, counted: Option<&StaleCount>) {
        let refreshes = self.refreshes.get_or_init(|| {
            ["ok", "truncated", "error"]
                .map(|outcome| counter!(DYNAMODB_STALE_REFRESHES, "outcome" => outcome))
        });
        let Some(count) = counted else {
            refreshes[2].increment(1);
            return;
        };
        refreshes[usize::from(count.truncated)].increment(1);
        let gauges = self.stale.get_or_init(|| {
            ["expired", "past_ttl"].map(|state| gauge!(DYNAMODB_STALE_ITEMS, "state" => state))
        });
        // Gauges are f64: exact up to 2^53 items.
        #[allow(clippy::cast_precision_loss)]
        {
            gauges[0].set(count.expired as f64);
            gauges[1].set(count.past_ttl as f64);
        }
    }
}

/// The skew intervals of the last [`SKEW_SAMPLES`] answers, all overlapping.
#[derive(Debug, Default)]
struct SkewWindow {
    samples: VecDeque<(f64, f64)>,
}

impl SkewWindow {
    /// Adds the interval `(lower, upper)` of one answer and returns the intersection of the
    /// window: the newest interval alone when it does not overlap the others' intersection.
    fn add(&mut self, sample: (f64, f64)) -> (f64, f64) {
        let (lower, upper) = self.intersection().unwrap_or(sample);
        if sample.0 > upper || sample.1 < lower {
            self.samples.clear();
        }
        if self.samples.len() == SKEW_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        self.intersection().unwrap_or(sample)
    }

    fn intersection(&self) -> Option<(f64, f64)> {
        let mut samples = self.samples.iter().copied();
        let first = samples.next()?;
        Some(samples.fold(first, |(l, u), (sl, su)| (l.max(sl), u.min(su))))
    }
}

/// A per-request SDK interceptor: notes when each attempt is sent, counts throttled attempts
/// and feeds the `Date` of each answer to the skew estimate.
#[derive(Debug)]
pub(crate) struct AttemptProbe {
    operation: Operation,
    metrics: Arc<StoreMetrics>,
    /// When the current attempt was sent, by this host's clock.
    sent: Mutex<Option<SystemTime>>,
}

impl Intercept for AttemptProbe {
    fn name(&self) -> &'static str {
        "leasehold-dynamodb-metrics"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        *self.sent.lock().unwrap_or_else(|p| p.into_inner()) = Some(SystemTime::now());
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let received = SystemTime::now();
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner()).take();
        let date = context
            .response()
            .and_then(|r| r.headers().get("date"))
            .and_then(|d| DateTime::from_str(d, DateTimeFormat::HttpDate).ok())
            .and_then(|d| SystemTime::try_from(d).ok());
        if let (Some(date), Some(sent)) = (date, sent) {
            self.metrics.dated(date, sent, received);
        }
        if let Some(Err(err)) = context.output_or_error()
            && let Some(err) = err.as_operation_error()
        {
            let code = err
                .downcast_ref::<UpdateItemError>()
                .map(|e| e.code())
                .or_else(|| err.downcast_ref::<GetItemError>().map(|e| e.code()))
                .or_else(|| err.downcast_ref::<BatchGetItemError>().map(|e| e.code()))
                .or_else(|| err.downcast_ref::<ScanError>().map(|e| e.code()))
                .flatten();
            if outcome_of_code(code) == Outcome::Throttled {
                self.metrics.throttled(self.operation);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::operation::scan::ScanError;
    use aws_sdk_dynamodb::types::error::{
        ConditionalCheckFailedException, InternalServerError,
        ProvisionedThroughputExceededException, RequestLimitExceeded, ThrottlingException,
    };

    use super::*;

    fn service<E>(err: E) -> SdkError<E, ()> {
        SdkError::service_error(err, ())
    }

    /// The metadata the SDK's deserializer gives a service error: its code and message.
    fn meta(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder()
            .code(code)
            .message("from the test")
            .build()
    }

    #[test]
    fn throttling_is_told_from_failed_conditions_and_other_errors() {
        let throttled = [
            UpdateItemError::ProvisionedThroughputExceededException(
                ProvisionedThroughputExceededException::builder()
                    .message("table capacity")
                    .meta(meta("ProvisionedThroughputExceededException"))
                    .build(),
            ),
            UpdateItemError::RequestLimitExceeded(
                RequestLimitExceeded::builder()
                    .message("account limit")
                    .meta(meta("RequestLimitExceeded"))
                    .build(),
            ),
            UpdateItemError::ThrottlingException(
                ThrottlingException::builder()
                    .message("slow down")
                    .meta(meta("ThrottlingException"))
                    .build(),
            ),
            UpdateItemError::generic(meta("Throttling")),
            UpdateItemError::generic(meta("TooManyRequestsException")),
        ];
        for err in throttled {
            let code = err.code().map(str::to_owned);
            assert_eq!(outcome_of(&service(err)), Outcome::Throttled, "{code:?}");
        }
        let conditional = UpdateItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .message("held")
                .meta(meta("ConditionalCheckFailedException"))
                .build(),
        );
        assert_eq!(
            outcome_of(&service(conditional)),
            Outcome::ConditionalFailed
        );
        let internal = UpdateItemError::InternalServerError(
            InternalServerError::builder()
                .message("oops")
                .meta(meta("InternalServerError"))
                .build(),
        );
        assert_eq!(outcome_of(&service(internal)), Outcome::Error);
        let denied = ScanError::generic(meta("AccessDeniedException"));
        assert_eq!(outcome_of(&service(denied)), Outcome::Error);
        let scan_throttled = ScanError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .meta(meta("ProvisionedThroughputExceededException"))
                .build(),
        );
        assert_eq!(outcome_of(&service(scan_throttled)), Outcome::Throttled);
        let read_throttled = GetItemError::RequestLimitExceeded(
            RequestLimitExceeded::builder()
                .meta(meta("RequestLimitExceeded"))
                .build(),
        );
        assert_eq!(outcome_of(&service(read_throttled)), Outcome::Throttled);
        // Failures without an answer are errors, whatever they say.
        let timeout: SdkError<UpdateItemError, ()> = SdkError::timeout_error("Throttling");
        assert_eq!(outcome_of(&timeout), Outcome::Error);
        let no_code = UpdateItemError::generic(ErrorMetadata::builder().build());
        assert_eq!(outcome_of(&service(no_code)), Outcome::Error);
    }

    #[test]
    fn throttling_codes_are_transient_errors() {
        for code in THROTTLING_CODES {
            assert_eq!(
                crate::classify_code(Some(code), 400),
                leasehold::ErrorKind::Transient,
                "{code}"
            );
        }
    }

    #[test]
    fn labels_are_distinct_and_snake_case() {
        let ops: std::collections::BTreeSet<_> =
            Operation::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(ops.len(), Operation::ALL.len());
        let outcomes: std::collections::BTreeSet<_> =
            Outcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(outcomes.len(), Outcome::ALL.len());
        for label in ops.iter().chain(outcomes.iter()) {
            assert!(label.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
        for (i, op) in Operation::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
        }
        for (i, outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(outcome.index(), i);
        }
    }

    #[test]
    fn the_skew_window_narrows_and_starts_again_after_a_step() {
        let mut window = SkewWindow::default();
        // Skew 0.3 s; answers at different fractions of a second, 10 ms round trips.
        let first = window.add((-0.69, 0.31));
        assert!((first.1 - first.0 - 1.0).abs() < 1e-9);
        window.add((0.29, 1.29));
        let narrow = window.add((-0.5, 0.305));
        assert!((narrow.0 - 0.29).abs() < 1e-9 && (narrow.1 - 0.305).abs() < 1e-9);
        // The host's clock steps 5 s back: the skew becomes 5.3 s, the old answers no longer
        // overlap, and the window starts again from the newest.
        let stepped = window.add((4.8, 5.8));
        assert_eq!(stepped, (4.8, 5.8));
        assert_eq!(window.samples.len(), 1);
        for _ in 0..SKEW_SAMPLES * 2 {
            window.add((4.9, 5.7));
        }
        assert_eq!(window.samples.len(), SKEW_SAMPLES);
        assert_eq!(window.intersection(), Some((4.9, 5.7)));
    }
}
