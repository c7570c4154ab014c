//! Validated lock names.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

pub use leasehold_rules::NameError;
use leasehold_rules::check_lock_name;

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
        check_lock_name(name)?;
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
    use leasehold_rules::LOCK_NAME_RULE;

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
