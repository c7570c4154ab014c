//! Listing: one bounded page of the locks with live holders, from at most
//! [`MAX_LIST_SCAN`] rows in key order after the cursor's lock name (live or not, so a table full
//! of released rows still costs one bounded index range per page), then the whole of the lock
//! the rows end on, whose slots may continue past them.

use leasehold::LockName;
use leasehold::store::{
    ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, MAX_SLOTS, StoreResult,
};

use crate::protocol::Queries;
use crate::rows::{HolderRow, holders};

/// The page of locks after `after` (the first page without one).
pub(crate) async fn page(q: &Queries, after: Option<&ListCursor>) -> StoreResult<LockPage> {
    let from = after.map_or("", ListCursor::as_str);
    let rows = q.list(from, MAX_LIST_SCAN).await?;
    let full = rows.len() >= MAX_LIST_SCAN;
    // Rows come ordered by lock name, so each lock's rows are consecutive.
    let mut read: Vec<(String, Vec<HolderRow>)> = Vec::new();
    for (name, holder, held) in rows {
        let live = (held != 0).then_some(holder);
        match read.last_mut() {
            Some((last, holders)) if *last == name => holders.extend(live),
            _ => read.push((name, live.into_iter().collect())),
        }
    }
    let count = read.len();
    let last = read.last().map(|(name, _)| name.clone());
    let mut locks: Vec<ListedLock> = Vec::new();
    let mut next = None;
    for (i, (name, mut rows)) in read.into_iter().enumerate() {
        // A row leasehold did not write (a name outside the rule) is never listed.
        let Ok(lock) = LockName::new(&name) else {
            continue;
        };
        if full && i + 1 == count {
            rows = q.state(&lock, MAX_SLOTS).await?;
        }
        if rows.is_empty() {
            continue;
        }
        if locks.len() == MAX_LIST_LOCKS {
            next = locks.last().map(|l| ListCursor::after_lock(&l.lock));
            break;
        }
        locks.push(ListedLock {
            lock,
            holders: holders(&rows),
        });
    }
    if next.is_none() && full {
        next = last.map(ListCursor::new).transpose()?;
    }
    Ok(LockPage::new(locks, next))
}
