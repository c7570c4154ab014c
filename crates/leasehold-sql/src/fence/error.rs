//! `FenceError`: why a fenced write did not happen, and how a database error is recognized as
//! the guard trigger refusing a stale fence.

use leasehold::fence::StaleFence;
use leasehold::{LockName, store::StoreError};

use crate::dialect::{
    ColumnNameError, Dialect, POSTGRES_STALE_FENCE_SQLSTATE, STALE_FENCE_MESSAGE, TableNameError,
};

/// The largest fence a SQL fence column holds: `i64::MAX`, as the columns are signed 64-bit
/// `BIGINT`s (the lease table's fences are the same type, so every fence an `SqlStore` issues
/// fits). A larger fence is refused with [`FenceError::FenceTooLarge`], never wrapped.
pub const MAX_SQL_FENCE: u64 = i64::MAX as u64;

/// Why a fenced write or a fenced transaction did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FenceError {
    /// A higher fence was accepted for the resource before: the writer's lease ended and a
    /// successor has written since. The transaction was rolled back; `highest` was read after
    /// the rollback.
    #[error(transparent)]
    Stale(#[from] StaleFence),
    /// The lease row no longer carries this holder's token (forced release, or a successor
    /// took over) or its lease is over by the database clock: the transaction was rolled back,
    /// nothing it wrote was kept.
    #[error(
        "lease lost: lock {lock:?} slot {slot} (fence {fence}) is no longer held by this holder \
         or has expired by the database clock; the transaction was rolled back"
    )]
    LeaseLost {
        /// The lock.
        lock: LockName,
        /// The slot.
        slot: u32,
        /// The lost lease's fence.
        fence: u64,
    },
    /// The fence does not fit the signed 64-bit column ([`MAX_SQL_FENCE`]).
    #[error(
        "fence {fence} is too large for a SQL fence column: at most {max} (i64::MAX, the range \
         of BIGINT, like the lease table's fences) is allowed"
    )]
    FenceTooLarge {
        /// The fence given.
        fence: u64,
        /// [`MAX_SQL_FENCE`].
        max: u64,
    },
    /// The transaction was asked for another database than the pool's.
    #[error(
        "the pool is a {pool} pool, but a {requested} transaction was asked for; use the \
         pool's database type (sqlx::Sqlite, sqlx::Postgres or sqlx::MySql)"
    )]
    WrongDatabase {
        /// The pool's dialect.
        pool: Dialect,
        /// The database type asked for (`sqlx::Database::NAME`).
        requested: &'static str,
    },
    /// A table name that is not allowed.
    #[error(transparent)]
    Table(#[from] TableNameError),
    /// A column name that is not allowed.
    #[error(transparent)]
    Column(#[from] ColumnNameError),
    /// The database failed (classified transient or permanent).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FenceError {
    /// The stale fence, when that is why the write was refused.
    pub fn stale(&self) -> Option<&StaleFence> {
        match self {
            Self::Stale(s) => Some(s),
            _ => None,
        }
    }

    /// True when the write was refused because the writer is no longer the holder: a
    /// [`Stale`](Self::Stale) fence or a [`LeaseLost`](Self::LeaseLost) lease.
    pub fn is_stale(&self) -> bool {
        matches!(self, Self::Stale(_) | Self::LeaseLost { .. })
    }
}

impl From<FenceError> for StoreError {
    /// Database errors as they are; every other reason as a permanent error whose source is the
    /// [`FenceError`].
    fn from(e: FenceError) -> Self {
        match e {
            FenceError::Store(e) => e,
            other => StoreError::permanent(other.to_string()).with_source(other),
        }
    }
}

/// Checks that `fence` fits a SQL fence column.
pub(crate) fn sql_fence(fence: u64) -> Result<i64, FenceError> {
    i64::try_from(fence).map_err(|_| FenceError::FenceTooLarge {
        fence,
        max: MAX_SQL_FENCE,
    })
}

/// A fence read from a column, as the lease table reads its own: negative values (written by
/// hand) read as 0.
pub(crate) fn read_fence(fence: i64) -> u64 {
    u64::try_from(fence).unwrap_or_default()
}

/// True when `err` is a guard trigger refusing an update that lowers a fence column — the fence
/// table's or one protected with `SqlFences::protect_column` — on any of the three databases.
///
/// ```no_run
/// # async fn demo(pool: sqlx::PgPool, fence: i64) -> Result<(), sqlx::Error> {
/// let done = sqlx::query("UPDATE reports SET total = 0, last_fence = $1 WHERE id = 1")
///     .bind(fence)
///     .execute(&pool)
///     .await;
/// if let Err(e) = &done && leasehold_sql::is_stale_fence_error(e) {
///     tracing::warn!("a newer holder has written reports; this run's result is dropped");
/// }
/// # Ok(()) }
/// ```
pub fn is_stale_fence_error(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.code().as_deref() == Some(POSTGRES_STALE_FENCE_SQLSTATE)
                || db.message().starts_with(STALE_FENCE_MESSAGE)
        }
        _ => false,
    }
}

/// True when retrying the whole transaction can help: a deadlock or serialization failure
/// (SQLSTATE class 40), which InnoDB answers when two transactions insert the same new key.
pub(crate) fn is_conflict(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("40")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_beyond_bigint_are_refused_not_wrapped() {
        assert_eq!(sql_fence(MAX_SQL_FENCE).ok(), Some(i64::MAX));
        let e = sql_fence(MAX_SQL_FENCE + 1).expect_err("beyond BIGINT");
        assert!(matches!(e, FenceError::FenceTooLarge { fence, .. } if fence == MAX_SQL_FENCE + 1));
        assert!(e.to_string().contains("i64::MAX"), "{e}");
        assert_eq!(read_fence(-5), 0);
        let store: StoreError = e.into();
        assert!(!store.is_transient());
        assert!(store.to_string().contains("too large"), "{store}");
    }
}
