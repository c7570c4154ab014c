//! Hand-off's releases (PostgreSQL): keeping the freed lock for the releasing elector, or for
//! the longest waiter.

use leasehold::store::{HandOff, Release, ReleasedTo, StoreResult};
use leasehold::{Lease, LockName};
use sqlx::Row;

use super::Queries;
use crate::classify::classify;
use crate::contended::Contended;
use crate::dialect::HandOffStatements;
use crate::pool::SqlPool;

impl Queries {
    /// Frees slot 0 of `lease`'s lock as `to` says (hand-off, PostgreSQL), noting in
    /// `contended` a release that found waiters: `None` when this store does not hand off
    /// (not PostgreSQL, or `to` names no elector), for a plain release instead.
    pub(crate) async fn release_to(
        &self,
        lease: &Lease,
        to: HandOff,
        contended: &Contended,
    ) -> StoreResult<Option<ReleasedTo>> {
        let (SqlPool::Postgres(pool), Some(h), Some(who)) =
            (&self.pool, &self.sql.hand_off, to.waiter())
        else {
            return Ok(None);
        };
        let token = lease.token.to_hex();
        let who = who.to_hex();
        Ok(Some(match to {
            HandOff::Keep(_) => {
                match self
                    .release_keep(pool, h, &lease.lock, &token, &who)
                    .await?
                {
                    0 => ReleasedTo::plain(Release::NotHeld),
                    _ => ReleasedTo::plain(Release::Released),
                }
            }
            _ => {
                let likely = contended.waiters_likely();
                let released = self
                    .release_longest(pool, h, &lease.lock, &token, &who, likely)
                    .await?;
                match released {
                    None => ReleasedTo::plain(Release::NotHeld),
                    Some((kept, waiting)) => {
                        if waiting {
                            contended.found_waiters();
                        }
                        ReleasedTo::new(Release::Released, kept)
                    }
                }
            }
        }))
    }

    /// Frees slot 0 of `lock`, which `token` holds, keeping it for the releasing elector
    /// `waiter`'s next task (hand-off, PostgreSQL; no `NOTIFY`): the number of rows changed.
    #[cfg(feature = "postgres")]
    async fn release_keep(
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
    async fn release_longest(
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
}
