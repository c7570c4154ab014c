//! `SqlFences`: the fence table, its fenced transactions, and the store-backed
//! [`FenceRegister`].

use std::time::Duration;

use async_trait::async_trait;
use leasehold::LeaderContext;
use leasehold::fence::{Admission, FenceRegister, ResourceName, StaleFence};
use leasehold::store::StoreResult;
use sqlx::Database;
use tokio::sync::OnceCell;

use super::error::{FenceError, is_conflict, is_stale_fence_error, read_fence, sql_fence};
use super::schema::Ddl;
use super::tx::{AnyTx, check_database};
use super::write::FencedWrite;
use crate::classify::classify;
use crate::dialect::{DEFAULT_FENCE_TABLE, Dialect, FenceStatements};
use crate::pool::{SqlPool, with_pool};
use crate::store::SqlStore;

/// How often a fence advance is retried after a deadlock or serialization failure (InnoDB
/// answers one when two transactions insert the same new resource at once). Nothing of the
/// user's is in the transaction yet, so retrying it is safe.
const CONFLICT_RETRIES: u32 = 5;

/// Fences enforced by the database: one row per resource in a fence table
/// (`leasehold_fences` by default) holding the highest fence accepted, and a trigger on it
/// that refuses any `UPDATE` lowering that fence — from this crate, `psql`, `mysql` or
/// `sqlite3` alike.
///
/// * [`fenced`](Self::fenced) opens a transaction whose first statement advances the resource's
///   fence to the holder's (one upsert, which takes the row lock: a concurrent writer of the same resource
///   waits for this transaction to end) and hands it to you for your own writes; a stale fence
///   is refused with [`FenceError::Stale`] and nothing you would have written is kept.
/// * As a [`FenceRegister`] (`admit` advances in its own short transaction) it is the
///   store-backed register for fence-checking layers such as `leasehold-axum`'s.
/// * [`protect_column`](Self::protect_column) puts the same trigger on a fence column of one of
///   your own tables.
///
/// ```no_run
/// # async fn demo(store: leasehold_sql::SqlStore, ctx: leasehold::LeaderContext)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use leasehold::fence::ResourceName;
/// use leasehold_sql::SqlFences;
///
/// let fences = SqlFences::new(&store);
/// let report = ResourceName::new("reports/daily")?;
/// let mut write = fences.fenced::<sqlx::Postgres>(&ctx, &report).await?;
/// sqlx::query("UPDATE reports SET total = $1 WHERE day = CURRENT_DATE")
///     .bind(42_i64)
///     .execute(&mut *write)
///     .await?;
/// write.commit().await?;
/// # Ok(()) }
/// ```
pub struct SqlFences {
    pool: SqlPool,
    table: String,
    sql: FenceStatements,
    create: bool,
    ready: OnceCell<()>,
}

impl std::fmt::Debug for SqlFences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlFences")
            .field("dialect", &self.pool.dialect())
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl SqlFences {
    /// Fences in the store's database (its pool), in table `leasehold_fences`, created on
    /// first use unless the store's options turn schema creation off.
    pub fn new(store: &SqlStore) -> Self {
        Self::from_pool(store.pool().clone()).create_schema(store.options().create_schema())
    }

    /// Fences in the database of `pool` (an `sqlx` pool or an [`SqlPool`]), in table
    /// `leasehold_fences`, created on first use.
    pub fn from_pool(pool: impl Into<SqlPool>) -> Self {
        let pool = pool.into();
        Self {
            sql: pool.dialect().fence_statements(DEFAULT_FENCE_TABLE),
            table: DEFAULT_FENCE_TABLE.to_owned(),
            pool,
            create: true,
            ready: OnceCell::new(),
        }
    }

    /// Uses another fence table: `TABLE` or `SCHEMA.TABLE`, with the lease table's rules
    /// ([`Dialect::check_table_name`]).
    ///
    /// # Errors
    ///
    /// [`FenceError::Table`] for a name the dialect does not allow.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use leasehold_sql::{SqlFences, SqlOptions, SqlStore};
    /// let store = SqlStore::connect_lazy("sqlite:///tmp/leases.db", SqlOptions::default())?;
    /// let fences = SqlFences::new(&store).table("job_fences")?;
    /// assert_eq!(fences.table_name(), "job_fences");
    /// assert!(SqlFences::new(&store).table("fences; DROP TABLE x").is_err());
    /// # Ok(()) }
    /// ```
    pub fn table(mut self, table: impl Into<String>) -> Result<Self, FenceError> {
        let table = table.into();
        self.pool.dialect().check_table_name(&table)?;
        self.sql = self.pool.dialect().fence_statements(&table);
        self.table = table;
        self.ready = OnceCell::new();
        Ok(self)
    }

    /// Create the table and its trigger on first use (default on; from the store's options
    /// with [`new`](Self::new)). Off, first use only checks that the trigger is there, and the
    /// error says which statements install it ([`Dialect::fence_statements`]).
    #[must_use]
    pub fn create_schema(mut self, on: bool) -> Self {
        self.create = on;
        self
    }

    /// The fence table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.pool.dialect()
    }

    /// The pool.
    pub fn pool(&self) -> &SqlPool {
        &self.pool
    }

    /// The SQL it runs.
    pub fn statements(&self) -> &FenceStatements {
        &self.sql
    }

    /// Creates the fence table and its trigger if they are missing (idempotent; safe to race
    /// with other processes), or only checks them with `create_schema(false)`. Runs once per
    /// `SqlFences`; every other method calls it first.
    ///
    /// # Errors
    ///
    /// The classified database error; permanent when the trigger is missing with
    /// `create_schema(false)` (the message holds the statements that install it).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the statements run in one transaction (PostgreSQL, SQLite) or are each
    /// idempotent (MySQL), and an interrupted run is done again on the next call.
    pub async fn migrate(&self) -> StoreResult<()> {
        self.ready
            .get_or_try_init(|| async {
                let ddl = Ddl {
                    statements: &self.sql.create,
                    guard_count: &self.sql.guard_count,
                };
                ddl.ensure(
                    &self.pool,
                    self.create,
                    &format!("fence table {}", self.table),
                )
                .await
            })
            .await
            .map(|_| ())
    }

    /// Opens a transaction for `ctx`'s holder's writes to `resource`, under the fence of its
    /// lease: advances the resource's fence first, then hands you the transaction
    /// (`&mut *write` is the connection). Your writes land only if you
    /// [`commit`](FencedWrite::commit); dropping it rolls back. `DB` is the pool's `sqlx`
    /// database type: `sqlx::Postgres`, `sqlx::MySql` or `sqlx::Sqlite`.
    ///
    /// The fence row stays locked until the transaction ends, so a concurrent writer of the
    /// same resource waits; keep the transaction short. On SQLite it is `BEGIN IMMEDIATE`: it
    /// holds the database's write lock until it ends.
    ///
    /// # Errors
    ///
    /// [`FenceError::Stale`] when a higher fence was accepted before (with the highest, read
    /// after the rollback); [`FenceError::FenceTooLarge`] above [`MAX_SQL_FENCE`]
    /// (nothing is sent); [`FenceError::WrongDatabase`] when `DB` is not the pool's database;
    /// [`FenceError::Store`] when the database fails.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the transaction, which rolls back.
    ///
    /// [`MAX_SQL_FENCE`]: crate::MAX_SQL_FENCE
    pub async fn fenced<DB: Database>(
        &self,
        ctx: &LeaderContext,
        resource: &ResourceName,
    ) -> Result<FencedWrite<DB>, FenceError> {
        self.fenced_by_fence(resource, ctx.fence()).await
    }

    /// [`fenced`](Self::fenced) under a fence number rather than a holder's lease: for a fence
    /// that came from elsewhere (a request header, a queued job), and for tests.
    ///
    /// # Errors
    ///
    /// As [`fenced`](Self::fenced).
    ///
    /// # Cancel safety
    ///
    /// As [`fenced`](Self::fenced).
    pub async fn fenced_by_fence<DB: Database>(
        &self,
        resource: &ResourceName,
        fence: u64,
    ) -> Result<FencedWrite<DB>, FenceError> {
        check_database::<DB>(self.dialect())?;
        let (tx, previous) = self.advance(resource, fence).await?;
        let tx = tx.into_typed::<DB>().ok_or(FenceError::WrongDatabase {
            pool: self.dialect(),
            requested: DB::NAME,
        })?;
        Ok(FencedWrite::new(tx, resource.clone(), fence, previous))
    }

    /// The former name of [`fenced_by_fence`](Self::fenced_by_fence).
    ///
    /// # Errors
    ///
    /// As [`fenced_by_fence`](Self::fenced_by_fence).
    ///
    /// # Cancel safety
    ///
    /// As [`fenced_by_fence`](Self::fenced_by_fence).
    #[deprecated(note = "use `SqlFences::fenced(&ctx, &resource)`, or `fenced_by_fence`")]
    pub async fn begin<DB: Database>(
        &self,
        resource: &ResourceName,
        fence: u64,
    ) -> Result<FencedWrite<DB>, FenceError> {
        self.fenced_by_fence(resource, fence).await
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
    #[deprecated(note = "use `SqlFences::fenced(&ctx, &resource)`")]
    pub async fn begin_for<DB: Database>(
        &self,
        ctx: &LeaderContext,
        resource: &ResourceName,
    ) -> Result<FencedWrite<DB>, FenceError> {
        self.fenced(ctx, resource).await
    }

    /// Installs the "never lower" trigger on `table.column`, a fence column of one of your own
    /// tables ([`Dialect::fence_guard`] gives the statements, for your migrations). Afterwards
    /// an `UPDATE` that lowers the column fails ([`is_stale_fence_error`](crate::is_stale_fence_error)
    /// tells it apart); so every `UPDATE` must set the column to the writer's fence. Idempotent.
    ///
    /// # Errors
    ///
    /// [`FenceError::Table`] or [`FenceError::Column`] for names that are not plain SQL
    /// identifiers (nothing is sent); [`FenceError::Store`] when the database fails (for
    /// example the table does not exist, or the user may not create triggers).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`migrate`](Self::migrate).
    pub async fn protect_column(&self, table: &str, column: &str) -> Result<(), FenceError> {
        let dialect = self.dialect();
        let statements = dialect.fence_guard(table, column)?;
        let guard_count = dialect.fence_guard_count(table, column);
        let ddl = Ddl {
            statements: &statements,
            guard_count: &guard_count,
        };
        Ok(ddl.install(&self.pool).await?)
    }

    /// Whether `table.column` has the "never lower" trigger.
    ///
    /// # Errors
    ///
    /// As [`protect_column`](Self::protect_column).
    ///
    /// # Cancel safety
    ///
    /// A read only; cancelling it changes nothing.
    pub async fn is_protected(&self, table: &str, column: &str) -> Result<bool, FenceError> {
        let dialect = self.dialect();
        dialect.fence_guard(table, column)?;
        let guard_count = dialect.fence_guard_count(table, column);
        let ddl = Ddl {
            statements: &[],
            guard_count: &guard_count,
        };
        Ok(ddl.installed(&self.pool).await?)
    }

    /// Opens a transaction and advances `resource`'s fence in it, retrying deadlocks.
    async fn advance(
        &self,
        resource: &ResourceName,
        fence: u64,
    ) -> Result<(AnyTx, Option<u64>), FenceError> {
        let value = sql_fence(fence)?;
        self.migrate().await?;
        let mut conflicts = 0;
        loop {
            match self.advance_once(resource, value).await {
                Ok((tx, previous)) => return Ok((tx, previous.map(read_fence))),
                Err(e) if is_stale_fence_error(&e) => {
                    let highest = self.highest_fence(resource).await?.unwrap_or(fence);
                    return Err(FenceError::Stale(StaleFence {
                        resource: resource.clone(),
                        fence,
                        highest,
                    }));
                }
                Err(e) if is_conflict(&e) && conflicts < CONFLICT_RETRIES => {
                    conflicts += 1;
                    tracing::debug!(error = %e, conflicts, "fence advance conflicted; retrying");
                    tokio::time::sleep(Duration::from_millis(5 * u64::from(conflicts))).await;
                }
                Err(e) => return Err(FenceError::Store(classify(e))),
            }
        }
    }

    /// One attempt: the transaction with the fence advanced and the fence it replaced, or the
    /// error after rolling back.
    async fn advance_once(
        &self,
        resource: &ResourceName,
        fence: i64,
    ) -> Result<(AnyTx, Option<i64>), sqlx::Error> {
        let mut tx = AnyTx::begin(&self.pool).await?;
        let (sql, name) = (&self.sql, resource.as_str());
        let previous = match &mut tx {
            #[cfg(feature = "mysql")]
            AnyTx::MySql(t) => {
                let upsert = sqlx::query(&sql.advance).bind(name).bind(fence);
                match upsert.execute(&mut **t).await {
                    Ok(_) => {
                        sqlx::query_scalar(&sql.read_previous)
                            .bind(name)
                            .fetch_one(&mut **t)
                            .await
                    }
                    Err(e) => Err(e),
                }
            }
            #[cfg(feature = "postgres")]
            AnyTx::Postgres(t) => {
                let upsert = sqlx::query_scalar(&sql.advance).bind(name).bind(fence);
                upsert.fetch_one(&mut **t).await
            }
            #[cfg(feature = "sqlite")]
            AnyTx::Sqlite(t) => {
                let upsert = sqlx::query_scalar(&sql.advance).bind(name).bind(fence);
                upsert.fetch_one(&mut **t).await
            }
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        };
        match previous {
            Ok(previous) => Ok((tx, previous)),
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// The highest fence accepted for `resource`.
    async fn highest_fence(&self, resource: &ResourceName) -> StoreResult<Option<u64>> {
        let q = &self.sql.highest;
        let row: Result<Option<i64>, sqlx::Error> = with_pool!(&self.pool, p =>
            sqlx::query_scalar(q).bind(resource.as_str()).fetch_optional(p).await);
        Ok(row.map_err(classify)?.map(read_fence))
    }
}

#[async_trait]
impl FenceRegister for SqlFences {
    async fn admit(&self, resource: &ResourceName, fence: u64) -> StoreResult<Admission> {
        match self.advance(resource, fence).await {
            Ok((tx, previous)) => {
                tx.commit().await.map_err(classify)?;
                Ok(Admission::Admitted { previous })
            }
            Err(FenceError::Stale(stale)) => Ok(Admission::Stale(stale)),
            Err(e) => Err(e.into()),
        }
    }

    async fn highest(&self, resource: &ResourceName) -> StoreResult<Option<u64>> {
        self.migrate().await?;
        self.highest_fence(resource).await
    }

    fn describe(&self) -> String {
        format!("{} fence table {}", self.dialect(), self.table)
    }
}
