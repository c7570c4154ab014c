//! The testkit's paused-stale-holder scenario against both SQL sinks on every database, the lock
//! store being the same database: holders frozen past their lease (forced release, or real
//! expiry every 50th round) must never write after their successor.

#![cfg(feature = "fence")]
#![allow(clippy::print_stderr, clippy::expect_used)]

mod common;

use async_trait::async_trait;
use leasehold::LeaderContext;
use leasehold::fence::ResourceName;
use leasehold_sql::fence::sinks::{FenceTableSink, LeaseTransactionSink};
use leasehold_sql::{SqlFences, SqlStore};
use leasehold_testkit::stale_holder::{self, FencedSink, SinkError, StaleHolderConfig};

const ROUNDS: usize = 300;

async fn store(url: &str) -> SqlStore {
    SqlStore::connect_with(url, common::options())
        .await
        .expect("open the store")
}

async fn check(url: String, sink: &dyn FencedSink) {
    let config = StaleHolderConfig {
        rounds: ROUNDS,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&common::factory(url), sink, &config).await;
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.rounds, ROUNDS as u64);
    assert!(report.expired > 0, "{report}");
    assert!(report.stale_rejected > 0, "{report}");
    assert_eq!(report.stale_accepted, 0, "{report}");
}

async fn fence_table(url: String) {
    let sink = FenceTableSink::new(SqlFences::new(&store(&url).await))
        .await
        .expect("sink");
    assert!(sink.describe().starts_with("sql fence table"));
    check(url, &sink).await;
}

async fn lease_transaction(url: String) {
    let sink = LeaseTransactionSink::new(store(&url).await)
        .await
        .expect("sink");
    check(url, &sink).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_fence_table() {
    fence_table(common::sqlite_url("stale-fence-table")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_lease_transaction() {
    lease_transaction(common::sqlite_url("stale-lease-tx")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fence_table() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        fence_table(url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lease_transaction() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        lease_transaction(url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_fence_table() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        fence_table(url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_lease_transaction() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        lease_transaction(url).await;
    }
}

/// The control: the same writes without any fence check (a plain upsert on the values table)
/// must be caught by the scenario, or the runs above would prove nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfenced_sql_write_is_caught() {
    struct Unfenced(sqlx::SqlitePool);

    #[async_trait]
    impl FencedSink for Unfenced {
        async fn write(
            &self,
            r: &ResourceName,
            _: &LeaderContext,
            v: u64,
        ) -> Result<bool, SinkError> {
            sqlx::query(
                "INSERT INTO unfenced (resource, value) VALUES (?1, ?2) \
                 ON CONFLICT (resource) DO UPDATE SET value = excluded.value",
            )
            .bind(r.as_str())
            .bind(i64::try_from(v)?)
            .execute(&self.0)
            .await?;
            Ok(true)
        }

        async fn read(&self, r: &ResourceName) -> Result<Option<u64>, SinkError> {
            let v: Option<i64> =
                sqlx::query_scalar("SELECT value FROM unfenced WHERE resource = ?1")
                    .bind(r.as_str())
                    .fetch_optional(&self.0)
                    .await?;
            Ok(v.map(|v| v as u64))
        }

        fn describe(&self) -> String {
            "unfenced sql write".to_owned()
        }
    }

    let url = common::sqlite_url("unfenced");
    let store = store(&url).await;
    let leasehold_sql::SqlPool::Sqlite(pool) = store.pool().clone() else {
        panic!("an SQLite pool");
    };
    sqlx::query("CREATE TABLE unfenced (resource TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .expect("create");
    let config = StaleHolderConfig {
        rounds: 30,
        expire_every: 0,
        ..StaleHolderConfig::default()
    };
    let report = stale_holder::run(&common::factory(url), &Unfenced(pool), &config).await;
    assert!(!report.passed(), "{report}");
    assert!(report.stale_accepted > 0, "{report}");
}
