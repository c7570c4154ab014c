//! The lock-name rule.

use std::error::Error;
use std::fmt;

/// The longest lock name, in bytes.
pub const MAX_LOCK_NAME_LEN: usize = 255;

/// The lock-name rule in one line, as every [`NameError`] about a name's characters states it.
///
/// ```
/// assert!(leasehold_rules::LOCK_NAME_RULE.contains("[A-Za-z0-9_.:/-]"));
/// ```
pub const LOCK_NAME_RULE: &str = "1-255 bytes of [A-Za-z0-9_.:/-], starting with a letter or \
                                  digit, every '/' followed by a letter or digit, and no '..'";

/// Why a lock name or tenant part was rejected.
///
/// The variants up to [`DoubleDot`](Self::DoubleDot) are [`check_lock_name`]'s; the last two are
/// leasehold's tenant namespaces' (`tenant:<id>:<lock>`), which build on the lock-name rule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name was empty.
    Empty,
    /// The name was longer than [`MAX_LOCK_NAME_LEN`].
    TooLong {
        /// Length of the rejected name in bytes.
        len: usize,
        /// The limit.
        max: usize,
        /// The first characters of the rejected name.
        prefix: String,
    },
    /// The first character was not an ASCII letter or digit.
    BadFirstChar {
        /// The rejected name.
        name: String,
        /// The offending character.
        found: char,
    },
    /// A character other than `[A-Za-z0-9_.:/-]` was found.
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
    BadSegment {
        /// The rejected name.
        name: String,
        /// The byte offset of the `/`.
        index: usize,
    },
    /// Two dots in a row (`..`).
    DoubleDot {
        /// The rejected name.
        name: String,
        /// The byte offset of the first dot.
        index: usize,
    },
    /// A tenant prefix, tenant id or caller lock name contained the reserved `:` separator.
    ReservedSeparator {
        /// Which part: `"tenant prefix"`, `"tenant id"` or `"lock name"`.
        part: &'static str,
        /// The rejected value.
        value: String,
    },
    /// The namespaced name would be longer than [`MAX_LOCK_NAME_LEN`].
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

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = LOCK_NAME_RULE;
        match self {
            Self::Empty => write!(f, "lock name must not be empty (allowed: {rule})"),
            Self::TooLong { len, max, prefix } => write!(
                f,
                "lock name is {len} bytes long; at most {max} bytes are allowed \
                 (leasehold::limits::MAX_LOCK_NAME_LEN; the name starts with {prefix:?}); allowed: {rule}"
            ),
            Self::BadFirstChar { name, found } => write!(
                f,
                "lock name {name:?} must start with an ASCII letter or digit, found {found:?}; \
                 allowed: {rule}"
            ),
            Self::BadChar { name, found, index } => write!(
                f,
                "lock name {name:?} contains {found:?} at byte {index}; allowed: {rule}"
            ),
            Self::BadSegment { name, index } => write!(
                f,
                "lock name {name:?} has a '/' at byte {index} that is not followed by a letter or \
                 digit (no trailing '/', no '//', no segment starting with '.', '_', '-' or ':'); \
                 allowed: {rule}"
            ),
            Self::DoubleDot { name, index } => write!(
                f,
                "lock name {name:?} has '..' at byte {index}; dots may not follow each other; \
                 allowed: {rule}"
            ),
            Self::ReservedSeparator { part, value } => write!(
                f,
                "{part} {value:?} must not contain ':' because ':' separates the parts of a \
                 tenant lock name"
            ),
            Self::OverTenantBudget {
                name,
                len,
                tenant,
                budget,
            } => write!(
                f,
                "lock name {name:?} is {len} bytes; with tenant {tenant:?} at most {budget} bytes \
                 are left for it"
            ),
        }
    }
}

impl Error for NameError {}

/// Checks `name` against the lock-name rule ([`LOCK_NAME_RULE`]); allocates only to report a
/// refusal.
///
/// A name is 1 to [`MAX_LOCK_NAME_LEN`] bytes of ASCII letters, digits, `_`, `-`, `:`, `.` and
/// `/`, where the first character is a letter or digit, every `/` is followed by a letter or
/// digit (so every `/`-separated segment starts with one: no leading or trailing `/`, no `//`,
/// no `.`, `..` or `.hidden` segment), and no two dots follow each other.
///
/// # Errors
///
/// The first rule broken, reading the name from its start: [`NameError::Empty`],
/// [`NameError::TooLong`], [`NameError::BadFirstChar`], [`NameError::BadChar`], then
/// [`NameError::BadSegment`] or [`NameError::DoubleDot`] (whichever comes first in the name).
///
/// ```
/// use leasehold_rules::{NameError, check_lock_name};
///
/// assert_eq!(check_lock_name("reports/daily.csv"), Ok(()));
/// assert_eq!(
///     check_lock_name("a/../b"),
///     Err(NameError::BadSegment { name: "a/../b".to_owned(), index: 1 })
/// );
/// ```
pub fn check_lock_name(name: &str) -> Result<(), NameError> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err(NameError::Empty);
    };
    if name.len() > MAX_LOCK_NAME_LEN {
        return Err(NameError::TooLong {
            len: name.len(),
            max: MAX_LOCK_NAME_LEN,
            prefix: name.chars().take(32).collect(),
        });
    }
    if !first.is_ascii_alphanumeric() {
        return Err(NameError::BadFirstChar {
            name: name.to_owned(),
            found: first,
        });
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.' | '/');
    if let Some((index, found)) = name.char_indices().find(|&(_, c)| !allowed(c)) {
        return Err(NameError::BadChar {
            name: name.to_owned(),
            found,
            index,
        });
    }
    // Every character is ASCII from here on: byte offsets are character offsets.
    let bytes = name.as_bytes();
    for (index, pair) in bytes.windows(2).enumerate() {
        match (pair[0], pair[1]) {
            (b'/', next) if !next.is_ascii_alphanumeric() => {
                return Err(NameError::BadSegment {
                    name: name.to_owned(),
                    index,
                });
            }
            (b'.', b'.') => {
                return Err(NameError::DoubleDot {
                    name: name.to_owned(),
                    index,
                });
            }
            _ => {}
        }
    }
    if name.ends_with('/') {
        return Err(NameError::BadSegment {
            name: name.to_owned(),
            index: name.len() - 1,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str) -> NameError {
        match check_lock_name(name) {
            Err(e) => e,
            Ok(()) => panic!("{name:?} must be refused"),
        }
    }

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in [
            "a",
            "Z9",
            "job_1-x:y",
            "0",
            &"a".repeat(MAX_LOCK_NAME_LEN),
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
            assert_eq!(check_lock_name(ok), Ok(()), "{ok} should be valid");
        }
    }

    /// Empty: "" is refused, one character is the shortest name.
    #[test]
    fn empty_edge() {
        assert_eq!(check_lock_name("x"), Ok(()));
        assert_eq!(refused(""), NameError::Empty);
        assert_eq!(
            refused("").to_string(),
            format!("lock name must not be empty (allowed: {LOCK_NAME_RULE})")
        );
    }

    /// Length: 255 bytes pass, 256 do not — counted in bytes, not characters.
    #[test]
    fn length_edge() {
        assert_eq!(check_lock_name(&"a".repeat(MAX_LOCK_NAME_LEN)), Ok(()));
        let long = "a".repeat(MAX_LOCK_NAME_LEN + 1);
        assert_eq!(
            refused(&long),
            NameError::TooLong {
                len: 256,
                max: 255,
                prefix: "a".repeat(32)
            }
        );
        // 128 two-byte characters: 256 bytes, too long before any character is looked at.
        assert!(matches!(
            refused(&"é".repeat(128)),
            NameError::TooLong { len: 256, .. }
        ));
        assert_eq!(
            refused(&long).to_string(),
            format!(
                "lock name is 256 bytes long; at most 255 bytes are allowed \
                 (leasehold::limits::MAX_LOCK_NAME_LEN; the name starts with {:?}); allowed: {}",
                "a".repeat(32),
                LOCK_NAME_RULE
            )
        );
    }

    /// First character: a letter or digit, nothing else of the alphabet.
    #[test]
    fn first_character_edge() {
        for ok in ["a", "Z", "0", "9"] {
            assert_eq!(check_lock_name(ok), Ok(()), "{ok}");
        }
        for (bad, found) in [
            ("_x", '_'),
            (":x", ':'),
            ("-a", '-'),
            ("/a", '/'),
            (".a", '.'),
            ("é", 'é'),
        ] {
            assert_eq!(
                refused(bad),
                NameError::BadFirstChar {
                    name: bad.to_owned(),
                    found
                },
                "{bad}"
            );
        }
        assert_eq!(
            refused("-a").to_string(),
            format!(
                "lock name \"-a\" must start with an ASCII letter or digit, found '-'; \
                 allowed: {LOCK_NAME_RULE}"
            )
        );
    }

    /// Characters: the five separators pass, the nearest others do not.
    #[test]
    fn character_edge() {
        assert_eq!(check_lock_name("a_b-c:d.e/f"), Ok(()));
        for (bad, found, index) in [
            ("a b", ' ', 1),
            ("a\\b", '\\', 1),
            ("a%2Fb", '%', 1),
            ("a#b", '#', 1),
            ("a{b}", '{', 1),
            ("ab+", '+', 2),
            ("aé", 'é', 1),
            ("a\u{0}", '\u{0}', 1),
        ] {
            assert_eq!(
                refused(bad),
                NameError::BadChar {
                    name: bad.to_owned(),
                    found,
                    index
                },
                "{bad:?}"
            );
        }
        assert_eq!(
            refused("billing nightly").to_string(),
            format!(
                "lock name \"billing nightly\" contains ' ' at byte 7; allowed: {LOCK_NAME_RULE}"
            )
        );
    }

    /// Segments: `/` followed by a letter or digit passes, by anything else (or nothing) not.
    #[test]
    fn segment_edge() {
        assert_eq!(check_lock_name("a/b"), Ok(()));
        assert_eq!(check_lock_name("a/9"), Ok(()));
        for (bad, index) in [
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
                refused(bad),
                NameError::BadSegment {
                    name: bad.to_owned(),
                    index
                },
                "{bad}"
            );
        }
        assert!(refused("a/").to_string().starts_with(
            "lock name \"a/\" has a '/' at byte 1 that is not followed by a letter or digit"
        ));
    }

    /// Dots: one between other characters passes, two in a row anywhere do not.
    #[test]
    fn double_dot_edge() {
        assert_eq!(check_lock_name("a.b.c"), Ok(()));
        assert_eq!(check_lock_name("a./b"), Ok(()));
        for (bad, index) in [("a..b", 1), ("a...", 1), ("ab/c..", 4), ("a.b..c", 3)] {
            assert_eq!(
                refused(bad),
                NameError::DoubleDot {
                    name: bad.to_owned(),
                    index
                },
                "{bad}"
            );
        }
        assert_eq!(
            refused("a..b").to_string(),
            format!(
                "lock name \"a..b\" has '..' at byte 1; dots may not follow each other; \
                 allowed: {LOCK_NAME_RULE}"
            )
        );
    }

    /// The first rule broken is the one reported, in reading order.
    #[test]
    fn the_first_fault_in_the_name_is_reported() {
        assert!(matches!(
            refused("a..b/"),
            NameError::DoubleDot { index: 1, .. }
        ));
        assert!(matches!(
            refused("a//..b"),
            NameError::BadSegment { index: 1, .. }
        ));
        assert!(matches!(
            refused("a..b c"),
            NameError::BadChar { index: 4, .. }
        ));
        assert!(matches!(
            refused(&format!("-{}", "a".repeat(MAX_LOCK_NAME_LEN))),
            NameError::TooLong { .. }
        ));
    }

    /// Every refusal names the name (or its start, when too long) and states the whole rule.
    #[test]
    fn every_message_states_the_rule() {
        for bad in ["a b", "a//b", "a..b", "", "-a"] {
            let msg = refused(bad).to_string();
            assert!(msg.contains(&format!("{bad:?}")) || bad.is_empty(), "{msg}");
            assert!(msg.contains(LOCK_NAME_RULE), "{msg}");
        }
        let long = refused(&"x".repeat(MAX_LOCK_NAME_LEN + 1)).to_string();
        assert!(long.contains(&format!("{:?}", "x".repeat(32))), "{long}");
        assert!(long.contains(LOCK_NAME_RULE), "{long}");
        assert!(LOCK_NAME_RULE.starts_with(&format!("1-{MAX_LOCK_NAME_LEN} bytes")));
    }
}
