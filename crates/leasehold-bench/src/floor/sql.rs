//! The SQL floor: the store's own acquire and release statements, bound and executed raw on its
//! pool (on MySQL with the read-back, since it has no `RETURNING`; on SQLite with the host's
//! clocks from `leasehold_sql::HostClock`, the store's public surface for running its statements).

use std::time::Duration;

use leasehold::{LockName, store::Token};
use leasehold_sql::{HostClock, SqlPool, SqlStore};
use sqlx::Row;

use crate::BoxError;

/// The acquire statement with the parameters the store binds: (lock, slot, owner, token, ttl),
/// plus the host's clocks on SQLite.
pub(super) async fn acquire(
    store: &SqlStore,
    lock: &LockName,
    token: Token,
    ttl: Duration,
) -> Result<bool, BoxError> {
    let sql = store.statements();
    let token = token.to_hex();
    let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    // One statement, bound for whichever database the pool is.
    macro_rules! query {
        () => {
            sqlx::query(&sql.acquire)
                .bind(lock.as_str())
                .bind(0i32)
                .bind("floor")
                .bind(&token)
                .bind(ttl)
        };
    }
    Ok(match store.pool() {
        SqlPool::Postgres(p) => query!().fetch_optional(p).await?.is_some(),
        // SQLite statements also take the host's clocks.
        SqlPool::Sqlite(p) => HostClock::read()
            .bind(query!())
            .fetch_optional(p)
            .await?
            .is_some(),
        SqlPool::MySql(p) => {
            query!().execute(p).await?;
            let row = sqlx::query(&sql.read_slot)
                .bind(lock.as_str())
                .bind(0i32)
                .fetch_optional(p)
                .await?;
            row.map(|r| r.try_get::<String, _>(5))
                .transpose()?
                .is_some_and(|t| t.trim() == token)
        }
        // `SqlPool` is non-exhaustive (a variant per driver feature); this crate builds all three.
        other => return Err(format!("no SQL floor for a {} pool", other.dialect()).into()),
    })
}

/// The release statement: (lock, slot, token), plus the notification channel on PostgreSQL.
pub(super) async fn release(
    store: &SqlStore,
    lock: &LockName,
    token: Token,
) -> Result<(), BoxError> {
    let sql = store.statements();
    let token = token.to_hex();
    macro_rules! query {
        () => {
            sqlx::query(&sql.release)
                .bind(lock.as_str())
                .bind(0i32)
                .bind(&token)
        };
    }
    match store.pool() {
        SqlPool::Postgres(p) => {
            query!().bind(store.notify_channel()).fetch_all(p).await?;
        }
        SqlPool::Sqlite(p) => {
            HostClock::read().bind(query!()).execute(p).await?;
        }
        SqlPool::MySql(p) => {
            query!().execute(p).await?;
        }
        other => return Err(format!("no SQL floor for a {} pool", other.dialect()).into()),
    }
    Ok(())
}
