//! `ConnectionOptions`: the request timeout, connect timeout and release notifications that
//! networked stores (etcd, NATS) share, with their defaults and their one check.

use std::time::Duration;

use super::option_error::InvalidOption;
use super::option_key::{OptionKey, OptionValue};
use super::timeout::check_timeout;

/// A networked store's connection options: how long one request and one connection attempt may
/// take, and whether releases wake waiters through the store's own notifications. A store's
/// options type holds one in a field and gives it its public builders and getters (with
/// [`option_accessors!`](crate::option_accessors)), so the three are declared, defaulted and
/// checked once.
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{ConnectionOptions, OptionKey, OptionKind};
///
/// # #[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// # struct Key;
/// # impl OptionKey for Key {
/// #     const STORE: &'static str = "Example";
/// #     const ENV_PREFIX: &'static str = "LEASEHOLD_EXAMPLE_";
/// #     const KEYS: &'static [(Self, &'static str, OptionKind)] = &[(Key, "request_timeout", OptionKind::Duration)];
/// # }
/// let c = ConnectionOptions::default();
/// assert_eq!((c.request_timeout, c.connect_timeout, c.notifications), (Duration::from_secs(2), Duration::from_secs(2), true));
/// assert!(c.validate::<Key>().is_ok());
/// let e = ConnectionOptions { request_timeout: Duration::ZERO, ..c }.validate::<Key>().unwrap_err();
/// assert_eq!(e.option(), "request_timeout");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// How long one request may take before it fails with a transient error (default 2 s).
    pub request_timeout: Duration,
    /// How long each connection attempt may take (default 2 s).
    pub connect_timeout: Duration,
    /// Whether waiters are woken through the store's release notifications (default on).
    pub notifications: bool,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            notifications: true,
        }
    }
}

impl ConnectionOptions {
    /// Checks both timeouts with [`check_timeout`], the request timeout first, as options of the
    /// store that `K` names.
    ///
    /// # Errors
    ///
    /// An [`InvalidOption`] naming `request_timeout` or `connect_timeout` and the range allowed.
    pub fn validate<K: OptionKey>(&self) -> Result<(), InvalidOption> {
        check_timeout(K::STORE, "request_timeout", self.request_timeout)?;
        check_timeout(K::STORE, "connect_timeout", self.connect_timeout)
    }

    /// Sets the connection option `key` names (`request_timeout`, `connect_timeout` or
    /// `notifications`, as [`connection_option_keys!`](crate::connection_option_keys) declares
    /// them) to `value`: what a store's [`StoreOptions::set`](super::StoreOptions::set) does
    /// with the keys that are not its own.
    ///
    /// # Errors
    ///
    /// [`OptionValue::mismatch`] for another key, or a value of another kind.
    pub fn set<K: OptionKey>(&mut self, key: K, value: OptionValue) -> Result<(), InvalidOption> {
        match (key.name(), value) {
            ("request_timeout", OptionValue::Duration(d)) => self.request_timeout = d,
            ("connect_timeout", OptionValue::Duration(d)) => self.connect_timeout = d,
            ("notifications", OptionValue::Flag(on)) => self.notifications = on,
            (_, value) => return Err(value.mismatch(key)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::OptionKind;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Key;

    impl OptionKey for Key {
        const STORE: &'static str = "kv";
        const ENV_PREFIX: &'static str = "LEASEHOLD_KV_";
        const KEYS: &'static [(Self, &'static str, OptionKind)] =
            &[(Key, "request_timeout", OptionKind::Duration)];
    }

    fn message(options: ConnectionOptions) -> String {
        options
            .validate::<Key>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// What every networked store's `validate` answers for its connection options (the stores
    /// check that theirs hands them here).
    #[test]
    fn timeouts_are_bounded_with_the_core_message_beyond_its_limit() {
        let defaults = ConnectionOptions::default();
        let e = message(ConnectionOptions {
            request_timeout: Duration::ZERO,
            ..defaults
        });
        assert!(e.contains("request_timeout"), "{e}");
        let e = message(ConnectionOptions {
            connect_timeout: Duration::from_secs(601),
            ..defaults
        });
        assert!(e.contains("connect_timeout") && e.contains("600s"), "{e}");
        let e = message(ConnectionOptions {
            request_timeout: Duration::MAX,
            ..defaults
        });
        assert!(
            e.contains("request_timeout") && e.contains("MAX_DURATION"),
            "beyond the core's limit, the core's message: {e}"
        );
    }
}
