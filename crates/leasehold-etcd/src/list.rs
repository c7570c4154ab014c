//! Listing locks: one range read over the store's lock keys with a limit, in key order.
//!
//! A lock's keys (`<prefix>/<lock>/…`, see [`Keys`]) are consecutive in key order, so a page is
//! the locks of at most [`MAX_LIST_SCAN`] keys from where the last page stopped (slot keys and
//! the ledger keys that once-per-period locks keep between runs). When the range had more keys,
//! the last lock read may go on past them: it is read whole (its own prefix range, at most
//! [`MAX_SLOTS`](leasehold::limits::MAX_SLOTS) slot keys and its ledger), and the next page starts after
//! it.
//!
//! Holders are what `state` reports: a slot key is held until etcd deletes it when its etcd
//! lease runs out (whole seconds, rounded up) — until then no one else can take the slot.
//!
//! A [`ListCursor`] of this store is the last lock name of its page — or, when the page's last
//! key was not a lock's (a key another program wrote under the prefix), `~` and that key's
//! bytes after `<prefix>/` in hex, to continue just after it.

use etcd_client::GetOptions;
use leasehold::LockName;
use leasehold::store::{
    CursorError, ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};

use crate::keys::Keys;
use crate::protocol::Protocol;
use crate::record::Record;

/// Starts a cursor that names a raw key rather than a lock (no lock name starts with it).
const RAW: char = '~';

/// One page of the listing (see the module docs).
pub(crate) async fn list(
    protocol: &Protocol,
    store: &str,
    after: Option<&ListCursor>,
) -> StoreResult<LockPage> {
    let (link, keys) = (&protocol.link, &protocol.keys);
    let (first, end) = keys.locks_range();
    let start: Vec<u8> = match after {
        None => first.into_bytes(),
        Some(cursor) => start_after(keys, store, cursor)?,
    };
    let limit = i64::try_from(MAX_LIST_SCAN).unwrap_or(i64::MAX);
    let resp = link
        .idempotent("a read", |mut c| {
            let (start, end) = (start.clone(), end.clone());
            async move {
                c.get(
                    start,
                    Some(GetOptions::new().with_range(end).with_limit(limit)),
                )
                .await
            }
        })
        .await?;
    let more = resp.more();
    // Keys come in order, so each lock's keys are consecutive.
    let mut read: Vec<(LockName, Vec<Record>)> = Vec::new();
    for kv in resp.kvs() {
        let Some(lock) = keys.lock_of(kv.key()) else {
            continue; // a key leasehold did not write
        };
        let record = Record::decode(keys, kv);
        match read.last_mut() {
            Some((last, records)) if *last == lock => records.extend(record),
            _ => read.push((lock, record.into_iter().collect())),
        }
    }
    // Where the next page starts when the range had more keys: after the last lock, whose keys
    // may go on past this page (so it is read whole below), or after the last key.
    let last_key = resp.kvs().last().map(|kv| kv.key().to_vec());
    let ends_on_lock = last_key
        .as_deref()
        .and_then(|k| keys.lock_of(k))
        .filter(|lock| read.last().is_some_and(|(last, _)| last == lock));
    protocol
        .session_expiries(read.iter_mut().flat_map(|(_, records)| records.iter_mut()))
        .await?;
    let count = read.len();
    let mut locks: Vec<ListedLock> = Vec::new();
    let mut next = None;
    for (i, (lock, mut records)) in read.into_iter().enumerate() {
        if more && i + 1 == count && ends_on_lock.is_some() {
            records = protocol.read_lock(&lock).await?.records;
            protocol.session_expiries(&mut records).await?;
        }
        let holders: Vec<_> = records.iter().map(|r| r.holder()).collect();
        if holders.is_empty() {
            continue;
        }
        if locks.len() == MAX_LIST_LOCKS {
            next = locks.last().map(|l| ListCursor::after_lock(&l.lock));
            break;
        }
        locks.push(ListedLock { lock, holders });
    }
    if next.is_none() && more {
        next = match (ends_on_lock, last_key) {
            (Some(lock), _) => Some(ListCursor::after_lock(&lock)),
            (None, Some(key)) => Some(raw_cursor(keys, &key)?),
            (None, None) => None,
        };
    }
    Ok(LockPage::new(locks, next))
}

/// The first key of the page after `cursor`.
fn start_after(keys: &Keys, store: &str, cursor: &ListCursor) -> Result<Vec<u8>, CursorError> {
    let text = cursor.as_str();
    if let Some(hex) = text.strip_prefix(RAW) {
        let mut key = keys.root().into_bytes();
        key.extend(
            from_hex(hex)
                .ok_or_else(|| CursorError::foreign(store, cursor, "bad hex after '~'"))?,
        );
        key.push(0); // the first key after it
        return Ok(key);
    }
    let lock = LockName::new(text)
        .map_err(|_| CursorError::foreign(store, cursor, "expected a lock name"))?;
    Ok(keys.after(&lock).into_bytes())
}

/// The cursor that continues just after the raw `key` of this store.
fn raw_cursor(keys: &Keys, key: &[u8]) -> Result<ListCursor, CursorError> {
    let root = keys.root();
    let rest = key.strip_prefix(root.as_bytes()).unwrap_or(key);
    let mut text = String::with_capacity(1 + rest.len() * 2);
    text.push(RAW);
    for b in rest {
        text.push_str(&format!("{b:02x}"));
    }
    ListCursor::new(text)
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
    fn cursors_continue_after_a_lock_or_a_raw_key() -> Result<(), Box<dyn std::error::Error>> {
        let keys = Keys::new("lh");
        let lock = LockName::new("reports/daily")?;
        let after = start_after(&keys, "etcd", &ListCursor::after_lock(&lock))?;
        assert_eq!(after, b"lh/reports%2Fdaily0");
        let raw = raw_cursor(&keys, b"lh/zz\xff")?;
        assert_eq!(raw.as_str(), "~7a7aff");
        assert_eq!(start_after(&keys, "etcd", &raw)?, b"lh/zz\xff\0");
        for bad in ["~7", "~zz", "a//b", "-x"] {
            assert!(
                matches!(
                    start_after(&keys, "etcd", &ListCursor::new(bad)?),
                    Err(CursorError::Foreign { .. })
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
