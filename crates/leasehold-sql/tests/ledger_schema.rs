//! Tables created before the period ledger existed: the store adds its columns on first use;
//! with `create_schema(false)` plain acquisitions keep working and a period claim fails with an
//! error naming the `ALTER TABLE` statements.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition};
use leasehold::{LeaseStore, LockName, Period, Token};
use leasehold_sql::{Dialect, SqlStore};
use sqlx::Executor;

/// The table as this crate created it before the ledger columns.
fn old_table(dialect: Dialect, table: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "CREATE TABLE {table} (lock_name TEXT NOT NULL, slot INTEGER NOT NULL, \
             owner VARCHAR(255) NOT NULL, token TEXT NULL, fence INTEGER NOT NULL, \
             acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, boot_id TEXT NULL, \
             boot_expires_at INTEGER NULL, PRIMARY KEY (lock_name, slot))"
        ),
        _ => format!(
            "CREATE TABLE {table} (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, \
             owner VARCHAR(255) NOT NULL, token CHAR(32) NULL, fence BIGINT NOT NULL, \
             acquired_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (lock_name, slot))"
        ),
    }
}

fn claim(owner: &str) -> AcquireRequest {
    let hourly = Period::every(Duration::from_secs(3600)).unwrap();
    AcquireRequest::new(
        LockName::new("ledger-schema").unwrap(),
        1,
        owner,
        Token::random(),
        Duration::from_secs(30),
    )
    .with_period(hourly)
}

async fn check(url: &str, dialect: Dialect) {
    let table = format!("old_{}", &Token::random().to_hex()[..12]);
    let ddl = old_table(dialect, &table);
    match dialect {
        Dialect::Sqlite => {
            let mut c =
                <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!("{url}?mode=rwc"))
                    .await
                    .unwrap();
            c.execute(ddl.as_str()).await.unwrap();
        }
        Dialect::Postgres => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            c.execute(ddl.as_str()).await.unwrap();
        }
        Dialect::MySql => {
            let mut c = <sqlx::MySqlConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            c.execute(ddl.as_str()).await.unwrap();
        }
    }

    // Schema managed elsewhere: plain leases work, a period claim names the statements.
    let managed = SqlStore::connect_with(url, common::options().table(&table).create_schema(false))
        .await
        .unwrap();
    let plain = AcquireRequest::new(
        LockName::new("plain").unwrap(),
        1,
        "a",
        Token::random(),
        Duration::from_secs(30),
    );
    assert!(managed.try_acquire(&plain).await.unwrap().is_granted());
    let err = managed.try_acquire(&claim("a")).await.unwrap_err();
    let text = err.to_string();
    assert!(!err.is_transient(), "{text}");
    for needle in dialect.ledger_columns(&table) {
        assert!(text.contains(&needle), "{text:?} lacks {needle:?}");
    }

    // The default adds the columns on first use, and the ledger works.
    let store = SqlStore::connect_with(url, common::options().table(&table))
        .await
        .unwrap();
    let lease = store.try_acquire(&claim("a")).await.unwrap();
    let Acquisition::Granted(lease) = lease else {
        panic!("a first claim is granted, got {lease:?}");
    };
    store.release(&lease, Duration::ZERO).await.unwrap();
    let again = store.try_acquire(&claim("b")).await.unwrap();
    assert!(
        matches!(&again, Acquisition::AlreadyRan(r) if r.by == "a" && Some(r.period) == lease.period),
        "{again:?}"
    );
    // A second open (another process) finds the columns there.
    let other = SqlStore::connect_with(url, common::options().table(&table))
        .await
        .unwrap();
    assert!(
        other
            .try_acquire(&claim("c"))
            .await
            .unwrap()
            .already_ran()
            .is_some()
    );
}

#[tokio::test]
async fn sqlite_old_tables_get_the_ledger_columns() {
    check(&common::sqlite_url("ledger-schema"), Dialect::Sqlite).await;
}

#[tokio::test]
async fn postgres_old_tables_get_the_ledger_columns() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        check(&url, Dialect::Postgres).await;
    }
}

#[tokio::test]
async fn mysql_old_tables_get_the_ledger_columns() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        check(&url, Dialect::MySql).await;
    }
}
