//! `ResourceName`: the name a fence is checked against.

use std::fmt;
use std::sync::Arc;

use crate::limits::MAX_RESOURCE_NAME_LEN;

/// A validated resource name: what a [`FenceRegister`](super::FenceRegister) keeps one highest
/// fence for (`"orders/42"`, `"billing.nightly"`, `"GET /reports"`).
///
/// Rule: 1–[`MAX_RESOURCE_NAME_LEN`] (255) bytes of UTF-8 without control characters. Anything
/// else printable is allowed, so a name can be a path, a key or a table row's id; stores bind it
/// as a parameter, never splice it into a statement.
///
/// ```
/// use leasehold::fence::ResourceName;
///
/// assert_eq!(ResourceName::new("orders/42")?.as_str(), "orders/42");
/// assert!(ResourceName::new("").is_err());
/// assert!(ResourceName::new("a\nb").is_err());
/// # Ok::<(), leasehold::fence::ResourceNameError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceName(Arc<str>);

/// Why a resource name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceNameError {
    /// The name was empty.
    #[error(
        "resource name must not be empty (allowed: 1-255 bytes of UTF-8 without control characters)"
    )]
    Empty,
    /// The name was longer than [`MAX_RESOURCE_NAME_LEN`].
    #[error(
        "resource name is {len} bytes long; at most {max} bytes are allowed \
         (leasehold::limits::MAX_RESOURCE_NAME_LEN; name starts with {prefix:?})"
    )]
    TooLong {
        /// Length of the rejected name in bytes.
        len: usize,
        /// The limit.
        max: usize,
        /// The first characters of the rejected name.
        prefix: String,
    },
    /// A control character (newline, tab, NUL, …) was found.
    #[error(
        "resource name {name:?} contains the control character {found:?}; \
         only printable characters are allowed"
    )]
    ControlChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
    },
}

impl ResourceName {
    /// Validates `name`.
    ///
    /// # Errors
    ///
    /// [`ResourceNameError`] when the name is empty, too long or holds a control character.
    pub fn new(name: impl AsRef<str>) -> Result<Self, ResourceNameError> {
        let name = name.as_ref();
        if name.is_empty() {
            return Err(ResourceNameError::Empty);
        }
        if name.len() > MAX_RESOURCE_NAME_LEN {
            return Err(ResourceNameError::TooLong {
                len: name.len(),
                max: MAX_RESOURCE_NAME_LEN,
                prefix: name.chars().take(32).collect(),
            });
        }
        if let Some(found) = name.chars().find(|c| c.is_control()) {
            return Err(ResourceNameError::ControlChar {
                name: name.chars().take(64).collect(),
                found,
            });
        }
        Ok(Self(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for ResourceName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ResourceName {
    type Err = ResourceNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<&str> for ResourceName {
    type Error = ResourceNameError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for ResourceName {
    type Error = ResourceNameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_name_is_accepted_and_one_byte_more_is_not() {
        let longest = "r".repeat(MAX_RESOURCE_NAME_LEN);
        assert!(ResourceName::new(&longest).is_ok());
        let e = ResourceName::new(format!("{longest}r")).unwrap_err();
        assert!(
            matches!(
                e,
                ResourceNameError::TooLong {
                    len: 256,
                    max: 255,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("MAX_RESOURCE_NAME_LEN"));
    }

    #[test]
    fn paths_dots_spaces_and_unicode_are_names_but_control_characters_are_not() {
        for ok in ["orders/42", "billing.nightly", "GET /reports", "주문:7"] {
            assert_eq!(
                ResourceName::new(ok).map(|r| r.to_string()),
                Ok(ok.to_owned())
            );
        }
        for bad in ["a\tb", "a\u{0}b", "\r\n"] {
            assert!(
                matches!(
                    ResourceName::new(bad),
                    Err(ResourceNameError::ControlChar { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
