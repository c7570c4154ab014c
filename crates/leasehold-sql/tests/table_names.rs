//! The longest table name each dialect allows works end to end (acquire, state, release, NOTIFY
//! wake-up on PostgreSQL, forced release), and one byte more is a typed error.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, LeaseStore, LockName,
    store::{OpenError, Release},
};
use leasehold_sql::{Dialect, SqlStore};

/// A name of exactly `len` bytes.
fn name(len: usize) -> String {
    let stem = "leasehold_longest_";
    format!("{stem}{}", "x".repeat(len - stem.len()))
}

/// Runs a lease through every operation on `table`, with a waiter on a second client that the
/// release must wake (by NOTIFY on PostgreSQL, within 3 s of a 10 s poll).
async fn everything_works(url: &str, table: &str) {
    let options = common::options().with_table(table);
    let open = || async {
        Arc::new(
            SqlStore::connect_with(url, options.clone())
                .await
                .unwrap_or_else(|e| panic!("open with table {table}: {e}")),
        )
    };
    let (holder_store, waiter_store) = (open().await, open().await);
    assert!(holder_store.notify_channel().len() <= 63);
    let lock = format!("longest-{}", leasehold::store::Token::random().to_hex());
    // On PostgreSQL only NOTIFY can wake the waiter in time; elsewhere it polls quickly.
    let poll = if holder_store.dialect() == Dialect::Postgres {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(50)
    };
    let slow = leasehold::RetryPolicy::new(poll, poll, 0.0).unwrap();
    let holder = Elector::with_options(
        holder_store.clone(),
        ElectionOptions::builder()
            .wait(Duration::ZERO)
            .build()
            .unwrap(),
    );
    let waiter = Elector::with_options(
        waiter_store,
        ElectionOptions::builder()
            .wait(Duration::from_secs(30))
            .retry(slow)
            .build()
            .unwrap(),
    );
    let g = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    let state = holder.state(&lock).await.unwrap();
    assert_eq!(state.holder().map(|h| h.fence), Some(g.fence()));
    let l = lock.clone();
    let task =
        tokio::spawn(async move { waiter.try_acquire(&l).await.map(|g| g.map(|g| g.fence())) });
    // Let the waiter fail its first attempt and start listening.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = std::time::Instant::now();
    let first = g.fence();
    assert_eq!(g.release().await.unwrap(), Release::Released);
    let fence = task.await.unwrap().unwrap();
    assert!(
        fence.elected().is_some_and(|f| f > first),
        "the waiter got the lock"
    );
    if holder_store.dialect() == Dialect::Postgres {
        assert!(
            released.elapsed() < Duration::from_secs(3),
            "woken by NOTIFY, not by the 10 s poll: {:?}",
            released.elapsed()
        );
    }
    // The waiter's guard was dropped, so the lock is free again; a forced release frees a new one.
    let name = LockName::new(format!("{lock}-force")).unwrap();
    let g = holder
        .try_acquire(name.as_str())
        .await
        .unwrap()
        .elected()
        .unwrap();
    let freed = holder_store.force_release(&name, 1).await.unwrap();
    assert_eq!(
        freed.iter().map(|h| h.fence).collect::<Vec<_>>(),
        [g.fence()]
    );
    assert!(
        holder_store
            .state(&name, 1)
            .await
            .unwrap()
            .holders
            .is_empty()
    );
}

fn too_long(url: &str, table: &str, max: usize) {
    let err = SqlStore::connect_lazy(url, common::options().with_table(table))
        .expect_err("one byte over the limit");
    assert!(matches!(err, OpenError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("at most {max}")), "{err}");
}

#[tokio::test]
async fn sqlite_longest_table_name() {
    let url = common::sqlite_url("longest");
    let max = Dialect::Sqlite.max_name_len();
    everything_works(&url, &name(max)).await;
    too_long(&url, &name(max + 1), max);
}

#[tokio::test]
async fn postgres_longest_table_names() {
    let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let max = Dialect::Postgres.max_name_len();
    assert_eq!(max, 63);
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    // 46 bytes is where the old channel name passed 63; a fully qualified name is the longest.
    let schema = name(max);
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .execute(&pool)
        .await
        .unwrap();
    for table in [name(46), name(max), format!("{schema}.{}", name(max))] {
        sqlx::query(&format!("DROP TABLE IF EXISTS {table}"))
            .execute(&pool)
            .await
            .unwrap();
        everything_works(&url, &table).await;
    }
    too_long(&url, &name(max + 1), max);
    too_long(&url, &format!("{}.t", name(max + 1)), max);
}

#[tokio::test]
async fn mysql_longest_table_name() {
    let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    let max = Dialect::MySql.max_name_len();
    assert_eq!(max, 64);
    let pool = sqlx::MySqlPool::connect(&url).await.unwrap();
    let table = name(max);
    sqlx::query(&format!("DROP TABLE IF EXISTS {table}"))
        .execute(&pool)
        .await
        .unwrap();
    everything_works(&url, &table).await;
    too_long(&url, &name(max + 1), max);
}
