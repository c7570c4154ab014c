//! `connection_option_keys!`: the typed option keys of a networked store whose options hold a
//! [`ConnectionOptions`](crate::store::ConnectionOptions), with the three connection keys
//! declared once for every such store.

/// Declares a store's option key enum and its [`OptionKey`](crate::store::OptionKey) impl, and
/// the store's options error (the alias named after `error`: the core's
/// [`InvalidOption`](crate::store::InvalidOption), documented here), with
/// the keys of its [`ConnectionOptions`](crate::store::ConnectionOptions) —
/// `request_timeout`, `connect_timeout` (durations) and `notifications` (a flag) — where
/// `..connection` stands among the store's own keys (each given as `Variant = "name": Kind`,
/// `Kind` an [`OptionKind`](crate::store::OptionKind)). The enum derives `Debug`, `Clone`,
/// `Copy`, `PartialEq`, `Eq` and `Hash`, is `#[non_exhaustive]`, and its connection variants are
/// `RequestTimeout`, `ConnectTimeout` and `Notifications`, documented with the builders of the
/// options type named after `of`. The store's
/// [`StoreOptions::set`](crate::store::StoreOptions::set) hands those keys to
/// [`ConnectionOptions::set`](crate::store::ConnectionOptions::set).
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{ConnectionOptions, InvalidOption, OptionKey, OptionValue, StoreOptions};
///
/// #[derive(Debug, Default)]
/// pub struct KvOptions { prefix: String, connection: ConnectionOptions }
///
/// impl KvOptions {
///     leasehold::store::option_accessors! {
///         /// The key prefix.
///         fn with_prefix / prefix: text => "The key prefix.";
///         /// The request timeout.
///         fn with_request_timeout / request_timeout: Duration = connection.request_timeout => "The request timeout.";
///         /// The connect timeout.
///         fn with_connect_timeout / connect_timeout: Duration = connection.connect_timeout => "The connect timeout.";
///         /// Whether release notifications are on.
///         fn with_notifications / notifications: bool = connection.notifications => "Whether release notifications are on.";
///     }
/// }
///
/// leasehold::store::connection_option_keys! {
///     /// The options of [`KvOptions`] by name.
///     pub enum KvOptionKey of KvOptions in "kv", "LEASEHOLD_KV_", error KvOptionsError {
///         /// `prefix`: [`KvOptions::with_prefix`].
///         Prefix = "prefix": Text,
///         ..connection,
///     }
/// }
///
/// impl StoreOptions for KvOptions {
///     type Key = KvOptionKey;
///     fn set(mut self, key: KvOptionKey, value: OptionValue) -> Result<Self, InvalidOption> {
///         match (key, value) {
///             (KvOptionKey::Prefix, OptionValue::Text(p)) => self.prefix = p,
///             (key, value) => self.connection.set(key, value)?,
///         }
///         Ok(self)
///     }
/// }
///
/// assert_eq!(KvOptions::known_params(), ["prefix", "request_timeout", "connect_timeout", "notifications"]);
/// let o = KvOptions::default().with_option(KvOptionKey::RequestTimeout, "250ms")?;
/// assert_eq!(o.request_timeout(), Duration::from_millis(250));
/// assert_eq!(KvOptionKey::Notifications.env_var(), "LEASEHOLD_KV_NOTIFICATIONS");
/// let e: KvOptionsError = KvOptions::default().with_option(KvOptionKey::Notifications, "maybe").unwrap_err();
/// assert_eq!(e.option(), "notifications");
/// # Ok::<(), InvalidOption>(())
/// ```
#[macro_export]
macro_rules! connection_option_keys {
    (
        $(#[$meta:meta])*
        pub enum $name:ident of $options:ident in $store:literal, $env:literal, error $error:ident {
            $( $(#[$before_doc:meta])* $before:ident = $before_name:literal: $before_kind:ident, )*
            ..connection,
            $( $(#[$after_doc:meta])* $after:ident = $after_name:literal: $after_kind:ident, )*
        }
    ) => {
        #[doc = concat!("Invalid [`", stringify!($options), "`]: names the option and says what is allowed (see")]
        #[doc = concat!("[`", stringify!($options), "::validate`], which gives examples).")]
        pub type $error = $crate::store::InvalidOption;

        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$before_doc])* $before, )*
            #[doc = concat!("`request_timeout`: [`", stringify!($options), "::with_request_timeout`].")]
            RequestTimeout,
            #[doc = concat!("`connect_timeout`: [`", stringify!($options), "::with_connect_timeout`].")]
            ConnectTimeout,
            #[doc = concat!("`notifications`: [`", stringify!($options), "::with_notifications`].")]
            Notifications,
            $( $(#[$after_doc])* $after, )*
        }

        impl $crate::store::OptionKey for $name {
            const STORE: &'static str = $store;
            const ENV_PREFIX: &'static str = $env;
            const KEYS: &'static [(Self, &'static str, $crate::store::OptionKind)] = &[
                $( (Self::$before, $before_name, $crate::store::OptionKind::$before_kind), )*
                (Self::RequestTimeout, "request_timeout", $crate::store::OptionKind::Duration),
                (Self::ConnectTimeout, "connect_timeout", $crate::store::OptionKind::Duration),
                (Self::Notifications, "notifications", $crate::store::OptionKind::Flag),
                $( (Self::$after, $after_name, $crate::store::OptionKind::$after_kind), )*
            ];
        }
    };
}
