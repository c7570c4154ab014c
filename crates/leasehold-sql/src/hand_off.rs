//! Hand-off in the store (PostgreSQL): how an acquisition treats the line of waiting electors,
//! by what the table has and what this store recently met (`contended.rs`). The statements are
//! in `dialect/postgres/hand_off.rs`, the requests in `protocol/hand_off.rs`.

use leasehold::store::StoreResult;

use crate::protocol::Waiters;
use crate::store::SqlStore;

impl SqlStore {
    /// How a single-slot acquisition treats hand-off's line of waiters: kept, for `waiter`,
    /// where the table has its column (PostgreSQL).
    pub(crate) async fn waiters<'a>(&self, waiter: Option<&'a str>) -> StoreResult<Waiters<'a>> {
        Ok(if self.schema.hands_off(&self.queries).await? {
            Waiters::Kept {
                waiter,
                contended: self.refusal_likely(),
            }
        } else {
            Waiters::Ignored
        })
    }

    /// True if this store's acquisitions were recently refused on a lock it hands off
    /// (PostgreSQL): they then go straight to the statement that keeps hand-off's line.
    fn refusal_likely(&self) -> bool {
        #[cfg(feature = "postgres")]
        return self.contended.refusal_likely();
        #[cfg(not(feature = "postgres"))]
        false
    }

    /// A hand-off acquisition was refused.
    pub(crate) fn refused(&self) {
        #[cfg(feature = "postgres")]
        self.contended.refused();
    }
}
