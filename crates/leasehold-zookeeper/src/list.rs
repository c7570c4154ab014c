//! `list_locks`: one bounded page of the locks with live holders.
//!
//! ZooKeeper has no paged listing of a node's children: the names of every lock come in one
//! `get_children` reply of `<prefix>/locks` (bounded by the server's `jute.maxbuffer`, 1 MiB by
//! default: some 20 000 names of 50 bytes). The page then reads the slots of the locks after the
//! cursor, in name order, until [`MAX_LIST_SCAN`] slot nodes were read (the lock it ends on is
//! read whole) or [`MAX_LIST_LOCKS`] locks are listed; the cursor is the last lock read.

use leasehold::LockName;
use leasehold::store::{
    CursorError, ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};
use zookeeper_client::Error;

use crate::keys::lock_of_segment;
use crate::protocol::Protocol;

pub(crate) async fn list(
    protocol: &Protocol,
    store: &str,
    after: Option<&ListCursor>,
) -> StoreResult<LockPage> {
    let after = match after {
        None => None,
        Some(cursor) => Some(
            LockName::new(cursor.as_str())
                .map_err(|_| CursorError::foreign(store, cursor, "expected a lock name"))?,
        ),
    };
    let root = protocol.paths.locks();
    let children = protocol
        .link
        .read("a listing", |c| {
            let root = root.clone();
            async move {
                match c.list_children(&root).await {
                    Ok(children) => Ok(children),
                    Err(Error::NoNode) => Ok(Vec::new()),
                    Err(e) => Err(e),
                }
            }
        })
        .await?;
    let mut names: Vec<LockName> = children
        .iter()
        .filter_map(|c| lock_of_segment(c))
        .filter(|n| after.as_ref().is_none_or(|a| n.as_str() > a.as_str()))
        .collect();
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut locks = Vec::new();
    let mut scanned = 0usize;
    let mut next = None;
    for (i, lock) in names.iter().enumerate() {
        let slots = protocol.slots_of(lock).await?;
        scanned += slots.len() + 1;
        let holders = if slots.is_empty() {
            Vec::new()
        } else {
            protocol.holders(lock, &slots).await?
        };
        if !holders.is_empty() {
            locks.push(ListedLock {
                lock: lock.clone(),
                holders,
            });
        }
        let more = i + 1 < names.len();
        if more && (scanned >= MAX_LIST_SCAN || locks.len() == MAX_LIST_LOCKS) {
            next = Some(ListCursor::after_lock(lock));
            break;
        }
    }
    Ok(LockPage::new(locks, next))
}
