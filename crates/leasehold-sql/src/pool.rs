//! Connection pools for the three dialects, from a URL or supplied by the caller.

use std::str::FromStr;
use std::time::Duration;

use leasehold::StoreError;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use crate::dialect::Dialect;

/// A pool of one of the supported databases.
///
/// Build it from your own `sqlx` pool with `From`, or let [`SqlStore::connect`](crate::SqlStore::connect)
/// build one from a URL.
#[derive(Debug, Clone)]
pub enum SqlPool {
    /// SQLite.
    Sqlite(SqlitePool),
    /// PostgreSQL.
    Postgres(PgPool),
    /// MySQL or MariaDB. Connections must use the UTC session time zone (`sqlx` sets it by
    /// default; pools built by this crate ensure it).
    MySql(MySqlPool),
}

impl SqlPool {
    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Self::Sqlite(_) => Dialect::Sqlite,
            Self::Postgres(_) => Dialect::Postgres,
            Self::MySql(_) => Dialect::MySql,
        }
    }
}

impl From<SqlitePool> for SqlPool {
    fn from(p: SqlitePool) -> Self {
        Self::Sqlite(p)
    }
}
impl From<PgPool> for SqlPool {
    fn from(p: PgPool) -> Self {
        Self::Postgres(p)
    }
}
impl From<MySqlPool> for SqlPool {
    fn from(p: MySqlPool) -> Self {
        Self::MySql(p)
    }
}

/// Runs the same expression over whichever pool is inside.
macro_rules! with_pool {
    ($pool:expr, $p:ident => $body:expr) => {
        match $pool {
            $crate::pool::SqlPool::Sqlite($p) => $body,
            $crate::pool::SqlPool::Postgres($p) => $body,
            $crate::pool::SqlPool::MySql($p) => $body,
        }
    };
}
pub(crate) use with_pool;

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
    })
}

/// Opens and closes one direct connection to `url`, to learn why a pool could not connect (a
/// pool only reports that it timed out). The caller bounds it with its connect deadline.
pub(crate) async fn probe(url: &str) -> Result<(), sqlx::Error> {
    use sqlx::{ConnectOptions, Connection};
    let url = as_mysql(url);
    match dialect_of(&url) {
        Some(Dialect::Postgres) => {
            PgConnectOptions::from_str(&url)?
                .connect()
                .await?
                .close()
                .await
        }
        Some(Dialect::MySql) => {
            MySqlConnectOptions::from_str(&url)?
                .connect()
                .await?
                .close()
                .await
        }
        Some(Dialect::Sqlite) => {
            SqliteConnectOptions::from_str(&url)?
                .create_if_missing(true)
                .connect()
                .await?
                .close()
                .await
        }
        None => Ok(()),
    }
}

/// An SQLite file that cannot be opened because its directory is missing gets a message that
/// names the directory (SQLite creates the file, never its directory, and says only "unable to
/// open database file"); any other error is returned as it is.
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

/// `mariadb:` URLs are MySQL URLs to `sqlx`.
fn as_mysql(url: &str) -> String {
    match url.get(..8) {
        Some(scheme) if scheme.eq_ignore_ascii_case("mariadb:") => format!("mysql:{}", &url[8..]),
        _ => url.to_owned(),
    }
}
