//! SQLite with several writers on one file: a forced release (read the holders, then free them,
//! in one transaction) must wait for another connection's write like every other operation,
//! not fail with "database is locked" when that write lands between its read and its write.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::AcquireRequest;
use leasehold::{LeaseStore, LockName, store::Token};
use leasehold_sql::SqlStore;

const ROUNDS: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_releases_wait_for_concurrent_writers() {
    let url = common::sqlite_url("writers");
    let (a, b) = (
        Arc::new(SqlStore::connect(&url).await.unwrap()),
        Arc::new(SqlStore::connect(&url).await.unwrap()),
    );
    let busy = LockName::new("busy").unwrap();
    let broken = LockName::new("broken").unwrap();
    // One connection acquires and releases a lock as fast as it can...
    let writer = tokio::spawn(async move {
        for _ in 0..ROUNDS {
            let req = AcquireRequest::new(
                busy.clone(),
                1,
                "w",
                Token::random(),
                Duration::from_secs(30),
            );
            if let Some(lease) = a.try_acquire(&req).await.unwrap().elected() {
                a.release(&lease, Duration::ZERO).await.unwrap();
            }
        }
    });
    // ...while another takes a lease and force-releases it, round after round.
    for round in 0..ROUNDS {
        let req = AcquireRequest::new(
            broken.clone(),
            1,
            "f",
            Token::random(),
            Duration::from_secs(30),
        );
        let lease = b
            .try_acquire(&req)
            .await
            .unwrap()
            .elected()
            .expect("free after the last round");
        let freed = b
            .force_release(&broken, 1)
            .await
            .unwrap_or_else(|e| panic!("round {round}: forced release failed: {e}"));
        assert_eq!(
            freed.iter().map(|h| h.fence).collect::<Vec<_>>(),
            [lease.fence]
        );
    }
    writer.await.unwrap();
}
