//! The key layout: the one hash that holds each lock, the channel releases are published on,
//! and the `SCAN` pattern that finds a store's locks.
//!
//! * lock `L` is the hash `<prefix>:{L}`: the braces are a cluster hash tag, so all of a lock
//!   (its slots, its period ledger, its hand-off line; see the `record` module) lives in one
//!   cluster slot, where one script can change it atomically;
//! * a release is published on `<prefix>:released`, with the lock name as the message;
//! * the fenced writes keep their fences under `<prefix>:fence:{…}` and `<prefix>:fences:…`
//!   (see the `fence` module), which the lock pattern `<prefix>:{*}` never matches.
//!
//! Lock names never hold `{` or `}`, so a hash's key gives its lock name back unambiguously:
//! `a`, `a/b`, `a.b` and `a:1` are the four hashes `<prefix>:{a}`, `<prefix>:{a/b}`,
//! `<prefix>:{a.b}` and `<prefix>:{a:1}`.

use leasehold::LockName;

/// The hash that holds `lock`: `<prefix>:{<lock>}`.
pub(crate) fn lock_key(prefix: &str, lock: &LockName) -> String {
    format!("{prefix}:{{{}}}", lock.as_str())
}

/// The `MATCH` pattern of the store's lock hashes: the prefix with glob characters escaped,
/// then `:{*}`.
pub(crate) fn pattern(prefix: &str) -> String {
    let mut p = String::with_capacity(prefix.len() + 4);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push_str(":{*}");
    p
}

/// The lock whose hash `key` is, if it is one of the store's (`<prefix>:{<lock>}`).
pub(crate) fn lock_of(prefix: &str, key: &str) -> Option<LockName> {
    let name = key
        .strip_prefix(prefix)?
        .strip_prefix(":{")?
        .strip_suffix('}')?;
    LockName::new(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_one_hash_under_the_prefix() -> Result<(), leasehold::error::NameError> {
        let lock = LockName::new("tenant:a:report")?;
        assert_eq!(lock_key("leasehold", &lock), "leasehold:{tenant:a:report}");
        assert_eq!(
            lock_of("leasehold", &lock_key("leasehold", &lock)),
            Some(lock)
        );
        Ok(())
    }

    #[test]
    fn patterns_escape_glob_characters() {
        assert_eq!(pattern("leasehold"), "leasehold:{*}");
        assert_eq!(pattern("a*b?[c]\\d"), "a\\*b\\?\\[c\\]\\\\d:{*}");
    }

    #[test]
    fn only_the_stores_own_hashes_are_locks() -> Result<(), leasehold::error::NameError> {
        assert_eq!(
            lock_of("lh", "lh:{reports/daily}"),
            Some(LockName::new("reports/daily")?)
        );
        assert_eq!(lock_of("lh", "lh:{a.b}"), Some(LockName::new("a.b")?));
        for foreign in [
            "lh:fence:{a}",
            "lh:fences:a",
            "lh:released",
            "lh:x:{a}",
            "lhx:{a}",
            "lh:{a}x",
            "lh:{a//b}",
            "lh:{}",
            "other:{a}",
        ] {
            assert_eq!(lock_of("lh", foreign), None, "{foreign}");
        }
        Ok(())
    }
}
