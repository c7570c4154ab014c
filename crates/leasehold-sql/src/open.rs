//! Opening a [`SqlStore`]: from a URL (checked at once, or lazily on first use) or from a pool
//! the application already has, with the table-name check of the pool's dialect.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::store::{OpenError, ReleaseNotifier, StoreError, StoreResult, redact_url};

use crate::classify::classify;
use crate::dialect::{Dialect, notify_channel};
use crate::options::SqlOptions;
use crate::pool::{PoolSettings, SqlPool, lazy_pool, probe};
use crate::protocol::Queries;
use crate::schema::Schema;
use crate::store::SqlStore;

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
    /// [`OpenError::Invalid`] for a malformed URL, a URL of a database whose driver this build
    /// lacks (the message names the feature to enable: `sqlite`, `postgres` or `mysql`), or a
    /// table name the dialect does not allow; [`OpenError::Connect`] when the database refuses,
    /// fails the table check, or does not answer within the connect timeout (the message then
    /// says "timed out").
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
        let deadline = leasehold::store::deadline_after(tokio::time::Instant::now(), timeout);
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
                Err(cause) => Err(crate::pool::explain_sqlite_open(url, classify(cause))),
                Ok(()) => self.migrate().await,
            };
            match opened {
                Err(e)
                    if e.is_transient()
                        && self.dialect == Dialect::Sqlite
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::debug!(error = %e, "SQLite file busy while opening; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// Builds a store without contacting the database; the first operation connects (and creates
    /// the table, unless disabled).
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a malformed URL, a URL of a database whose driver this build
    /// lacks (the message names the feature to enable), a connect timeout beyond
    /// [`leasehold::limits::MAX_DURATION`] or a table name the dialect does not allow.
    pub fn connect_lazy(url: &str, options: SqlOptions) -> Result<Self, OpenError> {
        leasehold::store::check_duration("connect_timeout", options.connect_timeout)
            .map_err(|e| OpenError::invalid(url, e.to_string()))?;
        let settings = PoolSettings {
            max_connections: options.max_connections,
            connect_timeout: options.connect_timeout,
        };
        if let Some(dialect) = crate::pool::dialect_of(url) {
            crate::pool::check_driver(dialect).map_err(|r| OpenError::invalid(url, r))?;
            crate::url::check(url, dialect).map_err(|e| e.into_open_error(url))?;
        }
        let pool = lazy_pool(url, settings).map_err(|r| OpenError::invalid(url, r))?;
        Self::build(pool, options, redact_url(url)).map_err(|r| OpenError::invalid(url, r))
    }

    /// Uses a pool the application already has.
    ///
    /// # Errors
    ///
    /// [`OpenError::Invalid`] for a table name the pool's dialect does not allow.
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
            queries: Queries::new(pool, &options.table, channel),
            schema: Schema::new(dialect, &options.table, options.create_schema),
            feed: Mutex::new(None),
            notifier: Arc::new(ReleaseNotifier::default()),
            description,
            #[cfg(feature = "postgres")]
            contended: crate::contended::Contended::default(),
            #[cfg(feature = "mysql")]
            refused: crate::refused::RefusedLocks::default(),
            dialect,
            options,
        })
    }
}
