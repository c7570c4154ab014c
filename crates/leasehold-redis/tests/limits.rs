//! Slot counts on Redis: the scripts' work follows the live holders, not the slot count, so a
//! `state` with the largest allowed count is fast and never blocks other clients.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use leasehold::store::AcquireRequest;
use leasehold::{LeaseStore, limits::MAX_SLOTS, store::Token};
use leasehold_redis::{RedisStore, ScriptKind};
use leasehold_testkit::unique_name;
use tokio::time::Instant;

fn request(lock: &leasehold::LockName, slots: u32) -> AcquireRequest {
    AcquireRequest::new(
        lock.clone(),
        slots,
        "limits",
        Token::random(),
        Duration::from_secs(30),
    )
}

/// The state and forced-release scripts read the lock's hash once: even asked for `u32::MAX`
/// slots directly (past the store's own check), they answer at once. The scripts before this
/// change looped over every slot on the server: 2.7 ms of server time at 1024 slots, 53 ms at
/// 16384, and hours at `u32::MAX`, during which Redis answered BUSY to every client.
#[tokio::test]
async fn the_scripts_work_is_independent_of_the_slot_count() {
    let Some(url) = common::url() else { return };
    let store = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("limits-scan");
    for _ in 0..3 {
        store
            .try_acquire(&request(&lock, MAX_SLOTS))
            .await
            .unwrap()
            .elected()
            .expect("a free group grants");
    }
    let mut conn = store.connection().await.unwrap();
    let state = redis::Script::new(&store.scripts().source(ScriptKind::State));
    let started = Instant::now();
    let rows: Vec<(u32, String, u64, u64, u64)> = state
        .key(store.key(&lock))
        .arg(u32::MAX)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        [0, 1, 2],
        "the live holders, by slot"
    );
    assert!(
        took < Duration::from_secs(2),
        "a state script asked for u32::MAX slots must not scan them: took {took:?}"
    );

    // The acquire script too: a group of u32::MAX slots finds the lowest free slot past the
    // three live ones without visiting the rest.
    let acquire = redis::Script::new(&store.scripts().source(ScriptKind::Acquire));
    let started = Instant::now();
    // Reply: {slot, fence, acquired, expires, '', 0, 0, 0}; no period claimed (empty period
    // arguments).
    type Reply = (i64, u64, u64, u64, String, i64, i64, i64);
    let granted: Option<Reply> = acquire
        .key(store.key(&lock))
        .arg(Token::random().to_hex())
        .arg("limits")
        .arg(30_000)
        .arg(u32::MAX)
        .arg(60_000)
        .arg("")
        .arg("")
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(granted.map(|g| g.0), Some(3), "the lowest free slot");
    assert!(started.elapsed() < Duration::from_secs(2));

    let freed = store.force_release(&lock, MAX_SLOTS).await.unwrap();
    assert_eq!(freed.len(), 4, "{freed:?}");
}

/// `state` with [`MAX_SLOTS`] on a held lock, called over and over, stays fast and leaves the
/// server answering other clients promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_with_the_most_slots_is_fast_and_blocks_no_one() {
    let Some(url) = common::url() else { return };
    let store = Arc::new(RedisStore::connect_lazy(&url, common::options()).unwrap());
    let other = RedisStore::connect_lazy(&url, common::options()).unwrap();
    let lock = unique_name("limits-state");
    let lease = store
        .try_acquire(&request(&lock, MAX_SLOTS))
        .await
        .unwrap()
        .elected()
        .expect("a free group grants");

    let calls = 200;
    let reader = {
        let store = Arc::clone(&store);
        let lock = lock.clone();
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            for _ in 0..calls {
                let started = Instant::now();
                let state = store.state(&lock, MAX_SLOTS).await.unwrap();
                slowest = slowest.max(started.elapsed());
                assert_eq!(state.active(), 1, "{state:?}");
            }
            slowest
        })
    };
    let mut slowest_ping = Duration::ZERO;
    while !reader.is_finished() {
        let started = Instant::now();
        other.ping().await.unwrap();
        slowest_ping = slowest_ping.max(started.elapsed());
    }
    let slowest_state = reader.await.unwrap();
    println!("slowest state: {slowest_state:?}, slowest ping meanwhile: {slowest_ping:?}");
    assert!(
        slowest_state < Duration::from_secs(1),
        "state with MAX_SLOTS took {slowest_state:?}"
    );
    assert!(
        slowest_ping < Duration::from_secs(1),
        "another client waited {slowest_ping:?} for PING"
    );
    store
        .release(&lease, Duration::ZERO)
        .await
        .expect("release");
}
