//! This crate's fenced writes as [`FencedSink`]s, the one shape of a fenced sink, so that
//! `leasehold-testkit`'s paused-stale-holder scenario (`stale_holder::run`) can drive them, for
//! this crate's tests and `leasehold-bench`.
//!
//! Both write each value to a table of their own, `leasehold_sink_values(resource, value)`,
//! the way a job writes its results:
//!
//! * [`FenceTableSink`]: in a [`SqlFences::fenced`] transaction (fence table and trigger);
//! * [`LeaseTransactionSink`]: in a [`SqlStore::fenced`] transaction (the lease row checked
//!   at commit), in the lock's own database.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::sync::Arc;
//! use leasehold::LeaseStore;
//! use leasehold_sql::{SqlFences, SqlOptions, SqlStore};
//! use leasehold_sql::fence::sinks::FenceTableSink;
//! use leasehold_testkit::stale_holder::{self, StaleHolderConfig};
//!
//! let url = "postgres://postgres@127.0.0.1/test";
//! let sink = FenceTableSink::new(SqlFences::new(&SqlStore::connect(url).await?)).await?;
//! let factory = move || {
//!     Arc::new(SqlStore::connect_lazy(url, SqlOptions::default()).expect("valid URL"))
//!         as Arc<dyn LeaseStore>
//! };
//! let report = stale_holder::run(&factory, &sink, &StaleHolderConfig::default()).await;
//! assert!(report.passed(), "{report}");
//! # Ok(()) }
//! ```

use async_trait::async_trait;
use leasehold::LeaderContext;
use leasehold::fence::{FencedSink, ResourceName, SinkAnswer, SinkError};
use sqlx::Executor;
#[cfg(feature = "mysql")]
use sqlx::MySql;
#[cfg(feature = "postgres")]
use sqlx::Postgres;
#[cfg(feature = "sqlite")]
use sqlx::Sqlite;

use super::error::FenceError;
use super::fences::SqlFences;
use crate::classify::classify;
use crate::dialect::sink_values;
use crate::pool::{SqlPool, with_pool};
use crate::store::SqlStore;

/// The table both sinks write their values to.
pub const SINK_VALUES_TABLE: &str = "leasehold_sink_values";

/// The values table's statements on one pool: (upsert (resource, value), read (resource)).
#[derive(Debug)]
struct Values {
    pool: SqlPool,
    upsert: String,
    read: String,
}

impl Values {
    /// Creates the table if it is missing.
    async fn open(pool: SqlPool) -> Result<Self, FenceError> {
        let [create, upsert, read] = sink_values(pool.dialect(), SINK_VALUES_TABLE);
        let created: Result<(), sqlx::Error> =
            with_pool!(&pool, p => p.execute(sqlx::raw_sql(&create)).await.map(|_| ()));
        created.map_err(classify)?;
        Ok(Self { pool, upsert, read })
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        let q = &self.read;
        let value: Option<i64> = with_pool!(&self.pool, p =>
            p.fetch_optional(sqlx::query(q).bind(resource.as_str())).await?
                .map(|row| sqlx::Row::try_get(&row, 0)).transpose()?);
        Ok(value.map(|v| u64::try_from(v).unwrap_or_default()))
    }
}

/// Begins a fenced transaction with `$begin` (a future of `Result<T, FenceError>` where `T`
/// dereferences to the connection and has `commit`), upserts `$value` for `$resource` in it and
/// commits: `Ok(false)` when refused as stale, at the start or at the commit.
macro_rules! write_value {
    ($begin:expr, $values:expr, $resource:expr, $value:expr) => {{
        match $begin.await {
            Ok(mut tx) => {
                let value = i64::try_from($value)?;
                let q = sqlx::query(&$values.upsert)
                    .bind($resource.as_str())
                    .bind(value);
                (&mut *tx).execute(q).await?;
                match tx.commit().await {
                    Ok(()) => Ok(true),
                    Err(e) if e.is_stale() => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) if e.is_stale() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }};
}

/// A [`FencedSink`] writing in [`SqlFences::fenced`] transactions: the fence table's trigger
/// refuses a stale fence.
#[derive(Debug)]
pub struct FenceTableSink {
    fences: SqlFences,
    values: Values,
}

impl FenceTableSink {
    /// A sink on `fences`' database (creating the fence and value tables if needed).
    ///
    /// # Errors
    ///
    /// The database's, when the tables cannot be created.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: creating the tables is idempotent.
    pub async fn new(fences: SqlFences) -> Result<Self, FenceError> {
        fences.migrate().await?;
        let values = Values::open(fences.pool().clone()).await?;
        Ok(Self { fences, values })
    }
}

#[async_trait]
impl FencedSink for FenceTableSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let (f, v) = (&self.fences, &self.values);
        match f.pool() {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(_) => {
                write_value!(f.fenced::<Sqlite>(ctx, resource), v, resource, value)
            }
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(_) => {
                write_value!(f.fenced::<Postgres>(ctx, resource), v, resource, value)
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(_) => {
                write_value!(f.fenced::<MySql>(ctx, resource), v, resource, value)
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        self.values.read(resource).await
    }

    fn describe(&self) -> String {
        format!("sql fence table ({})", self.fences.dialect())
    }
}

/// A [`FencedSink`] writing in [`SqlStore::fenced`] transactions: the commit checks that
/// the lease row still carries the writer's token. The holders' leases must come from stores on
/// the same database and lease table as `store`.
#[derive(Debug)]
pub struct LeaseTransactionSink {
    store: SqlStore,
    values: Values,
}

impl LeaseTransactionSink {
    /// A sink on `store`'s database (creating the value table if needed).
    ///
    /// # Errors
    ///
    /// The database's, when the tables cannot be created.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: creating the tables is idempotent.
    pub async fn new(store: SqlStore) -> Result<Self, FenceError> {
        store.migrate().await?;
        let values = Values::open(store.pool().clone()).await?;
        Ok(Self { store, values })
    }
}

#[async_trait]
impl FencedSink for LeaseTransactionSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let (s, v) = (&self.store, &self.values);
        match s.pool() {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(_) => write_value!(s.fenced::<Sqlite>(ctx), v, resource, value),
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(_) => {
                write_value!(s.fenced::<Postgres>(ctx), v, resource, value)
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(_) => write_value!(s.fenced::<MySql>(ctx), v, resource, value),
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        self.values.read(resource).await
    }

    fn describe(&self) -> String {
        format!("sql fenced transaction ({})", self.store.dialect())
    }
}
