//! Validated lock names.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// The longest lock name, in bytes.
pub const MAX_LOCK_NAME_LEN: usize = 255;

/// The lock-name rule in one line, as a literal (for the `concat!`s of [`NameFault::message`]).
macro_rules! lock_name_rule {
    () => {
        "1-255 bytes of [A-Za-z0-9_.:/-], starting with a letter or digit, every '/' followed by a \
         letter or digit, and no '..'"
    };
}

/// The lock-name rule in one line, as error messages and manual pages state it.
pub(crate) const LOCK_NAME_RULE: &str = lock_name_rule!();

/// A validated lock name.
///
/// Rule: 1–255 bytes of ASCII letters, digits, `_`, `-`, `:`, `.` and `/`, where
///
/// * the first character is a letter or digit;
/// * every `/` is followed by a letter or digit — so a name is one or more `/`-separated
///   segments that each start with a letter or digit: no leading or trailing `/`, no `//`, and
///   no segment such as `.`, `..` or `.hidden`;
/// * no two dots follow each other (`a..b` is refused too).
///
/// So job names such as `billing.nightly` and `reports/daily` are valid, and a name can be put
/// into a URL path or a key layout without any segment that a path normaliser would fold away
/// (`.`, `..`, an empty segment). Every store keeps two different names apart — `a`, `a/b`,
/// `a.b` and `a:1` are four independent locks — and lists one lock's records without another's
/// (see each store's key layout).
///
/// The colon is reserved for namespaces such as `tenant:<id>:<lock>` (see
/// [`Elector::for_tenant`](crate::Elector::for_tenant)); it is accepted here so that namespaced
/// names round-trip, and rejected inside the parts of a tenant name.
///
/// Cloning is cheap (the text is shared).
///
/// ```
/// use leasehold::LockName;
///
/// let name = LockName::new("nightly-report")?;
/// assert_eq!(name.as_str(), "nightly-report");
/// assert!(LockName::new("billing.nightly").is_ok() && LockName::new("reports/daily").is_ok());
/// assert!(LockName::new("bad name").is_err());
/// assert!(LockName::new("reports/").is_err() && LockName::new("a//b").is_err());
/// assert!(LockName::new("a/../b").is_err() && LockName::new("a/.b").is_err());
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockName(Arc<str>);

/// Why a lock name or tenant part was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name was empty.
    #[error("lock name must not be empty (allowed: {})", LOCK_NAME_RULE)]
    Empty,
    /// The name was longer than [`MAX_LOCK_NAME_LEN`].
    #[error(
        "lock name is {len} bytes long; at most {max} bytes are allowed (name starts with {prefix:?})"
    )]
    TooLong {
        /// Length of the rejected name in bytes.
        len: usize,
        /// The limit.
        max: usize,
        /// The first characters of the rejected name.
        prefix: String,
    },
    /// The first character was not an ASCII letter or digit.
    #[error(
        "lock name {name:?} must start with an ASCII letter or digit, found {found:?}; allowed: {}",
        LOCK_NAME_RULE
    )]
    BadFirstChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
    },
    /// A character other than `[A-Za-z0-9_.:/-]` was found.
    #[error(
        "lock name {name:?} contains {found:?} at byte {index}; allowed: {}",
        LOCK_NAME_RULE
    )]
    BadChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
        /// Its byte offset.
        index: usize,
    },
    /// A `/` that is not followed by a letter or digit: a trailing `/`, an empty segment (`//`)
    /// or a segment starting with another character (`/.`, `/..`, `/-`).
    #[error(
        "lock name {name:?} has a '/' at byte {index} that is not followed by a letter or digit \
         (no trailing '/', no '//', no segment starting with '.', '_', '-' or ':'); allowed: {}",
        LOCK_NAME_RULE
    )]
    BadSegment {
        /// The rejected name.
        name: String,
        /// The byte offset of the `/`.
        index: usize,
    },
    /// Two dots in a row (`..`).
    #[error(
        "lock name {name:?} has '..' at byte {index}; dots may not follow each other; allowed: {}",
        LOCK_NAME_RULE
    )]
    DoubleDot {
        /// The rejected name.
        name: String,
        /// The byte offset of the first dot.
        index: usize,
    },
    /// A tenant prefix, tenant id or caller lock name contained the reserved `:` separator.
    #[error(
        "{part} {value:?} must not contain ':' because ':' separates the parts of a tenant lock name"
    )]
    ReservedSeparator {
        /// Which part: `"tenant prefix"`, `"tenant id"` or `"lock name"`.
        part: &'static str,
        /// The rejected value.
        value: String,
    },
    /// The namespaced name would be longer than [`MAX_LOCK_NAME_LEN`].
    #[error(
        "lock name {name:?} is {len} bytes; with tenant {tenant:?} at most {budget} bytes are left for it"
    )]
    OverTenantBudget {
        /// The caller's lock name.
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The tenant namespace (`prefix:id`).
        tenant: String,
        /// The bytes left for the lock name.
        budget: usize,
    },
}

impl LockName {
    /// Validates `name` and wraps it.
    ///
    /// ```
    /// # use leasehold::{LockName, error::NameError};
    /// assert!(matches!(LockName::new(""), Err(NameError::Empty)));
    /// assert!(matches!(LockName::new("-x"), Err(NameError::BadFirstChar { .. })));
    /// assert!(matches!(LockName::new("a b"), Err(NameError::BadChar { .. })));
    /// assert!(matches!(LockName::new("a/"), Err(NameError::BadSegment { index: 1, .. })));
    /// assert!(matches!(LockName::new("a..b"), Err(NameError::DoubleDot { index: 1, .. })));
    /// ```
    pub fn new(name: impl AsRef<str>) -> Result<Self, NameError> {
        let name = name.as_ref();
        validate(name)?;
        Ok(Self(Arc::from(name)))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared text, for cheap use as a metrics label.
    pub(crate) fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }
}

/// Checks `name` against the lock-name rule without allocating.
pub(crate) fn validate(name: &str) -> Result<(), NameError> {
    let Err(fault) = check_lock_name(name) else {
        return Ok(());
    };
    // Every index a fault names is a char boundary: every byte before it is ASCII.
    let found = |index: usize| name.get(index..).and_then(|s| s.chars().next());
    Err(match fault {
        NameFault::Empty => NameError::Empty,
        NameFault::TooLong => NameError::TooLong {
            len: name.len(),
            max: MAX_LOCK_NAME_LEN,
            prefix: name.chars().take(32).collect(),
        },
        NameFault::BadFirstChar => NameError::BadFirstChar {
            name: name.to_owned(),
            found: found(0).unwrap_or_default(),
        },
        NameFault::BadChar { index } => NameError::BadChar {
            name: name.to_owned(),
            found: found(index).unwrap_or_default(),
            index,
        },
        NameFault::BadSegment { index } => NameError::BadSegment {
            name: name.to_owned(),
            index,
        },
        NameFault::DoubleDot { index } => NameError::DoubleDot {
            name: name.to_owned(),
            index,
        },
    })
}

/// What was wrong with a lock name, without the name: what a compile-time check can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameFault {
    /// See [`NameError::Empty`].
    Empty,
    /// See [`NameError::TooLong`].
    TooLong,
    /// See [`NameError::BadFirstChar`].
    BadFirstChar,
    /// See [`NameError::BadChar`].
    BadChar {
        /// The byte offset of the offending character.
        index: usize,
    },
    /// See [`NameError::BadSegment`].
    BadSegment {
        /// The byte offset of the `/`.
        index: usize,
    },
    /// See [`NameError::DoubleDot`].
    DoubleDot {
        /// The byte offset of the first dot.
        index: usize,
    },
}

impl NameFault {
    /// What was wrong and what is allowed (the [`NameError`] message without the name).
    pub const fn message(self) -> &'static str {
        match self {
            Self::Empty => concat!(
                "lock name must not be empty (allowed: ",
                lock_name_rule!(),
                ")"
            ),
            Self::TooLong => concat!(
                "lock name is longer than 255 bytes (leasehold::limits::MAX_LOCK_NAME_LEN); allowed: ",
                lock_name_rule!()
            ),
            Self::BadFirstChar => concat!(
                "lock name must start with an ASCII letter or digit; allowed: ",
                lock_name_rule!()
            ),
            Self::BadChar { .. } => concat!(
                "lock name contains a character outside [A-Za-z0-9_.:/-]; allowed: ",
                lock_name_rule!()
            ),
            Self::BadSegment { .. } => concat!(
                "lock name has a '/' that is not followed by a letter or digit (no trailing '/', \
                 no '//', no segment starting with '.', '_', '-' or ':'); allowed: ",
                lock_name_rule!()
            ),
            Self::DoubleDot { .. } => concat!(
                "lock name has '..'; dots may not follow each other; allowed: ",
                lock_name_rule!()
            ),
        }
    }
}

/// The lock-name rule as a `const fn`: the one implementation, which [`LockName::new`] calls at
/// run time and `#[leasehold::leader_only]` evaluates at compile time (through
/// `leasehold::__private`).
pub const fn check_lock_name(name: &str) -> Result<(), NameFault> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(NameFault::Empty);
    }
    if bytes.len() > MAX_LOCK_NAME_LEN {
        return Err(NameFault::TooLong);
    }
    if !bytes[0].is_ascii_alphanumeric() {
        return Err(NameFault::BadFirstChar);
    }
    let mut index = 0;
    while index < bytes.len() {
        let b = bytes[index];
        if !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':' | b'.' | b'/')) {
            return Err(NameFault::BadChar { index });
        }
        index += 1;
    }
    // Every byte is ASCII from here on.
    let mut index = 0;
    while index + 1 < bytes.len() {
        match (bytes[index], bytes[index + 1]) {
            (b'/', next) if !next.is_ascii_alphanumeric() => {
                return Err(NameFault::BadSegment { index });
            }
            (b'.', b'.') => return Err(NameFault::DoubleDot { index }),
            _ => {}
        }
        index += 1;
    }
    if bytes[bytes.len() - 1] == b'/' {
        return Err(NameFault::BadSegment {
            index: bytes.len() - 1,
        });
    }
    Ok(())
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for LockName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for LockName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for LockName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<&str> for LockName {
    type Error = NameError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for LockName {
    type Error = NameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

/// Anything the electors accept as a lock name: `&str`, `String`, `LockName` or `&LockName`.
///
/// Text is validated on every call; pass a [`LockName`] to validate once.
pub trait IntoLockName {
    /// Converts and validates.
    fn into_lock_name(self) -> Result<LockName, NameError>;
}

impl IntoLockName for LockName {
    fn into_lock_name(self) -> Result<LockName, NameError> {
        Ok(self)
    }
}

impl IntoLockName for &LockName {
    fn into_lock_name(self) -> Result<LockName, NameError> {
        Ok(self.clone())
    }
}

impl IntoLockName for &str {
    fn into_lock_name(self) -> Result<LockName, NameError> {
        LockName::new(self)
    }
}

impl IntoLockName for String {
    fn into_lock_name(self) -> Result<LockName, NameError> {
        LockName::new(self)
    }
}

impl IntoLockName for &String {
    fn into_lock_name(self) -> Result<LockName, NameError> {
        LockName::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in [
            "a",
            "Z9",
            "job_1-x:y",
            "0",
            &"a".repeat(255),
            "billing.nightly",
            "reports/daily",
            "a.b.c",
            "a/b/c",
            "v1.2/x_y-z:w",
            "tenant:acme:reports/daily.csv",
            "a./b",
            "a/b.",
            "9/9",
        ] {
            assert!(LockName::new(ok).is_ok(), "{ok} should be valid");
        }
    }

    #[test]
    fn slashes_start_segments_and_dots_never_pair() {
        for (bad, at) in [
            ("a/", 1),
            ("a//b", 1),
            ("a/.b", 1),
            ("a/..", 1),
            ("a/../b", 1),
            ("a/b/", 3),
            ("a/-b", 1),
            ("a/_b", 1),
            ("a/:b", 1),
        ] {
            assert_eq!(
                LockName::new(bad),
                Err(NameError::BadSegment {
                    name: bad.to_owned(),
                    index: at
                }),
                "{bad}"
            );
        }
        for (bad, at) in [("a..b", 1), ("a...", 1), ("ab/c..", 4), ("a.b..c", 3)] {
            assert_eq!(
                LockName::new(bad),
                Err(NameError::DoubleDot {
                    name: bad.to_owned(),
                    index: at
                }),
                "{bad}"
            );
        }
        for bad in ["/a", ".a", "..", "."] {
            assert!(
                matches!(LockName::new(bad), Err(NameError::BadFirstChar { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn rejects_each_bad_input_with_its_own_error() {
        assert_eq!(LockName::new(""), Err(NameError::Empty));
        assert!(matches!(
            LockName::new("a".repeat(256)),
            Err(NameError::TooLong {
                len: 256,
                max: 255,
                ..
            })
        ));
        assert!(matches!(
            LockName::new("_x"),
            Err(NameError::BadFirstChar { found: '_', .. })
        ));
        assert!(matches!(
            LockName::new(":x"),
            Err(NameError::BadFirstChar { found: ':', .. })
        ));
        assert!(matches!(
            LockName::new("é"),
            Err(NameError::BadFirstChar { found: 'é', .. })
        ));
        assert!(matches!(
            LockName::new("a b"),
            Err(NameError::BadChar {
                found: ' ',
                index: 1,
                ..
            })
        ));
        assert!(matches!(
            LockName::new("a\\b"),
            Err(NameError::BadChar { found: '\\', .. })
        ));
        assert!(matches!(
            LockName::new("a%2Fb"),
            Err(NameError::BadChar { found: '%', .. })
        ));
        assert!(matches!(
            LockName::new("a#b"),
            Err(NameError::BadChar { found: '#', .. })
        ));
        assert!(matches!(
            LockName::new("a{b}"),
            Err(NameError::BadChar { found: '{', .. })
        ));
    }

    #[test]
    fn errors_name_the_rule_and_the_value() {
        for bad in ["a b", "a//b", "a..b", "", "-a"] {
            let msg = LockName::new(bad).map(|_| ()).unwrap_err().to_string();
            assert!(msg.contains(&format!("{bad:?}")) || bad.is_empty(), "{msg}");
            assert!(msg.contains(LOCK_NAME_RULE), "{msg}");
        }
        assert!(LOCK_NAME_RULE.contains("[A-Za-z0-9_.:/-]"));
    }
}
