//! Connection pools for the dialects whose drivers are compiled in (features `sqlite`,
//! `postgres`, `mysql`), from a URL or supplied by the caller.

use std::str::FromStr;
use std::time::Duration;

use leasehold::store::StoreError;
#[cfg(feature = "mysql")]
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
#[cfg(feature = "postgres")]
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
#[cfg(feature = "sqlite")]
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::dialect::Dialect;

/// A pool of one of the supported databases; a variant exists only when its driver's feature
/// (`sqlite`, `postgres`, `mysql`) is enabled, so a match on it needs a `_` arm.
///
/// Build it from your own `sqlx` pool with `From`, or let [`SqlStore::connect`](crate::SqlStore::connect)
/// build one from a URL.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SqlPool {
    /// SQLite.
    #[cfg(feature = "sqlite")]
    Sqlite(SqlitePool),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(PgPool),
    /// MySQL or MariaDB. Connections must use the UTC session time zone (`sqlx` sets it by
    /// default; pools built by this crate ensure it).
    #[cfg(feature = "mysql")]
    MySql(MySqlPool),
}

impl SqlPool {
    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match *self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Self::MySql(_) => Dialect::MySql,
        }
    }

    /// Built without any driver, there is no pool: this is never called. It stands in for the
    /// drivers' match arms (`with_pool!` and the other per-dialect matches).
    #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
    pub(crate) fn absurd<T>(&self) -> T {
        match *self {}
    }
}

#[cfg(feature = "sqlite")]
impl From<SqlitePool> for SqlPool {
    fn from(p: SqlitePool) -> Self {
        Self::Sqlite(p)
    }
}
#[cfg(feature = "postgres")]
impl From<PgPool> for SqlPool {
    fn from(p: PgPool) -> Self {
        Self::Postgres(p)
    }
}
#[cfg(feature = "mysql")]
impl From<MySqlPool> for SqlPool {
    fn from(p: MySqlPool) -> Self {
        Self::MySql(p)
    }
}

/// Runs the same expression over whichever pool is inside (`$pool`: a `&SqlPool`).
macro_rules! with_pool {
    ($pool:expr, $p:ident => $body:expr) => {
        match $pool {
            #[cfg(feature = "sqlite")]
            $crate::pool::SqlPool::Sqlite($p) => $body,
            #[cfg(feature = "postgres")]
            $crate::pool::SqlPool::Postgres($p) => $body,
            #[cfg(feature = "mysql")]
            $crate::pool::SqlPool::MySql($p) => $body,
            #[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
            none => none.absurd(),
        }
    };
}
pub(crate) use with_pool;

/// Why `dialect` cannot be used: this build lacks its driver, and the feature that adds it.
pub(crate) fn missing_driver(dialect: Dialect) -> String {
    let (name, feature) = match dialect {
        Dialect::Sqlite => ("SQLite", "sqlite"),
        Dialect::Postgres => ("PostgreSQL", "postgres"),
        Dialect::MySql => ("MySQL/MariaDB", "mysql"),
    };
    format!(
        "this build of leasehold-sql has no {name} driver; enable the `{feature}` feature of \
         leasehold-sql (features: sqlite, postgres, mysql)"
    )
}

/// Whether this build has `dialect`'s driver: [`missing_driver`] when not.
pub(crate) fn check_driver(dialect: Dialect) -> Result<(), String> {
    let compiled = match dialect {
        Dialect::Sqlite => cfg!(feature = "sqlite"),
        Dialect::Postgres => cfg!(feature = "postgres"),
        Dialect::MySql => cfg!(feature = "mysql"),
    };
    if compiled {
        Ok(())
    } else {
        Err(missing_driver(dialect))
    }
}

/// Settings for pools built from URLs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolSettings {
    pub(crate) max_connections: u32,
    pub(crate) connect_timeout: Duration,
}

/// The dialect a URL names, by scheme.
pub(crate) fn dialect_of(url: &str) -> Option<Dialect> {
    let scheme = url.split_once(':')?.0.to_ascii_lowercase();
    match scheme.as_str() {
        "sqlite" => Some(Dialect::Sqlite),
        "postgres" | "postgresql" => Some(Dialect::Postgres),
        "mysql" | "mariadb" => Some(Dialect::MySql),
        _ => None,
    }
}

/// Builds a lazily connecting pool for `url` (nothing is contacted until first use).
pub(crate) fn lazy_pool(url: &str, settings: PoolSettings) -> Result<SqlPool, String> {
    let dialect = dialect_of(url).ok_or("expected a sqlite:, postgres:// or mysql:// URL")?;
    let bad = |e: sqlx::Error| format!("cannot parse the URL: {e}");
    Ok(match dialect {
        #[cfg(feature = "sqlite")]
        Dialect::Sqlite => {
            let opts = SqliteConnectOptions::from_str(url)
                .map_err(bad)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(5));
            // Each connection to `:memory:` would be its own database: keep one.
            let max = if url.contains(":memory:") || url.contains("mode=memory") {
                1
            } else {
                settings.max_connections
            };
            SqlPool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(max)
                    .acquire_timeout(settings.connect_timeout)
                    .connect_lazy_with(opts),
            )
        }
        #[cfg(feature = "postgres")]
        Dialect::Postgres => {
            let opts = PgConnectOptions::from_str(url)
                .map_err(bad)?
                .application_name("leasehold");
            SqlPool::Postgres(
                PgPoolOptions::new()
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.connect_timeout)
                    .connect_lazy_with(opts),
            )
        }
        #[cfg(feature = "mysql")]
        Dialect::MySql => {
            let opts = MySqlConnectOptions::from_str(&as_mysql(url))
                .map_err(bad)?
                .timezone(Some("+00:00".to_owned()));
            SqlPool::MySql(
                MySqlPoolOptions::new()
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.connect_timeout)
                    .connect_lazy_with(opts),
            )
        }
        #[cfg(not(all(feature = "sqlite", feature = "postgres", feature = "mysql")))]
        missing => return Err(missing_driver(missing)),
    })
}

/// Opens and closes one direct connection to `url`, to learn why a pool could not connect (a
/// pool only reports that it timed out). The caller bounds it with its connect deadline.
pub(crate) async fn probe(url: &str) -> Result<(), sqlx::Error> {
    use sqlx::{ConnectOptions, Connection};
    match dialect_of(url) {
        #[cfg(feature = "postgres")]
        Some(Dialect::Postgres) => {
            PgConnectOptions::from_str(url)?
                .connect()
                .await?
                .close()
                .await
        }
        #[cfg(feature = "mysql")]
        Some(Dialect::MySql) => {
            MySqlConnectOptions::from_str(&as_mysql(url))?
                .connect()
                .await?
                .close()
                .await
        }
        #[cfg(feature = "sqlite")]
        Some(Dialect::Sqlite) => {
            SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .connect()
                .await?
                .close()
                .await
        }
        // No dialect, or one without its driver: `lazy_pool` refused the URL before.
        _ => Ok(()),
    }
}

/// An SQLite file that cannot be opened because its directory is missing gets a message that
/// names the directory (SQLite creates the file, never its directory, and says only "unable to
/// open database file"); any other error is returned as it is.
#[cfg(feature = "sqlite")]
pub(crate) fn explain_sqlite_open(url: &str, err: StoreError) -> StoreError {
    if dialect_of(url) != Some(Dialect::Sqlite) {
        return err;
    }
    // A URL that holds something secret-looking (`sqlite://:pw@…`) may put part of it in the
    // path: then the directory is not named, the redacted URL says which file it is.
    if !leasehold::store::url_secrets(url).is_empty() {
        return err;
    }
    let Ok(opts) = SqliteConnectOptions::from_str(url) else {
        return err;
    };
    let file = opts.get_filename();
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            StoreError::permanent(format!(
                "the directory {} of the SQLite file does not exist (SQLite creates the file, not \
             its directory): create it, or choose another path",
                dir.display()
            ))
        }
        _ => err,
    }
}

/// Without the SQLite driver no SQLite file is opened: `err` is returned as it is.
#[cfg(not(feature = "sqlite"))]
pub(crate) fn explain_sqlite_open(_url: &str, err: StoreError) -> StoreError {
    err
}

/// `mariadb:` URLs are MySQL URLs to `sqlx`.
#[cfg(feature = "mysql")]
fn as_mysql(url: &str) -> String {
    match url.get(..8) {
        Some(scheme) if scheme.eq_ignore_ascii_case("mariadb:") => format!("mysql:{}", &url[8..]),
        _ => url.to_owned(),
    }
}
