//! `NatsOptions`: the bucket, timeouts and release notifications.

use std::time::Duration;

use leasehold::store::{ConnectionOptions, InvalidOption, OptionKey, OptionValue, StoreOptions};

/// The default KV bucket: its JetStream stream is `KV_leasehold`.
///
/// ```
/// assert_eq!(leasehold_nats::NatsOptions::default().bucket(), leasehold_nats::DEFAULT_BUCKET);
/// ```
pub const DEFAULT_BUCKET: &str = "leasehold";

/// The longest bucket name accepted, in bytes.
pub const MAX_BUCKET_LEN: usize = 64;

leasehold::store::connection_option_keys! {
    /// The options of [`NatsOptions`] by name: the same names in a URL's query, in
    /// [`StoreOptions::with_option`] and in `LEASEHOLD_NATS_<NAME>` environment variables
    /// ([`StoreOptions::with_env`]).
    ///
    /// ```
    /// use leasehold::store::{OptionKey, StoreOptions};
    /// use leasehold_nats::{NatsOptionKey, NatsOptions};
    ///
    /// let key = NatsOptionKey::from_name("request_timeout")?;
    /// assert_eq!(key.env_var(), "LEASEHOLD_NATS_REQUEST_TIMEOUT");
    /// let options = NatsOptions::default().with_option(key, "750ms")?;
    /// assert_eq!(options.request_timeout(), std::time::Duration::from_millis(750));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub enum NatsOptionKey of NatsOptions in "NATS", "LEASEHOLD_NATS_", error NatsOptionsError {
        /// `bucket`: [`NatsOptions::with_bucket`].
        Bucket = "bucket": NonEmptyText,
        ..connection,
    }
}

impl StoreOptions for NatsOptions {
    type Key = NatsOptionKey;

    fn set(mut self, key: NatsOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
        match (key, value) {
            (NatsOptionKey::Bucket, OptionValue::Text(b)) => self.bucket = b,
            (key, value) => self.connection.set(key, value)?,
        }
        Ok(self)
    }
}

/// Options for [`NatsStore`](crate::NatsStore).
///
/// | option | default | meaning |
/// |---|---|---|
/// | `bucket` | `leasehold` | the JetStream KV bucket (stream `KV_<bucket>`), created when absent |
/// | `request_timeout` | 2 s | one request without an answer by then fails with a transient error |
/// | `connect_timeout` | 2 s | each connection attempt fails after this |
/// | `notifications` | on | wake waiters through a KV watch on release (one watch per store) |
///
/// In URLs the same options are query parameters, and the path is the bucket:
/// `nats://10.0.0.1:4222/jobs?request_timeout=500ms&notifications=off`.
///
/// ```
/// use std::time::Duration;
/// use leasehold_nats::NatsOptions;
///
/// let options = NatsOptions::default()
///     .with_bucket("billing")
///     .with_request_timeout(Duration::from_millis(500))
///     .with_notifications(false);
/// assert_eq!(options.bucket(), "billing");
/// assert!(!options.notifications());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsOptions {
    pub(crate) bucket: String,
    pub(crate) connection: ConnectionOptions,
}

impl Default for NatsOptions {
    fn default() -> Self {
        Self {
            bucket: DEFAULT_BUCKET.to_owned(),
            connection: ConnectionOptions::default(),
        }
    }
}

impl NatsOptions {
    leasehold::store::option_accessors! {
        /// The KV bucket (default `leasehold`): 1 to [`MAX_BUCKET_LEN`] letters, digits, `-` and
        /// `_` (JetStream's rule for bucket names).
        ///
        /// ```
        /// assert_eq!(leasehold_nats::NatsOptions::default().with_bucket("jobs").bucket(), "jobs");
        /// assert_eq!(leasehold_nats::NatsOptions::default().bucket(), "leasehold");
        /// ```
        fn with_bucket / bucket: text => "The bucket.";

        /// How long one request may take before it fails with a transient error (default 2 s).
        /// Keep it well below a third of your lease so the watchdog can retry a renewal in time.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_nats::NatsOptions::default().with_request_timeout(Duration::from_millis(300));
        /// assert_eq!(o.request_timeout(), Duration::from_millis(300));
        /// assert_eq!(leasehold_nats::NatsOptions::default().request_timeout(), Duration::from_secs(2));
        /// ```
        fn with_request_timeout / request_timeout: Duration = connection.request_timeout => "The request timeout.";

        /// How long each connection attempt may take (default 2 s).
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_nats::NatsOptions::default().with_connect_timeout(Duration::from_secs(3));
        /// assert_eq!(o.connect_timeout(), Duration::from_secs(3));
        /// assert_eq!(leasehold_nats::NatsOptions::default().connect_timeout(), Duration::from_secs(2));
        /// ```
        fn with_connect_timeout / connect_timeout: Duration = connection.connect_timeout => "The connect timeout.";

        /// Whether waiters are woken through a KV watch on release (default on). Off, they poll
        /// with the elector's jittered retry policy.
        ///
        /// ```
        /// assert!(!leasehold_nats::NatsOptions::default().with_notifications(false).notifications());
        /// assert!(leasehold_nats::NatsOptions::default().notifications());
        /// ```
        fn with_notifications / notifications: bool = connection.notifications => "Whether release notifications are on.";
    }

    /// Checks every option; the store's constructors call it.
    ///
    /// # Errors
    ///
    /// A [`NatsOptionsError`] naming the first option that breaks its rule.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold_nats::NatsOptions;
    ///
    /// assert!(NatsOptions::default().validate().is_ok());
    /// let err = NatsOptions::default().with_request_timeout(Duration::ZERO).validate().unwrap_err();
    /// assert_eq!(err.option(), "request_timeout");
    /// let err = NatsOptions::default().with_bucket("a.b").validate().unwrap_err();
    /// assert_eq!(err.option(), "bucket");
    /// assert!(err.to_string().contains("letters, digits, '-' and '_'"));
    /// ```
    pub fn validate(&self) -> Result<(), NatsOptionsError> {
        let b = &self.bucket;
        if b.is_empty() || b.len() > MAX_BUCKET_LEN {
            return Err(NatsOptionKey::invalid(
                "bucket",
                format!(
                    "must be 1 to {MAX_BUCKET_LEN} bytes, got {} bytes ({b:?})",
                    b.len()
                ),
            ));
        }
        if let Some(bad) = b
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(NatsOptionKey::invalid(
                "bucket",
                format!("{b:?} contains {bad:?}; use letters, digits, '-' and '_'"),
            ));
        }
        self.connection.validate::<NatsOptionKey>()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_timeouts_are_checked() {
        assert!(NatsOptions::default().validate().is_ok());
        assert!(
            NatsOptions::default()
                .with_bucket("a-b_C9")
                .validate()
                .is_ok()
        );
        for bad in ["", "a.b", "a b", "a*", "a>", "ä", &"x".repeat(65)] {
            let e = NatsOptions::default().with_bucket(bad).validate();
            assert_eq!(e.map_err(|e| e.option()), Err("bucket"), "{bad:?}");
        }
        // The connection options' checks are the core's (`ConnectionOptions::validate`).
        let e = NatsOptions::default().with_connect_timeout(Duration::from_secs(601));
        assert_eq!(e.validate().map_err(|e| e.option()), Err("connect_timeout"));
    }
}
