//! Typed option keys: each store names its options once, as an enum, and reads them the same way
//! from a URL's query, from code and from the environment.
//!
//! A store declares its keys with [`OptionKey`] (the name each key goes by, the kind of value it
//! takes) and says how a value is set on its options type with [`StoreOptions::set`]. Everything
//! else is the toolkit's: [`StoreOptions::with_query`] reads every key from a URL's query,
//! [`StoreOptions::with_option`] sets one from text in code (a configuration file, a flag), and
//! [`StoreOptions::with_env`] reads `LEASEHOLD_<STORE>_<KEY>` variables. One reader per kind of
//! value ([`OptionKind::read`]) serves all three, so a duration, a flag or a number is spelled
//! the same wherever it comes from, and a bad one gets the same message.
//!
//! ```
//! use std::time::Duration;
//! use leasehold::store::{InvalidOption, OptionKey, OptionKind, OptionValue, StoreOptions, UrlOptions};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq)]
//! enum Key { Prefix, Timeout }
//!
//! impl OptionKey for Key {
//!     const STORE: &'static str = "Example";
//!     const ENV_PREFIX: &'static str = "LEASEHOLD_EXAMPLE_";
//!     const KEYS: &'static [(Self, &'static str, OptionKind)] = &[
//!         (Key::Prefix, "prefix", OptionKind::Text),
//!         (Key::Timeout, "timeout", OptionKind::Duration),
//!     ];
//! }
//!
//! #[derive(Debug, Clone, Default, PartialEq)]
//! struct Options { prefix: String, timeout: Duration }
//!
//! impl StoreOptions for Options {
//!     type Key = Key;
//!     fn set(mut self, key: Key, value: OptionValue) -> Result<Self, InvalidOption> {
//!         match (key, value) {
//!             (Key::Prefix, OptionValue::Text(p)) => self.prefix = p,
//!             (Key::Timeout, OptionValue::Duration(d)) => self.timeout = d,
//!             (key, value) => return Err(value.mismatch(key)),
//!         }
//!         Ok(self)
//!     }
//! }
//!
//! let mut query = UrlOptions::parse("timeout=250ms", &Options::known_params())?;
//! let options = Options::default().with_query(&mut query)?.with_option(Key::Prefix, "jobs")?;
//! assert_eq!(options, Options { prefix: "jobs".into(), timeout: Duration::from_millis(250) });
//! assert_eq!(Key::from_name("timeout")?, Key::Timeout);
//!
//! let e = Options::default().with_option(Key::Timeout, "soon").unwrap_err();
//! assert_eq!(e.option(), "timeout");
//! assert!(e.to_string().contains("a duration such as 500ms"), "{e}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt::Debug;
use std::time::Duration;

use leasehold_rules::parse_duration;

use super::option_error::InvalidOption;
use super::secret::Secret;
use super::url::UrlError;
use super::url::UrlOptions;

/// The kind of value an option takes, which decides how its text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionKind {
    /// Text as given, even empty (the store's `validate` judges it).
    Text,
    /// Text that must not be empty.
    NonEmptyText,
    /// A secret (a token, a password): held as a [`Secret`], never printed; must not be empty.
    Secret,
    /// A duration in the core's grammar (`500ms`, `2s`, `1m30s`).
    Duration,
    /// `true`/`on`/`yes`/`1` or `false`/`off`/`no`/`0` (any case); in a URL, a key given without
    /// a value (`?notifications`) is `true`.
    Flag,
    /// A whole number from 0 to `u32::MAX`.
    Count,
}

/// A value read for one option, of the kind its key takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionValue {
    /// For [`OptionKind::Text`] and [`OptionKind::NonEmptyText`].
    Text(String),
    /// For [`OptionKind::Secret`].
    Secret(Secret),
    /// For [`OptionKind::Duration`].
    Duration(Duration),
    /// For [`OptionKind::Flag`].
    Flag(bool),
    /// For [`OptionKind::Count`].
    Count(u32),
}

impl OptionValue {
    /// The error for a value that is not of the kind `key` takes: what a store's
    /// [`StoreOptions::set`] answers in its last match arm (the toolkit never passes one).
    #[must_use]
    pub fn mismatch<K: OptionKey>(&self, key: K) -> InvalidOption {
        InvalidOption::new(
            K::STORE,
            key.name(),
            format!("expected {}", key.kind().expected()),
        )
    }
}

impl OptionKind {
    /// Reads `text` as a value of this kind.
    ///
    /// # Errors
    ///
    /// What is allowed (for example "a duration such as 500ms, 2s or 1m (…)"), when `text` is
    /// not a value of this kind.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leasehold::store::{OptionKind, OptionValue};
    ///
    /// assert_eq!(OptionKind::Duration.read("1m30s"), Ok(OptionValue::Duration(Duration::from_secs(90))));
    /// assert_eq!(OptionKind::Flag.read("OFF"), Ok(OptionValue::Flag(false)));
    /// assert!(OptionKind::Count.read("-1").unwrap_err().contains("whole number"));
    /// ```
    pub fn read(self, text: &str) -> Result<OptionValue, String> {
        let refused = || Err(self.expected());
        match self {
            Self::Text => Ok(OptionValue::Text(text.to_owned())),
            Self::NonEmptyText if text.is_empty() => refused(),
            Self::NonEmptyText => Ok(OptionValue::Text(text.to_owned())),
            Self::Secret if text.is_empty() => refused(),
            Self::Secret => Ok(OptionValue::Secret(Secret::new(text))),
            Self::Duration => parse_duration(text)
                .map(OptionValue::Duration)
                .map_err(|e| format!("{} ({e})", self.expected())),
            Self::Flag => match text.to_ascii_lowercase().as_str() {
                "" | "true" | "on" | "yes" | "1" => Ok(OptionValue::Flag(true)),
                "false" | "off" | "no" | "0" => Ok(OptionValue::Flag(false)),
                _ => refused(),
            },
            Self::Count => text.parse().map(OptionValue::Count).or_else(|_| refused()),
        }
    }

    /// What a value of this kind looks like, for messages.
    #[must_use]
    pub fn expected(self) -> String {
        match self {
            Self::Text => "text".to_owned(),
            Self::NonEmptyText | Self::Secret => "a non-empty value".to_owned(),
            Self::Duration => "a duration such as 500ms, 2s or 1m".to_owned(),
            Self::Flag => "true or false (also on/off, yes/no, 1/0)".to_owned(),
            Self::Count => "a whole number (u32)".to_owned(),
        }
    }
}

/// One option of a store, by name: implemented by an enum with a variant per option.
///
/// The names are what URLs, [`StoreOptions::with_option`] callers and
/// [`StoreOptions::with_env`] use (`request_timeout` in a URL, `LEASEHOLD_ETCD_REQUEST_TIMEOUT`
/// in the environment). See the [module documentation](self) for a whole store's keys.
pub trait OptionKey: Copy + Eq + Debug + Send + Sync + 'static {
    /// The store, as messages name it (`"etcd"`, `"NATS"`).
    const STORE: &'static str;
    /// The prefix of the store's environment variables, ending in `_` (`"LEASEHOLD_ETCD_"`).
    const ENV_PREFIX: &'static str;
    /// Every key with its name and the kind of value it takes, in the order messages list them.
    const KEYS: &'static [(Self, &'static str, OptionKind)];

    /// An invalid option of this store named `option` (a key's name, or a URL part such as a
    /// chroot), for `reason`: the error every check of the store's options answers.
    ///
    /// ```
    /// # use leasehold::store::{OptionKey, OptionKind};
    /// # #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    /// # struct Key;
    /// # impl OptionKey for Key {
    /// #     const STORE: &'static str = "Example";
    /// #     const ENV_PREFIX: &'static str = "LEASEHOLD_EXAMPLE_";
    /// #     const KEYS: &'static [(Self, &'static str, OptionKind)] = &[(Key, "prefix", OptionKind::Text)];
    /// # }
    /// let e = Key::invalid("prefix", "must not be empty");
    /// assert_eq!(e.to_string(), "invalid Example store option prefix: must not be empty");
    /// ```
    #[must_use]
    fn invalid(option: &'static str, reason: impl Into<String>) -> InvalidOption {
        InvalidOption::new(Self::STORE, option, reason)
    }

    /// The key's name (`"request_timeout"`), from [`KEYS`](Self::KEYS).
    fn name(self) -> &'static str {
        Self::KEYS
            .iter()
            .find(|(k, _, _)| *k == self)
            .map_or("", |(_, name, _)| name)
    }

    /// The kind of value it takes, from [`KEYS`](Self::KEYS).
    fn kind(self) -> OptionKind {
        Self::KEYS
            .iter()
            .find(|(k, _, _)| *k == self)
            .map_or(OptionKind::Text, |(_, _, kind)| *kind)
    }

    /// Other names a URL may give it (ZooKeeper's `skew` for `clock_skew_tolerance`); none by
    /// default.
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }

    /// The key named `name` (or one of its aliases).
    ///
    /// # Errors
    ///
    /// [`UrlError::UnknownKey`] listing the known names when none matches.
    fn from_name(name: &str) -> Result<Self, UrlError> {
        Self::KEYS
            .iter()
            .map(|(k, _, _)| *k)
            .find(|k| k.name() == name || k.aliases().contains(&name))
            .ok_or_else(|| UrlError::UnknownKey {
                key: super::url::redact_url(name),
                known: Self::KEYS.iter().map(|(_, n, _)| (*n).to_owned()).collect(),
            })
    }

    /// The environment variable that sets this key: [`ENV_PREFIX`](Self::ENV_PREFIX) and the
    /// name in capitals (`LEASEHOLD_ETCD_REQUEST_TIMEOUT`).
    fn env_var(self) -> String {
        format!("{}{}", Self::ENV_PREFIX, self.name().to_ascii_uppercase())
    }
}

/// A store's options type, set by typed keys: the store writes [`set`](Self::set), the toolkit
/// gives the rest.
pub trait StoreOptions: Sized {
    /// The store's keys.
    type Key: OptionKey;

    /// Sets one option to `value`, which is of the kind `key` takes. Values are judged later, by
    /// the store's `validate` (the constructors call it), as with the named setters.
    ///
    /// # Errors
    ///
    /// [`OptionValue::mismatch`] for a value of another kind (never passed by the toolkit).
    fn set(self, key: Self::Key, value: OptionValue) -> Result<Self, InvalidOption>;

    /// Sets the option `key` from its text form, as a URL or an environment variable would.
    ///
    /// # Errors
    ///
    /// An [`InvalidOption`] naming the key and what is allowed when `text` is not a value of its
    /// kind (a secret's text is never quoted).
    fn with_option(self, key: Self::Key, text: &str) -> Result<Self, InvalidOption> {
        let value = key.kind().read(text).map_err(|expected| {
            let shown = if key.kind() == OptionKind::Secret {
                "***".to_owned()
            } else {
                format!("{text:?}")
            };
            InvalidOption::new(
                <Self::Key as OptionKey>::STORE,
                key.name(),
                format!("{shown}: expected {expected}"),
            )
        })?;
        self.set(key, value)
    }

    /// Reads every key's environment variable (see [`OptionKey::env_var`]) that is set.
    ///
    /// # Errors
    ///
    /// As [`with_option`](Self::with_option), or for a variable that is not valid Unicode.
    fn with_env(self) -> Result<Self, InvalidOption> {
        self.with_vars(|name| std::env::var_os(name))
    }

    /// Like [`with_env`](Self::with_env), reading the variables through `var` (a test's map, a
    /// configuration source).
    ///
    /// # Errors
    ///
    /// As [`with_env`](Self::with_env).
    fn with_vars(
        mut self,
        mut var: impl FnMut(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, InvalidOption> {
        for key in <Self::Key as OptionKey>::KEYS.iter().map(|(k, _, _)| *k) {
            let name = key.env_var();
            let Some(value) = var(&name) else { continue };
            let text = value.into_string().map_err(|_| {
                InvalidOption::new(
                    <Self::Key as OptionKey>::STORE,
                    key.name(),
                    format!("{name} is not valid Unicode"),
                )
            })?;
            self = self.with_option(key, &text)?;
        }
        Ok(self)
    }

    /// Takes every key (by its name, then its aliases) from a URL's query and sets it.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] naming the parameter and what is allowed (or the store's
    /// [`UrlError::InvalidOption`] from [`set`](Self::set)).
    fn with_query(mut self, query: &mut UrlOptions) -> Result<Self, UrlError> {
        for key in <Self::Key as OptionKey>::KEYS.iter().map(|(k, _, _)| *k) {
            for name in std::iter::once(key.name()).chain(key.aliases().iter().copied()) {
                if let Some(value) = query.read(name, key.kind())? {
                    self = self.set(key, value)?;
                }
            }
        }
        Ok(self)
    }

    /// Every name and alias of the store's keys: the known parameters of its URLs (with any
    /// URL-only ones the store adds, such as a token).
    #[must_use]
    fn known_params() -> Vec<&'static str> {
        <Self::Key as OptionKey>::KEYS
            .iter()
            .flat_map(|(k, name, _)| std::iter::once(*name).chain(k.aliases().iter().copied()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Key {
        Name,
        Token,
        Wait,
        On,
        Count,
    }

    impl OptionKey for Key {
        const STORE: &'static str = "Test";
        const ENV_PREFIX: &'static str = "LEASEHOLD_TEST_";
        const KEYS: &'static [(Self, &'static str, OptionKind)] = &[
            (Key::Name, "name", OptionKind::NonEmptyText),
            (Key::Token, "token", OptionKind::Secret),
            (Key::Wait, "wait", OptionKind::Duration),
            (Key::On, "on", OptionKind::Flag),
            (Key::Count, "count", OptionKind::Count),
        ];
        fn aliases(self) -> &'static [&'static str] {
            if self == Key::Wait { &["w"] } else { &[] }
        }
    }

    #[derive(Debug, Default, PartialEq)]
    struct Options {
        set: Vec<(Key, OptionValue)>,
    }

    impl StoreOptions for Options {
        type Key = Key;
        fn set(mut self, key: Key, value: OptionValue) -> Result<Self, InvalidOption> {
            if key == Key::Count && !matches!(value, OptionValue::Count(_)) {
                return Err(value.mismatch(key));
            }
            self.set.push((key, value));
            Ok(self)
        }
    }

    #[test]
    fn the_three_sources_read_alike() -> Result<(), Box<dyn std::error::Error>> {
        let mut query = UrlOptions::parse("w=2s&on&count=7", &Options::known_params())?;
        let from_url = Options::default().with_query(&mut query)?;
        let from_code = Options::default()
            .with_option(Key::Wait, "2s")?
            .with_option(Key::On, "")?
            .with_option(Key::Count, "7")?;
        let vars = [
            ("LEASEHOLD_TEST_WAIT", "2s"),
            ("LEASEHOLD_TEST_ON", "yes"),
            ("LEASEHOLD_TEST_COUNT", "7"),
        ];
        let from_env = Options::default()
            .with_vars(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| (*v).into()))?;
        assert_eq!(from_url, from_code);
        assert_eq!(from_env, from_code);
        assert_eq!(Key::from_name("w")?, Key::Wait);
        Ok(())
    }

    #[test]
    fn bad_values_name_the_key_and_never_a_secret() {
        let e = Options::default().with_option(Key::Token, "").unwrap_err();
        assert_eq!((e.option(), e.store()), ("token", "Test"));
        let e = Options::default()
            .with_option(Key::Count, "many")
            .unwrap_err();
        assert!(
            e.to_string().contains("\"many\": expected a whole number"),
            "{e}"
        );
        let e = Key::from_name("colour").unwrap_err().to_string();
        assert!(
            e.contains("\"colour\"") && e.contains("name, token, wait, on, count"),
            "{e}"
        );
        let mut query =
            UrlOptions::parse("token=", &Options::known_params()).unwrap_or_else(|e| panic!("{e}"));
        let e = Options::default()
            .with_query(&mut query)
            .unwrap_err()
            .to_string();
        assert!(e.contains("token") && e.contains("non-empty"), "{e}");
        let e = OptionValue::Flag(true).mismatch(Key::Count);
        assert!(e.to_string().contains("whole number"), "{e}");
    }
}
