//! SQLite's release feed: a release through one store (another process, or another store on the
//! same file) wakes the waiters of every other store on that file within milliseconds, through
//! `PRAGMA data_version`, instead of at their next back-off poll.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::{AcquireRequest, SignalReach};
use leasehold::{ElectionOptions, Elector, LeaseStore, LockName, RetryPolicy, store::Token};
use leasehold_sql::SqlStore;
use tokio::time::{Instant, sleep, timeout};

/// A fresh SQLite file (this test builds with the `sqlite` driver alone, without `common`).
fn sqlite_url(tag: &str) -> String {
    let dir = std::env::temp_dir().join("leasehold-sql-tests");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!(
        "{tag}-{}-{}.db",
        std::process::id(),
        Token::random().to_hex()
    ));
    format!("sqlite://{}", file.display())
}

fn request(lock: &LockName, owner: &str) -> AcquireRequest {
    AcquireRequest::new(
        lock.clone(),
        1,
        owner,
        Token::random(),
        Duration::from_secs(30),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_through_another_store_wakes_this_stores_waiters() {
    let url = sqlite_url("feed");
    let (a, b) = (
        SqlStore::connect(&url).await.unwrap(),
        SqlStore::connect(&url).await.unwrap(),
    );
    let lock = LockName::new("fed").unwrap();
    let lease = a.try_acquire(&request(&lock, "a")).await.unwrap();
    let lease = lease.elected().expect("a free lock");

    let mut signal = b
        .release_signal(&lock)
        .expect("SQLite has a release signal");
    assert_eq!(signal.reach(), SignalReach::EveryClient);
    // The feed's first reading wakes waiters once (a release may have come before it started).
    timeout(Duration::from_secs(5), signal.released())
        .await
        .expect("the feed's first reading");
    // Nothing is committed meanwhile: no wake-up.
    assert!(
        timeout(Duration::from_millis(300), signal.released())
            .await
            .is_err(),
        "woken without a commit"
    );
    let released = Instant::now();
    a.release(&lease, Duration::ZERO).await.unwrap();
    timeout(Duration::from_secs(5), signal.released())
        .await
        .expect("the release through store a woke store b's waiter");
    let took = released.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// An elector whose pauses are far too long to matter still takes the lock within
/// milliseconds of another store's release: the feed woke it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_elector_takes_over_at_another_stores_release() {
    let url = sqlite_url("feed-elector");
    let holder = Elector::new(Arc::new(SqlStore::connect(&url).await.unwrap()));
    let never_polls =
        RetryPolicy::new(Duration::from_secs(20), Duration::from_secs(20), 0.0).unwrap();
    let waiter = Elector::with_options(
        Arc::new(SqlStore::connect(&url).await.unwrap()),
        ElectionOptions::builder()
            .wait(Duration::from_secs(15))
            .retry(never_polls)
            .build()
            .unwrap(),
    );
    let guard = holder
        .try_acquire("handed")
        .await
        .unwrap()
        .elected()
        .expect("free");
    let waiting = tokio::spawn(async move {
        let got = waiter.try_acquire("handed").await;
        (Instant::now(), got)
    });
    sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    guard.release().await.unwrap();
    let (at, got) = waiting.await.unwrap();
    assert!(got.unwrap().is_elected(), "the waiter gave up");
    let took = at - released;
    assert!(took < Duration::from_secs(2), "hand-off took {took:?}");
}

/// An in-memory database has no other clients: its signal reports this store's releases, and
/// waiters keep polling (with the polling default).
#[tokio::test]
async fn an_in_memory_database_signals_its_own_releases_only() {
    let store = SqlStore::connect("sqlite::memory:").await.unwrap();
    let lock = LockName::new("mem").unwrap();
    let signal = store.release_signal(&lock).unwrap();
    assert_eq!(signal.reach(), SignalReach::ThisClient);
}

/// An in-memory database is this process's alone (the CLI refuses it for `run`); a file is not.
#[tokio::test]
async fn an_in_memory_database_is_process_local_and_a_file_is_not() {
    for url in ["sqlite::memory:", "sqlite:file:x?mode=memory&cache=shared"] {
        let store = SqlStore::connect(url).await.unwrap();
        assert!(store.is_process_local(), "{url}");
    }
    let file = sqlite_url("process-local");
    let store = SqlStore::connect(&file).await.unwrap();
    assert!(!store.is_process_local(), "{file}");
}
