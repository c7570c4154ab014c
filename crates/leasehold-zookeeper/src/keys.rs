//! The key layout: where a store's nodes live, under `<chroot><prefix>` (the *base*):
//!
//! ```text
//! <base>/clock                      written when a session opens, to learn the ensemble's time
//! <base>/locks/<lock>/slot-<n>      slot n of <lock>: the lease (persistent, never deleted)
//! <base>/locks/<lock>/ledger        the lock's period ledger: its latest claim (window, time,
//!                                   owner, token, started), persistent, written with slot 0
//! ```
//!
//! A `/` inside a lock name is written `%2F` (`reports/daily` → `reports%2Fdaily`; lock names
//! never contain `%`), so a lock is always one path part: `a`, `a/b`, `a.b` and `a:1` are four
//! sibling nodes, and no lock's nodes are under another's.

use leasehold::LockName;

/// How a `/` inside a lock name is written in a path.
const SLASH: &str = "%2F";
/// The name of a slot node before its number.
const SLOT: &str = "slot-";

/// The name of a lock's release node (see [`Paths::released`]).
const RELEASED: &str = "released";

/// The paths of a store.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    base: String,
}

impl Paths {
    /// The paths under `chroot` (empty or an absolute path) + `prefix` (an absolute path).
    pub(crate) fn new(chroot: &str, prefix: &str) -> Self {
        Self {
            base: format!("{chroot}{prefix}"),
        }
    }
    /// `<base>/clock`.
    pub(crate) fn clock(&self) -> String {
        format!("{}/clock", self.base)
    }
    /// `<base>/locks`: the parent of every lock (what the release watch covers).
    pub(crate) fn locks(&self) -> String {
        format!("{}/locks", self.base)
    }
    /// `<base>/locks/<lock>`.
    pub(crate) fn lock(&self, lock: &LockName) -> String {
        format!("{}/locks/{}", self.base, segment(lock))
    }
    /// `<base>/locks/<lock>/slot-<n>`.
    pub(crate) fn slot(&self, lock: &LockName, slot: u32) -> String {
        // One allocation: this runs for every acquisition, extension and release.
        format!("{}/locks/{}/{SLOT}{slot}", self.base, segment(lock))
    }
    /// `<base>/locks/<lock>/ledger`.
    pub(crate) fn ledger(&self, lock: &LockName) -> String {
        format!("{}/ledger", self.lock(lock))
    }
    /// `<base>/locks/<lock>/released`: the node every release that frees a slot of the lock
    /// writes, in the same `multi` (created by the first): what the release watch listens to.
    pub(crate) fn released(&self, lock: &LockName) -> String {
        format!("{}/{RELEASED}", self.lock(lock))
    }
    /// The lock a path under `<base>/locks/` belongs to (the lock node or one of its children).
    pub(crate) fn lock_of(&self, path: &str) -> Option<LockName> {
        let rest = path.strip_prefix(&self.locks())?.strip_prefix('/')?;
        let part = rest.split('/').next()?;
        lock_of_segment(part)
    }
    /// The lock whose release node `path` is; `None` for any other path (a slot, the ledger).
    pub(crate) fn released_lock(&self, path: &str) -> Option<LockName> {
        let lock_path = path.strip_suffix(RELEASED)?.strip_suffix('/')?;
        let lock = self.lock_of(lock_path)?;
        (self.lock(&lock) == lock_path).then_some(lock)
    }
}

/// A lock name as one path part: `/` written as `%2F`.
pub(crate) fn segment(lock: &LockName) -> std::borrow::Cow<'_, str> {
    let name = lock.as_str();
    if name.contains('/') {
        name.replace('/', SLASH).into()
    } else {
        name.into()
    }
}

/// The lock a child of `<base>/locks` names; `None` for anything else.
pub(crate) fn lock_of_segment(part: &str) -> Option<LockName> {
    if part.contains('/') {
        return None;
    }
    LockName::new(part.replace(SLASH, "/")).ok()
}

/// The slot number of a child of a lock node (`slot-7` → 7); `None` for the ledger and anything
/// else.
pub(crate) fn slot_of(child: &str) -> Option<u32> {
    let n = child.strip_prefix(SLOT)?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || (n.len() > 1 && n.starts_with('0'))
    {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> LockName {
        LockName::new(n).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn slashes_in_lock_names_are_escaped_so_locks_never_nest() {
        let paths = Paths::new("/apps", "/leasehold");
        let (a, ab, a_dot_b, a1) = (name("a"), name("a/b"), name("a.b"), name("a:1"));
        assert_eq!(paths.slot(&ab, 0), "/apps/leasehold/locks/a%2Fb/slot-0");
        assert_eq!(paths.ledger(&a), "/apps/leasehold/locks/a/ledger");
        let all = [&a, &ab, &a_dot_b, &a1];
        for x in all {
            assert_eq!(paths.lock_of(&paths.slot(x, 3)), Some(x.clone()));
            assert_eq!(paths.lock_of(&paths.ledger(x)), Some(x.clone()));
            for y in all {
                if x != y {
                    assert!(!paths.slot(y, 0).starts_with(&format!("{}/", paths.lock(x))));
                }
            }
        }
        assert_eq!(paths.lock_of("/apps/leasehold/clock"), None);
        assert_eq!(paths.lock_of("/apps/other/locks/a"), None);
    }

    #[test]
    fn only_a_release_node_names_a_released_lock() {
        let paths = Paths::new("/apps", "/leasehold");
        for x in [name("a"), name("a/b"), name("released"), name("a:1")] {
            assert_eq!(paths.released_lock(&paths.released(&x)), Some(x.clone()));
            assert_eq!(paths.released_lock(&paths.slot(&x, 0)), None);
            assert_eq!(paths.released_lock(&paths.ledger(&x)), None);
            assert_eq!(paths.released_lock(&paths.lock(&x)), None);
        }
        assert_eq!(
            paths.released(&name("a/b")),
            "/apps/leasehold/locks/a%2Fb/released"
        );
        assert_eq!(paths.released_lock("/apps/leasehold/locks/released"), None);
        assert_eq!(
            paths.released_lock("/apps/leasehold/locks/a/x/released"),
            None
        );
    }

    #[test]
    fn slot_children_parse_back() {
        assert_eq!(slot_of("slot-0"), Some(0));
        assert_eq!(slot_of("slot-1023"), Some(1023));
        for other in ["ledger", "slot-", "slot-01", "slot-x", "slot--1", "lock-1"] {
            assert_eq!(slot_of(other), None, "{other}");
        }
    }
}
