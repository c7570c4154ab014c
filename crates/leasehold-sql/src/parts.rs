//! What a [`SqlStore`] is made of, for programs that look inside (DBAs reviewing its SQL,
//! benchmarks running its statements raw, fence tables on its pool): its options, dialect,
//! pool, statements and `NOTIFY` channel; the migration of its table; and how it prints.

use leasehold::store::StoreResult;

use crate::dialect::{Dialect, Statements};
use crate::options::SqlOptions;
use crate::pool::SqlPool;
use crate::store::SqlStore;

leasehold::store::store_debug!(SqlStore);

impl SqlStore {
    /// The options in effect.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), leasehold::store::OpenError> {
    /// use leasehold_sql::{SqlOptions, SqlStore};
    /// // Lazily: nothing is opened before the first operation.
    /// let store = SqlStore::connect_lazy("sqlite:///tmp/leases.db", SqlOptions::default().with_table("jobs"))?;
    /// assert_eq!(store.options().table_name(), "jobs");
    /// # Ok(()) }
    /// ```
    pub fn options(&self) -> &SqlOptions {
        &self.options
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The pool.
    pub fn pool(&self) -> &SqlPool {
        self.queries.pool()
    }

    /// The SQL this store runs.
    pub fn statements(&self) -> &Statements {
        self.queries.statements()
    }

    /// The PostgreSQL `NOTIFY` channel releases are announced on: `leasehold_release_<table>`
    /// (`.` written `_`), or, when that would pass PostgreSQL's 63-byte limit,
    /// `leasehold_release_` + the table name's first 28 bytes + `_` + 16 hex digits of its hash.
    pub fn notify_channel(&self) -> &str {
        self.queries.channel()
    }

    /// Creates the table if it is missing (idempotent; safe to race with other processes).
    /// With `create_schema(false)` it only checks that the table can be read.
    ///
    /// # Errors
    ///
    /// The classified error of the database: transient when it cannot be reached, permanent
    /// when the table is missing (with `create_schema(false)`), cannot be created, or lacks
    /// SQLite's boot-clock columns that may not be added.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: every statement it runs is idempotent, and an interrupted check runs again
    /// on the next call.
    pub async fn migrate(&self) -> StoreResult<()> {
        self.schema.ensure(&self.queries).await
    }
}
