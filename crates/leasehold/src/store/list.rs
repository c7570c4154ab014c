//! Listing the locks that have holders, one bounded page at a time
//! ([`LeaseStore::list_locks`](crate::LeaseStore::list_locks)).

use std::fmt;

use crate::limits::MAX_LIST_CURSOR_LEN;
use crate::name::LockName;
use crate::store::lease::Holder;

/// Where the next page of a listing starts: the [`next`](LockPage::next) of the page before.
///
/// Each store writes its own cursors and reads only those; the text is 1 to
/// [`MAX_LIST_CURSOR_LEN`] bytes of printable ASCII without spaces, so it can be printed and given
/// back on a command line (`leasehold status --all --after CURSOR`). On the SQL, etcd and memory
/// stores it is the last lock name of the page; on Redis a `SCAN` cursor (followed by the names
/// still to report); on DynamoDB the key of the last item read.
///
/// ```
/// use leasehold::store::ListCursor;
///
/// let c = ListCursor::new("reports/daily")?;
/// assert_eq!(c.as_str(), "reports/daily");
/// assert!(ListCursor::new("two words").is_err());
/// assert!(ListCursor::new("").is_err());
/// # Ok::<(), leasehold::store::CursorError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ListCursor(String);

/// Why a list cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CursorError {
    /// The cursor was empty.
    #[error(
        "list cursor must not be empty (give the `next` cursor of the previous page, or none for \
         the first page)"
    )]
    Empty,
    /// The cursor was longer than [`MAX_LIST_CURSOR_LEN`].
    #[error(
        "list cursor is {len} bytes long; at most {max} bytes are allowed \
         (leasehold::limits::MAX_LIST_CURSOR_LEN)"
    )]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// [`MAX_LIST_CURSOR_LEN`].
        max: usize,
    },
    /// A character other than printable ASCII (`!` to `~`).
    #[error(
        "list cursor contains {found:?} at byte {index}; cursors are printable ASCII without spaces"
    )]
    BadChar {
        /// The offending character.
        found: char,
        /// Its byte offset.
        index: usize,
    },
    /// The text is not a cursor this store wrote.
    #[error("{cursor:?} is not a list cursor of {store}: {reason}")]
    Foreign {
        /// The store, as it describes itself.
        store: String,
        /// The cursor (at most its first 64 characters).
        cursor: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl CursorError {
    /// A cursor this store cannot read: `reason` says what it expected.
    pub fn foreign(
        store: impl Into<String>,
        cursor: &ListCursor,
        reason: impl Into<String>,
    ) -> Self {
        Self::Foreign {
            store: store.into(),
            cursor: cursor.as_str().chars().take(64).collect(),
            reason: reason.into(),
        }
    }
}

impl ListCursor {
    /// Checks `text` (1 to [`MAX_LIST_CURSOR_LEN`] bytes of printable ASCII) and wraps it.
    ///
    /// # Errors
    ///
    /// A [`CursorError`] naming what is wrong.
    pub fn new(text: impl Into<String>) -> Result<Self, CursorError> {
        let text = text.into();
        if text.is_empty() {
            return Err(CursorError::Empty);
        }
        if text.len() > MAX_LIST_CURSOR_LEN {
            return Err(CursorError::TooLong {
                len: text.len(),
                max: MAX_LIST_CURSOR_LEN,
            });
        }
        if let Some((index, found)) = text.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
            return Err(CursorError::BadChar { found, index });
        }
        Ok(Self(text))
    }

    /// The cursor of a page that ended with `lock` (the SQL, etcd and memory stores' cursors).
    /// Lock names are always valid cursors.
    ///
    /// ```
    /// use leasehold::LockName;
    /// use leasehold::store::ListCursor;
    /// let c = ListCursor::after_lock(&LockName::new("a.b")?);
    /// assert_eq!(c.as_str(), "a.b");
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn after_lock(lock: &LockName) -> Self {
        Self(lock.as_str().to_owned())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ListCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ListCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ListCursor").field(&self.0).finish()
    }
}

impl std::str::FromStr for ListCursor {
    type Err = CursorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// A lock with live holders, as a listing found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLock {
    /// The lock (the full, namespaced name).
    pub lock: LockName,
    /// Its live holders found on this page, ordered by slot.
    pub holders: Vec<Holder>,
}

/// One page of a listing: locks with live holders, and where the next page starts.
///
/// ```
/// use leasehold::store::LockPage;
/// let last = LockPage::new(Vec::new(), None);
/// assert!(last.is_last() && last.locks.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LockPage {
    /// At most [`MAX_LIST_LOCKS`](crate::limits::MAX_LIST_LOCKS) locks, ordered by name within
    /// the page, each with at least one holder. A page may hold fewer locks (even none) while
    /// [`next`](Self::next) says there are more: each call reads a bounded part of the store.
    pub locks: Vec<ListedLock>,
    /// Where the next page starts; `None` when the listing is complete.
    pub next: Option<ListCursor>,
}

impl LockPage {
    /// A page of `locks` (sorted here by name, their holders by slot), continued at `next`.
    pub fn new(mut locks: Vec<ListedLock>, next: Option<ListCursor>) -> Self {
        for lock in &mut locks {
            lock.holders.sort_by_key(|h| h.slot);
        }
        locks.sort_by(|a, b| a.lock.cmp(&b.lock));
        Self { locks, next }
    }

    /// True when no page follows this one.
    pub fn is_last(&self) -> bool {
        self.next.is_none()
    }
}

/// Groups `(lock, holder)` pairs by lock (holders of one lock may come in any order, and
/// locks too): the [`ListedLock`]s of a page, for stores that read one record per slot.
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use leasehold::{Holder, LockName};
/// use leasehold::store::group_holders;
///
/// let h = |slot| Holder { slot, owner: "n".into(), fence: 1, acquired_at: UNIX_EPOCH, expires_at: UNIX_EPOCH };
/// let (a, b) = (LockName::new("a")?, LockName::new("b")?);
/// let locks = group_holders(vec![(b.clone(), h(0)), (a.clone(), h(1)), (b.clone(), h(1))]);
/// assert_eq!(locks.len(), 2);
/// assert_eq!((locks[0].lock.as_str(), locks[0].holders.len()), ("a", 1));
/// assert_eq!((locks[1].lock.as_str(), locks[1].holders.len()), ("b", 2));
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
pub fn group_holders(pairs: impl IntoIterator<Item = (LockName, Holder)>) -> Vec<ListedLock> {
    let mut by_lock: std::collections::BTreeMap<LockName, Vec<Holder>> =
        std::collections::BTreeMap::new();
    for (lock, holder) in pairs {
        by_lock.entry(lock).or_default().push(holder);
    }
    by_lock
        .into_iter()
        .map(|(lock, mut holders)| {
            holders.sort_by_key(|h| h.slot);
            ListedLock { lock, holders }
        })
        .collect()
}

impl From<CursorError> for crate::error::StoreError {
    /// A permanent error whose message is the [`CursorError`]'s.
    fn from(e: CursorError) -> Self {
        Self::permanent(e.to_string()).with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_bounded_printable_text() {
        assert_eq!(ListCursor::new(""), Err(CursorError::Empty));
        assert!(matches!(
            ListCursor::new("x".repeat(MAX_LIST_CURSOR_LEN + 1)),
            Err(CursorError::TooLong { .. })
        ));
        assert!(ListCursor::new("x".repeat(MAX_LIST_CURSOR_LEN)).is_ok());
        assert_eq!(
            ListCursor::new("a\nb"),
            Err(CursorError::BadChar {
                found: '\n',
                index: 1
            })
        );
        assert!(matches!(
            ListCursor::new("é"),
            Err(CursorError::BadChar { found: 'é', .. })
        ));
        assert!(ListCursor::new("12,a/b,c.d:e").is_ok());
    }

    #[test]
    fn pages_sort_locks_and_holders() -> Result<(), crate::error::NameError> {
        let t = std::time::UNIX_EPOCH;
        let h = |slot| Holder {
            slot,
            owner: "n".into(),
            fence: 1,
            acquired_at: t,
            expires_at: t,
        };
        let page = LockPage::new(
            vec![
                ListedLock {
                    lock: LockName::new("b")?,
                    holders: vec![h(2), h(0)],
                },
                ListedLock {
                    lock: LockName::new("a")?,
                    holders: vec![h(0)],
                },
            ],
            None,
        );
        assert_eq!(page.locks[0].lock.as_str(), "a");
        let slots: Vec<u32> = page.locks[1].holders.iter().map(|h| h.slot).collect();
        assert_eq!(slots, [0, 2]);
        Ok(())
    }
}
