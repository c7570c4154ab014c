//! `DynamoDbOptions`: table, key layout, clock-skew tolerance, TTL padding and request retries.

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{InvalidOption, OptionKey, OptionKind, OptionValue, StoreOptions};

use crate::keys::validate_prefix;

/// The default table name.
pub const DEFAULT_TABLE: &str = "leasehold_leases";
/// The default clock-skew tolerance.
pub const DEFAULT_CLOCK_SKEW_TOLERANCE: Duration = Duration::from_secs(2);
/// The default TTL padding.
pub const DEFAULT_TTL_PADDING: Duration = Duration::from_secs(3600);
/// The default back-off before the first retry of a failed request.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(50);
/// The default number of attempts per request (the first plus retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// The default time limit of one attempt of a request.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// The shortest interval between two refreshes of the stale-item gauge
/// ([`DynamoDbOptions::stale_refresh`]).
pub const MIN_STALE_REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// The longest interval between two refreshes of the stale-item gauge.
pub const MAX_STALE_REFRESH_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// The interval of [`DynamoDbOptions::stale_refresh_default`]: 5 minutes.
pub const DEFAULT_STALE_REFRESH_INTERVAL: Duration = Duration::from_secs(300);
/// The default page cap of each refresh of the stale-item gauge: 10 pages of 1 000 items per
/// scan, so a refresh reads at most 20 000 items: with lease items of about 250 bytes, about
/// 60 read capacity units per 1 000 items in the table (both scans), 600 at most.
pub const DEFAULT_STALE_REFRESH_PAGES: u32 = 10;

/// Invalid [`DynamoDbOptions`]: names the rule and the offending value.
///
/// ```
/// use std::time::Duration;
/// use leasehold_dynamodb::DynamoDbOptions;
///
/// let err = DynamoDbOptions::default().with_table("x").validate().unwrap_err();
/// assert_eq!(err.option(), "table");
/// assert!(err.to_string().contains("3-255"));
/// ```
pub type DynamoDbOptionsError = leasehold::store::InvalidOption;

/// The options of [`DynamoDbOptions`] by name: the same names in a URL's query, in
/// [`StoreOptions::with_option`] and in `LEASEHOLD_DYNAMODB_<NAME>` environment variables
/// ([`StoreOptions::with_env`]).
///
/// ```
/// use leasehold::store::{OptionKey, StoreOptions};
/// use leasehold_dynamodb::{DynamoDbOptionKey, DynamoDbOptions};
///
/// let key = DynamoDbOptionKey::from_name("max_attempts")?;
/// assert_eq!(key.env_var(), "LEASEHOLD_DYNAMODB_MAX_ATTEMPTS");
/// let options = DynamoDbOptions::default().with_option(key, "5")?;
/// assert_eq!(options.max_attempts(), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DynamoDbOptionKey {
    /// `prefix`: [`DynamoDbOptions::with_key_prefix`].
    KeyPrefix,
    /// `clock_skew_tolerance`: [`DynamoDbOptions::with_clock_skew_tolerance`] (also `skew` in URLs).
    ClockSkewTolerance,
    /// `ttl_padding`: [`DynamoDbOptions::with_ttl_padding`].
    TtlPadding,
    /// `retry_delay`: [`DynamoDbOptions::with_retry_delay`].
    RetryDelay,
    /// `max_attempts`: [`DynamoDbOptions::with_max_attempts`].
    MaxAttempts,
    /// `attempt_timeout`: [`DynamoDbOptions::with_attempt_timeout`].
    AttemptTimeout,
    /// `node_id`: [`DynamoDbOptions::with_node_id`].
    NodeId,
    /// `stale_refresh`: [`DynamoDbOptions::with_stale_refresh`].
    StaleRefresh,
    /// `stale_refresh_pages`: [`DynamoDbOptions::with_stale_refresh_pages`].
    StaleRefreshPages,
}

impl OptionKey for DynamoDbOptionKey {
    const STORE: &'static str = "DynamoDB";
    const ENV_PREFIX: &'static str = "LEASEHOLD_DYNAMODB_";
    const KEYS: &'static [(Self, &'static str, OptionKind)] = &[
        (Self::KeyPrefix, "prefix", OptionKind::Text),
        (
            Self::ClockSkewTolerance,
            "clock_skew_tolerance",
            OptionKind::Duration,
        ),
        (Self::TtlPadding, "ttl_padding", OptionKind::Duration),
        (Self::RetryDelay, "retry_delay", OptionKind::Duration),
        (Self::MaxAttempts, "max_attempts", OptionKind::Count),
        (
            Self::AttemptTimeout,
            "attempt_timeout",
            OptionKind::Duration,
        ),
        (Self::NodeId, "node_id", OptionKind::NonEmptyText),
        (Self::StaleRefresh, "stale_refresh", OptionKind::Duration),
        (
            Self::StaleRefreshPages,
            "stale_refresh_pages",
            OptionKind::Count,
        ),
    ];

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::ClockSkewTolerance => &["skew"],
            _ => &[],
        }
    }
}

impl StoreOptions for DynamoDbOptions {
    type Key = DynamoDbOptionKey;

    fn set(self, key: DynamoDbOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
        use DynamoDbOptionKey as K;
        Ok(match (key, value) {
            (K::KeyPrefix, OptionValue::Text(p)) => self.with_key_prefix(p),
            (K::ClockSkewTolerance, OptionValue::Duration(d)) => self.with_clock_skew_tolerance(d),
            (K::TtlPadding, OptionValue::Duration(d)) => self.with_ttl_padding(d),
            (K::RetryDelay, OptionValue::Duration(d)) => self.with_retry_delay(d),
            (K::MaxAttempts, OptionValue::Count(n)) => self.with_max_attempts(n),
            (K::AttemptTimeout, OptionValue::Duration(d)) => self.with_attempt_timeout(d),
            (K::NodeId, OptionValue::Text(node)) => self.with_node_id(node),
            (K::StaleRefresh, OptionValue::Duration(d)) => self.with_stale_refresh(d),
            (K::StaleRefreshPages, OptionValue::Count(n)) => self.with_stale_refresh_pages(n),
            (key, value) => return Err(value.mismatch(key)),
        })
    }
}

/// Options for [`DynamoDbStore`](crate::DynamoDbStore).
///
/// * `table` (default `leasehold_leases`): a table with string partition key `lockName`.
/// * `key_prefix` (default none): items are keyed `PREFIX/lock` instead of `lock`, so several
///   applications can share a table.
/// * `clock_skew_tolerance` (default 2 s): DynamoDB has no server clock in conditions, so expiry is
///   decided by the **client** clock; another client takes an expired lease over only once it ended
///   at least this long ago by its own clock. It must exceed the worst clock difference between any
///   two clients. Every lease must be longer than twice this (an acquire with a shorter lease is
///   rejected with a permanent error).
/// * `ttl_padding` (default 1 h): the `ttl` attribute (DynamoDB TTL, cleanup only) is set this long
///   after the lease's end, so TTL deletion never touches a live or recent item.
/// * `retry_delay` (default 50 ms) and `max_attempts` (default 3): the store's requests retry
///   throttling, 5xx and network failures with exponential back-off starting at `retry_delay`
///   (full jitter), replacing the SDK's default 1 s initial back-off, which is long next to a
///   lease. Retries are safe: a retried acquire that had been applied is recognised as ours.
/// * `attempt_timeout` (default 3 s): one attempt of a request that has not answered by then
///   counts as a transient failure (and is retried), so a stalled connection cannot hold up an
///   acquisition or a release indefinitely.
/// * `node_id` (default `hostname:pid`): recorded as `nodeId` on items this client writes.
/// * `stale_refresh` (default off) and `stale_refresh_pages` (default 10): a background task
///   counts the stale items ([`DynamoDbStore::stale_items_within`](crate::DynamoDbStore::stale_items_within))
///   every `stale_refresh` and exports the count as the `leasehold_dynamodb_stale_items` gauge
///   (see [`metrics`](crate::metrics)).
///
/// ```
/// use std::time::Duration;
/// use leasehold_dynamodb::DynamoDbOptions;
///
/// let options = DynamoDbOptions::default()
///     .with_table("ops_leases")
///     .with_key_prefix("billing")
///     .with_clock_skew_tolerance(Duration::from_millis(500));
/// assert!(options.validate().is_ok());
/// assert_eq!(options.table_name(), "ops_leases");
/// ```
#[derive(Debug, Clone)]
pub struct DynamoDbOptions {
    pub(crate) table: String,
    pub(crate) key_prefix: String,
    pub(crate) clock_skew_tolerance: Duration,
    pub(crate) ttl_padding: Duration,
    pub(crate) retry_delay: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) attempt_timeout: Duration,
    pub(crate) node_id: Arc<str>,
    pub(crate) stale_refresh: Option<Duration>,
    pub(crate) stale_refresh_pages: u32,
}

impl Default for DynamoDbOptions {
    fn default() -> Self {
        Self {
            table: DEFAULT_TABLE.to_owned(),
            key_prefix: String::new(),
            clock_skew_tolerance: DEFAULT_CLOCK_SKEW_TOLERANCE,
            ttl_padding: DEFAULT_TTL_PADDING,
            retry_delay: DEFAULT_RETRY_DELAY,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            node_id: leasehold::options::default_node_id(),
            stale_refresh: None,
            stale_refresh_pages: DEFAULT_STALE_REFRESH_PAGES,
        }
    }
}

impl DynamoDbOptions {
    /// The table (3–255 characters of `[A-Za-z0-9_.-]`).
    #[must_use]
    pub fn with_table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }
    /// A prefix for every item key (`PREFIX/lock`); trailing `/` are trimmed; empty for none.
    #[must_use]
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into().trim_end_matches('/').to_owned();
        self
    }
    /// The largest clock difference tolerated between clients (see the type's docs).
    #[must_use]
    pub fn with_clock_skew_tolerance(mut self, tolerance: Duration) -> Self {
        self.clock_skew_tolerance = tolerance;
        self
    }
    /// How long after a lease's end DynamoDB TTL may delete its item.
    #[must_use]
    pub fn with_ttl_padding(mut self, padding: Duration) -> Self {
        self.ttl_padding = padding;
        self
    }
    /// The back-off before the first retry of a failed request (then doubling, full jitter).
    #[must_use]
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }
    /// Attempts per request, the first included (1 disables retries).
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }
    /// The time limit of one attempt of a request (default 3 s).
    #[must_use]
    pub fn with_attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }
    /// The node id recorded on items this client writes (default `hostname:pid`).
    #[must_use]
    pub fn with_node_id(mut self, node_id: impl Into<Arc<str>>) -> Self {
        self.node_id = node_id.into();
        self
    }

    /// Refreshes the `leasehold_dynamodb_stale_items` gauge every `interval`
    /// ([`MIN_STALE_REFRESH_INTERVAL`] to [`MAX_STALE_REFRESH_INTERVAL`]; off by default).
    ///
    /// The store then runs a background task, started by
    /// [`DynamoDbStore::new`](crate::DynamoDbStore::new) (which must then be called within a
    /// tokio runtime) and stopped when the store is dropped. It counts at once, then
    /// `interval` after each count ends, so two counts never overlap. Each count is
    /// [`stale_items_within`](crate::DynamoDbStore::stale_items_within) the
    /// [`stale_refresh_pages`](Self::stale_refresh_pages) cap: two `Scan`s of at most that many
    /// pages of 1 000 items, read whatever the table holds. Turn it on in one process per
    /// table and key prefix (an operator job, or one replica), not in every replica; the IAM
    /// role needs `dynamodb:Scan`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold_dynamodb::DynamoDbOptions;
    /// let o = DynamoDbOptions::default().with_stale_refresh(Duration::from_secs(600));
    /// assert_eq!(o.stale_refresh(), Some(Duration::from_secs(600)));
    /// assert!(DynamoDbOptions::default().with_stale_refresh(Duration::from_secs(1)).validate().is_err());
    /// ```
    #[must_use]
    pub fn with_stale_refresh(mut self, interval: Duration) -> Self {
        self.stale_refresh = Some(interval);
        self
    }
    /// Refreshes the stale-item gauge every [`DEFAULT_STALE_REFRESH_INTERVAL`] (5 minutes).
    #[must_use]
    pub fn stale_refresh_default(self) -> Self {
        self.with_stale_refresh(DEFAULT_STALE_REFRESH_INTERVAL)
    }
    /// The page cap of each refresh's scans (1 to
    /// [`MAX_STALE_SCAN_PAGES`](crate::MAX_STALE_SCAN_PAGES); default
    /// [`DEFAULT_STALE_REFRESH_PAGES`]). A count that reaches it is a lower bound, counted as a
    /// `truncated` refresh.
    #[must_use]
    pub fn with_stale_refresh_pages(mut self, pages: u32) -> Self {
        self.stale_refresh_pages = pages;
        self
    }

    /// The table name.
    ///
    /// ```
    /// assert_eq!(leasehold_dynamodb::DynamoDbOptions::default().table_name(), "leasehold_leases");
    /// ```
    pub fn table_name(&self) -> &str {
        &self.table
    }
    /// The key prefix (empty for none).
    ///
    /// ```
    /// let o = leasehold_dynamodb::DynamoDbOptions::default().with_key_prefix("billing/");
    /// assert_eq!(o.key_prefix(), "billing");
    /// ```
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }
    /// The clock-skew tolerance.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let o = leasehold_dynamodb::DynamoDbOptions::default();
    /// assert_eq!(o.clock_skew_tolerance(), Duration::from_secs(2));
    /// ```
    pub fn clock_skew_tolerance(&self) -> Duration {
        self.clock_skew_tolerance
    }
    /// The TTL padding.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let o = leasehold_dynamodb::DynamoDbOptions::default();
    /// assert_eq!(o.ttl_padding(), Duration::from_secs(3600));
    /// ```
    pub fn ttl_padding(&self) -> Duration {
        self.ttl_padding
    }
    /// The back-off before the first retry of a failed request.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let o = leasehold_dynamodb::DynamoDbOptions::default();
    /// assert_eq!(o.retry_delay(), Duration::from_millis(50));
    /// ```
    pub fn retry_delay(&self) -> Duration {
        self.retry_delay
    }
    /// Attempts per request, the first included.
    ///
    /// ```
    /// assert_eq!(leasehold_dynamodb::DynamoDbOptions::default().max_attempts(), 3);
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// The time limit of one attempt of a request.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let o = leasehold_dynamodb::DynamoDbOptions::default();
    /// assert_eq!(o.attempt_timeout(), Duration::from_secs(3));
    /// ```
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }
    /// The node id recorded on items this client writes.
    ///
    /// ```
    /// let o = leasehold_dynamodb::DynamoDbOptions::default().with_node_id("worker-1");
    /// assert_eq!(o.node_id(), "worker-1");
    /// ```
    pub fn node_id(&self) -> &str {
        &self.node_id
    }
    /// The interval of the stale-item gauge's refreshes, `None` when off.
    ///
    /// ```
    /// assert_eq!(leasehold_dynamodb::DynamoDbOptions::default().stale_refresh(), None);
    /// ```
    pub fn stale_refresh(&self) -> Option<Duration> {
        self.stale_refresh
    }
    /// The page cap of each refresh's scans.
    ///
    /// ```
    /// let o = leasehold_dynamodb::DynamoDbOptions::default();
    /// assert_eq!(o.stale_refresh_pages(), leasehold_dynamodb::DEFAULT_STALE_REFRESH_PAGES);
    /// ```
    pub fn stale_refresh_pages(&self) -> u32 {
        self.stale_refresh_pages
    }
    /// The key prefix (empty for none).
    #[deprecated(note = "use `key_prefix_str`, named like the other stores' option getters")]
    pub fn prefix(&self) -> &str {
        self.key_prefix()
    }
    /// The clock-skew tolerance.
    #[deprecated(
        note = "use `clock_skew_tolerance_value`, named like the other stores' option getters"
    )]
    pub fn skew_tolerance(&self) -> Duration {
        self.clock_skew_tolerance()
    }
    /// The TTL padding.
    #[deprecated(note = "use `ttl_padding_value`, named like the other stores' option getters")]
    pub fn padding(&self) -> Duration {
        self.ttl_padding()
    }
    /// The shortest lease this store accepts is anything longer than this: twice the clock-skew
    /// tolerance.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold_dynamodb::DynamoDbOptions;
    /// let o = DynamoDbOptions::default().with_clock_skew_tolerance(Duration::from_secs(1));
    /// assert_eq!(o.lease_floor(), Duration::from_secs(2));
    /// ```
    pub fn lease_floor(&self) -> Duration {
        self.clock_skew_tolerance.saturating_mul(2)
    }

    /// Checks every option; [`DynamoDbStore::new`](crate::DynamoDbStore::new) calls it.
    ///
    /// # Errors
    ///
    /// A [`DynamoDbOptionsError`] naming the first option that breaks its rule.
    pub fn validate(&self) -> Result<(), DynamoDbOptionsError> {
        validate_table(&self.table)?;
        validate_prefix(&self.key_prefix)?;
        if self.clock_skew_tolerance > Duration::from_secs(3600) {
            return Err(DynamoDbOptionKey::invalid(
                "clock_skew_tolerance",
                format!(
                    "{:?} is more than an hour; clocks that far apart need fixing, not tolerating",
                    self.clock_skew_tolerance
                ),
            ));
        }
        if self.ttl_padding < Duration::from_secs(1)
            || self.ttl_padding <= self.clock_skew_tolerance
        {
            return Err(DynamoDbOptionKey::invalid(
                "ttl_padding",
                format!(
                    "{:?} must be at least 1s and longer than the clock-skew tolerance {:?}",
                    self.ttl_padding, self.clock_skew_tolerance
                ),
            ));
        }
        if self.retry_delay.is_zero() || self.retry_delay > Duration::from_secs(10) {
            return Err(DynamoDbOptionKey::invalid(
                "retry_delay",
                format!("{:?} must be more than 0 and at most 10s", self.retry_delay),
            ));
        }
        if !(1..=10).contains(&self.max_attempts) {
            return Err(DynamoDbOptionKey::invalid(
                "max_attempts",
                format!("{} must be between 1 and 10", self.max_attempts),
            ));
        }
        if self.attempt_timeout < Duration::from_millis(10) {
            return Err(DynamoDbOptionKey::invalid(
                "attempt_timeout",
                format!("{:?} must be at least 10ms", self.attempt_timeout),
            ));
        }
        if let Some(interval) = self.stale_refresh
            && !(MIN_STALE_REFRESH_INTERVAL..=MAX_STALE_REFRESH_INTERVAL).contains(&interval)
        {
            return Err(DynamoDbOptionKey::invalid(
                "stale_refresh",
                format!(
                    "{interval:?} must be between {MIN_STALE_REFRESH_INTERVAL:?} and \
                     {MAX_STALE_REFRESH_INTERVAL:?}: each refresh scans the table"
                ),
            ));
        }
        if !(1..=crate::MAX_STALE_SCAN_PAGES).contains(&self.stale_refresh_pages) {
            return Err(DynamoDbOptionKey::invalid(
                "stale_refresh_pages",
                format!(
                    "{} must be between 1 and {}",
                    self.stale_refresh_pages,
                    crate::MAX_STALE_SCAN_PAGES
                ),
            ));
        }
        leasehold::options::validate_node_id(&self.node_id)
            .map_err(|e| DynamoDbOptionKey::invalid("node_id", e.to_string()))?;
        for (name, d) in [
            ("ttl_padding", self.ttl_padding),
            ("attempt_timeout", self.attempt_timeout),
        ] {
            leasehold::store::check_duration(name, d)
                .map_err(|e| DynamoDbOptionKey::invalid(name, e.to_string()))?;
        }
        Ok(())
    }
}

/// DynamoDB's table-name rule: 3–255 characters of `[A-Za-z0-9_.-]`.
pub(crate) fn validate_table(table: &str) -> Result<(), DynamoDbOptionsError> {
    let ok = (3..=255).contains(&table.len())
        && table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(DynamoDbOptionKey::invalid(
            "table",
            format!("{table:?} must be 3-255 characters of [A-Za-z0-9_.-]"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(DynamoDbOptions::default().validate(), Ok(()));
    }

    #[test]
    fn each_rule_names_its_option() {
        let o = DynamoDbOptions::default;
        let bad = [
            (o().with_table("ab"), "table"),
            (o().with_table("a b c"), "table"),
            (o().with_key_prefix("a#b"), "key_prefix"),
            (
                o().with_ttl_padding(Duration::from_millis(10)),
                "ttl_padding",
            ),
            (
                o().with_clock_skew_tolerance(Duration::from_secs(5000)),
                "clock_skew_tolerance",
            ),
            (o().with_retry_delay(Duration::ZERO), "retry_delay"),
            (o().with_max_attempts(0), "max_attempts"),
            (o().with_attempt_timeout(Duration::ZERO), "attempt_timeout"),
            (o().with_node_id(""), "node_id"),
            (o().with_node_id("n".repeat(256)), "node_id"),
            (o().with_ttl_padding(Duration::MAX), "ttl_padding"),
            (o().with_attempt_timeout(Duration::MAX), "attempt_timeout"),
            (
                o().with_stale_refresh(Duration::from_secs(4)),
                "stale_refresh",
            ),
            (
                o().with_stale_refresh(Duration::from_secs(86_401)),
                "stale_refresh",
            ),
            (o().with_stale_refresh_pages(0), "stale_refresh_pages"),
            (o().with_stale_refresh_pages(101), "stale_refresh_pages"),
        ];
        for (options, option) in bad {
            let err = options.validate().err();
            assert_eq!(
                err.as_ref().map(DynamoDbOptionsError::option),
                Some(option),
                "{err:?}"
            );
        }
    }

    #[test]
    fn prefix_trailing_slashes_are_trimmed() {
        assert_eq!(
            DynamoDbOptions::default()
                .with_key_prefix("app//")
                .key_prefix(),
            "app"
        );
    }
}
