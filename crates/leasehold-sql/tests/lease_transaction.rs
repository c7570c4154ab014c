//! `SqlStore::fenced` on real databases: a valid holder's writes land; a holder whose
//! lease was force-released (a successor holds it) or has expired keeps nothing.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fence::{put, unique, value, values_table};
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName};
use leasehold_sql::{FenceError, SqlStore};
use sqlx::{Database, Executor};

per_dialect!(
    a_valid_holder_commits,
    a_stale_holder_keeps_nothing,
    an_expired_holder_keeps_nothing,
);

async fn store(url: &str) -> Arc<SqlStore> {
    let store = SqlStore::connect_with(url, common::options())
        .await
        .expect("open the store");
    values_table(store.pool()).await;
    Arc::new(store)
}

/// Renewal off (the library turns it on by default): these tests check what a transaction does
/// with the lease as granted, one of them after it expires.
fn elector(store: &Arc<SqlStore>, lease: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .lease(lease)
        .auto_extend(false)
        .build()
        .unwrap();
    Elector::with_options(Arc::clone(store) as Arc<dyn LeaseStore>, options)
}

fn lock() -> LockName {
    LockName::new(unique("lease-tx")).unwrap()
}

async fn a_valid_holder_commits<DB: Database>(url: String)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let store = store(&url).await;
    let (lock, long) = (lock(), Duration::from_secs(30));
    let guard = elector(&store, long)
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let mut tx = store.fenced::<DB>(&guard).await.unwrap();
    assert_eq!(
        (tx.lock(), tx.slot(), tx.fence()),
        (&lock, 0, guard.fence())
    );
    assert!(
        !format!("{tx:?}").contains(&guard.lease().token.to_hex()),
        "no token in Debug"
    );
    put::<DB>(&mut tx, lock.as_str(), 1).await.unwrap();
    tx.commit().await.expect("the holder's commit lands");
    assert_eq!(value(store.pool(), lock.as_str()).await, Some(1));

    // Twice in a row, and a rollback keeps nothing.
    let mut tx = store.fenced::<DB>(&guard).await.unwrap();
    put::<DB>(&mut tx, lock.as_str(), 2).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(value(store.pool(), lock.as_str()).await, Some(1));
    let wrong = if DB::NAME == "MySQL" {
        store.fenced::<sqlx::Sqlite>(&guard).await.map(|_| ())
    } else {
        store.fenced::<sqlx::MySql>(&guard).await.map(|_| ())
    };
    assert!(
        matches!(wrong, Err(FenceError::WrongDatabase { .. })),
        "{wrong:?}"
    );
    guard.release().await.unwrap();
}

/// A holder frozen past its lease: the lock was force-released and a successor holds it. The
/// stale holder's transaction is rolled back at commit; the successor's lands. On PostgreSQL
/// and MySQL the successor takes over while the stale transaction is open; on SQLite that
/// transaction holds the database's write lock (`BEGIN IMMEDIATE`), so the takeover comes
/// before it opens.
async fn a_stale_holder_keeps_nothing<DB: Database>(url: String)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let (a, b) = (store(&url).await, store(&url).await);
    let (lock, long) = (lock(), Duration::from_secs(30));
    let (ea, eb) = (elector(&a, long), elector(&b, long));
    let stale = ea
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let take_over = || async {
        b.force_release(&lock, 1).await.unwrap();
        eb.try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("free after the forced release")
    };
    let (mut tx, successor) = if DB::NAME == "SQLite" {
        let successor = take_over().await;
        (a.fenced::<DB>(&stale).await.unwrap(), successor)
    } else {
        let tx = a.fenced::<DB>(&stale).await.unwrap();
        (tx, take_over().await)
    };
    assert!(successor.fence() > stale.fence());
    put::<DB>(&mut tx, lock.as_str(), 1).await.unwrap();
    let e = tx.commit().await.expect_err("the stale holder's commit");
    assert!(
        matches!(&e, FenceError::LeaseLost { lock: l, slot: 0, fence } if l == &lock && *fence == stale.fence()),
        "{e:?}"
    );
    assert!(e.is_stale() && e.to_string().contains("rolled back"), "{e}");
    assert_eq!(
        value(a.pool(), lock.as_str()).await,
        None,
        "nothing was kept"
    );

    let mut tx = b.fenced::<DB>(&successor).await.unwrap();
    put::<DB>(&mut tx, lock.as_str(), 2).await.unwrap();
    tx.commit().await.expect("the successor's commit lands");
    assert_eq!(value(a.pool(), lock.as_str()).await, Some(2));
    successor.release().await.unwrap();
    drop(stale);
}

/// A holder whose lease expires (no renewal) while its transaction is open keeps nothing: the
/// commit checks the expiry by the database clock. The test waits until the store itself
/// reports the lock free.
async fn an_expired_holder_keeps_nothing<DB: Database>(url: String)
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let store = store(&url).await;
    let lock = lock();
    let guard = elector(&store, Duration::from_millis(300))
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let mut tx = store.fenced::<DB>(&guard).await.unwrap();
    put::<DB>(&mut tx, lock.as_str(), 1).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !store.state(&lock, 1).await.unwrap().holders.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let e = tx
        .commit()
        .await
        .expect_err("expired by the database clock");
    assert!(matches!(e, FenceError::LeaseLost { .. }), "{e:?}");
    assert_eq!(value(store.pool(), lock.as_str()).await, None);
    drop(guard);
}
