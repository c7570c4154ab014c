//! Basic round trips on each dialect, before the full conformance suite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, LeaseStore, LockName,
    store::{Extension, Release},
};
use leasehold_sql::SqlStore;

async fn round_trip(url: &str) {
    let store = Arc::new(
        SqlStore::connect_with(url, common::options())
            .await
            .expect("connect"),
    );
    let lock = format!("smoke-{}", leasehold::store::Token::random().to_hex());
    let opts = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    let e = Elector::with_options(store.clone(), opts);
    let g = e
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    assert!(
        e.try_acquire(&lock).await.unwrap().elected().is_none(),
        "held"
    );
    let s = e.state(&lock).await.unwrap();
    assert_eq!(s.holder().map(|h| h.fence), Some(g.fence()));
    assert!(matches!(
        g.extend(Duration::from_secs(10)).await.unwrap(),
        Extension::Extended { .. }
    ));
    let f1 = g.fence();
    assert_eq!(g.release().await.unwrap(), Release::Released);
    assert!(e.state(&lock).await.unwrap().is_free());
    let f2 = e
        .run_if_leader(&lock, |ctx| async move { ctx.fence() })
        .await
        .unwrap()
        .unwrap();
    assert!(f2 > f1, "{f2} > {f1}");
    // Group slots.
    let name = LockName::new(format!("{lock}-g")).unwrap();
    let req =
        |t| leasehold::store::AcquireRequest::new(name.clone(), 2, "n", t, Duration::from_secs(5));
    let t1 = leasehold::store::Token::random();
    let a = store
        .try_acquire(&req(t1))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let again = store
        .try_acquire(&req(t1))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_eq!(again.slot, a.slot, "same token re-acquires its own slot");
    let b = store
        .try_acquire(&req(leasehold::store::Token::random()))
        .await
        .unwrap()
        .elected()
        .unwrap();
    assert_ne!(a.slot, b.slot);
    assert!(
        store
            .try_acquire(&req(leasehold::store::Token::random()))
            .await
            .unwrap()
            .elected()
            .is_none()
    );
    assert_eq!(store.state(&name, 2).await.unwrap().active(), 2);
    assert_eq!(
        store.release(&b, Duration::from_millis(500)).await.unwrap(),
        Release::Released
    );
    assert_eq!(store.force_release(&name, 2).await.unwrap().len(), 2);
    assert_eq!(
        store.release(&a, Duration::ZERO).await.unwrap(),
        Release::NotHeld
    );
}

#[tokio::test]
async fn sqlite_round_trip() {
    round_trip(&common::sqlite_url("smoke")).await;
}

#[tokio::test]
async fn postgres_round_trip() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        round_trip(&url).await;
    }
}

#[tokio::test]
async fn mysql_round_trip() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        round_trip(&url).await;
    }
}

/// A waiter on another store instance (its own pool and LISTEN connection) takes over within
/// moments of a release, although its polling interval is 10 s.
#[tokio::test]
async fn postgres_release_wakes_a_waiter_on_another_client() {
    let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    let lock = format!("notify-{}", leasehold::store::Token::random().to_hex());
    let slow =
        leasehold::RetryPolicy::new(Duration::from_secs(10), Duration::from_secs(10), 0.0).unwrap();
    let holder_store = Arc::new(
        SqlStore::connect_with(&url, common::options())
            .await
            .unwrap(),
    );
    let waiter_store = Arc::new(
        SqlStore::connect_with(&url, common::options())
            .await
            .unwrap(),
    );
    let holder = Elector::with_options(
        holder_store,
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
    let g = holder.try_acquire(&lock).await.unwrap().elected().unwrap();
    let l = lock.clone();
    let task =
        tokio::spawn(async move { waiter.try_acquire(&l).await.map(|g| g.map(|g| g.fence())) });
    // Let the waiter fail its first attempt and start listening.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = std::time::Instant::now();
    g.release().await.unwrap();
    let fence = task.await.unwrap().unwrap();
    assert!(fence.is_elected());
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "woken by NOTIFY, not by the 10 s poll: {:?}",
        released.elapsed()
    );
}
