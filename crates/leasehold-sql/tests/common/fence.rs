//! Helpers for the fence tests: a values table written inside fenced transactions, reads
//! through whichever pool a store has, and one test per dialect from one generic scenario.

use leasehold_sql::SqlPool;
use sqlx::Executor;

/// The table the fence tests write their values to (a job's own table).
pub const VALUES: &str = "fence_test_values";

/// A unique name for one test's resource, lock or table (lowercase: a valid SQL identifier).
pub fn unique(tag: &str) -> String {
    format!(
        "{tag}_{}",
        &leasehold::store::Token::random().to_hex()[..12]
    )
}

/// Creates the values table if it is missing.
pub async fn values_table(pool: &SqlPool) {
    exec(
        pool,
        &format!(
            "CREATE TABLE IF NOT EXISTS {VALUES} (resource VARCHAR(255) NOT NULL PRIMARY KEY, \
             value BIGINT NOT NULL)"
        ),
    )
    .await
    .expect("create the values table");
}

/// The statement that sets `resource`'s value on database `DB` (names in tests hold no
/// quotes).
pub fn put_sql<DB: sqlx::Database>(resource: &str, value: i64) -> String {
    let insert = format!("INSERT INTO {VALUES} (resource, value) VALUES ('{resource}', {value})");
    if DB::NAME == "MySQL" {
        format!("{insert} ON DUPLICATE KEY UPDATE value = VALUES(value)")
    } else {
        format!("{insert} ON CONFLICT (resource) DO UPDATE SET value = excluded.value")
    }
}

/// Sets `resource`'s value through `conn` (a transaction's connection).
pub async fn put<DB: sqlx::Database>(
    conn: &mut DB::Connection,
    resource: &str,
    value: i64,
) -> Result<(), sqlx::Error>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    conn.execute(sqlx::raw_sql(&put_sql::<DB>(resource, value)))
        .await
        .map(|_| ())
}

/// `resource`'s value.
pub async fn value(pool: &SqlPool, resource: &str) -> Option<i64> {
    scalar(
        pool,
        &format!("SELECT value FROM {VALUES} WHERE resource = '{resource}'"),
    )
    .await
}

/// The first column of the first row of `sql`, if any.
pub async fn scalar(pool: &SqlPool, sql: &str) -> Option<i64> {
    let read = match pool {
        SqlPool::Sqlite(p) => sqlx::query_scalar(sql).fetch_optional(p).await,
        SqlPool::Postgres(p) => sqlx::query_scalar(sql).fetch_optional(p).await,
        SqlPool::MySql(p) => sqlx::query_scalar(sql).fetch_optional(p).await,
        other => unreachable!("the tests build every driver, not {}", other.dialect()),
    };
    read.expect("read")
}

/// Runs `sql` (one or more statements, no parameters) on `pool`.
pub async fn exec(pool: &SqlPool, sql: &str) -> Result<(), sqlx::Error> {
    match pool {
        SqlPool::Sqlite(p) => p.execute(sqlx::raw_sql(sql)).await.map(|_| ()),
        SqlPool::Postgres(p) => p.execute(sqlx::raw_sql(sql)).await.map(|_| ()),
        SqlPool::MySql(p) => p.execute(sqlx::raw_sql(sql)).await.map(|_| ()),
        other => unreachable!("the tests build every driver, not {}", other.dialect()),
    }
}

/// One test per dialect (`<scenario>::sqlite`, `::postgres`, `::mysql`) running the generic
/// `async fn <scenario><DB>(url: String)` against a fresh SQLite file and the test servers.
#[macro_export]
macro_rules! per_dialect {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$scenario::<sqlx::Sqlite>($crate::common::sqlite_url(stringify!($scenario))).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(url) = $crate::common::url("LEASEHOLD_TEST_POSTGRES_URL") {
                    super::$scenario::<sqlx::Postgres>(url).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                if let Some(url) = $crate::common::url("LEASEHOLD_TEST_MYSQL_URL") {
                    super::$scenario::<sqlx::MySql>(url).await;
                }
            }
        }
    )*};
}
