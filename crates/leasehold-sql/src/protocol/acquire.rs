//! Acquisitions without a period: one upsert per slot tried, the group's slots ordered by one
//! read first.

use leasehold::LockName;
use leasehold::store::{AcquireRequest, StoreResult};
use sqlx::Row;

use super::{Queries, Waiters};
use crate::classify::classify;
use crate::pool::SqlPool;
use crate::rows::{LeaseRow, SlotRow, lease_cols, ms, slots_i32};

impl Queries {
    /// For groups: the slots worth trying, in order — one this token already holds (a retried
    /// request that was applied), then missing or expired slots, lowest first.
    pub(crate) async fn candidate_slots(
        &self,
        req: &AcquireRequest,
        token: &str,
    ) -> StoreResult<Vec<i32>> {
        let slots = slots_i32(req.slots);
        let rows = self.group_slots(&req.lock, slots).await?;
        if let Some((slot, ..)) = rows
            .iter()
            .find(|(_, t, held)| t.as_deref().map(str::trim) == Some(token) && *held != 0)
        {
            return Ok(vec![*slot]);
        }
        let busy: std::collections::HashSet<i32> = rows
            .iter()
            .filter(|(_, _, held)| *held != 0)
            .map(|(s, ..)| *s)
            .collect();
        // The free slots, lowest first; `slots` is at most `MAX_SLOTS`.
        Ok((0..slots).filter(|s| !busy.contains(s)).collect())
    }

    /// One upsert attempt on one slot: the lease's row if granted (or already this token's).
    /// With `waiters` kept (PostgreSQL, slot 0), the attempt honours and keeps hand-off's line; unless
    /// the store recently met contention it first tries the upsert of a lock nobody waits for,
    /// and runs the one that keeps the line only if that was refused.
    pub(crate) async fn acquire(
        &self,
        req: &AcquireRequest,
        slot: i32,
        token: &str,
        waiters: Waiters<'_>,
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
        if let (SqlPool::Postgres(p), Waiters::Kept { waiter, contended }, Some(h)) =
            (&self.pool, waiters, &self.sql.hand_off)
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
        let _ = waiters;
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

    /// MySQL: the row `token` holds, read back after an upsert or update (MySQL has no
    /// `RETURNING`).
    #[cfg(feature = "mysql")]
    pub(super) async fn read_own(
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
    async fn group_slots(&self, lock: &LockName, slots: i32) -> StoreResult<Vec<SlotRow>> {
        let sql = &self.sql.group_slots;
        Ok(with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(sql).bind(lock.as_str()).bind(slots)).fetch_all(p).await.map_err(classify)?;
            rows.iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(classify)?
        }))
    }
}
