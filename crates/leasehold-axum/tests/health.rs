//! `LeaderHealth` with client-go's semantics, on paused tokio time and the memory store behind
//! the testkit's fault wrapper: healthy as a follower and while renewing, unhealthy once a
//! leader has gone the lease plus the tolerance without renewing, healthy again after release.
//! The route is called in-process (no sockets: paused time).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use leasehold::{ElectionOptions, ElectionOptionsBuilder, Elector, LeaseStore, MemoryStore};
use leasehold_axum::{Error, LeaderHealth};
use leasehold_testkit::fault::{Fault, FaultyStore, Op};
use leasehold_testkit::unique_name;
use tokio::time::sleep;
use tower::ServiceExt;

const LEASE: Duration = Duration::from_secs(3);

fn options(node: &str) -> ElectionOptionsBuilder {
    ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .lease(LEASE)
        .auto_extend(true)
}

fn elector(store: Arc<dyn LeaseStore>, node: &str) -> Elector {
    Elector::with_options(store, options(node).build().unwrap())
}

/// `GET /healthz` on the health router: (status, body).
async fn probe(health: &LeaderHealth) -> (StatusCode, String) {
    let router: axum::Router = health.clone().router().unwrap();
    let res = router
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(res.headers()[header::CACHE_CONTROL], "no-store");
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_follower_and_a_renewing_leader_are_healthy() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let (leader, follower) = (elector(store.clone(), "a"), elector(store, "b"));
    let lock = unique_name("healthy");
    let guard = leader
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    assert!(
        follower
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .is_none()
    );
    let (of_leader, of_follower) = (LeaderHealth::new(&leader), LeaderHealth::new(&follower));
    for _ in 0..6 {
        sleep(Duration::from_secs(10)).await; // far past lease + tolerance, renewed all along
        assert_eq!(probe(&of_leader).await, (StatusCode::OK, "ok\n".to_owned()));
        assert_eq!(probe(&of_follower).await.0, StatusCode::OK);
    }
    assert_eq!(leader.held_leases().len(), 1);
    guard.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_short_outage_that_renewals_ride_out_stays_healthy() {
    let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
    let e = elector(store, "a");
    let health = LeaderHealth::new(&e).tolerance(Duration::ZERO);
    let guard = e
        .try_acquire(unique_name("outage"))
        .await
        .unwrap()
        .elected()
        .expect("free lock");
    faults.fail(Op::Extend, Fault::transient().times(4));
    for _ in 0..8 {
        sleep(Duration::from_millis(500)).await;
        assert_eq!(probe(&health).await.0, StatusCode::OK);
    }
    assert!(!guard.is_lost(), "the outage was ridden out");
    assert_eq!(faults.injected(Op::Extend), 4);
    guard.release().await.unwrap();
}

/// An action that ignores the lost signal keeps its guard after renewals stopped: the node still
/// acts as leader without a lease. It turns unhealthy once the lease plus the tolerance have
/// passed since the last renewal, and healthy again once the action ends and releases.
#[tokio::test(start_paused = true)]
async fn a_leader_holding_on_without_renewals_is_unhealthy_until_it_releases() {
    let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
    // The action keeps running after the loss (what the default would stop).
    let e = Elector::with_options(store, options("a").cancel_on_lost(false).build().unwrap());
    let (default, short) = (
        LeaderHealth::new(&e),
        LeaderHealth::new(&e).tolerance(Duration::from_secs(5)),
    );
    let lock = unique_name("stuck");
    let name = lock.clone();
    let runner = e.clone();
    let action = tokio::spawn(async move {
        runner
            .run_if_leader(&name, |_ctx| sleep(Duration::from_secs(60)))
            .await
    });
    sleep(Duration::from_millis(100)).await;
    assert_eq!(e.held_leases().len(), 1, "the action holds the lease");
    // Renewed at 1 s; from then on every renewal fails. Lost at 3.7 s (the local deadline).
    sleep(Duration::from_millis(1400)).await;
    faults.fail(Op::Extend, Fault::transient());
    sleep(Duration::from_secs(3)).await; // 4.5 s
    assert!(e.held_leases()[0].lost.is_some(), "lost, but still held");
    assert_eq!(
        probe(&default).await.0,
        StatusCode::OK,
        "within lease + 20 s"
    );
    // 1 s + 3 s + 5 s: unhealthy with the 5 s tolerance just after 9 s.
    sleep(Duration::from_millis(4400)).await; // 8.9 s
    assert_eq!(probe(&short).await.0, StatusCode::OK);
    sleep(Duration::from_millis(200)).await; // 9.1 s
    let (status, body) = probe(&short).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body.contains(lock.as_str()) && body.contains("has not renewed"),
        "{body}"
    );
    let why = short.check().unwrap_err();
    assert_eq!((why.lock.as_str(), why.fence), (lock.as_str(), 1));
    assert_eq!(why.allowed, LEASE + Duration::from_secs(5));
    // 1 s + 3 s + 20 s: unhealthy with the default tolerance just after 24 s.
    sleep(Duration::from_millis(14_800)).await; // 23.9 s
    assert_eq!(probe(&default).await.0, StatusCode::OK);
    sleep(Duration::from_millis(200)).await; // 24.1 s
    assert_eq!(probe(&default).await.0, StatusCode::SERVICE_UNAVAILABLE);
    // The action ends at 60 s and its lease is released: healthy again.
    assert!(action.await.unwrap().unwrap().is_some());
    assert!(e.held_leases().is_empty());
    assert_eq!(probe(&default).await.0, StatusCode::OK);
    assert_eq!(probe(&short).await.0, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_campaign_that_lost_its_lease_releases_it_and_stays_healthy() {
    let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
    let e = elector(store, "a");
    let health = LeaderHealth::new(&e).tolerance(Duration::ZERO);
    let stop = leasehold::CancellationToken::new();
    let leader = leasehold_axum::LeaderOnly::builder(&e, unique_name("campaign").as_str())
        .start(stop.clone())
        .unwrap();
    while !leader.is_leader() {
        sleep(Duration::from_millis(10)).await;
    }
    faults.fail(Op::Extend, Fault::transient());
    faults.fail(Op::TryAcquire, Fault::transient());
    for _ in 0..20 {
        sleep(Duration::from_secs(1)).await;
        assert_eq!(probe(&health).await.0, StatusCode::OK);
    }
    assert!(!leader.is_leader(), "the term ended with the lease");
    faults.heal_all();
    while !leader.is_leader() {
        sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        e.held_leases().len(),
        1,
        "leads again after the store recovered"
    );
    assert_eq!(probe(&health).await.0, StatusCode::OK);
    stop.cancel();
    leader.stopped().await;
}

#[test]
fn a_path_without_a_leading_slash_is_refused() {
    let e = Elector::new(Arc::new(MemoryStore::new()));
    let refused = LeaderHealth::new(&e).path("healthz").router::<()>();
    assert!(matches!(refused, Err(Error::InvalidPath(p)) if p == "healthz"));
}
