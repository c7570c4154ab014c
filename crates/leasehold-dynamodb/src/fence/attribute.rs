//! `FenceAttribute`: the attribute of a user's item that records the highest fence written to it.

use std::fmt;
use std::sync::Arc;

/// The default fence attribute: `leaseholdFence`.
pub const DEFAULT_FENCE_ATTRIBUTE: &str = "leaseholdFence";

/// The longest fence attribute name, in bytes: DynamoDB's limit for attribute names that serve as
/// secondary-index keys or projected attributes (other attribute names may be longer), so the
/// fence can always be indexed or projected.
pub const MAX_FENCE_ATTRIBUTE_LEN: usize = 255;

/// The name of the number attribute in which a fenced write records its fence (default
/// [`DEFAULT_FENCE_ATTRIBUTE`], `leaseholdFence`).
///
/// Rule (DynamoDB's attribute-name rule, narrowed so that the fence can be indexed): 1–255 bytes
/// of UTF-8, without control characters (which DynamoDB would accept, but which are always a
/// mistake in a name that appears in logs and errors). Any other character is fine: the name
/// always goes through the placeholder `#leasehold_fence`, so DynamoDB's reserved words and
/// special characters never matter. It must not be a key attribute of the table, nor an
/// attribute the application itself writes.
///
/// ```
/// use leasehold_dynamodb::fence::FenceAttribute;
///
/// assert_eq!(FenceAttribute::default().as_str(), "leaseholdFence");
/// assert_eq!(FenceAttribute::new("order.version")?.as_str(), "order.version");
/// assert!(FenceAttribute::new("").is_err());
/// assert!(FenceAttribute::new("a\nb").is_err());
/// assert!(FenceAttribute::new("x".repeat(256)).is_err());
/// # Ok::<(), leasehold_dynamodb::fence::FenceAttributeError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FenceAttribute(Arc<str>);

/// Why a fence attribute name was refused; the message says what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FenceAttributeError {
    /// The name was empty.
    #[error(
        "the fence attribute name must not be empty (allowed: 1-255 bytes of UTF-8 without \
         control characters)"
    )]
    Empty,
    /// The name was longer than [`MAX_FENCE_ATTRIBUTE_LEN`].
    #[error(
        "the fence attribute name is {len} bytes long; at most {max} bytes are allowed (DynamoDB's \
         limit for indexed and projected attributes; the name starts with {prefix:?})"
    )]
    TooLong {
        /// The name's length in bytes.
        len: usize,
        /// The limit.
        max: usize,
        /// The first characters of the name.
        prefix: String,
    },
    /// The name held a control character.
    #[error(
        "the fence attribute name {name:?} contains the control character {found:?}; only \
         printable characters are allowed"
    )]
    ControlChar {
        /// The name (at most its first 64 characters).
        name: String,
        /// The offending character.
        found: char,
    },
}

impl FenceAttribute {
    /// Validates `name`.
    ///
    /// # Errors
    ///
    /// [`FenceAttributeError`] when the name is empty, longer than 255 bytes or holds a control
    /// character.
    pub fn new(name: impl AsRef<str>) -> Result<Self, FenceAttributeError> {
        let name = name.as_ref();
        if name.is_empty() {
            return Err(FenceAttributeError::Empty);
        }
        if name.len() > MAX_FENCE_ATTRIBUTE_LEN {
            return Err(FenceAttributeError::TooLong {
                len: name.len(),
                max: MAX_FENCE_ATTRIBUTE_LEN,
                prefix: name.chars().take(32).collect(),
            });
        }
        if let Some(found) = name.chars().find(|c| c.is_control()) {
            return Err(FenceAttributeError::ControlChar {
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

impl Default for FenceAttribute {
    fn default() -> Self {
        Self(DEFAULT_FENCE_ATTRIBUTE.into())
    }
}

impl fmt::Display for FenceAttribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for FenceAttribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::str::FromStr for FenceAttribute {
    type Err = FenceAttributeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_name_is_accepted_and_one_byte_more_is_not() {
        let longest = "f".repeat(MAX_FENCE_ATTRIBUTE_LEN);
        assert!(FenceAttribute::new(&longest).is_ok());
        assert!(matches!(
            FenceAttribute::new(format!("{longest}f")),
            Err(FenceAttributeError::TooLong { len: 256, .. })
        ));
        // Multi-byte characters count in bytes.
        assert!(FenceAttribute::new("é".repeat(128)).is_err());
    }

    #[test]
    fn reserved_words_and_special_characters_are_names_but_control_characters_are_not() {
        for ok in ["fence", "ttl", "a b", "#x", ":y", "주문"] {
            assert_eq!(
                FenceAttribute::new(ok).map(|a| a.to_string()),
                Ok(ok.to_owned())
            );
        }
        for bad in ["a\tb", "\u{0}", "x\u{7f}"] {
            assert!(
                matches!(
                    FenceAttribute::new(bad),
                    Err(FenceAttributeError::ControlChar { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
