//! Unique lock names, so tests can share a real server with other test runs.

use leasehold::{LockName, store::Token};

/// The most characters of a tag kept in a name (names stay far inside a tenant's budget).
const MAX_TAG: usize = 64;

/// A lock name unique to this call: `lh-<tag>-<16 random hex digits>`.
///
/// `tag` should name the test; characters outside `[A-Za-z0-9_-]` become `-` and it is cut to 64
/// characters, so the result is always valid, contains no `:` (it can be used under a tenant) and
/// stays far below the 255-byte limit.
///
/// ```
/// use leasehold_testkit::unique_name;
/// let (a, b) = (unique_name("contention"), unique_name("contention"));
/// assert_ne!(a, b);
/// assert!(a.as_str().starts_with("lh-contention-"));
/// assert!(!unique_name("a:b c").as_str().contains(':'));
/// ```
pub fn unique_name(tag: &str) -> LockName {
    let tag: String = tag
        .chars()
        .take(MAX_TAG)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    match LockName::new(format!("lh-{tag}-{}", random_hex())) {
        Ok(name) => name,
        Err(e) => unreachable!("sanitised lock names are always valid: {e}"),
    }
}

/// 16 random hex digits, for tenant ids and other unique parts of names.
pub(crate) fn random_hex() -> String {
    Token::random().to_hex()[..16].to_owned()
}
