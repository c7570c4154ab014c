//! Listing locks: one range read over the store's lock keys with a limit, in key order.
//!
//! A lock's keys (`<prefix>/<lock>/…`, see [`Keys`](crate::keys::Keys)) are consecutive in key order, so a page is
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
//! bytes after `<prefix>/` in hex, to continue just after it (the key positions they name are
//! the key layout's: [`Keys::start_after`](crate::keys::Keys::start_after)).

use etcd_client::GetOptions;
use leasehold::LockName;
use leasehold::store::{
    ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};

use crate::protocol::Protocol;
use crate::record::Record;

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
        Some(cursor) => keys.start_after(store, cursor)?,
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
            (None, Some(key)) => Some(keys.cursor_after(&key)?),
            (None, None) => None,
        };
    }
    Ok(LockPage::new(locks, next))
}
