//! `RedisOptions`: key prefix, timeouts, idle retention and release notifications.

use std::time::Duration;

use leasehold::store::{InvalidOption, OptionKey, OptionKind, OptionValue, StoreOptions};

/// The default key prefix: locks live in `leasehold:{<lock>}`.
///
/// ```
/// assert_eq!(leasehold_redis::RedisOptions::default().prefix(), leasehold_redis::DEFAULT_PREFIX);
/// ```
pub const DEFAULT_PREFIX: &str = "leasehold";

/// The longest key prefix accepted, in characters (bytes: a prefix is ASCII).
pub const MAX_PREFIX_LEN: usize = 128;

/// Invalid [`RedisOptions`]: names the option and says what is allowed.
///
/// ```
/// use leasehold_redis::RedisOptions;
///
/// let err = RedisOptions::default().with_prefix("a{b}").validate().unwrap_err();
/// assert_eq!(err.option(), "prefix");
/// assert!(err.to_string().contains("braces"));
/// ```
pub type RedisOptionsError = leasehold::store::InvalidOption;

/// The options of [`RedisOptions`] by name: the same names in a URL's query, in
/// [`StoreOptions::with_option`] and in `LEASEHOLD_REDIS_<NAME>` environment variables
/// ([`StoreOptions::with_env`]).
///
/// ```
/// use leasehold::store::{OptionKey, StoreOptions};
/// use leasehold_redis::{RedisOptionKey, RedisOptions};
///
/// let key = RedisOptionKey::from_name("response_timeout")?;
/// assert_eq!(key.env_var(), "LEASEHOLD_REDIS_RESPONSE_TIMEOUT");
/// let options = RedisOptions::default().with_option(key, "750ms")?;
/// assert_eq!(options.response_timeout(), std::time::Duration::from_millis(750));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedisOptionKey {
    /// `prefix`: [`RedisOptions::with_prefix`].
    Prefix,
    /// `response_timeout`: [`RedisOptions::with_response_timeout`].
    ResponseTimeout,
    /// `connect_timeout`: [`RedisOptions::with_connect_timeout`].
    ConnectTimeout,
    /// `idle_retention`: [`RedisOptions::with_idle_retention`].
    IdleRetention,
    /// `notifications`: [`RedisOptions::with_notifications`].
    Notifications,
}

impl OptionKey for RedisOptionKey {
    const STORE: &'static str = "Redis";
    const ENV_PREFIX: &'static str = "LEASEHOLD_REDIS_";
    const KEYS: &'static [(Self, &'static str, OptionKind)] = &[
        (Self::Prefix, "prefix", OptionKind::Text),
        (
            Self::ResponseTimeout,
            "response_timeout",
            OptionKind::Duration,
        ),
        (
            Self::ConnectTimeout,
            "connect_timeout",
            OptionKind::Duration,
        ),
        (Self::IdleRetention, "idle_retention", OptionKind::Duration),
        (Self::Notifications, "notifications", OptionKind::Flag),
    ];
}

impl StoreOptions for RedisOptions {
    type Key = RedisOptionKey;

    fn set(self, key: RedisOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
        use RedisOptionKey as K;
        Ok(match (key, value) {
            (K::Prefix, OptionValue::Text(p)) => self.with_prefix(p),
            (K::ResponseTimeout, OptionValue::Duration(d)) => self.with_response_timeout(d),
            (K::ConnectTimeout, OptionValue::Duration(d)) => self.with_connect_timeout(d),
            (K::IdleRetention, OptionValue::Duration(d)) => self.with_idle_retention(d),
            (K::Notifications, OptionValue::Flag(on)) => self.with_notifications(on),
            (key, value) => return Err(value.mismatch(key)),
        })
    }
}

/// Options for [`RedisStore`](crate::RedisStore).
///
/// | option | default | meaning |
/// |---|---|---|
/// | `prefix` | `leasehold` | keys are `<prefix>:{<lock>}`, releases are published on `<prefix>:released` |
/// | `response_timeout` | 1 s | a command without an answer by then fails with a transient error and the connection is replaced |
/// | `connect_timeout` | 1 s | each connection attempt fails after this |
/// | `idle_retention` | 1 h | how long a lock's hash (its fence counters) outlives its last lease |
/// | `notifications` | on | wake waiters through pub/sub on release (one subscriber connection per store) |
///
/// In URLs the same options are query parameters:
/// `redis://host:6379/0?prefix=app&response_timeout=500ms&notifications=off`.
///
/// ```
/// use std::time::Duration;
/// use leasehold_redis::RedisOptions;
///
/// let options = RedisOptions::default()
///     .with_prefix("billing")
///     .with_response_timeout(Duration::from_millis(500))
///     .with_notifications(false);
/// assert_eq!(options.prefix(), "billing");
/// assert!(!options.notifications());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    pub(crate) prefix: String,
    pub(crate) response_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_retention: Duration,
    pub(crate) notifications: bool,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            idle_retention: Duration::from_secs(3600),
            notifications: true,
        }
    }
}

impl RedisOptions {
    leasehold::store::option_accessors! {
        /// The key prefix (default `leasehold`): 1 to [`MAX_PREFIX_LEN`] characters of printable
        /// ASCII without spaces or braces (braces would break the hash tag that keeps a lock's keys
        /// in one cluster slot).
        ///
        /// ```
        /// assert_eq!(leasehold_redis::RedisOptions::default().with_prefix("a:b").prefix(), "a:b");
        /// assert_eq!(leasehold_redis::RedisOptions::default().prefix(), "leasehold");
        /// ```
        fn with_prefix / prefix: text => "The key prefix.";

        /// How long to wait for an answer before failing with a transient error (default 1 s). The
        /// connection is then replaced, since its stream can no longer be trusted. Keep it well below
        /// a third of your lease so the watchdog can retry a renewal in time.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_redis::RedisOptions::default().with_response_timeout(Duration::from_millis(300));
        /// assert_eq!(o.response_timeout(), Duration::from_millis(300));
        /// assert_eq!(leasehold_redis::RedisOptions::default().response_timeout(), Duration::from_secs(1));
        /// ```
        fn with_response_timeout / response_timeout: Duration => "The response timeout.";

        /// How long each connection attempt may take (default 1 s).
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_redis::RedisOptions::default().with_connect_timeout(Duration::from_secs(3));
        /// assert_eq!(o.connect_timeout(), Duration::from_secs(3));
        /// assert_eq!(leasehold_redis::RedisOptions::default().connect_timeout(), Duration::from_secs(1));
        /// ```
        fn with_connect_timeout / connect_timeout: Duration => "The connect timeout.";

        /// How long a lock's hash outlives its latest lease before Redis deletes it (default 1 h).
        /// Fences stay monotonic either way (they never fall below the server clock in µs); the
        /// retained counter additionally protects against the server clock stepping back.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_redis::RedisOptions::default().with_idle_retention(Duration::from_secs(86_400));
        /// assert_eq!(o.idle_retention(), Duration::from_secs(86_400));
        /// assert_eq!(leasehold_redis::RedisOptions::default().idle_retention(), Duration::from_secs(3600));
        /// ```
        fn with_idle_retention / idle_retention: Duration => "The idle retention.";

        /// Whether waiters are woken through pub/sub on release (default on). Off, they poll with the
        /// elector's jittered retry policy.
        ///
        /// ```
        /// assert!(!leasehold_redis::RedisOptions::default().with_notifications(false).notifications());
        /// assert!(leasehold_redis::RedisOptions::default().notifications());
        /// ```
        fn with_notifications / notifications: bool => "Whether release notifications are on.";
    }

    /// Checks every option; the store's constructors call it.
    ///
    /// # Errors
    ///
    /// A [`RedisOptionsError`] naming the first option that breaks its rule.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold_redis::RedisOptions;
    ///
    /// assert!(RedisOptions::default().validate().is_ok());
    /// let err = RedisOptions::default().with_response_timeout(Duration::ZERO).validate().unwrap_err();
    /// assert_eq!(err.option(), "response_timeout");
    /// ```
    pub fn validate(&self) -> Result<(), RedisOptionsError> {
        let p = &self.prefix;
        if p.is_empty() || p.len() > MAX_PREFIX_LEN {
            return Err(RedisOptionKey::invalid(
                "prefix",
                format!("must be 1 to {MAX_PREFIX_LEN} characters, got {p:?}"),
            ));
        }
        if let Some(bad) = p
            .chars()
            .find(|c| !c.is_ascii_graphic() || *c == '{' || *c == '}')
        {
            return Err(RedisOptionKey::invalid(
                "prefix",
                format!("{p:?} contains {bad:?}; use printable ASCII without spaces or braces"),
            ));
        }
        for (name, d) in [
            ("response_timeout", self.response_timeout),
            ("connect_timeout", self.connect_timeout),
        ] {
            if d < Duration::from_millis(1) {
                return Err(RedisOptionKey::invalid(
                    name,
                    format!("must be at least 1ms, got {d:?}"),
                ));
            }
        }
        for (name, d) in [
            ("response_timeout", self.response_timeout),
            ("connect_timeout", self.connect_timeout),
            ("idle_retention", self.idle_retention),
        ] {
            leasehold::store::check_duration(name, d)
                .map_err(|e| RedisOptionKey::invalid(name, e.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_must_not_break_hash_tags() {
        assert!(RedisOptions::default().validate().is_ok());
        for bad in ["", "a{b", "a}b", "a b", "ä"] {
            assert!(
                RedisOptions::default().with_prefix(bad).validate().is_err(),
                "{bad}"
            );
        }
        assert!(
            RedisOptions::default()
                .with_response_timeout(Duration::ZERO)
                .validate()
                .is_err()
        );
    }

    #[test]
    fn durations_are_bounded_by_the_core_maximum() {
        let o = RedisOptions::default;
        for (options, name) in [
            (o().with_response_timeout(Duration::MAX), "response_timeout"),
            (o().with_connect_timeout(Duration::MAX), "connect_timeout"),
            (o().with_idle_retention(Duration::MAX), "idle_retention"),
        ] {
            let err = options.validate().unwrap_err();
            assert_eq!(err.option(), name);
            assert!(err.to_string().contains("MAX_DURATION"), "{err}");
        }
        assert!(
            o().with_idle_retention(leasehold::limits::MAX_DURATION)
                .validate()
                .is_ok()
        );
    }
}
