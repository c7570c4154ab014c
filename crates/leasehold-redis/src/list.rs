//! Listing locks: `SCAN` over the store's lock hashes (`<prefix>:{*}`), then each hash's live
//! holders through the state script.
//!
//! There is no registry of lock names to read instead: a set of names would live in another
//! cluster slot than the locks' hashes, so no script could update it atomically with a grant
//! (and behind a cluster proxy a script touching both is refused). `SCAN` reads the keyspace a
//! bounded step at a time (`COUNT` is the work per call, `MATCH` filters after it), and its cursor
//! is stateless on the server, so a listing costs nothing between pages.
//!
//! A [`ListCursor`] of this store is `<scan>[,<name>…]`: the `SCAN` cursor to continue from
//! (`end` once the scan came back to 0), followed by the lock names a `SCAN` reply returned
//! beyond what the page could hold — `SCAN` cannot be resumed inside a reply, so those are kept
//! and read first by the next page.

use futures::future::join_all;
use leasehold::store::{
    CursorError, ListCursor, ListedLock, LockPage, MAX_LIST_LOCKS, MAX_LIST_SCAN, StoreResult,
};
use leasehold::{LockName, limits::MAX_SLOTS};

use crate::keys::{lock_of, pattern};
use crate::store::RedisStore;

/// `COUNT` of one `SCAN` call at most (the keys it looks at; fewer when the page is nearly full).
const SCAN_COUNT: usize = 100;
/// `COUNT` of one `SCAN` call at least, so a nearly full page does not take many round trips.
const MIN_SCAN_COUNT: usize = 10;
/// The word that stands for a finished `SCAN` in a cursor.
const END: &str = "end";

/// Where a listing stands: the `SCAN` cursor to continue from (`None` once it is finished) and
/// names found but not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    scan: Option<u64>,
    pending: Vec<LockName>,
}

impl Position {
    /// The first page's position.
    fn start() -> Self {
        Self {
            scan: Some(0),
            pending: Vec::new(),
        }
    }

    /// Reads a cursor this store wrote.
    pub(crate) fn parse(cursor: &ListCursor, store: &str) -> Result<Self, CursorError> {
        let foreign = |reason: &str| CursorError::foreign(store, cursor, reason);
        let mut parts = cursor.as_str().split(',');
        let scan = match parts.next() {
            Some(END) => None,
            Some(n) => Some(
                n.parse::<u64>()
                    .map_err(|_| foreign("expected a SCAN cursor (a number) or `end` first"))?,
            ),
            None => return Err(foreign("empty")),
        };
        let pending = parts
            .map(|name| {
                LockName::new(name).map_err(|_| foreign("expected lock names after the ','"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { scan, pending })
    }

    /// The cursor of this position, or `None` when nothing is left.
    pub(crate) fn cursor(&self) -> Result<Option<ListCursor>, CursorError> {
        if self.scan.is_none() && self.pending.is_empty() {
            return Ok(None);
        }
        let mut text = self.scan.map_or_else(|| END.to_owned(), |n| n.to_string());
        for name in &self.pending {
            text.push(',');
            text.push_str(name.as_str());
        }
        ListCursor::new(text).map(Some)
    }
}

impl RedisStore {
    /// One page of the listing (see the module docs).
    pub(crate) async fn list_page(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        let mut at = match after {
            Some(cursor) => Position::parse(cursor, &leasehold::LeaseStore::describe(self))?,
            None => Position::start(),
        };
        let prefix = self.options().prefix();
        let pattern = pattern(prefix);
        let mut names = std::mem::take(&mut at.pending);
        let mut looked = 0;
        while names.len() < MAX_LIST_LOCKS && looked < MAX_LIST_SCAN {
            let Some(from) = at.scan else { break };
            let count = (MAX_LIST_LOCKS - names.len()).clamp(MIN_SCAN_COUNT, SCAN_COUNT);
            let mut scan = redis::cmd("SCAN");
            scan.arg(from)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(count);
            let (next, keys): (u64, Vec<String>) = self.link().query(&scan).await?;
            looked += count;
            names.extend(keys.iter().filter_map(|k| lock_of(prefix, k)));
            at.scan = (next != 0).then_some(next);
        }
        at.pending = names.split_off(names.len().min(MAX_LIST_LOCKS));
        let read = join_all(names.iter().map(|lock| self.live_holders(lock, MAX_SLOTS))).await;
        let mut locks = Vec::new();
        for (lock, rows) in names.into_iter().zip(read) {
            match rows {
                Ok(holders) if !holders.is_empty() => locks.push(ListedLock { lock, holders }),
                Ok(_) => {}
                // A key of another type that happens to match the pattern is not a lock.
                Err(e) if e.message().contains("WRONGTYPE") => {}
                Err(e) => return Err(e),
            }
        }
        Ok(LockPage::new(locks, at.cursor()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() -> Result<(), Box<dyn std::error::Error>> {
        let at = Position {
            scan: Some(1234),
            pending: vec![LockName::new("a/b")?, LockName::new("c.d")?],
        };
        let text = at.cursor()?.ok_or("a cursor")?;
        assert_eq!(text.as_str(), "1234,a/b,c.d");
        assert_eq!(Position::parse(&text, "redis")?, at);
        let done = Position {
            scan: None,
            pending: vec![LockName::new("x")?],
        };
        let text = done.cursor()?.ok_or("a cursor")?;
        assert_eq!(text.as_str(), "end,x");
        assert_eq!(Position::parse(&text, "redis")?, done);
        let finished = Position {
            scan: None,
            pending: Vec::new(),
        };
        assert_eq!(finished.cursor()?, None);
        for bad in ["x", "-1", "1,a//b", "1,"] {
            assert!(
                matches!(
                    Position::parse(&ListCursor::new(bad)?, "redis"),
                    Err(CursorError::Foreign { .. })
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
