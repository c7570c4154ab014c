//! Requests on held leases and on whole locks: extend, release, state, list and forced release.

use std::time::Duration;

use leasehold::LockName;
use leasehold::store::StoreResult;
use sqlx::Row;

use super::Queries;
use crate::classify::classify;
#[cfg(feature = "postgres")]
use crate::dialect::POSTGRES_NOTIFY;
use crate::pool::SqlPool;
use crate::rows::{HolderRow, ListRow, holder_cols, list_cols, ms, slots_i32};

impl Queries {
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
