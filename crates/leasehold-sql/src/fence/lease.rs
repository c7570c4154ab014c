//! Fenced transactions in the lock's own database: `SqlStore::fenced`, whose commit
//! first checks — atomically with the commit — that the lease row still carries the holder's
//! token and has not expired by the database clock.

use std::ops::{Deref, DerefMut};

use leasehold::{LeaderContext, LockName};
#[cfg(feature = "sqlite")]
use sqlx::Row;
use sqlx::{Database, Transaction};

use super::error::{FenceError, read_fence};
use super::tx::{AnyTx, check_database};
use crate::classify::classify;
#[cfg(feature = "sqlite")]
use crate::clock::HostClock;
use crate::dialect::Dialect;
use crate::rows::slots_i32;
use crate::store::SqlStore;

impl SqlStore {
    /// Opens a transaction in the lock's own database (this store's pool) whose
    /// [`commit`](LeaseTransaction::commit) lands only while `ctx`'s lease is still held: the
    /// lease row `(lock, slot)` must still carry its token and must not have expired by the
    /// database clock. `DB` is the pool's `sqlx` database type (`sqlx::Postgres`,
    /// `sqlx::MySql` or `sqlx::Sqlite`); `ctx` must come from an elector on this store.
    ///
    /// The check runs as the transaction's last statement and holds the lease row until the
    /// commit (`SELECT … FOR UPDATE` on PostgreSQL and MySQL; on SQLite the whole transaction
    /// is `BEGIN IMMEDIATE`, which no other writer interleaves with), so no successor can take
    /// the lock between the check and the commit: your writes and the check are all or
    /// nothing.
    ///
    /// ```no_run
    /// # async fn demo(store: leasehold_sql::SqlStore, ctx: leasehold::LeaderContext)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// let mut tx = store.fenced::<sqlx::Postgres>(&ctx).await?;
    /// sqlx::query("UPDATE accounts SET balance = balance * 1.01").execute(&mut *tx).await?;
    /// tx.commit().await?; // Err(FenceError::LeaseLost { .. }) if a successor holds the lock
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`FenceError::WrongDatabase`] when `DB` is not the pool's database;
    /// [`FenceError::Store`] when the database fails.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the transaction, which rolls back.
    pub async fn fenced<DB: Database>(
        &self,
        ctx: &LeaderContext,
    ) -> Result<LeaseTransaction<DB>, FenceError> {
        check_database::<DB>(self.dialect())?;
        self.migrate().await?;
        let tx = AnyTx::begin(self.pool()).await.map_err(classify)?;
        let tx = tx.into_typed::<DB>().ok_or(FenceError::WrongDatabase {
            pool: self.dialect(),
            requested: DB::NAME,
        })?;
        let lease = ctx.lease();
        Ok(LeaseTransaction {
            tx,
            check: self.statements().check_lease.clone(),
            lock: lease.lock,
            slot: lease.slot,
            token: lease.token.to_hex(),
            fence: lease.fence,
            dialect: self.dialect(),
        })
    }

    /// The former name of [`fenced`](Self::fenced).
    ///
    /// # Errors
    ///
    /// As [`fenced`](Self::fenced).
    ///
    /// # Cancel safety
    ///
    /// As [`fenced`](Self::fenced).
    #[deprecated(note = "use `SqlStore::fenced(&ctx)`")]
    pub async fn begin_fenced<DB: Database>(
        &self,
        ctx: &LeaderContext,
    ) -> Result<LeaseTransaction<DB>, FenceError> {
        self.fenced(ctx).await
    }
}

/// A transaction in the lock's own database that commits only while its lease is held (see
/// [`SqlStore::fenced`]). Write through `&mut *tx` (it dereferences to the `sqlx`
/// connection), then [`commit`](Self::commit); dropping it rolls back.
#[must_use = "a fenced transaction is rolled back unless committed"]
pub struct LeaseTransaction<DB: Database> {
    tx: Transaction<'static, DB>,
    check: String,
    lock: LockName,
    slot: u32,
    /// The lease's token (hex): never printed.
    token: String,
    fence: u64,
    dialect: Dialect,
}

impl<DB: Database> std::fmt::Debug for LeaseTransaction<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseTransaction")
            .field("lock", &self.lock)
            .field("slot", &self.slot)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

impl<DB: Database> LeaseTransaction<DB> {
    /// The lock whose lease the commit checks.
    pub fn lock(&self) -> &LockName {
        &self.lock
    }

    /// The slot of that lease.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The fence of that lease.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The `sqlx` transaction, for APIs that take one.
    pub fn transaction(&mut self) -> &mut Transaction<'static, DB> {
        &mut self.tx
    }

    /// Checks that the lease is still held (its row carries the token, unexpired by the
    /// database clock, and is locked until the commit), then commits; otherwise rolls back.
    ///
    /// # Errors
    ///
    /// [`FenceError::LeaseLost`] when the lease is no longer held (the transaction was rolled
    /// back: nothing you wrote is kept); [`FenceError::Store`] when the database fails (then
    /// nothing was kept either, unless the commit itself was cut off on its way).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropping the future during the commit may leave it applied or not.
    pub async fn commit(self) -> Result<(), FenceError> {
        let Self {
            tx,
            check,
            lock,
            slot,
            token,
            fence,
            dialect,
        } = self;
        let mut tx = AnyTx::from_typed(tx).ok_or(FenceError::WrongDatabase {
            pool: dialect,
            requested: DB::NAME,
        })?;
        let (name, slot_i32) = (lock.as_str(), slots_i32(slot));
        let held: Result<Option<i64>, sqlx::Error> = match &mut tx {
            #[cfg(feature = "sqlite")]
            AnyTx::Sqlite(t) => {
                let q = sqlx::query(&check).bind(name).bind(slot_i32).bind(&token);
                match HostClock::read().bind(q).fetch_optional(&mut **t).await {
                    Ok(row) => row.map(|r| r.try_get(0)).transpose(),
                    Err(e) => Err(e),
                }
            }
            #[cfg(feature = "postgres")]
            AnyTx::Postgres(t) => {
                let q = sqlx::query_scalar(&check).bind(name).bind(slot_i32);
                q.bind(&token).fetch_optional(&mut **t).await
            }
            #[cfg(feature = "mysql")]
            AnyTx::MySql(t) => {
                let q = sqlx::query_scalar(&check).bind(name).bind(slot_i32);
                q.bind(&token).fetch_optional(&mut **t).await
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        };
        match held {
            Ok(Some(f)) if read_fence(f) == fence => {
                tx.commit().await.map_err(|e| classify(e).into())
            }
            Ok(_) => {
                let _ = tx.rollback().await;
                Err(FenceError::LeaseLost { lock, slot, fence })
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(FenceError::Store(classify(e)))
            }
        }
    }

    /// Rolls back (dropping the transaction does the same, later).
    ///
    /// # Errors
    ///
    /// [`FenceError::Store`] when the database cannot be told (it rolls back when the
    /// connection closes).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an interrupted rollback still ends in a rollback.
    pub async fn rollback(self) -> Result<(), FenceError> {
        self.tx.rollback().await.map_err(|e| classify(e).into())
    }
}

impl<DB: Database> Deref for LeaseTransaction<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.tx
    }
}

impl<DB: Database> DerefMut for LeaseTransaction<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}
