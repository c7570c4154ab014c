//! Tables created before the period ledger existed, before its claims' columns, or before its
//! latest run's column: the store adds the columns on first use; with `create_schema(false)` plain acquisitions keep working and
//! a period claim fails with an error naming the `ALTER TABLE` statements still to run. Records
//! an older version wrote read as started.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use leasehold::store::{AcquireRequest, Acquisition, PeriodStart};
use leasehold::{LeaseStore, LockName, Period, store::Token};
use leasehold_sql::{Dialect, SqlStore};
use sqlx::Executor;

/// The table as this crate created it before the ledger columns, or (`ledger`) with only the
/// ledger's first three.
fn old_table(dialect: Dialect, table: &str, ledger: bool) -> String {
    let ddl = match dialect {
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
    };
    if !ledger {
        return ddl;
    }
    let by = match dialect {
        Dialect::MySql => "VARCHAR(255) CHARACTER SET utf8mb4",
        _ => "VARCHAR(255)",
    };
    ddl.replace(
        ", PRIMARY KEY",
        &format!(
            ", ledger_period BIGINT NULL, ledger_at BIGINT NULL, ledger_by {by} NULL, PRIMARY KEY"
        ),
    )
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

/// Runs `sql` on a connection of its own.
async fn execute(url: &str, dialect: Dialect, sql: &str) {
    match dialect {
        Dialect::Sqlite => {
            let mut c =
                <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!("{url}?mode=rwc"))
                    .await
                    .unwrap();
            c.execute(sql).await.unwrap();
        }
        Dialect::Postgres => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            c.execute(sql).await.unwrap();
        }
        Dialect::MySql => {
            let mut c = <sqlx::MySqlConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            c.execute(sql).await.unwrap();
        }
    }
}

async fn check(url: &str, dialect: Dialect) {
    let table = format!("old_{}", &Token::random().to_hex()[..12]);
    execute(url, dialect, &old_table(dialect, &table, false)).await;

    // Schema managed elsewhere: plain leases work, a period claim names the statements.
    let managed = SqlStore::connect_with(
        url,
        common::options()
            .with_table(&table)
            .with_create_schema(false),
    )
    .await
    .unwrap();
    let plain = AcquireRequest::new(
        LockName::new("plain").unwrap(),
        1,
        "a",
        Token::random(),
        Duration::from_secs(30),
    );
    assert!(managed.try_acquire(&plain).await.unwrap().is_elected());
    let err = managed.try_acquire(&claim("a")).await.unwrap_err();
    let text = err.to_string();
    assert!(!err.is_transient(), "{text}");
    let all = dialect
        .ledger_columns(&table)
        .into_iter()
        .chain(dialect.ledger_claim_columns(&table));
    for needle in all {
        assert!(text.contains(&needle), "{text:?} lacks {needle:?}");
    }
    let lock = LockName::new("ledger-schema").unwrap();
    assert_eq!(managed.period_record(&lock).await.unwrap(), None);

    // The default adds the columns on first use, and the ledger works.
    let store = SqlStore::connect_with(url, common::options().with_table(&table))
        .await
        .unwrap();
    let lease = store.try_acquire(&claim("a")).await.unwrap();
    let Acquisition::Elected(lease) = lease else {
        panic!("a first claim is granted, got {lease:?}");
    };
    assert_eq!(
        store.start_period(&lease).await.unwrap(),
        PeriodStart::Started
    );
    store.release(&lease, Duration::ZERO).await.unwrap();
    let again = store.try_acquire(&claim("b")).await.unwrap();
    assert!(
        matches!(&again, Acquisition::AlreadyRan(r) if r.by == "a" && Some(r.period) == lease.period),
        "{again:?}"
    );
    // A second open (another process) finds the columns there.
    let other = SqlStore::connect_with(url, common::options().with_table(&table))
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

/// A table of the version before claims (the ledger's first three columns), with a record that
/// version wrote: with `create_schema(false)` the record reads (started, its window unknown) and
/// a claim names only the four statements still to run; the default adds them, and the old
/// record still refuses the period it ran in.
async fn check_before_claims(url: &str, dialect: Dialect) {
    let table = format!("old_{}", &Token::random().to_hex()[..12]);
    execute(url, dialect, &old_table(dialect, &table, true)).await;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let hourly = Period::every(Duration::from_secs(3600)).unwrap();
    let period = hourly.id_at_ms(now);
    // What the older version's grant left: a released row, with its period, time and owner.
    let boot = if dialect == Dialect::Sqlite {
        "boot_id, boot_expires_at, "
    } else {
        ""
    };
    let boot_values = if dialect == Dialect::Sqlite {
        "NULL, 0, "
    } else {
        ""
    };
    execute(
        url,
        dialect,
        &format!(
            "INSERT INTO {table} (lock_name, slot, owner, token, fence, acquired_at, expires_at,              {boot}ledger_period, ledger_at, ledger_by) VALUES ('ledger-schema', 0, 'old', NULL,              {fence}, {now}, 0, {boot_values}{period}, {now}, 'old')",
            fence = now * 1000,
        ),
    )
    .await;
    let lock = LockName::new("ledger-schema").unwrap();

    let managed = SqlStore::connect_with(
        url,
        common::options()
            .with_table(&table)
            .with_create_schema(false),
    )
    .await
    .unwrap();
    let record = managed
        .period_record(&lock)
        .await
        .unwrap()
        .expect("the old record");
    assert!(
        record.started && record.by == "old" && record.period == period && record.from == record.at,
        "an older version's record reads as started: {record:?}"
    );
    let err = managed.try_acquire(&claim("a")).await.unwrap_err();
    let text = err.to_string();
    assert!(!err.is_transient(), "{text}");
    for needle in dialect.ledger_claim_columns(&table) {
        assert!(text.contains(&needle), "{text:?} lacks {needle:?}");
    }
    for present in dialect.ledger_columns(&table) {
        assert!(
            !text.contains(&present),
            "{text:?} names {present:?}, which the table has"
        );
    }

    let store = SqlStore::connect_with(url, common::options().with_table(&table))
        .await
        .unwrap();
    let refused = store.try_acquire(&claim("a")).await.unwrap();
    assert!(
        matches!(&refused, Acquisition::AlreadyRan(r) if *r == record),
        "the older version's run still counts: {refused:?}"
    );

    // A mixed fleet: this version's claim never starts and is released; an older version then
    // grants the lock (writing only `ledger_period`, `ledger_at` and `ledger_by`, as its
    // statement did). Its grant was a run: the next claim is refused, not taken over.
    let mixed = LockName::new("ledger-mixed").unwrap();
    let req = |owner: &str| {
        AcquireRequest::new(
            mixed.clone(),
            1,
            owner,
            Token::random(),
            Duration::from_secs(30),
        )
        .with_period(hourly)
    };
    let unstarted = store
        .try_acquire(&req("a"))
        .await
        .unwrap()
        .elected()
        .expect("free");
    store.release(&unstarted, Duration::ZERO).await.unwrap();
    let pending = store
        .period_record(&mixed)
        .await
        .unwrap()
        .expect("a record");
    assert!(!pending.started, "{pending:?}");
    execute(
        url,
        dialect,
        &format!(
            "UPDATE {table} SET owner = 'old', ledger_at = ledger_at + 1, ledger_by = 'old' \
             WHERE lock_name = 'ledger-mixed' AND slot = 0"
        ),
    )
    .await;
    let refused = store.try_acquire(&req("b")).await.unwrap();
    assert!(
        matches!(&refused, Acquisition::AlreadyRan(r) if r.by == "old" && r.started),
        "an older version's grant over an unstarted claim counts as a run: {refused:?}"
    );

    // An operator's clear through the store that knows only the first three columns
    // (`create_schema(false)`): it returns the older version's record and deletes it; the row
    // and its fence stay, and the period runs again.
    assert_eq!(
        managed.clear_period_ledger(&lock).await.unwrap(),
        Some(record),
        "the clear returns the older version's record"
    );
    assert_eq!(managed.period_record(&lock).await.unwrap(), None);
    assert_eq!(store.period_record(&lock).await.unwrap(), None);
    assert_eq!(managed.clear_period_ledger(&lock).await.unwrap(), None);
    let again = store
        .try_acquire(&claim("d"))
        .await
        .unwrap()
        .elected()
        .expect("the period runs again after the clear");
    assert!(
        i64::try_from(again.fence).unwrap() > now * 1000,
        "the fence keeps rising: {again:?}"
    );
}

/// A table of the version before the ledger kept its latest run (every column but
/// `ledger_ran`): with `create_schema(false)` a claim names only the statement that adds it; the
/// default adds it, and then a claim that never started hides no earlier run.
async fn check_before_runs(url: &str, dialect: Dialect) {
    let table = format!("old_{}", &Token::random().to_hex()[..12]);
    let ddl = dialect
        .create_table(&table)
        .lines()
        .filter(|l| !l.contains("ledger_ran"))
        .collect::<Vec<_>>()
        .join("\n");
    execute(url, dialect, &ddl).await;
    let managed = SqlStore::connect_with(
        url,
        common::options()
            .with_table(&table)
            .with_create_schema(false),
    )
    .await
    .unwrap();
    let err = managed.try_acquire(&claim("a")).await.unwrap_err();
    let text = err.to_string();
    assert!(!err.is_transient(), "{text}");
    let [run] = dialect.ledger_run_columns(&table);
    assert!(text.contains(&run), "{text:?} lacks {run:?}");
    for present in dialect
        .ledger_columns(&table)
        .into_iter()
        .chain(dialect.ledger_claim_columns(&table))
    {
        assert!(
            !text.contains(&present),
            "{text:?} names {present:?}, which the table has"
        );
    }

    let store = SqlStore::connect_with(url, common::options().with_table(&table))
        .await
        .unwrap();
    let ran = store
        .try_acquire(&claim("a"))
        .await
        .unwrap()
        .elected()
        .expect("free");
    assert_eq!(
        store.start_period(&ran).await.unwrap(),
        PeriodStart::Started
    );
    store.release(&ran, Duration::ZERO).await.unwrap();
    let record = store
        .period_record(&LockName::new("ledger-schema").unwrap())
        .await
        .unwrap()
        .expect("a record");
    assert_eq!(record.ran_at, Some(record.at), "{record:?}");
}

#[tokio::test]
async fn sqlite_tables_before_runs_get_their_column() {
    check_before_runs(&common::sqlite_url("ledger-runs"), Dialect::Sqlite).await;
}

#[tokio::test]
async fn postgres_tables_before_runs_get_their_column() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        check_before_runs(&url, Dialect::Postgres).await;
    }
}

#[tokio::test]
async fn mysql_tables_before_runs_get_their_column() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        check_before_runs(&url, Dialect::MySql).await;
    }
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

#[tokio::test]
async fn sqlite_tables_before_claims_get_their_columns() {
    check_before_claims(&common::sqlite_url("ledger-claims"), Dialect::Sqlite).await;
}

#[tokio::test]
async fn postgres_tables_before_claims_get_their_columns() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        check_before_claims(&url, Dialect::Postgres).await;
    }
}

#[tokio::test]
async fn mysql_tables_before_claims_get_their_columns() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        check_before_claims(&url, Dialect::MySql).await;
    }
}
