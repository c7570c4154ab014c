//! A beat's renewals as one statement: `extend_many` over more leases than one statement
//! carries (10,000), on every dialect. PostgreSQL once failed here: a plain list of 10,000 row
//! values exceeded its stack, so its list is a `VALUES` join.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{Extension, Token};
use leasehold::{Lease, LeaseStore};
use leasehold_sql::{SqlPool, SqlStore};
use sqlx::Executor;

/// One more than a statement carries, so the batch takes two statements.
const LEASES: usize = 10_001;

async fn renew_many(url: String) {
    let table = format!("renew_many_{}", &Token::random().to_hex()[..12]);
    let sql = Arc::new(
        SqlStore::connect_with(&url, common::options().with_table(table.as_str()))
            .await
            .unwrap(),
    );
    let store: Arc<dyn LeaseStore> = sql.clone();
    let ttl = Duration::from_secs(60);
    let leases = leasehold_testkit::grant_many(&store, "renew", LEASES, ttl).await;
    let forged = Lease {
        token: Token::random(),
        ..leases[0].clone()
    };
    let mut entries: Vec<(Lease, Duration)> = leases.iter().map(|l| (l.clone(), ttl * 2)).collect();
    entries.push((forged, ttl * 2));
    let started = std::time::Instant::now();
    let answers = store.extend_many(&entries).await;
    let took = started.elapsed();
    // A beat's renewals must take a small part of a renewal period (a second for a 3 s lease);
    // SQLite once took longer than that to parse numbered parameters.
    assert!(
        took < Duration::from_millis(2_500),
        "renewing {LEASES} leases took {took:?}"
    );
    assert_eq!(answers.len(), entries.len());
    for ((lease, _), answer) in entries.iter().zip(&answers).take(LEASES) {
        match answer {
            Ok(Extension::Extended { expires_at }) => assert!(
                *expires_at > lease.expires_at + Duration::from_secs(30),
                "{}: extended to {expires_at:?}",
                lease.lock
            ),
            other => panic!("{}: expected an extension, got {other:?}", lease.lock),
        }
    }
    assert!(
        matches!(answers[LEASES], Ok(Extension::NotHeld)),
        "a forged token is not held: {:?}",
        answers[LEASES]
    );
    let drop_table = format!("DROP TABLE {table}");
    match sql.pool() {
        SqlPool::Sqlite(p) => p.execute(drop_table.as_str()).await.map(|_| ()),
        SqlPool::Postgres(p) => p.execute(drop_table.as_str()).await.map(|_| ()),
        SqlPool::MySql(p) => p.execute(drop_table.as_str()).await.map(|_| ()),
        other => unreachable!("the tests build every driver, not {}", other.dialect()),
    }
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    renew_many(common::sqlite_url("renew-many")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        renew_many(url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        renew_many(url).await;
    }
}
