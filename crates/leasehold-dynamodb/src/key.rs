//! Item keys: one item per `(lock, slot)`, partition key `lockName`.
//!
//! | slot | key (no prefix) | key (prefix `app`) |
//! |---|---|---|
//! | 0 | `job` | `app/job` |
//! | n > 0 | `job#slot-n` | `app/job#slot-n` |
//!
//! The mapping is injective: lock names never contain `#` or `/` (the core's
//! [`LockName`] rule allows only `[A-Za-z0-9_:-]`), so the last `/` ends the prefix and a `#`
//! can only start the slot suffix. Stores with different prefixes, or none, never share an item.

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
/// # Ok::<(), leasehold::NameError>(())
/// ```
pub fn item_key(prefix: &str, lock: &LockName, slot: u32) -> String {
    let mut key = String::with_capacity(prefix.len() + lock.as_str().len() + 12);
    if !prefix.is_empty() {
        key.push_str(prefix);
        key.push('/');
    }
    key.push_str(lock.as_str());
    if slot > 0 {
        key.push_str(SLOT_SEPARATOR);
        key.push_str(&slot.to_string());
    }
    key
}

/// A key prefix is at most [`MAX_PREFIX_LEN`] bytes of printable ASCII other than `#`, and does not
/// end with `/` (the separator is added).
pub(crate) fn validate_prefix(prefix: &str) -> Result<(), DynamoDbOptionsError> {
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(crate::options::invalid(
            "key_prefix",
            format!(
                "is {} bytes; at most {MAX_PREFIX_LEN} are allowed",
                prefix.len()
            ),
        ));
    }
    if let Some(bad) = prefix.chars().find(|c| !c.is_ascii_graphic() || *c == '#') {
        return Err(crate::options::invalid(
            "key_prefix",
            format!("{prefix:?} contains {bad:?}; use printable ASCII without '#' or spaces"),
        ));
    }
    if prefix.ends_with('/') {
        return Err(crate::options::invalid(
            "key_prefix",
            format!("{prefix:?} must not end with '/' (the separator is added)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_different_locks_slots_and_prefixes_never_collide() {
        let names = ["a", "a-b", "a:b", "ab", "b"];
        let mut seen = std::collections::HashSet::new();
        for prefix in ["", "a", "a/b", "x"] {
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
