//! A real 3-member etcd cluster on loopback, started by the test: the Raft leader killed under a
//! held lease, the holder's member cut off from the majority, every member restarted under a
//! running safety check, and all client endpoints but one down.
//!
//! The tests share nothing but a lock that runs them one at a time (each starts its own cluster:
//! three etcd processes are enough for two cores; see `harness::exclusive`). Bounds are generous: elections take up to a
//! second here (500 ms election timeout), etcd leases last whole seconds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;
#[path = "cluster/harness.rs"]
mod harness;

use std::sync::Arc;
use std::time::Duration;

use etcd_client::GetOptions;
use harness::Cluster;
use leasehold::{
    ElectionOptions, Elector, LeaseStore, RetryPolicy,
    store::{Extension, Release},
};
use leasehold_etcd::{EtcdOptions, EtcdStore};
use leasehold_testkit::proxy::FaultProxy;
use leasehold_testkit::safety::{self, SafetyConfig};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, timeout};

fn options(prefix: &str) -> EtcdOptions {
    EtcdOptions::default()
        .with_prefix(prefix)
        .with_request_timeout(Duration::from_millis(800))
        .with_connect_timeout(Duration::from_millis(500))
}

fn store(endpoints: &str, prefix: &str) -> Arc<dyn LeaseStore> {
    Arc::new(EtcdStore::connect_lazy(&format!("etcd://{endpoints}"), options(prefix)).unwrap())
}

fn elector(store: Arc<dyn LeaseStore>, node: &str, wait: Duration, lease: Duration) -> Elector {
    let options = ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .lease(lease)
        .auto_extend(true)
        .retry(
            RetryPolicy::new(Duration::from_millis(20), Duration::from_millis(100), 0.5).unwrap(),
        )
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

fn prefix() -> String {
    format!(
        "lhcluster-{}",
        &leasehold::store::Token::random().to_hex()[..8]
    )
}

/// Kill the Raft leader while a lease is held: the holder keeps its lease (renewing through the
/// surviving members) or reports it lost before a contender acquires; never two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_never_makes_two_holders() {
    let _one = harness::exclusive().await;
    let Some(mut cluster) = Cluster::start().await else {
        return;
    };
    let prefix = prefix();
    let lock = unique_name("leader-kill");
    let holder = elector(
        store(&cluster.endpoints(), &prefix),
        "holder",
        Duration::ZERO,
        Duration::from_secs(3),
    );
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("the holder is elected");

    let contender = elector(
        store(&cluster.endpoints(), &prefix),
        "contender",
        Duration::from_secs(20),
        Duration::from_secs(3),
    );
    let name = lock.clone();
    let contending = tokio::spawn(async move {
        let g = contender.try_acquire(&name).await;
        (Instant::now(), g)
    });

    sleep(Duration::from_millis(300)).await;
    let leader = cluster.leader(&[0, 1, 2]).await;
    cluster.kill(leader).await;
    let killed = Instant::now();

    // Watch the holder for 6 s (two lease lengths) while the cluster elects a new leader.
    let mut lost_at = None;
    while killed.elapsed() < Duration::from_secs(6) {
        if lost_at.is_none() && guard.is_lost() {
            lost_at = Some(Instant::now());
        }
        if contending.is_finished() {
            break;
        }
        sleep(Duration::from_millis(10)).await;
    }
    let fence = guard.fence();
    match lost_at {
        None => {
            assert!(
                !contending.is_finished(),
                "the contender acquired while the holder still held its lease"
            );
            println!("the holder kept its lease through the leader's death");
            assert_eq!(guard.release().await.unwrap(), Release::Released);
        }
        Some(lost) => println!(
            "the holder reported lost {:?} after the kill",
            lost - killed
        ),
    }
    let (acquired, successor) = timeout(Duration::from_secs(20), contending)
        .await
        .unwrap()
        .unwrap();
    let successor = successor
        .unwrap()
        .elected()
        .expect("the contender acquires once the holder is gone");
    if let Some(lost) = lost_at {
        assert!(
            lost <= acquired,
            "the contender acquired before the holder knew it had lost"
        );
    }
    assert!(
        successor.fence() > fence,
        "fences rise across the leader change"
    );
    successor.release().await.unwrap();
}

/// Cut the holder's member off from the majority: the holder (talking only to that member)
/// reports lost before the successor (talking to the majority) acquires; the successor's fence
/// is higher; once healed, the stale holder's extend and release are rejected and the successor
/// is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_from_the_majority_is_lost_before_its_successor_acquires() {
    let _one = harness::exclusive().await;
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let prefix = prefix();
    let lock = unique_name("partition");
    // The hardest case: the member cut off is the leader.
    let cut = cluster.leader(&[0, 1, 2]).await;
    let holder_store = store(&cluster.endpoint(cut), &prefix);
    let holder = elector(
        Arc::clone(&holder_store),
        "holder",
        Duration::ZERO,
        Duration::from_secs(2),
    );
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("the holder is elected");
    let stale = guard.lease();

    let successor_store = store(&cluster.endpoints_but(cut), &prefix);
    // The successor's lease outlasts the healing and the checks after it (seconds on a loaded
    // machine): its final release must find it held. Only the cut-off holder's lease is short.
    let successor = elector(
        Arc::clone(&successor_store),
        "successor",
        Duration::from_secs(20),
        Duration::from_secs(30),
    );
    let name = lock.clone();
    let contending = tokio::spawn(async move {
        let g = successor.try_acquire(&name).await;
        (Instant::now(), g)
    });
    sleep(Duration::from_millis(200)).await;
    assert!(
        !contending.is_finished(),
        "the successor must wait while the holder holds"
    );

    cluster.isolate(cut);
    let isolated = Instant::now();
    let reason = timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the holder notices");
    let lost = Instant::now();
    println!(
        "holder lost ({reason:?}) {:?} after the partition",
        lost - isolated
    );
    let (acquired, next) = timeout(Duration::from_secs(20), contending)
        .await
        .unwrap()
        .unwrap();
    let next = next
        .unwrap()
        .elected()
        .expect("the successor acquires through the majority");
    println!(
        "successor acquired {:?} after the partition",
        acquired - isolated
    );
    assert!(
        lost <= acquired,
        "the successor acquired before the cut-off holder knew it had lost"
    );
    assert!(
        next.fence() > stale.fence,
        "the successor's fence must be higher"
    );

    cluster.heal();
    cluster.wait_healthy(cut).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let extended = loop {
        match holder_store.extend(&stale, Duration::from_secs(10)).await {
            Ok(e) => break e,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "the healed member keeps failing: {e}"
                );
                sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(
        extended,
        Extension::NotHeld,
        "the stale holder's extend must be rejected"
    );
    assert_eq!(
        holder_store.release(&stale, Duration::ZERO).await.unwrap(),
        Release::NotHeld,
        "the stale holder's release must be rejected"
    );
    let state = successor_store.state(&lock, 1).await.unwrap();
    assert_eq!(
        state.holder().map(|h| (h.owner.as_str(), h.fence)),
        Some(("successor", next.fence()))
    );
    assert_eq!(next.release().await.unwrap(), Release::Released);
    drop(guard);
}

/// Restart every member one by one under a running 8-contender safety check: no violation, and
/// nothing leaked (no key left, every etcd lease gone) once it is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_every_member_under_load_is_safe_and_leaks_nothing() {
    let _one = harness::exclusive().await;
    let Some(mut cluster) = Cluster::start().await else {
        return;
    };
    let prefix = prefix();
    let endpoints = cluster.endpoints();
    let factory = common::factory_with(format!("etcd://{endpoints}"), options(&prefix));
    let config = SafetyConfig {
        contenders: 8,
        rounds: 60,
        lease: Duration::from_secs(2),
        max_action: Duration::from_millis(20),
        max_pause: Duration::from_millis(200),
        wait: Duration::from_secs(3),
        ..SafetyConfig::default()
    };
    let run = tokio::spawn(async move { safety::check(&factory, &config).await });
    for i in 0..harness::SIZE {
        sleep(Duration::from_millis(700)).await;
        cluster.restart(i).await;
        println!("member {i} restarted");
    }
    let report = timeout(Duration::from_secs(60), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    println!("{report}");
    report.assert_safe();
    assert!(report.runs > 0, "{report}");

    let mut client = cluster.client(&endpoints).await;
    let keys = client
        .get(
            format!("{prefix}/"),
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await
        .unwrap();
    assert_eq!(keys.count(), 0, "keys leaked: {report}");
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let leases = client.leases().await.unwrap().leases().len();
        if leases == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{leases} etcd leases outlived their TTL"
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// With the client endpoints of two members unreachable, the store keeps working through the
/// third: acquire, extend, state, release and an elected run all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_keeps_working_through_the_one_endpoint_left() {
    let _one = harness::exclusive().await;
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut proxies = Vec::new();
    for i in 0..harness::SIZE {
        let target = cluster.endpoint(i).parse().unwrap();
        proxies.push(FaultProxy::start(target).await.unwrap());
    }
    let endpoints = proxies
        .iter()
        .map(|p| p.addr().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let prefix = prefix();
    let store = store(&endpoints, &prefix);
    let lock = unique_name("one-endpoint");
    let req = leasehold::store::AcquireRequest::new(
        lock.clone(),
        1,
        "n",
        leasehold::store::Token::random(),
        Duration::from_secs(5),
    );
    let lease = store
        .try_acquire(&req)
        .await
        .unwrap()
        .elected()
        .expect("granted");

    proxies[0].cut().await;
    proxies[1].cut().await;
    let started = Instant::now();
    for _ in 0..5 {
        assert!(matches!(
            store.extend(&lease, Duration::from_secs(5)).await.unwrap(),
            Extension::Extended { .. }
        ));
        let state = store.state(&lock, 1).await.unwrap();
        assert_eq!(state.holder().map(|h| h.fence), Some(lease.fence));
    }
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let elected = elector(
        Arc::clone(&store),
        "n",
        Duration::ZERO,
        Duration::from_secs(2),
    )
    .run_if_leader(&lock, |ctx| async move { ctx.fence() })
    .await
    .unwrap();
    assert!(elected.is_some_and(|f| f > lease.fence));
    println!(
        "12 operations through one endpoint in {:?}",
        started.elapsed()
    );
    assert!(proxies[2].accepted() > 0);
}
