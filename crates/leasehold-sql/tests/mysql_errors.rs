//! MySQL/MariaDB errors are classified by their error number, not only by their SQLSTATE: a lock
//! wait timeout (1205, SQLSTATE HY000) is transient — retrying helps — and was classified
//! permanent before, because the number was compared with the SQLSTATE.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, Error};
use leasehold_sql::SqlStore;
use sqlx::Executor;
use sqlx::mysql::MySqlPoolOptions;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_wait_timeout_is_a_transient_store_error() {
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    let lock = format!("lock-wait-{}", leasehold::store::Token::random().to_hex());
    // Create the lock's row, then hold its row lock in another transaction.
    let store = Arc::new(
        SqlStore::connect_with(&url, common::options())
            .await
            .unwrap(),
    );
    let elector = Elector::new(store.clone());
    elector
        .try_acquire(lock.as_str())
        .await
        .unwrap()
        .elected()
        .unwrap()
        .release()
        .await
        .unwrap();
    let pool = store.pool().clone();
    let leasehold_sql::SqlPool::MySql(my) = pool else {
        panic!("a MySQL pool")
    };
    let mut blocker = my.begin().await.unwrap();
    sqlx::query("SELECT lock_name FROM leasehold_leases WHERE lock_name = ? FOR UPDATE")
        .bind(&lock)
        .fetch_all(&mut *blocker)
        .await
        .unwrap();

    // A store whose sessions wait at most 1 s for a row lock.
    let impatient = MySqlPoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("SET SESSION innodb_lock_wait_timeout = 1")
                    .await?;
                Ok(())
            })
        })
        .connect(&url)
        .await
        .unwrap();
    let waiting = Elector::with_options(
        Arc::new(SqlStore::from_pool(impatient, common::options()).unwrap()),
        ElectionOptions::builder()
            .attempt_timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    let err = waiting
        .try_acquire(lock.as_str())
        .await
        .expect_err("the row is locked");
    blocker.rollback().await.unwrap();
    match &err {
        Error::Store { source, .. } => {
            assert!(
                source.message().contains("1205") || source.message().contains("Lock wait"),
                "{err}"
            );
            assert!(
                source.is_transient(),
                "a lock wait timeout must be transient: {err}"
            );
        }
        other => panic!("expected a store error, got {other}"),
    }
}
