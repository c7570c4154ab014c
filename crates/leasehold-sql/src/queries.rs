//! The store's statements, bound and run on its pool: one method per statement, binding its
//! parameters in the order [`Statements`] documents — on SQLite followed by the host's clocks —
//! and, on MySQL, which has no `RETURNING`, reading the written row back.

use std::time::Duration;

use leasehold::store::{AcquireRequest, StoreResult};
use leasehold::{LockName, Period};
use sqlx::Row;

use crate::classify::classify;
#[cfg(feature = "sqlite")]
use crate::clock::HostClock;
#[cfg(feature = "postgres")]
use crate::dialect::HandOffStatements;
#[cfg(feature = "postgres")]
use crate::dialect::POSTGRES_NOTIFY;
use crate::dialect::Statements;
use crate::pool::SqlPool;
use crate::rows::{
    HolderRow, LeaseRow, LedgerRow, ListRow, SlotRow, holder_cols, lease_cols, list_cols, ms,
    slots_i32,
};

/// Like `with_pool!`, with `$add` a function that adds the clock parameters SQLite statements
/// take after their own (read from the host now); identity on the other dialects.
macro_rules! with_clock {
    ($pool:expr, $p:ident, $add:ident => $body:expr) => {
        match $pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite($p) => {
                let clock = HostClock::read();
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

/// Whether an acquisition honours and keeps hand-off's line (on PostgreSQL, whose table has its
/// column: see `dialect/hand_off.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Line<'a> {
    /// Without hand-off.
    Off,
    /// With hand-off.
    On {
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
    sql: Statements,
    /// The PostgreSQL `NOTIFY` channel releases are announced on.
    channel: String,
}

impl Queries {
    pub(crate) fn new(pool: SqlPool, sql: Statements, channel: String) -> Self {
        Self { pool, sql, channel }
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

    /// One upsert attempt on one slot: the lease's row if granted (or already this token's).
    /// With `line` on (PostgreSQL, slot 0), the attempt honours and keeps hand-off's line; unless
    /// the store recently met contention it first tries the upsert of a lock nobody waits for,
    /// and runs the one that keeps the line only if that was refused.
    pub(crate) async fn acquire(
        &self,
        req: &AcquireRequest,
        slot: i32,
        token: &str,
        line: Line<'_>,
    ) -> StoreResult<Option<LeaseRow>> {
        let ttl = ms(req.ttl);
        let q = &self.sql.acquire;
        #[cfg(feature = "mysql")]
        #[allow(irrefutable_let_patterns)] // when MySQL is the only driver compiled in
        if let SqlPool::MySql(p) = &self.pool {
            sqlx::query(q)
                .bind(req.lock.as_str())
                .bind(slot)
                .bind(req.owner.as_ref())
                .bind(token)
                .bind(ttl)
                .execute(p)
                .await
                .map_err(classify)?;
            return self.read_own(p, req.lock.as_str(), slot, token).await;
        }
        #[cfg(feature = "postgres")]
        if let (SqlPool::Postgres(p), Line::On { waiter, contended }, Some(h)) =
            (&self.pool, line, &self.sql.hand_off)
        {
            // Nobody waiting, nothing kept (the uncontended path): as cheap as the plain upsert.
            // Otherwise (or held) the upsert that honours the keep and keeps the line.
            if !contended {
                let alone = sqlx::query(&h.acquire_alone)
                    .bind(req.lock.as_str())
                    .bind(slot)
                    .bind(req.owner.as_ref())
                    .bind(token)
                    .bind(ttl)
                    .fetch_optional(p)
                    .await
                    .map_err(classify)?;
                if let Some(row) = alone {
                    return lease_cols(&row).map(Some);
                }
            }
            return sqlx::query(&h.acquire)
                .bind(req.lock.as_str())
                .bind(slot)
                .bind(req.owner.as_ref())
                .bind(token)
                .bind(ttl)
                .bind(waiter)
                .fetch_optional(p)
                .await
                .map_err(classify)?
                .map(|r| {
                    // A refusal that recorded its waiter returns the row too, with the
                    // holder's token (or none).
                    let holder: Option<String> = r.try_get(3).map_err(classify)?;
                    (holder.as_deref().map(str::trim) == Some(token))
                        .then(|| lease_cols(&r))
                        .transpose()
                })
                .transpose()
                .map(Option::flatten);
        }
        #[cfg(not(feature = "postgres"))]
        let _ = line;
        Ok(with_clock!(&self.pool, p, add => add(sqlx::query(q)
                .bind(req.lock.as_str())
                .bind(slot)
                .bind(req.owner.as_ref())
                .bind(token)
                .bind(ttl))
                .fetch_optional(p)
                .await
                .map_err(classify)?
                .map(|r| lease_cols(&r))
                .transpose()?))
    }

    /// One period-claiming upsert on slot 0: `Ok` with the lease's row if granted (or already
    /// this token's); else the ledger row when the same round trip returned it (PostgreSQL), or
    /// `None` (read it with [`read_period`](Self::read_period)).
    pub(crate) async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
        token: &str,
        line: Line<'_>,
    ) -> StoreResult<Result<LeaseRow, Option<LedgerRow>>> {
        let ttl = ms(req.ttl);
        let length = i64::try_from(period.length_ms()).unwrap_or(i64::MAX);
        let offset = i64::try_from(period.offset_ms()).unwrap_or(i64::MAX);
        let q = &self.sql.acquire_period;
        #[cfg(not(feature = "postgres"))]
        let _ = line;
        match &self.pool {
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => {
                sqlx::query(q)
                    .bind(req.lock.as_str())
                    .bind(0i32)
                    .bind(req.owner.as_ref())
                    .bind(token)
                    .bind(ttl)
                    .bind(req.owner.as_ref())
                    .bind(token)
                    .bind(offset)
                    .bind(length)
                    .execute(p)
                    .await
                    .map_err(classify)?;
                Ok(self
                    .read_own(p, req.lock.as_str(), 0, token)
                    .await?
                    .ok_or(None))
            }
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => {
                let (q, waiter) = match (line, &self.sql.hand_off) {
                    (Line::On { waiter, .. }, Some(h)) => (&h.acquire_period, Some(waiter)),
                    _ => (q, None),
                };
                let query = sqlx::query(q)
                    .bind(req.lock.as_str())
                    .bind(0i32)
                    .bind(req.owner.as_ref())
                    .bind(token)
                    .bind(ttl)
                    .bind(length)
                    .bind(offset);
                let query = match waiter {
                    Some(w) => query.bind(w),
                    None => query,
                };
                let row = query.fetch_optional(p).await.map_err(classify)?;
                let Some(r) = row else {
                    return Ok(Err(None));
                };
                let cols = (|| -> Result<_, sqlx::Error> {
                    let lease: (Option<i64>, Option<i64>, Option<i64>) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    Ok((lease, LedgerRow::decode(&r, 3)?))
                })()
                .map_err(classify)?;
                Ok(match cols {
                    ((Some(fence), Some(acquired), Some(expires)), _) => {
                        Ok((fence, acquired, expires))
                    }
                    (_, ledger) => Err(ledger),
                })
            }
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => {
                let clock = HostClock::read();
                Ok(clock
                    .bind(
                        sqlx::query(q)
                            .bind(req.lock.as_str())
                            .bind(0i32)
                            .bind(req.owner.as_ref())
                            .bind(token)
                            .bind(ttl)
                            .bind(length)
                            .bind(offset),
                    )
                    .fetch_optional(p)
                    .await
                    .map_err(classify)?
                    .map(|r| lease_cols(&r))
                    .transpose()?
                    .ok_or(None))
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    }

    /// The ledger of `lock`, whether its slot 0 is held, and the database's now. `claims`:
    /// whether the table has the columns of the ledger's claims (else it reads an older
    /// version's records from the first three).
    pub(crate) async fn read_period(
        &self,
        lock: &LockName,
        claims: bool,
    ) -> StoreResult<Option<LedgerRow>> {
        let q = if claims {
            &self.sql.read_period
        } else {
            &self.sql.read_old_period
        };
        Ok(with_clock!(&self.pool, p, add => {
            let row = add(sqlx::query(q).bind(lock.as_str())).fetch_optional(p).await.map_err(classify)?;
            match row {
                Some(r) => LedgerRow::decode(&r, 0).map_err(classify)?,
                None => None,
            }
        }))
    }

    /// Deletes the ledger of `lock` and returns it as it was, in one transaction: slot 0's row
    /// read with a lock (`FOR UPDATE`; on SQLite the transaction is `BEGIN IMMEDIATE`, which no
    /// other writer can interleave with), then its `ledger_*` columns set to `NULL` if the row
    /// exists. `claims`: whether the table has the columns of the ledger's claims (else only the
    /// first three are read and emptied). The row, its holder and its fence stay.
    pub(crate) async fn clear_period(
        &self,
        lock: &LockName,
        claims: bool,
    ) -> StoreResult<Option<LedgerRow>> {
        let (select, clear) = if claims {
            (&self.sql.clear_period_select, &self.sql.clear_period)
        } else {
            (
                &self.sql.clear_old_period_select,
                &self.sql.clear_old_period,
            )
        };
        Ok(with_clock!(&self.pool, p, add => {
            let mut tx = p
                .begin_with(self.sql.begin_write.clone())
                .await
                .map_err(classify)?;
            let row = add(sqlx::query(select).bind(lock.as_str()))
                .fetch_optional(&mut *tx)
                .await
                .map_err(classify)?;
            let ledger = match row {
                Some(r) => {
                    let ledger = LedgerRow::decode(&r, 0).map_err(classify)?;
                    sqlx::query(clear)
                        .bind(lock.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(classify)?;
                    ledger
                }
                None => None,
            };
            tx.commit().await.map_err(classify)?;
            ledger
        }))
    }

    /// Marks the period claim of the lease `token` holds on slot 0 of `lock` started: the
    /// number of rows changed (0 when the token does not hold the live lease or did not make
    /// the latest claim). MySQL counts the rows matched (sqlx connects with `FOUND_ROWS`), so
    /// a repeated start counts too.
    pub(crate) async fn start_period(&self, lock: &LockName, token: &str) -> StoreResult<u64> {
        let q = &self.sql.start_period;
        Ok(
            with_clock!(&self.pool, p, add => add(sqlx::query(q).bind(lock.as_str()).bind(0i32).bind(token)).execute(p).await.map_err(classify)?.rows_affected()),
        )
    }

    /// MySQL: the row `token` holds, read back after an upsert or update (MySQL has no
    /// `RETURNING`).
    #[cfg(feature = "mysql")]
    async fn read_own(
        &self,
        pool: &sqlx::MySqlPool,
        lock: &str,
        slot: i32,
        token: &str,
    ) -> StoreResult<Option<LeaseRow>> {
        sqlx::query(&self.sql.read_own)
            .bind(lock)
            .bind(slot)
            .bind(token)
            .fetch_optional(pool)
            .await
            .map_err(classify)?
            .map(|r| lease_cols(&r))
            .transpose()
    }

    /// Every row of the first `slots` slots of `lock`.
    pub(crate) async fn group_slots(
        &self,
        lock: &LockName,
        slots: i32,
    ) -> StoreResult<Vec<SlotRow>> {
        let sql = &self.sql.group_slots;
        Ok(with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(sql).bind(lock.as_str()).bind(slots)).fetch_all(p).await.map_err(classify)?;
            rows.iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(classify)?
        }))
    }

    /// Extends the lease `token` holds on `slot`: its new expiry, or `None` when not held.
    pub(crate) async fn extend(
        &self,
        lock: &LockName,
        slot: i32,
        token: &str,
        ttl: Duration,
    ) -> StoreResult<Option<i64>> {
        let q = &self.sql.extend;
        #[cfg(feature = "mysql")]
        #[allow(irrefutable_let_patterns)] // when MySQL is the only driver compiled in
        if let SqlPool::MySql(p) = &self.pool {
            let done = sqlx::query(q)
                .bind(ms(ttl))
                .bind(lock.as_str())
                .bind(slot)
                .bind(token)
                .execute(p)
                .await
                .map_err(classify)?;
            return Ok(if done.rows_affected() == 0 {
                None
            } else {
                self.read_own(p, lock.as_str(), slot, token)
                    .await?
                    .map(|(_, _, expires)| expires)
            });
        }
        Ok(with_clock!(&self.pool, p, add => {
            let row = add(sqlx::query(q)
                .bind(ms(ttl))
                .bind(lock.as_str())
                .bind(slot)
                .bind(token))
                .fetch_optional(p)
                .await
                .map_err(classify)?;
            row.map(|r| r.try_get::<i64, _>(0)).transpose().map_err(classify)?
        }))
    }

    /// Frees the row `token` holds on `slot` (on PostgreSQL also sending `NOTIFY`): the number
    /// of rows changed.
    pub(crate) async fn release(
        &self,
        lock: &LockName,
        slot: i32,
        token: &str,
    ) -> StoreResult<u64> {
        let q = &self.sql.release;
        let lock = lock.as_str();
        #[cfg(feature = "postgres")]
        #[allow(irrefutable_let_patterns)] // when PostgreSQL is the only driver compiled in
        if let SqlPool::Postgres(p) = &self.pool {
            return Ok(sqlx::query(q)
                .bind(lock)
                .bind(slot)
                .bind(token)
                .bind(&self.channel)
                .fetch_all(p)
                .await
                .map_err(classify)?
                .len() as u64);
        }
        Ok(
            with_clock!(&self.pool, p, add => add(sqlx::query(q).bind(lock).bind(slot).bind(token)).execute(p).await.map_err(classify)?.rows_affected()),
        )
    }

    /// Frees slot 0 of `lock`, which `token` holds, keeping it for the releasing elector
    /// `waiter`'s next task (hand-off, PostgreSQL; no `NOTIFY`): the number of rows changed.
    #[cfg(feature = "postgres")]
    pub(crate) async fn release_keep(
        &self,
        pool: &sqlx::PgPool,
        h: &HandOffStatements,
        lock: &LockName,
        token: &str,
        waiter: &str,
    ) -> StoreResult<u64> {
        Ok(sqlx::query(&h.release_keep)
            .bind(lock.as_str())
            .bind(0i32)
            .bind(token)
            .bind(waiter)
            .execute(pool)
            .await
            .map_err(classify)?
            .rows_affected())
    }

    /// Frees slot 0 of `lock`, which `token` holds, keeping it for the longest waiter other
    /// than `me` (hand-off, PostgreSQL; sends `NOTIFY`): `None` if not held, else whether it
    /// is kept for another elector and whether anyone is left in the line. Unless `contended`
    /// (releases recently found waiters), it first tries the release of a lock nobody
    /// waits for, as cheap as a plain release, and looks through the line only if that changed
    /// nothing (somebody waits, or the lease is not held).
    #[cfg(feature = "postgres")]
    #[allow(clippy::too_many_arguments)] // one statement's parameters
    pub(crate) async fn release_longest(
        &self,
        pool: &sqlx::PgPool,
        h: &HandOffStatements,
        lock: &LockName,
        token: &str,
        me: &str,
        contended: bool,
    ) -> StoreResult<Option<(bool, bool)>> {
        if !contended {
            let alone = sqlx::query(&h.release_alone)
                .bind(lock.as_str())
                .bind(0i32)
                .bind(token)
                .bind(&self.channel)
                .fetch_optional(pool)
                .await
                .map_err(classify)?;
            if alone.is_some() {
                return Ok(Some((false, false)));
            }
        }
        let row = sqlx::query(&h.release_longest)
            .bind(lock.as_str())
            .bind(0i32)
            .bind(token)
            .bind(me)
            .bind(&self.channel)
            .fetch_optional(pool)
            .await
            .map_err(classify)?;
        row.map(|r| -> Result<_, sqlx::Error> {
            let kept: Option<String> = r.try_get(1)?;
            Ok((kept.is_some(), r.try_get::<bool, _>(2)?))
        })
        .transpose()
        .map_err(classify)
    }

    /// Shortens the lease `token` holds on `slot` to end `linger` from now: the number of rows
    /// changed.
    pub(crate) async fn release_linger(
        &self,
        lock: &LockName,
        slot: i32,
        token: &str,
        linger: Duration,
    ) -> StoreResult<u64> {
        let q = &self.sql.release_linger;
        let lock = lock.as_str();
        Ok(
            with_clock!(&self.pool, p, add => add(sqlx::query(q).bind(ms(linger)).bind(lock).bind(slot).bind(token)).execute(p).await.map_err(classify)?.rows_affected()),
        )
    }

    /// At most `limit` rows of the locks named after `after`, in key order, live or not.
    pub(crate) async fn list(&self, after: &str, limit: usize) -> StoreResult<Vec<ListRow>> {
        let q = &self.sql.list;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(q).bind(after).bind(limit)).fetch_all(p).await.map_err(classify)?;
            rows.iter().map(list_cols).collect::<StoreResult<Vec<_>>>()?
        }))
    }

    /// The live holders of the first `slots` slots of `lock`.
    pub(crate) async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<HolderRow>> {
        let q = &self.sql.state;
        Ok(with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(q).bind(lock.as_str()).bind(slots_i32(slots))).fetch_all(p).await.map_err(classify)?;
            rows.iter().map(holder_cols).collect::<StoreResult<Vec<_>>>()?
        }))
    }

    /// Frees every live slot of the first `slots` of `lock` and returns them as they were, in
    /// one transaction; on PostgreSQL then announces the release.
    pub(crate) async fn force_release(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<HolderRow>> {
        let n = slots_i32(slots);
        // Read the holders as they were, then free them, in one transaction.
        let rows: Vec<HolderRow> = with_clock!(&self.pool, p, add => {
            let mut tx = p
                .begin_with(self.sql.begin_write.clone())
                .await
                .map_err(classify)?;
            let rows = add(sqlx::query(&self.sql.force_select)
                .bind(lock.as_str())
                .bind(n))
                .fetch_all(&mut *tx)
                .await
                .map_err(classify)?;
            let rows = rows.iter().map(holder_cols).collect::<StoreResult<Vec<_>>>()?;
            add(sqlx::query(&self.sql.force_release)
                .bind(lock.as_str())
                .bind(n))
                .execute(&mut *tx)
                .await
                .map_err(classify)?;
            tx.commit().await.map_err(classify)?;
            rows
        });
        #[cfg(feature = "postgres")]
        #[allow(irrefutable_let_patterns)] // when PostgreSQL is the only driver compiled in
        if !rows.is_empty()
            && let SqlPool::Postgres(p) = &self.pool
        {
            let _ = sqlx::query(POSTGRES_NOTIFY)
                .bind(&self.channel)
                .bind(lock.as_str())
                .fetch_all(p)
                .await;
        }
        Ok(rows)
    }
}
