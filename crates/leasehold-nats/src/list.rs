//! Listing locks: one batch direct get of the bucket's messages in stream order, with a limit.
//!
//! The bucket keeps one message per key (history 1), so reading the stream in sequence order
//! from where the last page stopped reads every key exactly once: at most [`MAX_LIST_SCAN`]
//! messages per page (`{"seq": S, "next_by_subj": "$KV.<bucket>.>", "batch": MAX_LIST_SCAN}`).
//! A key written again while the listing goes on moves to a higher sequence, so it is read
//! later, never lost; a lock whose slots lie on both sides of a page boundary comes in two pages
//! (with the holders of each), as the contract allows.
//!
//! Holders are what `state` reports: a slot with a lease record the server has not removed,
//! and, for a record held under a session, whose session record is there and has not revoked
//! it (the sessions the page's records name are read with one more batch read).
//!
//! A [`ListCursor`] of this store is `@` and the stream sequence the next page starts at.

use std::collections::BTreeMap;

use leasehold::store::{
    CursorError, ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};
use leasehold::{Holder, LockName};

use crate::keys::KeyOf;
use crate::protocol::{Protocol, judge};
use crate::record::Record;

/// Starts every cursor of this store.
const AT: char = '@';

/// One page of the listing (see the module docs).
pub(crate) async fn list(
    protocol: &Protocol,
    store: &str,
    after: Option<&ListCursor>,
) -> StoreResult<LockPage> {
    let start = match after {
        None => 1,
        Some(cursor) => start_of(store, cursor)?,
    };
    let body = serde_json::json!({
        "seq": start,
        "next_by_subj": protocol.keys.all(),
        "batch": MAX_LIST_SCAN,
    });
    let messages = protocol.read_batch(body).await?;
    let mut read: BTreeMap<LockName, Vec<Record>> = BTreeMap::new();
    let mut next = None;
    for msg in &messages {
        let Some(KeyOf::Slot(lock, slot)) = protocol.keys.parse_subject(&msg.subject) else {
            continue;
        };
        let Some(record) = Record::decode(slot, msg) else {
            continue;
        };
        if !read.contains_key(&lock) && read.len() == MAX_LIST_LOCKS {
            next = Some(cursor(msg.seq)?);
            break;
        }
        read.entry(lock).or_default().push(record);
    }
    let sessions = protocol.sessions_of(read.values().flatten()).await?;
    let mut locks: BTreeMap<LockName, Vec<Holder>> = BTreeMap::new();
    for (lock, records) in read {
        let holders: Vec<Holder> = records
            .into_iter()
            .filter_map(|mut r| judge(&mut r, &sessions).then(|| r.held.holder()))
            .collect();
        if !holders.is_empty() {
            locks.insert(lock, holders);
        }
    }
    if next.is_none() && messages.len() >= MAX_LIST_SCAN {
        next = match messages.last() {
            Some(last) => Some(cursor(last.seq.saturating_add(1))?),
            None => None,
        };
    }
    let locks = locks
        .into_iter()
        .map(|(lock, holders)| ListedLock { lock, holders })
        .collect();
    Ok(LockPage::new(locks, next))
}

fn cursor(seq: u64) -> Result<ListCursor, CursorError> {
    ListCursor::new(format!("{AT}{seq}"))
}

/// The sequence a cursor of this store continues at.
fn start_of(store: &str, cursor: &ListCursor) -> Result<u64, CursorError> {
    cursor
        .as_str()
        .strip_prefix(AT)
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| CursorError::foreign(store, cursor, "expected '@' and a stream sequence"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_stream_sequences() -> Result<(), Box<dyn std::error::Error>> {
        let c = cursor(42)?;
        assert_eq!(c.as_str(), "@42");
        assert_eq!(start_of("nats", &c)?, 42);
        for bad in ["42", "@", "@0", "@x", "a.b"] {
            assert!(
                matches!(
                    start_of("nats", &ListCursor::new(bad)?),
                    Err(CursorError::Foreign { .. })
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
