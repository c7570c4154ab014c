//! `ZooKeeperOptions`: node prefix, timeouts, the clock-skew tolerance and release notifications.

use std::time::Duration;

use leasehold::store::{
    InvalidOption, MAX_TIMEOUT, OptionKey, OptionKind, OptionValue, StoreOptions,
};

/// The default node prefix (under the URL's chroot): slot `n` of lock `L` is the node
/// `/leasehold/locks/L/slot-n`.
///
/// ```
/// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().prefix(), leasehold_zookeeper::DEFAULT_PREFIX);
/// ```
pub const DEFAULT_PREFIX: &str = "/leasehold";

/// The longest node prefix accepted, in bytes.
pub const MAX_PREFIX_LEN: usize = 128;

/// The largest clock-skew tolerance accepted: servers whose clocks are more than an hour apart
/// need fixing, not tolerating.
pub const MAX_CLOCK_SKEW_TOLERANCE: Duration = Duration::from_secs(3600);

/// Invalid [`ZooKeeperOptions`]: names the option and says what is allowed.
///
/// ```
/// use leasehold_zookeeper::ZooKeeperOptions;
///
/// let err = ZooKeeperOptions::default().with_prefix("jobs").validate().unwrap_err();
/// assert_eq!(err.option(), "prefix");
/// assert!(err.to_string().contains("must start with '/'"));
/// ```
pub type ZooKeeperOptionsError = leasehold::store::InvalidOption;

/// The options of [`ZooKeeperOptions`] by name: the same names in a URL's query, in
/// [`StoreOptions::with_option`] and in `LEASEHOLD_ZOOKEEPER_<NAME>` environment variables
/// ([`StoreOptions::with_env`]).
///
/// ```
/// use leasehold::store::{OptionKey, StoreOptions};
/// use leasehold_zookeeper::{ZooKeeperOptionKey, ZooKeeperOptions};
///
/// let key = ZooKeeperOptionKey::from_name("session_timeout")?;
/// assert_eq!(key.env_var(), "LEASEHOLD_ZOOKEEPER_SESSION_TIMEOUT");
/// let options = ZooKeeperOptions::default().with_option(key, "20s")?;
/// assert_eq!(options.session_timeout(), std::time::Duration::from_secs(20));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ZooKeeperOptionKey {
    /// `prefix`: [`ZooKeeperOptions::with_prefix`].
    Prefix,
    /// `request_timeout`: [`ZooKeeperOptions::with_request_timeout`].
    RequestTimeout,
    /// `session_timeout`: [`ZooKeeperOptions::with_session_timeout`].
    SessionTimeout,
    /// `clock_skew_tolerance`: [`ZooKeeperOptions::with_clock_skew_tolerance`] (also `skew` in URLs).
    ClockSkewTolerance,
    /// `notifications`: [`ZooKeeperOptions::with_notifications`].
    Notifications,
}

impl OptionKey for ZooKeeperOptionKey {
    const STORE: &'static str = "zookeeper";
    const ENV_PREFIX: &'static str = "LEASEHOLD_ZOOKEEPER_";
    const KEYS: &'static [(Self, &'static str, OptionKind)] = &[
        (Self::Prefix, "prefix", OptionKind::Text),
        (
            Self::RequestTimeout,
            "request_timeout",
            OptionKind::Duration,
        ),
        (
            Self::SessionTimeout,
            "session_timeout",
            OptionKind::Duration,
        ),
        (
            Self::ClockSkewTolerance,
            "clock_skew_tolerance",
            OptionKind::Duration,
        ),
        (Self::Notifications, "notifications", OptionKind::Flag),
    ];

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::ClockSkewTolerance => &["skew"],
            _ => &[],
        }
    }
}

impl StoreOptions for ZooKeeperOptions {
    type Key = ZooKeeperOptionKey;

    fn set(self, key: ZooKeeperOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
        use ZooKeeperOptionKey as K;
        Ok(match (key, value) {
            (K::Prefix, OptionValue::Text(p)) => self.with_prefix(p),
            (K::RequestTimeout, OptionValue::Duration(d)) => self.with_request_timeout(d),
            (K::SessionTimeout, OptionValue::Duration(d)) => self.with_session_timeout(d),
            (K::ClockSkewTolerance, OptionValue::Duration(d)) => self.with_clock_skew_tolerance(d),
            (K::Notifications, OptionValue::Flag(on)) => self.with_notifications(on),
            (key, value) => return Err(value.mismatch(key)),
        })
    }
}

/// Options for [`ZooKeeperStore`](crate::ZooKeeperStore).
///
/// | option | default | meaning |
/// |---|---|---|
/// | `prefix` | `/leasehold` | the store's nodes live under `<chroot><prefix>`: slot `n` of lock `L` is `<prefix>/locks/L/slot-n` |
/// | `request_timeout` | 2 s | one request without an answer by then fails with a transient error |
/// | `session_timeout` | 10 s | the session timeout asked of the ensemble (it clamps it to 2–20 ticks); sessions carry no lease here, they only bound how long a dead client's watches live |
/// | `clock_skew_tolerance` | 500 ms | how far apart the ensemble servers' clocks may be: a lease is taken over only this long after it ended; leases must be longer than twice it |
/// | `notifications` | on | wake waiters through one persistent recursive watch per store |
///
/// In URLs the same options are query parameters (`skew` is the short name of
/// `clock_skew_tolerance`): `zk://10.0.0.1:2181,10.0.0.2:2181/apps?request_timeout=500ms&skew=200ms`
/// (the path is the chroot).
///
/// ```
/// use std::time::Duration;
/// use leasehold_zookeeper::ZooKeeperOptions;
///
/// let options = ZooKeeperOptions::default()
///     .with_prefix("/billing")
///     .with_clock_skew_tolerance(Duration::from_millis(200))
///     .with_notifications(false);
/// assert_eq!(options.prefix(), "/billing");
/// assert_eq!(options.lease_floor(), Duration::from_millis(400));
/// assert!(!options.notifications());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZooKeeperOptions {
    pub(crate) prefix: String,
    pub(crate) request_timeout: Duration,
    pub(crate) session_timeout: Duration,
    pub(crate) clock_skew_tolerance: Duration,
    pub(crate) notifications: bool,
}

impl Default for ZooKeeperOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            request_timeout: Duration::from_secs(2),
            session_timeout: Duration::from_secs(10),
            clock_skew_tolerance: Duration::from_millis(500),
            notifications: true,
        }
    }
}

impl ZooKeeperOptions {
    leasehold::store::option_accessors! {
        /// The node prefix (default `/leasehold`): an absolute ZooKeeper path of 2 to
        /// [`MAX_PREFIX_LEN`] bytes of printable ASCII without spaces, not ending with `/`, without
        /// empty, `.` or `..` parts.
        ///
        /// ```
        /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().with_prefix("/apps/billing").prefix(), "/apps/billing");
        /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().prefix(), "/leasehold");
        /// ```
        fn with_prefix / prefix: text => "The node prefix.";

        /// How long one request may take before it fails with a transient error (default 2 s). Keep
        /// it well below a third of your lease so the watchdog can retry a renewal in time.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_zookeeper::ZooKeeperOptions::default().with_request_timeout(Duration::from_millis(300));
        /// assert_eq!(o.request_timeout(), Duration::from_millis(300));
        /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().request_timeout(), Duration::from_secs(2));
        /// ```
        fn with_request_timeout / request_timeout: Duration => "The request timeout.";

        /// The session timeout asked of the ensemble (default 10 s). Leases do not depend on it (they
        /// are persistent nodes); it bounds how long the ensemble keeps a vanished client's session.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_zookeeper::ZooKeeperOptions::default().with_session_timeout(Duration::from_secs(4));
        /// assert_eq!(o.session_timeout(), Duration::from_secs(4));
        /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().session_timeout(), Duration::from_secs(10));
        /// ```
        fn with_session_timeout / session_timeout: Duration => "The session timeout asked for.";

        /// How far apart the ensemble servers' clocks may be (default 500 ms). Expiries are
        /// `mtime + ttl` on the clock of the leader that applied the write; after a leader change
        /// another server's clock judges them, so a lease is taken over only once the store's
        /// estimate of the ensemble's time is this far past its end.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_zookeeper::ZooKeeperOptions::default().with_clock_skew_tolerance(Duration::from_millis(100));
        /// assert_eq!(o.clock_skew_tolerance(), Duration::from_millis(100));
        /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().clock_skew_tolerance(), Duration::from_millis(500));
        /// ```
        fn with_clock_skew_tolerance / clock_skew_tolerance: Duration => "The clock-skew tolerance.";

        /// Whether waiters are woken by a persistent recursive watch (default on; ZooKeeper ≥ 3.6).
        ///
        /// ```
        /// assert!(!leasehold_zookeeper::ZooKeeperOptions::default().with_notifications(false).notifications());
        /// assert!(leasehold_zookeeper::ZooKeeperOptions::default().notifications());
        /// ```
        fn with_notifications / notifications: bool => "Whether release notifications are on.";
    }

    /// The shortest lease this store accepts is anything longer than this: twice the clock-skew
    /// tolerance.
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(leasehold_zookeeper::ZooKeeperOptions::default().lease_floor(), Duration::from_secs(1));
    /// ```
    pub fn lease_floor(&self) -> Duration {
        self.clock_skew_tolerance.saturating_mul(2)
    }

    /// Checks every option; the constructors call it.
    ///
    /// # Errors
    ///
    /// A [`ZooKeeperOptionsError`] naming the first option that breaks its rule.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use leasehold_zookeeper::ZooKeeperOptions;
    /// assert!(ZooKeeperOptions::default().validate().is_ok());
    /// let err = ZooKeeperOptions::default().with_request_timeout(Duration::ZERO).validate().unwrap_err();
    /// assert_eq!(err.option(), "request_timeout");
    /// ```
    pub fn validate(&self) -> Result<(), ZooKeeperOptionsError> {
        check_path("prefix", &self.prefix)?;
        for (option, value) in [
            ("request_timeout", self.request_timeout),
            ("session_timeout", self.session_timeout),
        ] {
            leasehold::store::check_duration(option, value)
                .map_err(|e| ZooKeeperOptionKey::invalid(option, e.to_string()))?;
            if value.is_zero() || value > MAX_TIMEOUT {
                return Err(ZooKeeperOptionKey::invalid(
                    option,
                    format!("{value:?} must be more than zero and at most {MAX_TIMEOUT:?}"),
                ));
            }
        }
        if self.clock_skew_tolerance > MAX_CLOCK_SKEW_TOLERANCE {
            return Err(ZooKeeperOptionKey::invalid(
                "clock_skew_tolerance",
                format!(
                    "{:?} is more than {MAX_CLOCK_SKEW_TOLERANCE:?}; clocks that far apart need fixing, not tolerating",
                    self.clock_skew_tolerance
                ),
            ));
        }
        Ok(())
    }
}

/// Checks an absolute ZooKeeper path given as `option` (the prefix, or a URL's chroot): `/`
/// then parts of printable ASCII without spaces, none empty, `.`, `..` or `zookeeper` first.
pub(crate) fn check_path(option: &'static str, path: &str) -> Result<(), ZooKeeperOptionsError> {
    let rule = "must start with '/', hold 1 to 128 bytes of printable ASCII without spaces, \
                and have no empty, '.' or '..' parts (no trailing '/')";
    let Some(rest) = path.strip_prefix('/') else {
        return Err(ZooKeeperOptionKey::invalid(
            option,
            format!("{path:?} {rule}"),
        ));
    };
    let bad = path.len() > MAX_PREFIX_LEN
        || !path.chars().all(|c| c.is_ascii_graphic())
        || rest
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
        || rest.split('/').next() == Some("zookeeper");
    if bad {
        return Err(ZooKeeperOptionKey::invalid(
            option,
            format!("{path:?} {rule}; /zookeeper is the server's own"),
        ));
    }
    Ok(())
}
