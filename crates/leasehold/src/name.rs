//! Validated lock names.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// The longest lock name, in bytes.
pub const MAX_LOCK_NAME_LEN: usize = 255;

/// A validated lock name.
///
/// Rule: 1–255 bytes; the first character is an ASCII letter or digit; the rest are ASCII letters,
/// digits, `_`, `-` or `:`. The colon is reserved for namespaces such as `tenant:<id>:<lock>` (see
/// [`Elector::for_tenant`](crate::Elector::for_tenant)); it is accepted here so that namespaced names
/// round-trip, and rejected inside the parts of a tenant name.
///
/// Cloning is cheap (the text is shared).
///
/// ```
/// use leasehold::LockName;
///
/// let name = LockName::new("nightly-report")?;
/// assert_eq!(name.as_str(), "nightly-report");
/// assert!(LockName::new("bad name").is_err());
/// # Ok::<(), leasehold::NameError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockName(Arc<str>);

/// Why a lock name or tenant part was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name was empty.
    #[error(
        "lock name must not be empty (allowed: 1-255 bytes of [A-Za-z0-9_:-], starting with a letter or digit)"
    )]
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
    #[error("lock name {name:?} must start with an ASCII letter or digit, found {found:?}")]
    BadFirstChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
    },
    /// A character other than `[A-Za-z0-9_:-]` was found.
    #[error(
        "lock name {name:?} contains {found:?} at byte {index}; allowed characters are [A-Za-z0-9_:-]"
    )]
    BadChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
        /// Its byte offset.
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
    /// # use leasehold::{LockName, NameError};
    /// assert!(matches!(LockName::new(""), Err(NameError::Empty)));
    /// assert!(matches!(LockName::new("-x"), Err(NameError::BadFirstChar { .. })));
    /// assert!(matches!(LockName::new("a.b"), Err(NameError::BadChar { .. })));
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
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return Err(NameError::Empty);
    };
    if bytes.len() > MAX_LOCK_NAME_LEN {
        return Err(NameError::TooLong {
            len: bytes.len(),
            max: MAX_LOCK_NAME_LEN,
            prefix: name.chars().take(32).collect(),
        });
    }
    if !first.is_ascii_alphanumeric() {
        return Err(NameError::BadFirstChar {
            name: name.to_owned(),
            found: name.chars().next().unwrap_or_default(),
        });
    }
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':');
    if let Some(index) = bytes.iter().position(|b| !allowed(b)) {
        return Err(NameError::BadChar {
            name: name.to_owned(),
            // `index` is a char boundary: every byte before it is ASCII.
            found: name[index..].chars().next().unwrap_or_default(),
            index,
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
        for ok in ["a", "Z9", "job_1-x:y", "0", &"a".repeat(255)] {
            assert!(LockName::new(ok).is_ok(), "{ok} should be valid");
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
            LockName::new("a/b"),
            Err(NameError::BadChar { found: '/', .. })
        ));
        assert!(matches!(
            LockName::new("a{b}"),
            Err(NameError::BadChar { found: '{', .. })
        ));
    }

    #[test]
    fn errors_name_the_rule_and_the_value() {
        let msg = LockName::new("a.b").map(|_| ()).unwrap_err().to_string();
        assert!(
            msg.contains("\"a.b\"") && msg.contains("[A-Za-z0-9_:-]"),
            "{msg}"
        );
    }
}
