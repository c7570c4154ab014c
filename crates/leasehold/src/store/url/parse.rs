//! Store URLs for store authors: one parser for the URL a store is opened from, so that every
//! store spells, decodes and checks its URL the same way.
//!
//! * [`StoreUrl::parse`] reads the URL with the [`url`] crate; [`StoreUrl::require_host`] turns a
//!   missing host (`postgres:/`, `redis://?db=1`) into an error instead of a silent default.
//! * [`StoreUrl::options`] (or [`UrlOptions::parse`] for a bare query string) reads the query
//!   string: each value is percent-decoded once (`+` stays a plus), a key given twice or a key
//!   the store does not know is an error that lists the known keys, and typed getters
//!   ([`duration`](UrlOptions::duration), [`integer`](UrlOptions::integer),
//!   [`flag`](UrlOptions::flag), [`text`](UrlOptions::text)) name the key and what is allowed
//!   when a value is wrong.
//! * Keys a store passes on to its driver are declared as known and left in
//!   [`UrlOptions::remaining`].
//!
//! Errors never quote a secret: values of secret-looking keys (`password`, `token`, …) are shown
//! as `***`, and [`UrlError::into_open_error`] redacts the URL with [`redact_url`].
//!
//! ```
//! use std::time::Duration;
//! use leasehold::store::{StoreUrl, UrlError};
//!
//! const KNOWN: &[&str] = &["prefix", "timeout", "tls"];
//! let url = StoreUrl::parse("kv://cache.internal:7000?prefix=a%2Fb&timeout=250ms&tls=on")?;
//! assert_eq!(url.require_host("kv://HOST:PORT")?, "cache.internal");
//! let mut options = url.options(KNOWN)?;
//! assert_eq!(options.text("prefix")?.as_deref(), Some("a/b"));
//! assert_eq!(options.duration("timeout")?, Some(Duration::from_millis(250)));
//! assert_eq!(options.flag("tls")?, Some(true));
//!
//! let typo = StoreUrl::parse("kv://h?prefx=a")?.options(KNOWN).err();
//! assert!(matches!(typo, Some(UrlError::UnknownKey { .. })));
//! assert!(StoreUrl::parse("kv:/")?.require_host("kv://HOST").is_err());
//! # Ok::<(), UrlError>(())
//! ```

use std::str::FromStr;
use std::time::Duration;

use super::decode::{percent_decode, percent_decode_lossy};
use super::open::OpenError;
use super::redact::{is_secret_param, redact_url};
use crate::store::option_error::InvalidOption;
use crate::store::option_key::{OptionKind, OptionValue};
use crate::store::secret::Secret;

/// Why a store URL is not acceptable. The message says what is wrong and what is allowed, and
/// never quotes a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The URL does not parse.
    #[error(
        "{reason}; percent-encode reserved characters in the user name, password and values \
         (for example `/` as %2F, `@` as %40, `?` as %3F, `#` as %23, `%` as %25)"
    )]
    Syntax {
        /// What the parser found.
        reason: String,
    },
    /// A network store's URL names no host.
    #[error("a host is required: write {expected}")]
    MissingHost {
        /// The form expected, e.g. `postgres://USER@HOST:PORT/DATABASE`.
        expected: String,
    },
    /// A query key the store does not know (a typo would otherwise be ignored silently).
    #[error("unknown parameter {key:?}; known parameters are {}", known.join(", "))]
    UnknownKey {
        /// The key found.
        key: String,
        /// The keys the store accepts.
        known: Vec<String>,
    },
    /// A query key given more than once.
    #[error("parameter {key:?} is given more than once")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A value or key that is not valid percent-encoded UTF-8.
    #[error("parameter {key:?}: {value:?} is not valid percent-encoded UTF-8 (write `%` as %25)")]
    BadEncoding {
        /// The key (as written).
        key: String,
        /// The value as written (`***` for a secret key).
        value: String,
    },
    /// A value of the wrong kind.
    #[error("parameter {key}={value:?}: expected {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value, decoded (`***` for a secret key).
        value: String,
        /// What is allowed, e.g. "a duration such as 500ms or 2s".
        expected: String,
    },
    /// The options the URL gave (with the caller's) break a rule of the store: its
    /// `validate()`, which a store's URL parser runs last.
    #[error(transparent)]
    InvalidOption(InvalidOption),
}

impl From<InvalidOption> for UrlError {
    fn from(e: InvalidOption) -> Self {
        Self::InvalidOption(e)
    }
}

impl UrlError {
    /// A [`UrlError::Syntax`] saying `reason`: what a store's URL reader answers for a URL of
    /// its scheme that it cannot read.
    ///
    /// ```
    /// use leasehold::store::UrlError;
    /// assert!(matches!(UrlError::syntax("the port must be 1-65535"), UrlError::Syntax { .. }));
    /// ```
    pub fn syntax(reason: impl Into<String>) -> Self {
        Self::Syntax {
            reason: reason.into(),
        }
    }

    /// The [`OpenError::Invalid`] for `url` (redacted) with this error as the reason.
    #[must_use]
    pub fn into_open_error(self, url: &str) -> OpenError {
        OpenError::invalid(url, self)
    }
}

/// A parsed store URL. See the module documentation of `leasehold::store` (store URLs).
#[derive(Clone)]
pub struct StoreUrl {
    url: ::url::Url,
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StoreUrl")
            .field(&redact_url(self.url.as_str()))
            .finish()
    }
}

impl std::fmt::Display for StoreUrl {
    /// The URL, redacted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact_url(self.url.as_str()))
    }
}

impl StoreUrl {
    /// Parses `url`.
    ///
    /// # Errors
    ///
    /// [`UrlError::Syntax`] if it is not a URL, e.g. a password holds an unencoded `/` or `?`.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let url = url.trim();
        let parsed = ::url::Url::parse(url).map_err(|e| UrlError::Syntax {
            reason: format!("not a valid URL: {e}"),
        })?;
        if userinfo_is_ambiguous(url, &parsed) {
            // Parsing on would hand parts of the password to the path or query, where an
            // error message could quote them.
            return Err(UrlError::Syntax {
                reason: "the user name or password holds an unencoded `/`, `?`, `#` or `@`"
                    .to_owned(),
            });
        }
        Ok(Self { url: parsed })
    }

    /// The scheme, in lower case.
    pub fn scheme(&self) -> &str {
        self.url.scheme()
    }

    /// The host, if the URL names a non-empty one (still percent-encoded, as `url` keeps it).
    pub fn host(&self) -> Option<&str> {
        self.url.host_str().filter(|h| !h.is_empty())
    }

    /// Parses a URL whose authority lists several servers (etcd, ZooKeeper):
    /// `scheme://[user[:password]@]host[:port][,host[:port]…][/path][?query]`. Returns the URL
    /// read with its first server — its scheme, user-info, path and query, as [`parse`](Self::parse)
    /// reads them — and every server as `host:port` ([`host_port`], `default_port` added where
    /// none is given; `what` names a server in messages).
    ///
    /// # Errors
    ///
    /// [`UrlError::MissingHost`] naming `expected` when no server is given, or the errors of
    /// [`parse`](Self::parse) and [`host_port`].
    ///
    /// ```
    /// use leasehold::store::StoreUrl;
    /// let (url, servers) = StoreUrl::parse_servers("zk://app:pw@a:2182,b,[::1]/jobs?x=1", "zk://HOST", 2181, "server")?;
    /// assert_eq!(servers, ["a:2182", "b:2181", "[::1]:2181"]);
    /// assert_eq!((url.scheme(), url.url().path()), ("zk", "/jobs"));
    /// assert!(StoreUrl::parse_servers("zk://", "zk://HOST", 2181, "server").is_err());
    /// # Ok::<(), leasehold::store::UrlError>(())
    /// ```
    pub fn parse_servers(
        url: &str,
        expected: &str,
        default_port: u16,
        what: &str,
    ) -> Result<(Self, Vec<String>), UrlError> {
        let missing = || UrlError::MissingHost {
            expected: expected.to_owned(),
        };
        let url = url.trim();
        // `etcd:` or `zk:/x`: no authority, so no server.
        let (scheme, rest) = url.split_once("://").ok_or_else(missing)?;
        // The authority ends at the first `/`, `?` or `#`; its servers follow the last `@`.
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, after) = rest.split_at(authority_len);
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((info, hosts)) => (Some(info), hosts),
            None => (None, authority),
        };
        let first = hosts.split(',').next().unwrap_or_default();
        let single = format!(
            "{scheme}://{}{first}{after}",
            userinfo.map(|u| format!("{u}@")).unwrap_or_default()
        );
        let parsed = Self::parse(&single)?;
        if hosts.is_empty() {
            return Err(missing());
        }
        let servers = hosts
            .split(',')
            .map(|host| host_port(host, default_port, what))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((parsed, servers))
    }

    /// The host.
    ///
    /// # Errors
    ///
    /// [`UrlError::MissingHost`] naming `expected` (e.g. `redis://HOST:PORT/DB`) when the URL
    /// has no host: `postgres:/`, `postgres:`, `mysql://`, `redis://?db=1`.
    pub fn require_host(&self, expected: &str) -> Result<&str, UrlError> {
        self.host().ok_or_else(|| UrlError::MissingHost {
            expected: expected.to_owned(),
        })
    }

    /// The parsed URL (it holds the password: print [`StoreUrl`]'s `Display` instead).
    pub fn url(&self) -> &::url::Url {
        &self.url
    }

    /// The user name and password of the URL's user-info (`scheme://USER:PASSWORD@HOST`),
    /// percent-decoded, the password held as a [`Secret`] that never prints; `None` when the URL
    /// has no user-info. A store decides whether a user name without a password is allowed.
    ///
    /// ```
    /// use leasehold::store::StoreUrl;
    /// let url = StoreUrl::parse("etcd://app:p%40ss@10.0.0.1:2379")?;
    /// let info = url.user_info()?.expect("user-info");
    /// assert_eq!(info.user, "app");
    /// let password = info.password.expect("a password");
    /// assert_eq!((password.expose(), format!("{password:?}").as_str()), ("p@ss", "***"));
    /// assert!(StoreUrl::parse("etcd://10.0.0.1")?.user_info()?.is_none());
    /// # Ok::<(), leasehold::store::UrlError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`UrlError::Syntax`] for a password without a user name (`scheme://:PASSWORD@HOST`) or
    /// user-info that is not valid percent-encoded UTF-8; the message never quotes it.
    pub fn user_info(&self) -> Result<Option<UserInfo>, UrlError> {
        let syntax = |reason: String| UrlError::Syntax { reason };
        let password = self.url.password().filter(|p| !p.is_empty());
        if self.url.username().is_empty() {
            return match password {
                None => Ok(None),
                Some(_) => Err(syntax(format!(
                    "a password needs a user name ({}://USER:PASSWORD@HOST)",
                    self.scheme()
                ))),
            };
        }
        let user = percent_decode(self.url.username())
            .ok_or_else(|| syntax("the user name is not valid percent-encoded UTF-8".into()))?;
        let password = match self.url.password() {
            None => None,
            Some(raw) => Some(Secret::new(percent_decode(raw).ok_or_else(|| {
                syntax("the password is not valid percent-encoded UTF-8".into())
            })?)),
        };
        Ok(Some(UserInfo { user, password }))
    }

    /// The user name and password of the URL's user-info, as [`user_info`](Self::user_info)
    /// reads them, a missing password given as an empty one: what stores whose servers take a
    /// user name alone (etcd, ZooKeeper's `digest` scheme) authenticate with.
    ///
    /// ```
    /// use leasehold::store::StoreUrl;
    /// let (user, password) = StoreUrl::parse("zk://app@10.0.0.1:2181")?.user_password()?.expect("user-info");
    /// assert_eq!((user.as_str(), password.expose()), ("app", ""));
    /// # Ok::<(), leasehold::store::UrlError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`user_info`](Self::user_info).
    pub fn user_password(&self) -> Result<Option<(String, Secret)>, UrlError> {
        Ok(self
            .user_info()?
            .map(|info| (info.user, info.password.unwrap_or_default())))
    }

    /// The query string's options, checked against the keys the store knows.
    ///
    /// # Errors
    ///
    /// As [`UrlOptions::parse`].
    pub fn options(&self, known: &[&str]) -> Result<UrlOptions, UrlError> {
        UrlOptions::parse(self.url.query().unwrap_or(""), known)
    }
}

/// The user-info of a store URL, decoded ([`StoreUrl::user_info`]). Its `Debug` shows the
/// password as `***`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserInfo {
    /// The user name.
    pub user: String,
    /// The password, if the URL gives one (`USER:@HOST` gives an empty one).
    pub password: Option<Secret>,
}

/// True when the user-info as meant (up to the last `@`) is not the one the parser found: a
/// password with an unencoded delimiter. An `@` inside a query value of a URL without
/// user-info (`postgres://h/db?user=a@b`) is not one.
fn userinfo_is_ambiguous(raw: &str, parsed: &::url::Url) -> bool {
    let Some((_, rest)) = raw.split_once("://") else {
        return false;
    };
    let Some((meant, _)) = rest.rsplit_once('@') else {
        return false;
    };
    let parsed_userinfo = !parsed.username().is_empty() || parsed.password().is_some();
    if !parsed_userinfo && meant.contains('=') {
        return false;
    }
    let decode = percent_decode_lossy;
    let mut found = decode(parsed.username());
    if let Some(password) = parsed.password() {
        found.push(':');
        found.push_str(&decode(password));
    }
    decode(meant) != found
}

/// The options of a query string (`key=value&…`), decoded, each key known and given once. See
/// the module documentation of `leasehold::store` (store URLs).
///
/// A known key ending in `*` stands for every key with that prefix (`options[*` would accept
/// `options[search_path]`).
#[derive(Clone)]
pub struct UrlOptions {
    /// `(key, value)` in the order given, `None` once taken.
    pairs: Vec<Option<(String, String)>>,
}

impl std::fmt::Debug for UrlOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.pairs.iter().flatten().map(|(k, v)| (k, shown(k, v))))
            .finish()
    }
}

/// `value` for an error message: `***` when `key` names a secret, else redacted as a URL (a
/// parameter may hold one, such as `endpoint=http://user:password@host`).
fn shown(key: &str, value: &str) -> String {
    if is_secret_param(key) {
        "***".to_owned()
    } else {
        redact_url(value)
    }
}

/// Checks one `host[:port]` (or `[v6]:port`) of a list of servers in a store URL and adds
/// `default_port` when none is given. `what` names the item in messages (`"endpoint"`,
/// `"server"`).
///
/// # Errors
///
/// [`UrlError::Syntax`] for an empty item, an unclosed `[`, a host name with other characters
/// than letters, digits, `-`, `.`, `_` (or an `[IPv6]` address), or a port outside 1–65535.
///
/// ```
/// use leasehold::store::host_port;
/// assert_eq!(host_port("zk1", 2181, "server")?, "zk1:2181");
/// assert_eq!(host_port("[::1]:7", 2181, "server")?, "[::1]:7");
/// assert!(host_port("zk1:0", 2181, "server").is_err());
/// # Ok::<(), leasehold::store::UrlError>(())
/// ```
pub fn host_port(host: &str, default_port: u16, what: &str) -> Result<String, UrlError> {
    let syntax = |reason: String| UrlError::Syntax { reason };
    if host.is_empty() {
        return Err(syntax(format!(
            "empty {what}; list them as HOST:PORT,HOST:PORT"
        )));
    }
    let (name, port) = if let Some(v6) = host.strip_prefix('[') {
        let (addr, tail) = v6
            .split_once(']')
            .ok_or_else(|| syntax(format!("{what} {host:?}: unclosed '[' in an IPv6 address")))?;
        (format!("[{addr}]"), tail.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name.to_owned(), Some(port)),
            None => (host.to_owned(), None),
        }
    };
    if name.is_empty()
        || name
            .chars()
            .any(|c| !(c.is_ascii_alphanumeric() || "-._[]:".contains(c)))
    {
        return Err(syntax(format!(
            "{what} {host:?}: invalid host name (letters, digits, `-`, `.`, `_` or an [IPv6] address)"
        )));
    }
    let port = match port {
        None | Some("") => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| syntax(format!("{what} {host:?}: port must be 1-65535")))?,
    };
    Ok(format!("{name}:{port}"))
}

fn matches_known(key: &str, known: &str) -> bool {
    match known.split_once('*') {
        Some((prefix, suffix)) => {
            key.len() > prefix.len() + suffix.len()
                && key.starts_with(prefix)
                && key.ends_with(suffix)
        }
        None => key == known,
    }
}

impl UrlOptions {
    /// Parses a query string (without its `?`). Empty pieces (`a=1&&b=2`) are skipped; a key
    /// without `=` has the empty value.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadEncoding`] for a bad `%` escape or non-UTF-8 bytes,
    /// [`UrlError::UnknownKey`] for a key not in `known` (the message lists them), and
    /// [`UrlError::DuplicateKey`] for a key given twice.
    pub fn parse(query: &str, known: &[&str]) -> Result<Self, UrlError> {
        let mut pairs: Vec<Option<(String, String)>> = Vec::new();
        for piece in query.split('&').filter(|p| !p.is_empty()) {
            let (raw_key, raw_value) = piece.split_once('=').unwrap_or((piece, ""));
            let bad = || UrlError::BadEncoding {
                key: raw_key.to_owned(),
                value: shown(raw_key, raw_value),
            };
            let key = percent_decode(raw_key).ok_or_else(bad)?;
            let value = percent_decode(raw_value).ok_or_else(bad)?;
            if !known.iter().any(|k| matches_known(&key, k)) {
                return Err(UrlError::UnknownKey {
                    // A mistyped URL can put a password in the key's place.
                    key: redact_url(&key),
                    known: known.iter().map(|k| (*k).to_owned()).collect(),
                });
            }
            if pairs.iter().flatten().any(|(k, _)| *k == key) {
                return Err(UrlError::DuplicateKey { key });
            }
            pairs.push(Some((key, value)));
        }
        Ok(Self { pairs })
    }

    /// Takes the decoded value of `key`, if given (a second call returns `None`).
    pub fn take(&mut self, key: &str) -> Option<String> {
        let slot = self
            .pairs
            .iter_mut()
            .find(|p| p.as_ref().is_some_and(|(k, _)| k == key))?;
        slot.take().map(|(_, v)| v)
    }

    /// Takes `key` and converts its value with `convert`; an `Err` becomes
    /// [`UrlError::BadValue`] saying `expected`.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] when `convert` fails.
    pub fn typed<T, E>(
        &mut self,
        key: &str,
        expected: &str,
        convert: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, UrlError> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        convert(&value).map(Some).map_err(|_| UrlError::BadValue {
            key: key.to_owned(),
            value: shown(key, &value),
            expected: expected.to_owned(),
        })
    }

    /// Takes `key` and reads its value as `kind` (the one reader of
    /// [`StoreOptions`](crate::store::StoreOptions), so a URL, code and the environment spell
    /// values alike).
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] naming the key and what is allowed.
    pub fn read(&mut self, key: &str, kind: OptionKind) -> Result<Option<OptionValue>, UrlError> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        kind.read(&value)
            .map(Some)
            .map_err(|expected| UrlError::BadValue {
                key: key.to_owned(),
                value: shown(key, &value),
                expected,
            })
    }

    /// Takes `key` as non-empty text.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] when the value is empty.
    pub fn text(&mut self, key: &str) -> Result<Option<String>, UrlError> {
        Ok(match self.read(key, OptionKind::NonEmptyText)? {
            Some(OptionValue::Text(t)) => Some(t),
            _ => None,
        })
    }

    /// Takes `key` as a non-empty secret (a token, a password): held as a [`Secret`], which
    /// never prints; an error about it shows `***`.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] when the value is empty.
    pub fn secret(&mut self, key: &str) -> Result<Option<Secret>, UrlError> {
        Ok(match self.read(key, OptionKind::Secret)? {
            Some(OptionValue::Secret(s)) => Some(s),
            _ => None,
        })
    }

    /// Takes `key` as a duration in [`parse_duration`](leasehold_rules::parse_duration)'s syntax
    /// (`500ms`, `2s`, `1m30s`).
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] naming the key and the parser's reason.
    pub fn duration(&mut self, key: &str) -> Result<Option<Duration>, UrlError> {
        Ok(match self.read(key, OptionKind::Duration)? {
            Some(OptionValue::Duration(d)) => Some(d),
            _ => None,
        })
    }

    /// Takes `key` as a whole number of type `T` (e.g. `u32`).
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] when the value is not a number of that type.
    pub fn integer<T: FromStr>(&mut self, key: &str) -> Result<Option<T>, UrlError> {
        let expected = format!(
            "a whole number ({})",
            std::any::type_name::<T>()
                .rsplit("::")
                .next()
                .unwrap_or("integer")
        );
        self.typed(key, &expected, T::from_str)
    }

    /// Takes `key` as a boolean: `true`/`on`/`yes`/`1` or `false`/`off`/`no`/`0` (any case); a
    /// key given without a value (`?create_table`) is `true`.
    ///
    /// # Errors
    ///
    /// [`UrlError::BadValue`] for any other value.
    pub fn flag(&mut self, key: &str) -> Result<Option<bool>, UrlError> {
        Ok(match self.read(key, OptionKind::Flag)? {
            Some(OptionValue::Flag(on)) => Some(on),
            _ => None,
        })
    }

    /// The options not taken, `(key, decoded value)` in the order given: those a store passes
    /// on to its driver.
    pub fn remaining(&self) -> Vec<(String, String)> {
        self.pairs.iter().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["a", "b", "password", "opt[*]"];

    fn options(query: &str) -> Result<UrlOptions, UrlError> {
        UrlOptions::parse(query, KNOWN)
    }

    #[test]
    fn user_info_holds_the_password_as_a_secret_and_never_quotes_it() -> Result<(), UrlError> {
        let url = StoreUrl::parse("zk://u%3Aser:p%2Fw%3F@h:2181")?;
        let info = url.user_info()?.ok_or(UrlError::Syntax {
            reason: "no user-info".into(),
        })?;
        assert_eq!(info.user, "u:ser");
        assert_eq!(info.password.as_ref().map(Secret::expose), Some("p/w?"));
        assert!(!format!("{info:?}").contains("p/w?"), "{info:?}");
        // A user name alone: no password; none at all: no user-info.
        let alone = StoreUrl::parse("nats://app@h")?.user_info()?;
        assert_eq!(
            alone.map(|i| (i.user, i.password)),
            Some(("app".into(), None))
        );
        assert_eq!(StoreUrl::parse("etcd://h")?.user_info()?, None);
        // A password without a user name, or one that does not decode: refused, not quoted.
        for (url, quoted) in [
            ("etcd://:hunter22@h", "hunter22"),
            ("etcd://u:%FFhunter@h", "hunter"),
        ] {
            let Err(e) = StoreUrl::parse(url)?.user_info() else {
                panic!("{url} must be refused");
            };
            assert!(!e.to_string().contains(quoted), "{e}");
        }
        Ok(())
    }

    #[test]
    fn a_secret_option_is_a_secret() -> Result<(), UrlError> {
        let mut o = options("password=s3cr3t&a=")?;
        let secret = o
            .secret("password")?
            .map(|s| format!("{s:?} {}", s.expose()));
        assert_eq!(secret.as_deref(), Some("*** s3cr3t"));
        assert!(options("password=")?.secret("password").is_err());
        assert_eq!(o.secret("password")?, None, "taken once");
        Ok(())
    }

    #[test]
    fn values_are_decoded_once_and_plus_stays() -> Result<(), UrlError> {
        let mut o = options("a=x%2520y+z&b=%C3%A9&opt[k]=1")?;
        assert_eq!(o.take("a").as_deref(), Some("x%20y+z"));
        assert_eq!(o.take("b").as_deref(), Some("é"));
        assert_eq!(o.take("a"), None);
        assert_eq!(o.remaining(), vec![("opt[k]".to_owned(), "1".to_owned())]);
        Ok(())
    }

    #[test]
    fn unknown_duplicate_and_badly_encoded_keys_are_errors() {
        let e = options("c=1")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("\"c\"") && e.contains("a, b, password"), "{e}");
        assert!(matches!(
            options("opt[]=1"),
            Err(UrlError::UnknownKey { .. })
        ));
        assert!(matches!(
            options("a=1&a=2"),
            Err(UrlError::DuplicateKey { .. })
        ));
        assert!(matches!(options("a=%2"), Err(UrlError::BadEncoding { .. })));
        assert!(matches!(
            options("a=%FF"),
            Err(UrlError::BadEncoding { .. })
        ));
        let e = options("password=%zzhunter2")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!e.contains("hunter2"), "{e}");
        let e = UrlOptions::parse("a=http://u:hunter2@h/%zz", KNOWN)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("http://u:***@h") && !e.contains("hunter2"),
            "{e}"
        );
    }

    #[test]
    fn typed_values_name_the_key_and_what_is_allowed() -> Result<(), UrlError> {
        let mut o = options("a=soon&b=x&password=hunter2")?;
        let e = o
            .duration("a")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("a=\"soon\"") && e.contains("500ms"), "{e}");
        let e = o
            .integer::<u32>("b")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("whole number (u32)"), "{e}");
        let e = o
            .integer::<u32>("password")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("***") && !e.contains("hunter2"), "{e}");
        let mut o = options("a&b=OFF")?;
        assert_eq!(o.flag("a")?, Some(true));
        assert_eq!(o.flag("b")?, Some(false));
        assert!(options("a=maybe")?.flag("a").is_err());
        assert!(options("a=")?.text("a").is_err());
        Ok(())
    }

    #[test]
    fn hosts_are_required_where_asked() -> Result<(), UrlError> {
        for url in [
            "postgres:/",
            "postgres:",
            "mysql://",
            "redis://?x",
            "mysql:///db",
        ] {
            let parsed = StoreUrl::parse(url)?;
            assert!(
                matches!(parsed.require_host("X"), Err(UrlError::MissingHost { .. })),
                "{url}"
            );
        }
        assert_eq!(
            StoreUrl::parse("postgres://u:p@db:5/x")?.require_host("X")?,
            "db"
        );
        assert!(matches!(
            StoreUrl::parse("redis://:pw@/0"),
            Err(UrlError::Syntax { .. })
        ));
        for url in [
            "postgres://u:p@ss/w?rd#x@h/x",
            "postgres://u:p:x@y/z?w=1#v@h/x",
            "redis://:a#b@h",
            "redis://:p?x@h/0",
        ] {
            assert!(
                matches!(StoreUrl::parse(url), Err(UrlError::Syntax { .. })),
                "{url}"
            );
        }
        for url in [
            "postgres://h/x?user=a@b",
            "postgres://us%40er:p%2Fw@h/x",
            "redis://:pa ss@h",
            "redis://h",
        ] {
            assert!(StoreUrl::parse(url).is_ok(), "{url}");
        }
        assert!(matches!(
            StoreUrl::parse("postgres://u:s3c/r3t@host/db"),
            Err(UrlError::Syntax { .. })
        ));
        let url = StoreUrl::parse("postgres://u:hunter2@db/x")?;
        assert!(!format!("{url} {url:?}").contains("hunter2"));
        Ok(())
    }
}
