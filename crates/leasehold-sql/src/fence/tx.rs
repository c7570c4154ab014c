//! Transactions on whichever pool a store has, and the typed `sqlx` transaction the user writes
//! in: the crate runs its own statements on [`AnyTx`] (one match per dialect), and hands the
//! user the `Transaction<'static, DB>` inside, checked against the pool's database.

use std::any::{Any, TypeId};

#[cfg(feature = "mysql")]
use sqlx::MySql;
#[cfg(feature = "postgres")]
use sqlx::Postgres;
#[cfg(feature = "sqlite")]
use sqlx::Sqlite;
use sqlx::{Database, Transaction};

use super::error::FenceError;
use crate::dialect::Dialect;
use crate::pool::SqlPool;

/// A transaction on one of the databases whose drivers are compiled in.
pub(crate) enum AnyTx {
    #[cfg(feature = "sqlite")]
    Sqlite(Transaction<'static, Sqlite>),
    #[cfg(feature = "postgres")]
    Postgres(Transaction<'static, Postgres>),
    #[cfg(feature = "mysql")]
    MySql(Transaction<'static, MySql>),
}

/// Runs the same expression over whichever transaction is inside (`$t: &mut Transaction`).
macro_rules! with_tx {
    ($tx:expr, $t:ident => $body:expr) => {
        match $tx {
            #[cfg(feature = "sqlite")]
            $crate::fence::tx::AnyTx::Sqlite($t) => $body,
            #[cfg(feature = "postgres")]
            $crate::fence::tx::AnyTx::Postgres($t) => $body,
            #[cfg(feature = "mysql")]
            $crate::fence::tx::AnyTx::MySql($t) => $body,
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            ref none => none.absurd(),
        }
    };
}
pub(crate) use with_tx;

/// The dialect of `sqlx` database type `DB`, if it is one whose driver is compiled in.
pub(crate) fn dialect_of<DB: Database>() -> Option<Dialect> {
    let known: &[(TypeId, Dialect)] = &[
        #[cfg(feature = "sqlite")]
        (TypeId::of::<Sqlite>(), Dialect::Sqlite),
        #[cfg(feature = "postgres")]
        (TypeId::of::<Postgres>(), Dialect::Postgres),
        #[cfg(feature = "mysql")]
        (TypeId::of::<MySql>(), Dialect::MySql),
    ];
    let id = TypeId::of::<DB>();
    known.iter().find(|(of, _)| *of == id).map(|(_, d)| *d)
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
        Ok(match pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => Self::Sqlite(p.begin_with(Dialect::Sqlite.begin_write()).await?),
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => {
                Self::Postgres(p.begin_with(Dialect::Postgres.begin_write()).await?)
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => Self::MySql(p.begin_with(Dialect::MySql.begin_write()).await?),
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        })
    }

    /// Built without any driver, there is no transaction: this is never called. It stands in
    /// for the drivers' arms of `with_tx!`.
    #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
    pub(crate) fn absurd<T>(&self) -> T {
        match *self {}
    }

    /// The `sqlx` transaction inside, if it is a `DB` transaction; otherwise it is dropped,
    /// which rolls it back (callers check the database first with [`check_database`]).
    pub(crate) fn into_typed<DB: Database>(self) -> Option<Transaction<'static, DB>> {
        with_tx!(self, t => cast(t))
    }

    /// A typed transaction as an [`AnyTx`], if `DB` is one of the databases whose drivers are
    /// compiled in; otherwise it is dropped, which rolls it back.
    pub(crate) fn from_typed<DB: Database>(tx: Transaction<'static, DB>) -> Option<Self> {
        match dialect_of::<DB>()? {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => cast(tx).map(Self::Sqlite),
            #[cfg(feature = "postgres")]
            Dialect::Postgres => cast(tx).map(Self::Postgres),
            #[cfg(feature = "mysql")]
            Dialect::MySql => cast(tx).map(Self::MySql),
            // `dialect_of` names only dialects whose drivers are compiled in.
            #[cfg(not(all(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            _ => None,
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
