//! The protocol room: every request this store sends to its database, in one place.
//!
//! Each method of [`Queries`] binds one statement of [`Statements`] (or of
//! [`HandOffStatements`](crate::HandOffStatements), PostgreSQL's hand-off) in the order it
//! documents — on SQLite followed by the host's clocks (`crate::clock`) — runs it on the pool
//! and, on MySQL, which has no `RETURNING`, reads the written row back. The store's trait
//! methods (`store.rs`) only choose among them.
//!
//! | operation | statements | atomic by |
//! |---|---|---|
//! | acquire one slot | `acquire`: an upsert that takes the row only if free or already this token's (MySQL: then `read_slot`, which finds the grant or names the holder; and after a refusal of the lock, `state` first, the upsert only if the slot is free or held under the request's node id, so a waiting follower writes nothing and learns the holder's expiry); with hand-off (PostgreSQL) `acquire_alone`, unless the store recently met contention, then `acquire`, which honours the keep and records a refused waiter | one statement on the row |
//! | acquire in a group | `group_slots` to order the tries (one this token holds, then free slots, lowest first), then `acquire` per slot until one is granted | each upsert alone; the read only orders them |
//! | acquire with a period | `acquire_period` (PostgreSQL with hand-off: its own), which judges the ledger and writes the grant and the new claim; a refusal is judged by the ledger, returned in the same round trip on PostgreSQL, else read with `read_period`, and tried once more if the ledger then allows it | one statement on slot 0's row |
//! | start a period | `start_period`: the claim marked started, by the lease's token and the claim's | one `UPDATE` |
//! | period record | `read_period` (`read_old_period` on a table of an older version) | one read |
//! | clear the ledger | `clear_period_select`, the row locked, then `clear_period` (or the `_old_` pair) | one transaction opened with `begin_write` |
//! | extend | `extend` (MySQL: then `read_slot`) | one `UPDATE` by token, unexpired |
//! | extend many (a beat's renewals) | [`Dialect::extend_batch`](crate::Dialect): one `UPDATE … WHERE (lock_name, slot, token) IN (…)` per ttl and per `MAX_BATCH` leases (MySQL: then its `SELECT` back) | one `UPDATE` by token, unexpired, per row |
//! | release | `release`, which also sends `NOTIFY` on PostgreSQL; with a linger `release_linger` | one `UPDATE` by token |
//! | release to (hand-off, PostgreSQL) | `release_keep`; or `release_alone`, unless releases recently found waiters, then `release_longest` (`NOTIFY` too) | one `UPDATE` by token |
//! | state | `state`: the live rows of the first slots | one read |
//! | force release | `force_select` (rows locked) then `force_release`; then `NOTIFY` on PostgreSQL | one transaction opened with `begin_write` |
//! | list | `list`: at most `MAX_LIST_SCAN` rows after the cursor, then `state` of the lock the page ends on | each read alone: a lock may come in two pages |
//! | open | `state` as a probe; `create_table` and the `ALTER TABLE`s of missing columns (`schema.rs`) | each idempotent |
//!
//! The fence wing (feature `fence`) sends its own: `check_lease` just before a
//! [`LeaseTransaction`](crate::LeaseTransaction) commits, in that transaction, and the fence
//! table's [`FenceStatements`](crate::FenceStatements) from [`SqlFences`](crate::SqlFences).

use leasehold::store::StoreResult;

use crate::classify::classify;
use crate::dialect::Statements;
use crate::pool::SqlPool;

/// Like `with_pool!`, with `$add` a function that adds the clock parameters SQLite statements
/// take after their own (read from the host now); identity on the other dialects.
macro_rules! with_clock {
    ($pool:expr, $p:ident, $add:ident => $body:expr) => {
        match $pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite($p) => {
                let clock = $crate::clock::HostClock::read();
                let $add = |q| clock.bind(q);
                $body
            }
            #[cfg(feature = "postgres")]
            SqlPool::Postgres($p) => {
                let $add = |q| q;
                $body
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql($p) => {
                let $add = |q| q;
                $body
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    };
}

// After `with_clock!`, which they use.
mod acquire;
#[cfg(feature = "postgres")]
mod hand_off;
mod lease;
mod period;

pub(crate) use acquire::Attempt;

/// Whether an acquisition honours and keeps the line of waiting electors (hand-off, on
/// PostgreSQL, whose table has its column: see `dialect/postgres/hand_off.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Waiters<'a> {
    /// Without hand-off.
    Ignored,
    /// With hand-off.
    Kept {
        /// The waiting elector's id (16 hex digits; `None` for a caller that does not wait).
        #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
        waiter: Option<&'a str>,
        /// The store recently met contention: skip the try of a lock nobody waits for.
        #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
        contended: bool,
    },
}

/// A pool and the statements for one table.
pub(crate) struct Queries {
    pool: SqlPool,
    /// The lease table's name (for the statements built per call, such as a renewal batch).
    table: String,
    sql: Statements,
    /// The PostgreSQL `NOTIFY` channel releases are announced on.
    channel: String,
}

impl Queries {
    pub(crate) fn new(pool: SqlPool, table: &str, channel: String) -> Self {
        let sql = pool.dialect().statements(table);
        Self {
            pool,
            table: table.to_owned(),
            sql,
            channel,
        }
    }

    pub(crate) fn pool(&self) -> &SqlPool {
        &self.pool
    }

    pub(crate) fn statements(&self) -> &Statements {
        &self.sql
    }

    pub(crate) fn channel(&self) -> &str {
        &self.channel
    }

    /// Reads the table through the `state` statement, to check that it is there and readable.
    pub(crate) async fn probe(&self) -> StoreResult<()> {
        let probe = &self.sql.state;
        let read: Result<(), sqlx::Error> = with_clock!(&self.pool, p, add => add(sqlx::query(probe).bind("probe").bind(0i32)).fetch_all(p).await.map(|_| ()));
        read.map_err(classify)
    }
}
