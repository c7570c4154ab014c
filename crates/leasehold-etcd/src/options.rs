//! `EtcdOptions`: key prefix, timeouts, release notifications and TLS files.

use std::path::PathBuf;
use std::time::Duration;

use leasehold::store::{ConnectionOptions, InvalidOption, OptionKey, OptionValue, StoreOptions};

/// The default key prefix: slot `n` of lock `L` is the key `leasehold/L/n`.
///
/// ```
/// assert_eq!(leasehold_etcd::EtcdOptions::default().prefix(), leasehold_etcd::DEFAULT_PREFIX);
/// ```
pub const DEFAULT_PREFIX: &str = "leasehold";

/// The longest key prefix accepted, in bytes.
pub const MAX_PREFIX_LEN: usize = 128;

leasehold::store::connection_option_keys! {
    /// The options of [`EtcdOptions`] by name: the same names in a URL's query, in
    /// [`StoreOptions::with_option`] and in `LEASEHOLD_ETCD_<NAME>` environment variables
    /// ([`StoreOptions::with_env`]).
    ///
    /// ```
    /// use leasehold::store::{OptionKey, StoreOptions};
    /// use leasehold_etcd::{EtcdOptionKey, EtcdOptions};
    ///
    /// let key = EtcdOptionKey::from_name("request_timeout")?;
    /// assert_eq!(key.env_var(), "LEASEHOLD_ETCD_REQUEST_TIMEOUT");
    /// let options = EtcdOptions::default().with_option(key, "750ms")?;
    /// assert_eq!(options.request_timeout(), std::time::Duration::from_millis(750));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub enum EtcdOptionKey of EtcdOptions in "etcd", "LEASEHOLD_ETCD_", error EtcdOptionsError {
        /// `prefix`: [`EtcdOptions::with_prefix`].
        Prefix = "prefix": Text,
        ..connection,
        /// `ca_file`: [`EtcdOptions::with_ca_file`] (`etcds://` only).
        CaFile = "ca_file": NonEmptyText,
        /// `cert_file`: the certificate of [`EtcdOptions::with_client_identity`] (`etcds://` only).
        CertFile = "cert_file": NonEmptyText,
        /// `key_file`: the key of [`EtcdOptions::with_client_identity`] (`etcds://` only).
        KeyFile = "key_file": NonEmptyText,
    }
}

impl StoreOptions for EtcdOptions {
    type Key = EtcdOptionKey;

    fn set(mut self, key: EtcdOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
        use EtcdOptionKey as K;
        match (key, value) {
            (K::Prefix, OptionValue::Text(p)) => self.prefix = p,
            (K::CaFile, OptionValue::Text(path)) => self.ca_file = Some(path.into()),
            (K::CertFile, OptionValue::Text(path)) => self.cert_file = Some(path.into()),
            (K::KeyFile, OptionValue::Text(path)) => self.key_file = Some(path.into()),
            (key, value) => self.connection.set(key, value)?,
        }
        Ok(self)
    }
}

/// Options for [`EtcdStore`](crate::EtcdStore).
///
/// | option | default | meaning |
/// |---|---|---|
/// | `prefix` | `leasehold` | slot `n` of lock `L` is the key `<prefix>/L/n`; the release watch covers `<prefix>/` |
/// | `request_timeout` | 2 s | one request without an answer by then fails with a transient error; a request an unreachable member refused is retried on another endpoint within this budget |
/// | `connect_timeout` | 2 s | each connection attempt to an endpoint fails after this |
/// | `notifications` | on | wake waiters through an etcd watch on release (one watch stream per store) |
/// | `ca_file` | none | `etcds://` only: a PEM file of CA certificates to trust (the system roots are trusted as well) |
/// | `cert_file`, `key_file` | none | `etcds://` only: a PEM client certificate and key for mutual TLS |
///
/// In URLs the same options are query parameters:
/// `etcd://10.0.0.1:2379,10.0.0.2:2379/app?request_timeout=500ms&notifications=off` (the path is
/// the prefix).
///
/// ```
/// use std::time::Duration;
/// use leasehold_etcd::EtcdOptions;
///
/// let options = EtcdOptions::default()
///     .with_prefix("billing")
///     .with_request_timeout(Duration::from_millis(500))
///     .with_notifications(false);
/// assert_eq!(options.prefix(), "billing");
/// assert!(!options.notifications());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdOptions {
    pub(crate) prefix: String,
    pub(crate) connection: ConnectionOptions,
    pub(crate) ca_file: Option<PathBuf>,
    pub(crate) cert_file: Option<PathBuf>,
    pub(crate) key_file: Option<PathBuf>,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            connection: ConnectionOptions::default(),
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }
}

impl EtcdOptions {
    /// A PEM file of CA certificates to trust for `etcds://` (in addition to the system roots).
    ///
    /// ```
    /// let o = leasehold_etcd::EtcdOptions::default().with_ca_file("/etc/etcd/ca.pem");
    /// assert_eq!(o.ca_file(), Some(std::path::Path::new("/etc/etcd/ca.pem")));
    /// ```
    #[must_use]
    pub fn with_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// A PEM client certificate and its key for mutual TLS with `etcds://`.
    ///
    /// ```
    /// let o = leasehold_etcd::EtcdOptions::default().with_client_identity("/etc/etcd/me.pem", "/etc/etcd/me-key.pem");
    /// assert!(o.ca_file().is_none());
    /// ```
    #[must_use]
    pub fn with_client_identity(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        self.cert_file = Some(cert.into());
        self.key_file = Some(key.into());
        self
    }

    /// The CA file, if any.
    ///
    /// ```
    /// assert!(leasehold_etcd::EtcdOptions::default().ca_file().is_none());
    /// ```
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca_file.as_deref()
    }

    leasehold::store::option_accessors! {
        /// The key prefix (default `leasehold`): 1 to [`MAX_PREFIX_LEN`] bytes of printable ASCII
        /// without spaces; it must not start or end with `/`.
        ///
        /// ```
        /// assert_eq!(leasehold_etcd::EtcdOptions::default().with_prefix("apps/billing").prefix(), "apps/billing");
        /// assert_eq!(leasehold_etcd::EtcdOptions::default().prefix(), "leasehold");
        /// ```
        fn with_prefix / prefix: text => "The key prefix.";

        /// How long one request may take before it fails with a transient error (default 2 s).
        /// Requests refused at once (an endpoint that is down, a member without a leader) are sent
        /// again, to another endpoint, within the same budget. Keep it well below a third of your
        /// lease so the watchdog can retry a renewal in time.
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_etcd::EtcdOptions::default().with_request_timeout(Duration::from_millis(300));
        /// assert_eq!(o.request_timeout(), Duration::from_millis(300));
        /// assert_eq!(leasehold_etcd::EtcdOptions::default().request_timeout(), Duration::from_secs(2));
        /// ```
        fn with_request_timeout / request_timeout: Duration = connection.request_timeout => "The request timeout.";

        /// How long each connection attempt to an endpoint may take (default 2 s).
        ///
        /// ```
        /// # use std::time::Duration;
        /// let o = leasehold_etcd::EtcdOptions::default().with_connect_timeout(Duration::from_secs(3));
        /// assert_eq!(o.connect_timeout(), Duration::from_secs(3));
        /// assert_eq!(leasehold_etcd::EtcdOptions::default().connect_timeout(), Duration::from_secs(2));
        /// ```
        fn with_connect_timeout / connect_timeout: Duration = connection.connect_timeout => "The connect timeout.";

        /// Whether waiters are woken through an etcd watch on release (default on). Off, they poll
        /// with the elector's jittered retry policy.
        ///
        /// ```
        /// assert!(!leasehold_etcd::EtcdOptions::default().with_notifications(false).notifications());
        /// assert!(leasehold_etcd::EtcdOptions::default().notifications());
        /// ```
        fn with_notifications / notifications: bool = connection.notifications => "Whether release notifications are on.";
    }

    /// True when TLS files are configured.
    pub(crate) fn has_tls_files(&self) -> bool {
        self.ca_file.is_some() || self.cert_file.is_some() || self.key_file.is_some()
    }

    /// Checks every option; the store's constructors call it.
    ///
    /// # Errors
    ///
    /// An [`EtcdOptionsError`] naming the first option that breaks its rule.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold_etcd::EtcdOptions;
    ///
    /// assert!(EtcdOptions::default().validate().is_ok());
    /// let err = EtcdOptions::default().with_request_timeout(Duration::ZERO).validate().unwrap_err();
    /// assert_eq!(err.option(), "request_timeout");
    /// let err = EtcdOptions::default().with_prefix("/jobs").validate().unwrap_err();
    /// assert_eq!(err.option(), "prefix");
    /// assert!(err.to_string().contains("must not start or end with '/'"));
    /// ```
    pub fn validate(&self) -> Result<(), EtcdOptionsError> {
        let p = &self.prefix;
        let bad_prefix = |reason: String| EtcdOptionKey::invalid("prefix", reason);
        if p.is_empty() || p.len() > MAX_PREFIX_LEN {
            return Err(bad_prefix(format!(
                "must be 1 to {MAX_PREFIX_LEN} bytes, got {} bytes ({p:?})",
                p.len()
            )));
        }
        if let Some(bad) = p.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(bad_prefix(format!(
                "{p:?} contains {bad:?}; use printable ASCII without spaces"
            )));
        }
        if p.starts_with('/') || p.ends_with('/') || p.contains("//") {
            return Err(bad_prefix(format!(
                "{p:?} must not start or end with '/' nor contain '//' (keys are <prefix>/<lock>/<slot>)"
            )));
        }
        self.connection.validate::<EtcdOptionKey>()?;
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => Err(EtcdOptionKey::invalid(
                "cert_file",
                "is given without key_file; give both (client_identity) or neither",
            )),
            (None, Some(_)) => Err(EtcdOptionKey::invalid(
                "key_file",
                "is given without cert_file; give both (client_identity) or neither",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_must_make_unambiguous_keys() {
        assert!(EtcdOptions::default().validate().is_ok());
        assert!(EtcdOptions::default().with_prefix("a/b").validate().is_ok());
        for bad in ["", "/a", "a/", "a//b", "a b", "ä", &"x".repeat(129)] {
            let e = EtcdOptions::default().with_prefix(bad).validate();
            assert!(e.is_err(), "{bad:?} must be rejected");
        }
        let e = EtcdOptions::default()
            .with_request_timeout(Duration::ZERO)
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("request_timeout"), "{e}");
        let half = EtcdOptions {
            cert_file: Some("c.pem".into()),
            ..EtcdOptions::default()
        };
        assert_eq!(half.validate().map_err(|e| e.option()), Err("cert_file"));
    }
}
