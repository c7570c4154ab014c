//! `SqlStore`: leases in one table keyed by `(lock_name, slot)`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use leasehold::{
    AcquireRequest, Extension, Holder, Lease, LeaseStore, LockName, LockState, OpenError, Release,
    ReleaseNotifier, ReleaseSignal, StoreError, StoreResult, check_slots, redact_url,
};
use sqlx::Row;
use tokio::sync::OnceCell;

use crate::classify::classify;
use crate::clock::HostClock;
use crate::dialect::{Dialect, Statements, notify_channel, sqlite_clock_columns};
use crate::listen::Listener;
use crate::pool::{PoolSettings, SqlPool, lazy_pool, probe, with_pool};

/// Like `with_pool!`, with `$add` a function that adds the clock parameters SQLite statements
/// take after their own (read from the host now); identity on the other dialects.
macro_rules! with_clock {
    ($pool:expr, $p:ident, $add:ident => $body:expr) => {
        match $pool {
            SqlPool::Sqlite($p) => {
                let clock = HostClock::read();
                let $add = |q| clock.bind(q);
                $body
            }
            SqlPool::Postgres($p) => {
                let $add = |q| q;
                $body
            }
            SqlPool::MySql($p) => {
                let $add = |q| q;
                $body
            }
        }
    };
}

/// The default table name.
pub const DEFAULT_TABLE: &str = "leasehold_leases";

/// Options for [`SqlStore`].
///
/// ```
/// use std::time::Duration;
/// use leasehold_sql::SqlOptions;
///
/// let opts = SqlOptions::default().table("ops.leases").create_schema(false).connect_timeout(Duration::from_secs(2));
/// assert_eq!(opts.table_name(), "ops.leases");
/// ```
#[derive(Debug, Clone)]
pub struct SqlOptions {
    table: String,
    create_schema: bool,
    max_connections: u32,
    connect_timeout: Duration,
}

impl Default for SqlOptions {
    fn default() -> Self {
        Self {
            table: DEFAULT_TABLE.to_owned(),
            create_schema: true,
            max_connections: 8,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlOptions {
    /// The table (default `leasehold_leases`; `TABLE` or `SCHEMA.TABLE`).
    #[must_use]
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }
    /// Create the table on first use if it is missing (default on). Turn off when the schema is
    /// managed elsewhere; [`Dialect::create_table`] prints the DDL.
    #[must_use]
    pub fn create_schema(mut self, on: bool) -> Self {
        self.create_schema = on;
        self
    }
    /// Pool size for pools built from URLs (default 8).
    #[must_use]
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }
    /// How long to wait for a connection before failing with a transient error (default 5 s; at
    /// most [`leasehold::MAX_DURATION`]).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
    /// The configured table name.
    pub fn table_name(&self) -> &str {
        &self.table
    }
}

/// A lease store on SQLite, PostgreSQL or MySQL/MariaDB.
///
/// * One row per `(lock_name, slot)`; rows are kept on release so fences only grow. A new row's
///   fence starts at the database clock in ms × 1000, so even a row deleted by hand continues above
///   its old fences.
/// * Acquire is one atomic upsert that takes the row only if it is missing, released, expired or
///   already ours, timed by the **database clock**; extend and release are token-checked single
///   statements. A release marks the row free outright (no token, expiry 0), so it is free to
///   every clock; a minimum lease instead shortens the row's expiry.
/// * SQLite has no server clock, so each process would judge expiry by its own wall clock. SQLite
///   leases are therefore timed by the wall clock **and** the host's boot clock (`/proc/uptime`,
///   tagged with the boot id), which every process on the host shares and which no clock step
///   or per-process fake time moves; a row is taken over only when its lease is over on both.
///   Rows from another boot are judged by the wall clock alone.
/// * PostgreSQL wakes waiters on release with `LISTEN`/`NOTIFY`; SQLite and MySQL waiters poll with
///   jittered back-off.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::Elector;
/// use leasehold_sql::SqlStore;
///
/// let store = SqlStore::connect("postgres://app@db.internal/app").await?;
/// let elector = Elector::new(Arc::new(store));
/// elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await?;
/// # Ok(()) }
/// ```
pub struct SqlStore {
    pool: SqlPool,
    dialect: Dialect,
    sql: Statements,
    ddl: String,
    table: String,
    create_schema: bool,
    schema: OnceCell<()>,
    listener: Mutex<Option<Listener>>,
    notifier: Arc<ReleaseNotifier>,
    channel: String,
    description: String,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("store", &self.description)
            .finish_non_exhaustive()
    }
}

fn invalid(url: &str, reason: impl std::fmt::Display) -> OpenError {
    OpenError::invalid(url, reason)
}

impl SqlStore {
    /// Opens a store for a `sqlite:`, `postgres://` or `mysql://` URL with default options and
    /// checks that the database answers (creating the table if needed).
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the half-opened store; nothing is held.
    pub async fn connect(url: &str) -> Result<Self, OpenError> {
        Self::connect_with(url, SqlOptions::default()).await
    }

    /// Like [`connect`](Self::connect) with options. The whole open — connecting, then creating or
    /// checking the table — must finish within [`SqlOptions::connect_timeout`].
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL or a table name the dialect does not allow;
    /// [`OpenError::Connect`] when the database refuses, fails the table check, or does not
    /// answer within the connect timeout (the message then says "timed out").
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the half-opened store; nothing is held.
    pub async fn connect_with(url: &str, options: SqlOptions) -> Result<Self, OpenError> {
        let timeout = options.connect_timeout;
        let store = Self::connect_lazy(url, options)?;
        let unreachable = |source| OpenError::connect(url, source);
        // One deadline covers the whole open: the direct connection and the table check or
        // creation. Running out of it is an error, never a success.
        let deadline = leasehold::deadline_after(tokio::time::Instant::now(), timeout);
        match tokio::time::timeout_at(deadline, store.open_checked(url, deadline)).await {
            Ok(Ok(())) => Ok(store),
            Ok(Err(e)) => Err(unreachable(e)),
            Err(_) => Err(unreachable(StoreError::transient(format!(
                "timed out after {timeout:?} connecting to the database and checking its table \
                 (SqlOptions::connect_timeout)"
            )))),
        }
    }

    /// The checks of [`connect_with`](Self::connect_with), without its deadline.
    ///
    /// One direct connection first: it fails fast and says why, where a pool would only report,
    /// after its timeout, that it timed out. An SQLite file that another process is creating or
    /// switching to WAL at the same moment answers "database is locked" at once (SQLite does not
    /// wait on its busy timeout for that), so on SQLite transient errors are retried until the
    /// deadline; a server that cannot be reached still fails fast.
    async fn open_checked(&self, url: &str, deadline: tokio::time::Instant) -> StoreResult<()> {
        let mut pause = Duration::from_millis(10);
        loop {
            let opened = match probe(url).await {
                Err(cause) => Err(classify(cause)),
                Ok(()) => self.migrate().await,
            };
            match opened {
                Err(e)
                    if e.is_transient()
                        && matches!(self.pool, SqlPool::Sqlite(_))
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::debug!(error = %e, "leasehold: SQLite file busy while opening; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// Builds a store without contacting the database; the first operation connects (and creates
    /// the table, unless disabled).
    pub fn connect_lazy(url: &str, options: SqlOptions) -> Result<Self, OpenError> {
        leasehold::check_duration("connect_timeout", options.connect_timeout)
            .map_err(|e| invalid(url, e.to_string()))?;
        let settings = PoolSettings {
            max_connections: options.max_connections,
            connect_timeout: options.connect_timeout,
        };
        if let Some(dialect) = crate::pool::dialect_of(url) {
            crate::url::check(url, dialect).map_err(|e| e.into_open_error(url))?;
        }
        let pool = lazy_pool(url, settings).map_err(|r| invalid(url, r))?;
        Self::build(pool, options, redact_url(url)).map_err(|r| invalid(url, r))
    }

    /// Uses a pool the application already has.
    ///
    /// ```no_run
    /// # async fn demo(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use leasehold_sql::{SqlOptions, SqlStore};
    /// let store = SqlStore::from_pool(pool, SqlOptions::default())?;
    /// store.migrate().await?;
    /// # Ok(()) }
    /// ```
    pub fn from_pool(pool: impl Into<SqlPool>, options: SqlOptions) -> Result<Self, OpenError> {
        let pool = pool.into();
        let description = format!("{} pool", pool.dialect());
        Self::build(pool, options, description.clone()).map_err(|r| OpenError::Invalid {
            url: description,
            reason: r,
        })
    }

    fn build(pool: SqlPool, options: SqlOptions, description: String) -> Result<Self, String> {
        let dialect = pool.dialect();
        dialect
            .check_table_name(&options.table)
            .map_err(|e| e.to_string())?;
        let channel = notify_channel(&options.table);
        Ok(Self {
            sql: dialect.statements(&options.table),
            ddl: dialect.create_table(&options.table),
            table: options.table.clone(),
            create_schema: options.create_schema,
            schema: OnceCell::new(),
            listener: Mutex::new(None),
            notifier: Arc::new(ReleaseNotifier::default()),
            channel,
            description,
            dialect,
            pool,
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The pool.
    pub fn pool(&self) -> &SqlPool {
        &self.pool
    }

    /// The SQL this store runs.
    pub fn statements(&self) -> &Statements {
        &self.sql
    }

    /// The PostgreSQL `NOTIFY` channel releases are announced on: `leasehold_release_<table>`
    /// (`.` written `_`), or, when that would pass PostgreSQL's 63-byte limit,
    /// `leasehold_release_` + the table name's first 28 bytes + `_` + 16 hex digits of its hash.
    pub fn notify_channel(&self) -> &str {
        &self.channel
    }

    /// Creates the table if it is missing (idempotent; safe to race with other processes).
    /// With `create_schema(false)` it only checks that the table can be read.
    pub async fn migrate(&self) -> StoreResult<()> {
        self.ensure_schema().await
    }

    async fn ensure_schema(&self) -> StoreResult<()> {
        self.schema
            .get_or_try_init(|| async {
                if self.create_schema {
                    // Two processes creating the table at once can collide in the catalog;
                    // the loser sees a duplicate-object error and the table exists.
                    if let Err(e) = with_pool!(&self.pool, p => sqlx::query(&self.ddl).execute(p).await.map(|_| ())) {
                        let dup = matches!(&e, sqlx::Error::Database(db)
                            if matches!(db.code().as_deref(), Some("23505" | "42P07" | "1050")));
                        if !dup {
                            return Err(classify(e));
                        }
                    }
                }
                if let SqlPool::Sqlite(p) = &self.pool {
                    self.ensure_sqlite_clock_columns(p).await?;
                }
                let probe = &self.sql.state;
                with_clock!(&self.pool, p, add => add(sqlx::query(probe).bind("probe").bind(0i32)).fetch_all(p).await.map(|_| ()))
                    .map_err(classify)?;
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// SQLite tables created before the boot-clock columns existed get them (with
    /// `create_schema(false)`, a permanent error says how to add them).
    async fn ensure_sqlite_clock_columns(&self, pool: &sqlx::SqlitePool) -> StoreResult<()> {
        let table = &self.table;
        let check = format!("SELECT boot_id, boot_expires_at FROM {table} LIMIT 0");
        if sqlx::query(&check).fetch_all(pool).await.is_ok() {
            return Ok(());
        }
        let alter = sqlite_clock_columns(table);
        if !self.create_schema {
            return Err(StoreError::permanent(format!(
                "SQLite table {table} lacks the boot-clock columns; add them with: {}",
                alter.join("; ")
            )));
        }
        for statement in &alter {
            // Another process may add the same column at the same moment.
            if let Err(e) = sqlx::query(statement).execute(pool).await {
                let duplicate = matches!(&e, sqlx::Error::Database(db) if db.message().contains("duplicate column"));
                if !duplicate {
                    return Err(classify(e));
                }
            }
        }
        Ok(())
    }

    /// One upsert attempt on one slot.
    async fn acquire_slot(
        &self,
        req: &AcquireRequest,
        slot: i32,
        token: &str,
    ) -> StoreResult<Option<(i64, i64, i64)>> {
        let ttl = ms(req.ttl);
        let q = &self.sql.acquire;
        let row = if self.dialect == Dialect::MySql {
            let SqlPool::MySql(p) = &self.pool else {
                return Err(StoreError::permanent("dialect and pool disagree"));
            };
            sqlx::query(q)
                .bind(req.lock.as_str())
                .bind(slot)
                .bind(req.owner.as_ref())
                .bind(token)
                .bind(ttl)
                .execute(p)
                .await
                .map_err(classify)?;
            self.read_own(p, req.lock.as_str(), slot, token).await?
        } else {
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
                .transpose()?)
        };
        Ok(row)
    }

    /// MySQL: the (fence, acquired_at, expires_at) of the live row `token` holds, read back after
    /// an upsert or update (MySQL has no `RETURNING`).
    async fn read_own(
        &self,
        pool: &sqlx::MySqlPool,
        lock: &str,
        slot: i32,
        token: &str,
    ) -> StoreResult<Option<(i64, i64, i64)>> {
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

    /// For groups: the slots worth trying, in order — one this token already holds (a retried
    /// request that was applied), then missing or expired slots, lowest first.
    async fn candidate_slots(&self, req: &AcquireRequest, token: &str) -> StoreResult<Vec<i32>> {
        let sql = &self.sql.group_slots;
        let slots = slots_i32(req.slots);
        let rows: Vec<(i32, Option<String>, i64)> = with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(sql).bind(req.lock.as_str()).bind(slots)).fetch_all(p).await.map_err(classify)?;
            rows.iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(classify)?
        });
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

    fn holders(&self, rows: &[(i32, String, i64, i64, i64)]) -> Vec<Holder> {
        rows.iter()
            .map(|(slot, owner, fence, acquired, expires)| Holder {
                slot: u32::try_from(*slot).unwrap_or_default(),
                owner: owner.clone(),
                fence: u64::try_from(*fence).unwrap_or_default(),
                acquired_at: time(*acquired),
                expires_at: time(*expires),
            })
            .collect()
    }

    fn notify_release(&self, lock: &LockName) {
        // PostgreSQL's NOTIFY reaches this process's waiters too; elsewhere wake them directly.
        if self.dialect != Dialect::Postgres {
            self.notifier.notify(lock);
        }
    }
}

type HolderRow = (i32, String, i64, i64, i64);

fn holder_cols<R: Row>(r: &R) -> StoreResult<HolderRow>
where
    usize: sqlx::ColumnIndex<R>,
    i32: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| {
        Ok((
            r.try_get(0)?,
            r.try_get(1)?,
            r.try_get(2)?,
            r.try_get(3)?,
            r.try_get(4)?,
        ))
    })()
    .map_err(classify)
}

fn lease_cols<R: Row>(r: &R) -> StoreResult<(i64, i64, i64)>
where
    usize: sqlx::ColumnIndex<R>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (|| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))().map_err(classify)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn slots_i32(slots: u32) -> i32 {
    i32::try_from(slots).unwrap_or(i32::MAX)
}

fn time(epoch_ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(epoch_ms).unwrap_or_default())
}

#[async_trait]
impl LeaseStore for SqlStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Option<Lease>> {
        check_slots(req.slots)?;
        self.ensure_schema().await?;
        let token = req.token.to_hex();
        let candidates = if req.slots <= 1 {
            vec![0]
        } else {
            self.candidate_slots(req, &token).await?
        };
        for slot in candidates {
            if let Some((fence, acquired, expires)) = self.acquire_slot(req, slot, &token).await? {
                return Ok(Some(Lease {
                    lock: req.lock.clone(),
                    slot: u32::try_from(slot).unwrap_or_default(),
                    owner: req.owner.to_string(),
                    token: req.token,
                    fence: u64::try_from(fence).unwrap_or_default(),
                    acquired_at: time(acquired),
                    expires_at: time(expires),
                }));
            }
        }
        Ok(None)
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.ensure_schema().await?;
        let token = lease.token.to_hex();
        let slot = slots_i32(lease.slot);
        let q = &self.sql.extend;
        let expires: Option<i64> = if let SqlPool::MySql(p) = &self.pool {
            let done = sqlx::query(q)
                .bind(ms(ttl))
                .bind(lease.lock.as_str())
                .bind(slot)
                .bind(&token)
                .execute(p)
                .await
                .map_err(classify)?;
            if done.rows_affected() == 0 {
                None
            } else {
                self.read_own(p, lease.lock.as_str(), slot, &token)
                    .await?
                    .map(|(_, _, expires)| expires)
            }
        } else {
            with_clock!(&self.pool, p, add => {
                let row = add(sqlx::query(q)
                    .bind(ms(ttl))
                    .bind(lease.lock.as_str())
                    .bind(slot)
                    .bind(&token))
                    .fetch_optional(p)
                    .await
                    .map_err(classify)?;
                row.map(|r| r.try_get::<i64, _>(0)).transpose().map_err(classify)?
            })
        };
        Ok(match expires {
            Some(e) => Extension::Extended {
                expires_at: time(e),
            },
            None => Extension::NotHeld,
        })
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.ensure_schema().await?;
        let token = lease.token.to_hex();
        let slot = slots_i32(lease.slot);
        let lock = lease.lock.as_str();
        let changed = if linger.is_zero() {
            let q = &self.sql.release;
            match &self.pool {
                SqlPool::Postgres(p) => sqlx::query(q)
                    .bind(lock)
                    .bind(slot)
                    .bind(&token)
                    .bind(&self.channel)
                    .fetch_all(p)
                    .await
                    .map_err(classify)?
                    .len() as u64,
                other => {
                    with_clock!(other, p, add => add(sqlx::query(q).bind(lock).bind(slot).bind(&token)).execute(p).await.map_err(classify)?.rows_affected())
                }
            }
        } else {
            let q = &self.sql.release_linger;
            with_clock!(&self.pool, p, add => add(sqlx::query(q).bind(ms(linger)).bind(lock).bind(slot).bind(&token)).execute(p).await.map_err(classify)?.rows_affected())
        };
        if changed == 0 {
            return Ok(Release::NotHeld);
        }
        if linger.is_zero() {
            self.notify_release(&lease.lock);
        }
        Ok(Release::Released)
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        check_slots(slots)?;
        self.ensure_schema().await?;
        let q = &self.sql.state;
        let rows: Vec<HolderRow> = with_clock!(&self.pool, p, add => {
            let rows = add(sqlx::query(q).bind(lock.as_str()).bind(slots_i32(slots))).fetch_all(p).await.map_err(classify)?;
            rows.iter().map(holder_cols).collect::<StoreResult<Vec<_>>>()?
        });
        Ok(LockState {
            lock: lock.clone(),
            slots,
            holders: self.holders(&rows),
        })
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        check_slots(slots)?;
        self.ensure_schema().await?;
        let n = slots_i32(slots);
        // Read the holders as they were, then free them, in one transaction.
        let rows: Vec<HolderRow> = with_clock!(&self.pool, p, add => {
            let mut tx = p.begin().await.map_err(classify)?;
            let rows = add(sqlx::query(&self.sql.force_select)
                .bind(lock.as_str())
                .bind(n))
                .fetch_all(&mut *tx)
                .await
                .map_err(classify)?;
            let rows = rows.iter().map(holder_cols).collect::<StoreResult<Vec<_>>>()?;
            add(sqlx::query(&self.sql.force_release)
                .bind(lock.as_str())
                .bind(n))
                .execute(&mut *tx)
                .await
                .map_err(classify)?;
            tx.commit().await.map_err(classify)?;
            rows
        });
        if !rows.is_empty() {
            if let SqlPool::Postgres(p) = &self.pool {
                let _ = sqlx::query("SELECT pg_notify($1, $2)::text")
                    .bind(&self.channel)
                    .bind(lock.as_str())
                    .fetch_all(p)
                    .await;
            }
            self.notify_release(lock);
        }
        Ok(self.holders(&rows))
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        let signal = self.notifier.subscribe(lock);
        if let SqlPool::Postgres(pool) = &self.pool {
            let mut listener = self.listener.lock().unwrap_or_else(|p| p.into_inner());
            if listener.is_none() {
                *listener = Listener::start(
                    pool.clone(),
                    self.channel.clone(),
                    Arc::clone(&self.notifier),
                );
            }
        }
        Some(signal)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
