//! The period ledger's requests: the claiming upsert, the read, the start and the clear.

use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{LockName, Period};
#[cfg(feature = "postgres")]
use sqlx::Row;

use super::{Queries, Waiters};
use crate::classify::classify;
use crate::pool::SqlPool;
#[cfg(feature = "sqlite")]
use crate::rows::lease_cols;
use crate::rows::{LeaseRow, LedgerRow, Refusal, lease, ms};

impl Queries {
    /// A period claim of slot 0 by `req`: granted, refused because the period already ran, or
    /// taken. A refused claim is judged by the ledger as read after it: in the same round trip
    /// on PostgreSQL, with one more read elsewhere. When the lock then reads as free and the
    /// ledger allows the claim (a claim refused just before a period ended, or before a
    /// release), the claim is tried once more (the same token: idempotent).
    pub(crate) async fn claim_period(
        &self,
        req: &AcquireRequest,
        period: Period,
        token: &str,
        waiters: Waiters<'_>,
    ) -> StoreResult<Acquisition> {
        let mut retried = false;
        loop {
            let ledger = match self.acquire_period(req, period, token, waiters).await? {
                Ok(row) => return Ok(Acquisition::Elected(lease(req, 0, row, Some(period)))),
                Err(Some(ledger)) => Some(ledger),
                Err(None) => self.read_period(&req.lock, true).await?,
            };
            match ledger.map(|l| l.refusal(period)) {
                Some(Refusal::AlreadyRan(record)) => return Ok(Acquisition::AlreadyRan(record)),
                Some(Refusal::Neither) | None if !retried => retried = true,
                _ => return Ok(Acquisition::Taken(None)),
            }
        }
    }

    /// One period-claiming upsert on slot 0: `Ok` with the lease's row if granted (or already
    /// this token's); else the ledger row when the same round trip returned it (PostgreSQL), or
    /// `None` (read it with [`read_period`](Self::read_period)).
    async fn acquire_period(
        &self,
        req: &AcquireRequest,
        period: Period,
        token: &str,
        waiters: Waiters<'_>,
    ) -> StoreResult<Result<LeaseRow, Option<LedgerRow>>> {
        let ttl = ms(req.ttl);
        let length = i64::try_from(period.length_ms()).unwrap_or(i64::MAX);
        let offset = i64::try_from(period.offset_ms()).unwrap_or(i64::MAX);
        let q = &self.sql.acquire_period;
        #[cfg(not(feature = "postgres"))]
        let _ = waiters;
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
                let (q, waiter) = match (waiters, &self.sql.hand_off) {
                    (Waiters::Kept { waiter, .. }, Some(h)) => (&h.acquire_period, Some(waiter)),
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
                let clock = crate::clock::HostClock::read();
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
}
