//! Requests on held leases and on whole locks: extend, release, state, list and forced release.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use leasehold::store::{Extension, StoreResult};
use leasehold::{Lease, LockName};
use sqlx::Row;

use super::Queries;
use crate::classify::classify;
#[cfg(feature = "postgres")]
use crate::dialect::POSTGRES_NOTIFY;
use crate::pool::SqlPool;
use crate::rows::{
    HolderRow, ListRow, RenewedRow, holder_cols, list_cols, ms, renewed_cols, slots_i32, time,
};

/// The most leases one renewal statement carries: with three parameters each it stays below
/// PostgreSQL's and MySQL's 65,535 (SQLite binds them all as one JSON parameter).
pub(crate) const MAX_BATCH: usize = 10_000;

/// A row's key as bound: lock name, slot and token (hex).
type RowKey = (String, i32, String);

impl Queries {
    /// Extends `lease` to end `ttl` after the database's now, if its token holds it live.
    pub(crate) async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let expires = self
            .extend_one(
                &lease.lock,
                slots_i32(lease.slot),
                &lease.token.to_hex(),
                ttl,
            )
            .await?;
        Ok(expires.map_or(Extension::NotHeld, |e| Extension::Extended {
            expires_at: time(e),
        }))
    }

    /// Extends the lease `token` holds on `slot`: its new expiry, or `None` when not held.
    async fn extend_one(
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

    /// Extends every lease of `leases` its token holds live, each to its ttl after the
    /// database's now: the answer for each, in order. One statement per ttl and per
    /// [`MAX_BATCH`] leases — a process's renewals on one beat are usually one statement.
    pub(crate) async fn extend_many(
        &self,
        leases: &[(Lease, Duration)],
    ) -> StoreResult<Vec<Extension>> {
        let key = |lease: &Lease| {
            (
                lease.lock.as_str().to_owned(),
                slots_i32(lease.slot),
                lease.token.to_hex(),
            )
        };
        let mut by_ttl: BTreeMap<i64, Vec<RowKey>> = BTreeMap::new();
        for (lease, ttl) in leases {
            by_ttl.entry(ms(*ttl)).or_default().push(key(lease));
        }
        let mut renewed = HashMap::new();
        for (ttl, keys) in &by_ttl {
            for chunk in keys.chunks(MAX_BATCH) {
                renewed.extend(self.extend_chunk(*ttl, chunk).await?);
            }
        }
        Ok(leases
            .iter()
            .map(|(lease, _)| {
                renewed
                    .get(&key(lease))
                    .map_or(Extension::NotHeld, |&e| Extension::Extended {
                        expires_at: time(e),
                    })
            })
            .collect())
    }

    /// One statement of [`extend_many`](Self::extend_many) (on MySQL, and its read back).
    async fn extend_chunk(&self, ttl: i64, keys: &[RowKey]) -> StoreResult<Vec<RenewedRow>> {
        let (update, read_back) = self.pool.dialect().extend_batch(&self.table, keys.len());
        #[allow(unused_macros)] // not with SQLite alone, whose rows are one parameter
        macro_rules! bind_keys {
            ($q:expr) => {{
                let mut q = $q;
                for (lock, slot, token) in keys {
                    q = q.bind(lock.as_str()).bind(*slot).bind(token.as_str());
                }
                q
            }};
        }
        let _ = &read_back; // read only on MySQL
        match &self.pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => {
                // The rows as one JSON parameter (see `Dialect::extend_batch`).
                let rows = serde_json::to_string(keys).map_err(|e| {
                    leasehold::store::StoreError::permanent(format!("encoding a renewal: {e}"))
                })?;
                let q = sqlx::query(&update).bind(ttl).bind(rows);
                let rows = crate::clock::HostClock::read()
                    .bind(q)
                    .fetch_all(p)
                    .await
                    .map_err(classify)?;
                rows.iter().map(renewed_cols).collect()
            }
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => {
                let q = bind_keys!(sqlx::query(&update).bind(ttl));
                let rows = q.fetch_all(p).await.map_err(classify)?;
                rows.iter().map(renewed_cols).collect()
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => {
                bind_keys!(sqlx::query(&update).bind(ttl))
                    .execute(p)
                    .await
                    .map_err(classify)?;
                let read = read_back.unwrap_or_default();
                let rows = bind_keys!(sqlx::query(&read))
                    .fetch_all(p)
                    .await
                    .map_err(classify)?;
                rows.iter().map(renewed_cols).collect()
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    }

    /// Frees `lease` (`release`), or with a linger shortens it (`release_linger`): the number
    /// of rows changed.
    pub(crate) async fn release_lease(&self, lease: &Lease, linger: Duration) -> StoreResult<u64> {
        let (token, slot) = (lease.token.to_hex(), slots_i32(lease.slot));
        if linger.is_zero() {
            self.release(&lease.lock, slot, &token).await
        } else {
            self.release_linger(&lease.lock, slot, &token, linger).await
        }
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
