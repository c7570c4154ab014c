//! Item keys: one item per `(lock, slot)`, partition key `lockName`.
//!
//! | slot | key (no prefix) | key (prefix `app`) |
//! |---|---|---|
//! | 0 | `job` | `app/job` |
//! | n > 0 | `job#slot-n` | `app/job#slot-n` |
//!
//! A `/` inside a lock name is written `%2F` (`reports/daily` → `reports%2Fdaily`; names without
//! `/` are written as they are, so keys of such names are the same as before lock names could
//! hold `/`).
//!
//! The mapping is injective: lock names never contain `#` or `%` (the core's [`LockName`] rule
//! allows `[A-Za-z0-9_.:/-]`), and the lock part of a key never contains `/`, so the last `/`
//! ends the prefix and a `#` can only start the slot suffix. Stores with different prefixes, or
//! none, never share an item (`team` with lock `a/b` is `team/a%2Fb`; `team/a` with lock `b`
//! is `team/a/b`), and a store's listing never reads another's items as its own.

use leasehold::LockName;

use crate::options::DynamoDbOptionsError;

/// The longest key prefix, in bytes (a DynamoDB partition key holds at most 2048 bytes).
pub const MAX_PREFIX_LEN: usize = 1024;

/// The separator between a lock name and its slot number.
pub(crate) const SLOT_SEPARATOR: &str = "#slot-";

/// The partition key of `(lock, slot)` under `prefix` (empty for none).
///
/// ```
/// use leasehold::LockName;
/// use leasehold_dynamodb::item_key;
///
/// let lock = LockName::new("export")?;
/// assert_eq!(item_key("", &lock, 0), "export");
/// assert_eq!(item_key("app", &lock, 2), "app/export#slot-2");
/// assert_eq!(item_key("app", &LockName::new("reports/daily")?, 0), "app/reports%2Fdaily");
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
pub fn item_key(prefix: &str, lock: &LockName, slot: u32) -> String {
    let mut key = String::with_capacity(prefix.len() + lock.as_str().len() + 16);
    if !prefix.is_empty() {
        key.push_str(prefix);
        key.push('/');
    }
    key.push_str(&lock.as_str().replace('/', SLASH));
    if slot > 0 {
        key.push_str(SLOT_SEPARATOR);
        key.push_str(&slot.to_string());
    }
    key
}

/// What starts the key of a session item after the prefix: a lock's part of a key never starts
/// with `#` (lock names are not empty and hold no `#`), so no lock item has it.
pub(crate) const SESSION_MARK: &str = "#session-";

/// The partition key of the session item `id` under `prefix` (empty for none): `#session-ID`
/// after the prefix. It can never be a lock's key (a lock's part never starts with `#`), and
/// listing, state and the stale counts never read it as one.
///
/// ```
/// use leasehold_dynamodb::session_key;
///
/// assert_eq!(session_key("", "0f"), "#session-0f");
/// assert_eq!(session_key("app", "0f"), "app/#session-0f");
/// ```
pub fn session_key(prefix: &str, id: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + SESSION_MARK.len() + id.len() + 1);
    if !prefix.is_empty() {
        key.push_str(prefix);
        key.push('/');
    }
    key.push_str(SESSION_MARK);
    key.push_str(id);
    key
}

/// How a `/` inside a lock name is written in a key.
const SLASH: &str = "%2F";

/// The lock and slot of an item key of a store with `prefix`, if it is one of its keys (the
/// inverse of [`item_key`]).
/// How a `Scan` keeps to this store's keys: with a key prefix, `begins_with(#k, :prefix)` where
/// `:prefix` is `PREFIX/`; without one, `NOT contains(#k, :slash)` (keys of stores with a prefix
/// hold a `/`, and [`item_key`] never writes one without a prefix). Every scan filter in
/// [`expressions`](crate::expressions) comes in these two forms.
#[derive(Debug, Clone)]
pub(crate) struct KeyScope {
    prefix: Option<String>,
}

impl KeyScope {
    /// The scope of a store whose key prefix is `prefix` (empty: none).
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: (!prefix.is_empty()).then(|| format!("{prefix}/")),
        }
    }

    /// The filter of the two forms that fits this scope.
    pub(crate) fn filter(&self, prefixed: &'static str, unprefixed: &'static str) -> &'static str {
        if self.prefix.is_some() {
            prefixed
        } else {
            unprefixed
        }
    }

    /// The placeholder that filter binds and its value.
    pub(crate) fn binding(&self) -> (&'static str, aws_sdk_dynamodb::types::AttributeValue) {
        match &self.prefix {
            Some(p) => (":prefix", crate::record::s(p.clone())),
            None => (":slash", crate::record::s("/")),
        }
    }
}

pub(crate) fn parse_key(prefix: &str, key: &str) -> Option<(LockName, u32)> {
    let rest = if prefix.is_empty() {
        key
    } else {
        key.strip_prefix(prefix)?.strip_prefix('/')?
    };
    if rest.contains('/') {
        return None; // another store's item, under a prefix nested in this one's
    }
    let (lock, slot) = match rest.split_once('#') {
        None => (rest, 0),
        Some((lock, suffix)) => {
            let digits = suffix.strip_prefix(&SLOT_SEPARATOR[1..])?;
            if digits.is_empty()
                || digits.starts_with('0')
                || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            (lock, digits.parse().ok()?)
        }
    };
    // Any other `%` is refused by the name rule, so `%2F` is the one way to write `/`.
    Some((LockName::new(lock.replace(SLASH, "/")).ok()?, slot))
}

/// A key prefix is at most [`MAX_PREFIX_LEN`] bytes of printable ASCII other than `#`, and does not
/// end with `/` (the separator is added).
pub(crate) fn validate_prefix(prefix: &str) -> Result<(), DynamoDbOptionsError> {
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(
            <crate::DynamoDbOptionKey as leasehold::store::OptionKey>::invalid(
                "key_prefix",
                format!(
                    "is {} bytes; at most {MAX_PREFIX_LEN} are allowed",
                    prefix.len()
                ),
            ),
        );
    }
    if let Some(bad) = prefix.chars().find(|c| !c.is_ascii_graphic() || *c == '#') {
        return Err(
            <crate::DynamoDbOptionKey as leasehold::store::OptionKey>::invalid(
                "key_prefix",
                format!("{prefix:?} contains {bad:?}; use printable ASCII without '#' or spaces"),
            ),
        );
    }
    if prefix.ends_with('/') {
        return Err(
            <crate::DynamoDbOptionKey as leasehold::store::OptionKey>::invalid(
                "key_prefix",
                format!("{prefix:?} must not end with '/' (the separator is added)"),
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_back_and_foreign_keys_are_not_this_stores() {
        for prefix in ["", "app", "team/app"] {
            for name in ["a", "a/b", "a.b", "a:1", "x/y/z"] {
                let lock = LockName::new(name).unwrap_or_else(|e| panic!("{e}"));
                for slot in [0, 1, 10, 1023] {
                    let key = item_key(prefix, &lock, slot);
                    assert_eq!(parse_key(prefix, &key), Some((lock.clone(), slot)), "{key}");
                }
            }
        }
        for (prefix, foreign) in [
            ("", "app/a"),
            ("", "a#slot-0"),
            ("", "a#slot-01"),
            ("", "a#slot-"),
            ("", "a#x-1"),
            ("", "a%2fb"),
            ("", "a%2F%2Fb"),
            ("app", "a"),
            ("app", "app/x/a"),
            ("app", "appx/a"),
            ("team", "team/app/a"),
            ("", "#session-0f"),
            ("app", "app/#session-0f"),
        ] {
            assert_eq!(parse_key(prefix, foreign), None, "{prefix:?} {foreign}");
        }
    }

    #[test]
    fn keys_of_different_locks_slots_and_prefixes_never_collide() {
        let names = [
            "a", "a-b", "a:b", "ab", "b", "a/b", "a.b", "a:1", "b/a", "a/b/c",
        ];
        let mut seen = std::collections::HashSet::new();
        for prefix in ["", "a", "a/b", "x", "b"] {
            for name in names {
                let lock = LockName::new(name).unwrap_or_else(|e| panic!("{e}"));
                for slot in [0, 1, 2, 10, 11] {
                    let key = item_key(prefix, &lock, slot);
                    assert!(seen.insert(key.clone()), "duplicate key {key}");
                }
            }
        }
    }

    #[test]
    fn prefixes_are_checked() {
        assert!(validate_prefix("").is_ok());
        assert!(validate_prefix("team/app").is_ok());
        assert!(validate_prefix("a b").is_err());
        assert!(validate_prefix("a#").is_err());
        assert!(validate_prefix("a/").is_err());
        assert!(validate_prefix(&"x".repeat(MAX_PREFIX_LEN + 1)).is_err());
    }
}
