//! Network faults between a holder and Redis, through the testkit's TCP fault proxy, and a Redis
//! server restarted under a running client.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::StoreResult;
use leasehold::{ElectionOptions, Elector, LeaseStore, LostReason, RetryPolicy, store::Release};
use leasehold_redis::{RedisOptions, RedisStore};
use leasehold_testkit::proxy::FaultProxy;
use leasehold_testkit::safety::FencedResource;
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, timeout};

async fn server_time(store: &RedisStore) -> SystemTime {
    let mut conn = store.connection().await.unwrap();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros)
}

async fn script_exists(store: &RedisStore, sha: &str) -> bool {
    let mut conn = store.connection().await.unwrap();
    let exists: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(sha)
        .query_async(&mut conn)
        .await
        .unwrap();
    exists == [true]
}

fn elector(store: Arc<dyn LeaseStore>, node: &str, wait: Duration, lease: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .lease(lease)
        .auto_extend(true)
        .retry(RetryPolicy::new(Duration::from_millis(10), Duration::from_millis(50), 0.5).unwrap())
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

/// Retries `op` until it succeeds or `within` passes.
async fn eventually<T, F, Fut>(within: Duration, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "still failing after {within:?}: {e}"
                );
                sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The scenario of the issue: the holder's connection is blackholed. It reports `Lost` before
/// the server-side expiry; a successor on a direct connection acquires after that expiry with a
/// higher fence; the fenced resource rejects the stale holder; once the network heals, the stale
/// holder's release is rejected and the successor's lease is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackholed_holder_is_lost_before_expiry_and_cannot_harm_its_successor() {
    const LEASE: Duration = Duration::from_millis(1500);
    let Some(url) = common::url() else { return };
    let proxy = FaultProxy::start(common::target(&url).await).await.unwrap();
    let options = common::options();
    let holder_store = Arc::new(
        RedisStore::connect_lazy(
            &common::via(&url, proxy.addr()),
            options
                .clone()
                .with_response_timeout(Duration::from_millis(200)),
        )
        .unwrap(),
    );
    let direct = Arc::new(RedisStore::connect_lazy(&url, options).unwrap());
    let lock = unique_name("blackhole");
    let ledger = FencedResource::new("ledger");

    let holder = elector(holder_store.clone(), "holder", Duration::ZERO, LEASE);
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("a free lock");
    ledger.write(guard.fence(), "holder").unwrap();
    sleep(LEASE / 2).await; // at least one renewal through the proxy
    assert!(!guard.is_lost());

    proxy.blackhole();
    let reason = timeout(LEASE * 2, guard.lost())
        .await
        .expect("a blackholed holder must report Lost");
    assert_eq!(reason, LostReason::DeadlinePassed);
    assert!(
        proxy.dropped_bytes() > 0,
        "renewals went into the blackhole"
    );

    // At the moment the holder gave up, the server still held its lease.
    let now = server_time(&direct).await;
    let state = direct.state(&guard.lease().lock, 1).await.unwrap();
    let row = state
        .holder()
        .expect("the server must still hold the lease when the holder reports Lost");
    assert_eq!(row.fence, guard.fence());
    let early = row.expires_at.duration_since(now).unwrap_or_default();
    assert!(
        early >= Duration::from_millis(50),
        "Lost must come before the server-side expiry ({early:?} before it)"
    );
    println!("holder reported Lost {early:?} before the server-side expiry");

    // A successor on a direct connection gets the lock once the server lets the lease expire.
    let successor = elector(
        direct.clone(),
        "successor",
        LEASE * 3,
        Duration::from_secs(30),
    );
    let next = successor
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("the successor acquires after expiry");
    assert!(
        next.fence() > guard.fence(),
        "the successor's fence is higher"
    );
    assert!(
        next.lease().acquired_at >= row.expires_at,
        "granted only after the old lease expired: {:?} < {:?}",
        next.lease().acquired_at,
        row.expires_at
    );
    ledger.write(next.fence(), "successor").unwrap();
    assert!(
        ledger.write(guard.fence(), "holder").is_err(),
        "the resource rejects the stale holder's fence"
    );

    // The network heals; the stale holder's client reconnects, and its release is rejected.
    proxy.heal().await;
    eventually(Duration::from_secs(10), || holder_store.ping()).await;
    assert_eq!(guard.release().await.unwrap(), Release::NotHeld);
    let state = direct.state(&next.lease().lock, 1).await.unwrap();
    let row = state.holder().expect("the successor still holds the lock");
    assert_eq!(
        (row.owner.as_str(), row.fence),
        ("successor", next.fence()),
        "the stale release must leave the successor's lease intact"
    );
    assert_eq!(next.release().await.unwrap(), Release::Released);
}

/// A cut connection (refused, closed) fails fast with transient errors, and the same store works
/// again once the network is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connection_fails_fast_and_transiently_then_recovers() {
    let Some(url) = common::url() else { return };
    let proxy = FaultProxy::start(common::target(&url).await).await.unwrap();
    let store =
        RedisStore::connect_lazy(&common::via(&url, proxy.addr()), common::options()).unwrap();
    let lock = unique_name("cut");
    store.ping().await.unwrap();

    proxy.cut().await;
    let started = Instant::now();
    let err = store
        .state(&lock, 1)
        .await
        .expect_err("no server behind the proxy");
    assert!(
        err.is_transient(),
        "a refused connection is transient: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "fails fast: {:?}",
        started.elapsed()
    );
    println!("cut: failed in {:?} with: {err}", started.elapsed());

    proxy.heal().await;
    let state = eventually(Duration::from_secs(10), || store.state(&lock, 1)).await;
    assert!(state.is_free());
}

/// Replies slower than the response timeout fail transiently (the store never hangs), and the
/// store carries on once replies come in time again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_replies_time_out_transiently_and_the_store_recovers() {
    let Some(url) = common::url() else { return };
    let proxy = FaultProxy::start(common::target(&url).await).await.unwrap();
    let store = RedisStore::connect_lazy(
        &common::via(&url, proxy.addr()),
        common::options().with_response_timeout(Duration::from_millis(200)),
    )
    .unwrap();
    let lock = unique_name("slow");
    store.ping().await.unwrap();

    proxy.delay(Duration::from_millis(300));
    let started = Instant::now();
    let err = store
        .state(&lock, 1)
        .await
        .expect_err("a 600 ms round trip");
    assert!(err.is_transient(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    proxy.delay(Duration::from_millis(20));
    let state = eventually(Duration::from_secs(10), || store.state(&lock, 1)).await;
    assert!(state.is_free());
    let started = Instant::now();
    store.ping().await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "the proxy delays both ways"
    );
    proxy.heal().await;
    store.ping().await.unwrap();
}

/// A Redis server killed and started again (in memory, so every key and script is gone) is
/// survived by the same store instances: commands fail transiently while it is down, then work
/// again; fences keep rising although the counters were lost (they are seeded from the server
/// clock); scripts are reloaded after NOSCRIPT; release notifications resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_server_is_survived_without_restarting_the_client() {
    let Some(mut server) = common::RedisServer::start().await else {
        return;
    };
    let options = RedisOptions::default()
        .with_response_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_millis(500));
    let store = Arc::new(RedisStore::connect_lazy(&server.url(), options.clone()).unwrap());
    let other = Arc::new(RedisStore::connect_lazy(&server.url(), options).unwrap());
    let lock = unique_name("restart");
    let a = elector(store.clone(), "a", Duration::ZERO, Duration::from_secs(10));
    let before = a
        .run_if_leader(&lock, |ctx| async move { ctx.fence() })
        .await
        .unwrap()
        .expect("free");
    // Start the other store's subscriber before the restart.
    assert!(handoff_is_notified(&a, &other, "warm-up").await);

    server.kill().await;
    let err = store.state(&lock, 1).await.expect_err("server down");
    assert!(
        err.is_transient(),
        "a stopped server is a transient failure: {err}"
    );

    server.restart().await;
    eventually(Duration::from_secs(10), || store.ping()).await;
    let acquire_sha = store.scripts().acquire().get_hash().to_owned();
    assert!(
        !script_exists(&store, &acquire_sha).await,
        "an in-memory restart forgets the scripts"
    );
    let after = eventually(Duration::from_secs(10), || async {
        a.run_if_leader(&lock, |ctx| async move { ctx.fence() })
            .await
            .map_err(|e| leasehold::store::StoreError::transient(e.to_string()))
            .and_then(|r| r.ok_or_else(|| leasehold::store::StoreError::transient("busy")))
    })
    .await;
    assert!(
        after > before,
        "fences keep rising across an in-memory restart: {after} after {before}"
    );
    assert!(
        script_exists(&store, &acquire_sha).await,
        "EVALSHA fell back to loading the script on NOSCRIPT"
    );

    // Release notifications resume once the subscriber has reconnected.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut attempt = 0;
    while !handoff_is_notified(&a, &other, &format!("after-restart-{attempt}")).await {
        attempt += 1;
        assert!(
            Instant::now() < deadline,
            "release notifications did not resume after the restart"
        );
    }
}

/// Holds a fresh lock through `holder`, lets a waiter on `waiter_store` (polling only every 2 s)
/// wait for it, releases, and reports whether the waiter took over within 200 ms — which only a
/// release notification can explain.
async fn handoff_is_notified(holder: &Elector, waiter_store: &Arc<RedisStore>, tag: &str) -> bool {
    let lock = unique_name(tag);
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    let waiter_options = ElectionOptions::builder()
        .node_id("waiter")
        .wait(Duration::from_secs(3))
        .lease(Duration::from_secs(10))
        .retry(RetryPolicy::new(Duration::from_secs(2), Duration::from_secs(2), 0.0).unwrap())
        .build()
        .unwrap();
    let waiter = Elector::with_options(waiter_store.clone(), waiter_options);
    let name = lock.clone();
    let waiting = tokio::spawn(async move {
        let guard = waiter.try_acquire(&name).await;
        (Instant::now(), guard)
    });
    sleep(Duration::from_millis(100)).await; // the waiter has tried once and is waiting
    let released_at = Instant::now();
    assert_eq!(guard.release().await.unwrap(), Release::Released);
    let (acquired_at, taken) = waiting.await.unwrap();
    let taken = taken
        .unwrap()
        .elected()
        .expect("the waiter gets the lock within its wait");
    let handoff = acquired_at - released_at;
    taken.release().await.unwrap();
    println!("{tag}: hand-off in {handoff:?}");
    handoff < Duration::from_millis(200)
}

/// The library's `wait` covers a store that is briefly unreachable (issue 33, item 9): a lazily
/// connected store whose server refuses connections at first is tried again within the wait, and
/// the lock is acquired once the server is back; with no wait the first failure is the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_covers_a_store_that_is_briefly_unreachable() {
    let Some(url) = common::url() else { return };
    let proxy = FaultProxy::start(common::target(&url).await).await.unwrap();
    proxy.cut().await;
    let store: Arc<dyn LeaseStore> = Arc::new(
        RedisStore::connect_lazy(&common::via(&url, proxy.addr()), common::options()).unwrap(),
    );
    let lock = unique_name("unreachable-wait");

    let impatient = elector(
        Arc::clone(&store),
        "impatient",
        Duration::ZERO,
        Duration::from_secs(3),
    );
    let err = impatient.try_acquire(&lock).await.unwrap_err();
    assert!(
        err.as_store().is_some_and(|e| e.is_transient()),
        "unreachable is transient: {err}"
    );

    let patient = elector(
        store,
        "patient",
        Duration::from_secs(20),
        Duration::from_secs(3),
    );
    let started = Instant::now();
    let heal = async {
        sleep(Duration::from_millis(800)).await;
        proxy.heal().await;
    };
    let (acquired, ()) = tokio::join!(patient.try_acquire(&lock), heal);
    let guard = acquired
        .unwrap()
        .elected()
        .expect("acquired once the store was reachable again");
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "acquired before the server was reachable: {:?}",
        started.elapsed()
    );
    assert_eq!(guard.release().await.unwrap(), Release::Released);
}
