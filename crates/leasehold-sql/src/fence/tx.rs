//! Transactions on whichever pool a store has, and the typed `sqlx` transaction the user writes
//! in: the crate runs its own statements on [`AnyTx`] (one match per dialect), and hands the
//! user the `Transaction<'static, DB>` inside, checked against the pool's database.

use std::any::{Any, TypeId};

use sqlx::{Database, MySql, Postgres, Sqlite, Transaction};

use super::error::FenceError;
use crate::dialect::Dialect;
use crate::pool::SqlPool;

/// A transaction on one of the three databases.
pub(crate) enum AnyTx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
    MySql(Transaction<'static, MySql>),
}

/// Runs the same expression over whichever transaction is inside (`$t: &mut Transaction`).
macro_rules! with_tx {
    ($tx:expr, $t:ident => $body:expr) => {
        match $tx {
            $crate::fence::tx::AnyTx::Sqlite($t) => $body,
            $crate::fence::tx::AnyTx::Postgres($t) => $body,
            $crate::fence::tx::AnyTx::MySql($t) => $body,
        }
    };
}
pub(crate) use with_tx;

/// The dialect of `sqlx` database type `DB`, if it is one of the three.
pub(crate) fn dialect_of<DB: Database>() -> Option<Dialect> {
    let id = TypeId::of::<DB>();
    if id == TypeId::of::<Sqlite>() {
        Some(Dialect::Sqlite)
    } else if id == TypeId::of::<Postgres>() {
        Some(Dialect::Postgres)
    } else if id == TypeId::of::<MySql>() {
        Some(Dialect::MySql)
    } else {
        None
    }
}

/// `a` as a `B`, when they are the same type.
fn cast<A: Any, B: Any>(a: A) -> Option<B> {
    let boxed: Box<dyn Any> = Box::new(a);
    boxed.downcast::<B>().ok().map(|b| *b)
}

/// Checks that `DB` is the database of a pool of `pool`'s dialect.
pub(crate) fn check_database<DB: Database>(pool: Dialect) -> Result<(), FenceError> {
    if dialect_of::<DB>() == Some(pool) {
        Ok(())
    } else {
        Err(FenceError::WrongDatabase {
            pool,
            requested: DB::NAME,
        })
    }
}

impl AnyTx {
    /// Opens a transaction that will write: `BEGIN IMMEDIATE` on SQLite, which takes the
    /// database's write lock at once (waiting out the busy timeout), so no other writer
    /// interleaves with it; `BEGIN` elsewhere.
    pub(crate) async fn begin(pool: &SqlPool) -> Result<Self, sqlx::Error> {
        let begin = pool.dialect().begin_write();
        Ok(match pool {
            SqlPool::Sqlite(p) => Self::Sqlite(p.begin_with(begin).await?),
            SqlPool::Postgres(p) => Self::Postgres(p.begin_with(begin).await?),
            SqlPool::MySql(p) => Self::MySql(p.begin_with(begin).await?),
        })
    }

    /// The `sqlx` transaction inside, if it is a `DB` transaction; otherwise it is dropped,
    /// which rolls it back (callers check the database first with [`check_database`]).
    pub(crate) fn into_typed<DB: Database>(self) -> Option<Transaction<'static, DB>> {
        with_tx!(self, t => cast(t))
    }

    /// A typed transaction as an [`AnyTx`], if `DB` is one of the three databases; otherwise
    /// it is dropped, which rolls it back.
    pub(crate) fn from_typed<DB: Database>(tx: Transaction<'static, DB>) -> Option<Self> {
        match dialect_of::<DB>()? {
            Dialect::Sqlite => cast(tx).map(Self::Sqlite),
            Dialect::Postgres => cast(tx).map(Self::Postgres),
            Dialect::MySql => cast(tx).map(Self::MySql),
        }
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        with_tx!(self, t => t.commit().await)
    }

    /// Rolls back.
    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        with_tx!(self, t => t.rollback().await)
    }
}
