//! The key layout: which etcd key holds each slot and ledger of a lock.
//!
//! * Slot `n` of lock `L` is the key `<prefix>/L/n`, where a `/` inside `L` is written `%2F`
//!   (`reports/daily` → `<prefix>/reports%2Fdaily/0`; lock names never contain `%`, and names
//!   without `/` are written as they are). So the lock part of a key never contains `/`, the
//!   keys of different locks never nest, and the prefix range `<prefix>/L/` of one lock never
//!   holds another lock's keys.
//! * The lock's period ledger is `<prefix>/L/ledger`, next to its slots.
//! * Fenced puts keep their highest fences under `<prefix>/.fences/`, outside every lock's range.
//! * A listing's cursor names the key it continues after: a lock (its name), or a raw key (`~`
//!   and the key's bytes after `<prefix>/` in hex).

use leasehold::LockName;
use leasehold::store::{CursorError, ListCursor};

/// Starts a cursor that names a raw key rather than a lock (no lock name starts with it).
const RAW: char = '~';

/// Where a store's keys live.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }
    /// `<prefix>/<lock>/<slot>`.
    pub(crate) fn slot(&self, lock: &LockName, slot: u32) -> String {
        format!("{}/{}/{slot}", self.prefix, segment(lock.as_str()))
    }
    /// `<prefix>/<lock>/ledger`: the lock's period ledger (not a slot: slots are numbers). It is
    /// under the lock's prefix, so every read of the lock's slots reads it too, and it has no
    /// etcd lease, so it outlives every grant.
    pub(crate) fn ledger(&self, lock: &LockName) -> String {
        format!("{}/{}/ledger", self.prefix, segment(lock.as_str()))
    }
    /// `<prefix>/<lock>/`: every slot of a lock.
    pub(crate) fn lock(&self, lock: &LockName) -> String {
        format!("{}/{}/", self.prefix, segment(lock.as_str()))
    }
    /// The first key after every key of `lock` (`<prefix>/<lock>0`: `0` follows `/`), where a
    /// listing continues after that lock.
    pub(crate) fn after(&self, lock: &LockName) -> String {
        format!("{}/{}0", self.prefix, segment(lock.as_str()))
    }
    /// The range of every lock's keys, `[<prefix>/0, <prefix>/{)`: lock names start with a
    /// letter or digit, so it leaves out `<prefix>/.fences/` and anything else not a lock's.
    pub(crate) fn locks_range(&self) -> (String, String) {
        (format!("{}/0", self.prefix), format!("{}/{{", self.prefix))
    }
    /// The lock a slot or ledger key of this store belongs to.
    pub(crate) fn lock_of(&self, key: &[u8]) -> Option<LockName> {
        let rest = std::str::from_utf8(key)
            .ok()?
            .strip_prefix(&self.prefix)?
            .strip_prefix('/')?;
        let (lock, tail) = rest.split_once('/')?;
        if tail.is_empty() || tail.contains('/') {
            return None;
        }
        LockName::new(lock.replace(SLASH, "/")).ok()
    }
    /// True for the ledger key of a lock of this store (and not of a store whose prefix nests
    /// under this one's).
    pub(crate) fn is_ledger(&self, key: &[u8]) -> bool {
        std::str::from_utf8(key)
            .ok()
            .and_then(|k| k.strip_prefix(&self.prefix)?.strip_prefix('/'))
            .and_then(|rest| rest.strip_suffix("/ledger"))
            .is_some_and(|lock| !lock.is_empty() && !lock.contains('/'))
    }
    /// `<prefix>/.fences/<key>`: the highest fence written to the application's key `key` by a
    /// fenced put. Lock names start with a letter or digit, so no lock's keys are under
    /// `<prefix>/.fences/`, and [`parse`](Self::parse) reads none of these keys as a slot.
    // Part of the key layout (the tests check it) though only the `fence` feature writes it.
    #[cfg_attr(not(feature = "fence"), allow(dead_code))]
    pub(crate) fn fence(&self, key: &str) -> String {
        format!("{}/.fences/{key}", self.prefix)
    }
    /// `<prefix>/`: every lock of the store (what the release watch covers).
    pub(crate) fn root(&self) -> String {
        format!("{}/", self.prefix)
    }
    /// The first key of the listing's page after `cursor` (of the store described as `store`).
    pub(crate) fn start_after(
        &self,
        store: &str,
        cursor: &ListCursor,
    ) -> Result<Vec<u8>, CursorError> {
        let text = cursor.as_str();
        if let Some(hex) = text.strip_prefix(RAW) {
            let mut key = self.root().into_bytes();
            key.extend(
                from_hex(hex)
                    .ok_or_else(|| CursorError::foreign(store, cursor, "bad hex after '~'"))?,
            );
            key.push(0); // the first key after it
            return Ok(key);
        }
        let lock = LockName::new(text)
            .map_err(|_| CursorError::foreign(store, cursor, "expected a lock name"))?;
        Ok(self.after(&lock).into_bytes())
    }
    /// The listing's cursor that continues just after the raw `key` of this store.
    pub(crate) fn cursor_after(&self, key: &[u8]) -> Result<ListCursor, CursorError> {
        let root = self.root();
        let rest = key.strip_prefix(root.as_bytes()).unwrap_or(key);
        let mut text = String::with_capacity(1 + rest.len() * 2);
        text.push(RAW);
        for b in rest {
            text.push_str(&format!("{b:02x}"));
        }
        ListCursor::new(text)
    }
    /// The lock and slot of a key of this store.
    pub(crate) fn parse(&self, key: &[u8]) -> Option<(LockName, u32)> {
        let key = std::str::from_utf8(key).ok()?;
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix('/')?;
        let (lock, slot) = rest.rsplit_once('/')?;
        if slot.is_empty()
            || !slot.bytes().all(|b| b.is_ascii_digit())
            || (slot.len() > 1 && slot.starts_with('0'))
            // A raw `/` in the lock part: a key of a store whose prefix nests under this one's.
            || lock.contains('/')
        {
            return None;
        }
        // Any other `%` is refused by the name rule, so `%2F` is the one way to write `/`.
        Some((
            LockName::new(lock.replace(SLASH, "/")).ok()?,
            slot.parse().ok()?,
        ))
    }
}

/// How a `/` inside a lock name is written in a key.
const SLASH: &str = "%2F";

/// A lock name as the middle part of a key: `/` written as `%2F`, everything else as it is.
fn segment(lock: &str) -> std::borrow::Cow<'_, str> {
    if lock.contains('/') {
        std::borrow::Cow::Owned(lock.replace('/', SLASH))
    } else {
        std::borrow::Cow::Borrowed(lock)
    }
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_back_and_foreign_keys_are_ignored() {
        let keys = Keys::new("app/x");
        let lock = LockName::new("tenant:a:job").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(keys.slot(&lock, 7), "app/x/tenant:a:job/7");
        assert_eq!(keys.parse(b"app/x/tenant:a:job/7"), Some((lock, 7)));
        for foreign in [
            "app/x/job/",
            "app/x/job/07",
            "app/x/job/a",
            "app/y/job/1",
            "app/xjob/1",
            "app/x//1",
            "app/x/.fences/job/1",
            "app/x/.fences/1",
        ] {
            assert_eq!(keys.parse(foreign.as_bytes()), None, "{foreign}");
        }
    }

    #[test]
    fn slashes_in_lock_names_are_escaped_so_locks_never_nest() {
        let keys = Keys::new("lh");
        let name = |n: &str| LockName::new(n).unwrap_or_else(|e| panic!("{e}"));
        let (a, ab, a_dot_b, a1) = (name("a"), name("a/b"), name("a.b"), name("a:1"));
        assert_eq!(keys.slot(&ab, 0), "lh/a%2Fb/0");
        assert_eq!(keys.lock(&ab), "lh/a%2Fb/");
        assert_eq!(keys.ledger(&ab), "lh/a%2Fb/ledger");
        assert_eq!(keys.parse(b"lh/a%2Fb/3"), Some((ab.clone(), 3)));
        assert_eq!(keys.parse(b"lh/a.b/0"), Some((a_dot_b.clone(), 0)));
        // No key of one lock is under another's prefix range, nor equal to another's key.
        let all = [&a, &ab, &a_dot_b, &a1];
        for x in all {
            for y in all {
                if x != y {
                    for slot in [0, 1, 10] {
                        assert!(!keys.slot(y, slot).starts_with(&keys.lock(x)), "{x} {y}");
                        assert_ne!(keys.slot(x, slot), keys.slot(y, slot));
                    }
                    assert!(!keys.ledger(y).starts_with(&keys.lock(x)), "{x} {y}");
                }
            }
            // `after` comes after every key of the lock and before the next lock's.
            assert!(keys.after(x) > keys.ledger(x) && keys.after(x) > keys.slot(x, 1023));
            assert!(keys.is_ledger(keys.ledger(x).as_bytes()));
        }
        // Raw slashes are another store's keys (prefix `lh/a`), and `%2f` is not canonical.
        assert_eq!(keys.parse(b"lh/a/b/0"), None);
        assert_eq!(keys.parse(b"lh/a%2fb/0"), None);
        assert!(!keys.is_ledger(b"lh/a/b/ledger"));
        let (start, end) = keys.locks_range();
        for x in [name("0"), name("zzz"), name("Z/z"), ab] {
            assert!(start <= keys.slot(&x, 0) && keys.ledger(&x) < end, "{x}");
            assert_eq!(keys.lock_of(keys.ledger(&x).as_bytes()), Some(x.clone()));
            assert_eq!(keys.lock_of(keys.slot(&x, 7).as_bytes()), Some(x.clone()));
        }
        assert!(keys.fence("x") < start);
        assert_eq!(keys.lock_of(b"lh/a/b/0"), None);
    }

    #[test]
    fn cursors_continue_after_a_lock_or_a_raw_key() -> Result<(), Box<dyn std::error::Error>> {
        let keys = Keys::new("lh");
        let lock = LockName::new("reports/daily")?;
        let after = keys.start_after("etcd", &ListCursor::after_lock(&lock))?;
        assert_eq!(after, b"lh/reports%2Fdaily0");
        let raw = keys.cursor_after(b"lh/zz\xff")?;
        assert_eq!(raw.as_str(), "~7a7aff");
        assert_eq!(keys.start_after("etcd", &raw)?, b"lh/zz\xff\0");
        for bad in ["~7", "~zz", "a//b", "-x"] {
            assert!(
                matches!(
                    keys.start_after("etcd", &ListCursor::new(bad)?),
                    Err(CursorError::Foreign { .. })
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
