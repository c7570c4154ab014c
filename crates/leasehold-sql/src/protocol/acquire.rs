//! Acquisitions without a period: one upsert per slot tried, the group's slots ordered by one
//! read first.

use leasehold::LockName;
use leasehold::store::{AcquireRequest, StoreResult};
use sqlx::Row;

use super::{Queries, Waiters};
use crate::classify::classify;
use crate::pool::SqlPool;
#[cfg(feature = "mysql")]
use crate::rows::holder_cols;
use crate::rows::{HolderRow, LeaseRow, SlotRow, lease_cols, ms, slots_i32};

/// One upsert attempt's answer.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Granted (or already this token's): the lease's row.
    Granted(LeaseRow),
    /// Refused: on MySQL the holder the read back found (none if the slot turned free since),
    /// elsewhere none (the store reads it if it must).
    Refused(Option<HolderRow>),
}

impl Attempt {
    /// Granted with the row, or refused naming nobody.
    fn of(row: Option<LeaseRow>) -> Self {
        row.map_or(Self::Refused(None), Self::Granted)
    }
}

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

    /// One upsert attempt on one slot: the lease's row if granted (or already this token's);
    /// refused, on MySQL the holder it read back (in the same read that would have found the
    /// grant), elsewhere none. With `waiters` kept (PostgreSQL, slot 0), the attempt honours and keeps hand-off's line; unless
    /// the store recently met contention it first tries the upsert of a lock nobody waits for,
    /// and runs the one that keeps the line only if that was refused.
    pub(crate) async fn acquire(
        &self,
        req: &AcquireRequest,
        slot: i32,
        token: &str,
        waiters: Waiters<'_>,
    ) -> StoreResult<Attempt> {
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
            return Ok(match self.read_slot(p, req.lock.as_str(), slot).await? {
                Some((row, held_by)) if held_by == token => {
                    let (_, _, fence, acquired, expires) = row;
                    Attempt::Granted((fence, acquired, expires))
                }
                held => Attempt::Refused(held.map(|(row, _)| row)),
            });
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
                    return lease_cols(&row).map(Attempt::Granted);
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
                .map(|row| Attempt::of(row.flatten()));
        }
        #[cfg(not(feature = "postgres"))]
        let _ = waiters;
        Ok(Attempt::of(
            with_clock!(&self.pool, p, add => add(sqlx::query(q)
                .bind(req.lock.as_str())
                .bind(slot)
                .bind(req.owner.as_ref())
                .bind(token)
                .bind(ttl))
                .fetch_optional(p)
                .await
                .map_err(classify)?
                .map(|r| lease_cols(&r))
                .transpose()?),
        ))
    }

    /// MySQL: the live row of `slot` with the token that holds it, read back after an upsert or
    /// update (MySQL has no `RETURNING`).
    #[cfg(feature = "mysql")]
    async fn read_slot(
        &self,
        pool: &sqlx::MySqlPool,
        lock: &str,
        slot: i32,
    ) -> StoreResult<Option<(HolderRow, String)>> {
        sqlx::query(&self.sql.read_slot)
            .bind(lock)
            .bind(slot)
            .fetch_optional(pool)
            .await
            .map_err(classify)?
            .map(|r| {
                let token: String = r.try_get(5).map_err(classify)?;
                Ok((holder_cols(&r)?, token.trim().to_owned()))
            })
            .transpose()
    }

    /// MySQL: the row `token` holds, read back after an upsert or update.
    #[cfg(feature = "mysql")]
    pub(super) async fn read_own(
        &self,
        pool: &sqlx::MySqlPool,
        lock: &str,
        slot: i32,
        token: &str,
    ) -> StoreResult<Option<LeaseRow>> {
        Ok(self
            .read_slot(pool, lock, slot)
            .await?
            .filter(|(_, held_by)| held_by == token)
            .map(|((_, _, fence, acquired, expires), _)| (fence, acquired, expires)))
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
