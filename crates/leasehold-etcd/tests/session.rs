//! Sessions on a real etcd: the keys of one store's leases of one TTL share one etcd lease, so
//! renewing any number of them costs a keep-alive and one read; a forced release takes one lease
//! of a live session; a lease that ran out does not keep its key alive with the session; a lost
//! session loses every lease on it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, SystemTime};

use leasehold::store::{AcquireRequest, Extension, Token};
use leasehold::{Lease, LeaseStore, LockName};
use leasehold_etcd::EtcdStore;
use leasehold_testkit::unique_name;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, sleep};

fn store(endpoints: &str) -> EtcdStore {
    EtcdStore::connect_lazy(&common::url(endpoints), common::options()).unwrap()
}

/// Two stores (two nodes: their own connections and sessions) on one key prefix.
fn two_stores(endpoints: &str) -> (EtcdStore, EtcdStore) {
    let options = common::options();
    let open = || EtcdStore::connect_lazy(&common::url(endpoints), options.clone()).unwrap();
    (open(), open())
}

async fn grant(store: &EtcdStore, lock: &LockName, ttl: Duration) -> Lease {
    let req = AcquireRequest::new(lock.clone(), 1, "n", Token::random(), ttl);
    store
        .try_acquire(&req)
        .await
        .unwrap()
        .elected()
        .expect("granted")
}

/// The etcd lease a slot key is attached to.
async fn etcd_lease_of(store: &EtcdStore, lease: &Lease) -> Option<i64> {
    let mut client = store.client().await.unwrap();
    let got = client
        .get(store.key(&lease.lock, lease.slot), None)
        .await
        .unwrap();
    got.kvs().first().map(|kv| kv.lease())
}

/// etcd's own count of the gRPC messages it received (`/metrics`, summed over methods).
async fn messages_received(endpoint: &str) -> f64 {
    let mut conn = tokio::net::TcpStream::connect(endpoint).await.unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: etcd\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).await.unwrap();
    let sum: f64 = text
        .lines()
        .filter(|l| l.starts_with("grpc_server_msg_received_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(sum > 0.0, "etcd's /metrics must count received messages");
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_of_one_ttl_share_one_etcd_lease() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let ttl = Duration::from_secs(5);
    let mut shared = Vec::new();
    for _ in 0..3 {
        let lease = grant(&store, &unique_name("share"), ttl).await;
        shared.push(etcd_lease_of(&store, &lease).await.expect("a key"));
        store.release(&lease, Duration::ZERO).await.unwrap();
    }
    let other = grant(&store, &unique_name("share-other"), Duration::from_secs(9)).await;
    let other_id = etcd_lease_of(&store, &other).await.expect("a key");
    assert!(
        shared.iter().all(|id| *id == shared[0] && *id != 0),
        "one TTL, one session: {shared:?}"
    );
    assert_ne!(other_id, shared[0], "another TTL has a session of its own");
    store.release(&other, Duration::ZERO).await.unwrap();
}

/// 2,000 leases of one store renewed together: every one extended, for a handful of etcd
/// messages (a keep-alive and a read of the session's keys), counted by etcd itself. Renewed
/// one by one they cost at least 2 messages each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewing_many_leases_costs_a_handful_of_messages() {
    const N: usize = 2_000;
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let endpoint = endpoints.split(',').next().unwrap().to_owned();
    let store = store(&endpoints);
    let ttl = Duration::from_secs(20);
    let prefix = unique_name("many");
    let mut leases = Vec::with_capacity(N);
    for chunk in 0..N / 100 {
        let grants = (0..100).map(|i| {
            let lock = LockName::new(format!("{prefix}-{}", chunk * 100 + i)).unwrap();
            let store = &store;
            async move { grant(store, &lock, ttl).await }
        });
        leases.extend(futures::future::join_all(grants).await);
    }
    let entries: Vec<(Lease, Duration)> = leases.iter().map(|l| (l.clone(), ttl)).collect();
    let before = messages_received(&endpoint).await;
    let answers = store.extend_many(&entries).await;
    let after = messages_received(&endpoint).await;
    for (i, a) in answers.iter().enumerate() {
        assert!(
            matches!(a, Ok(Extension::Extended { .. })),
            "lease {i}: {a:?}"
        );
    }
    // Generous: other tests may share this etcd; one by one would be ≥ 4,000.
    assert!(
        after - before < 400.0,
        "{N} leases renewed together cost {} etcd messages",
        after - before
    );
    for chunk in leases.chunks(100) {
        futures::future::join_all(chunk.iter().map(|l| store.release(l, Duration::ZERO))).await;
    }
}

/// An operator's forced release of one lease of a live session: that lease is not held at the
/// next renewal, the others are renewed, and the session lives on for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_release_takes_one_lease_of_a_live_session() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let (holder, operator) = two_stores(&endpoints);
    let ttl = Duration::from_secs(10);
    let mut leases = Vec::new();
    for _ in 0..5 {
        leases.push(grant(&holder, &unique_name("forced"), ttl).await);
    }
    let session = etcd_lease_of(&holder, &leases[0]).await.expect("a key");
    let freed = operator.force_release(&leases[2].lock, 1).await.unwrap();
    assert_eq!(freed.len(), 1, "one holder freed");
    let entries: Vec<(Lease, Duration)> = leases.iter().map(|l| (l.clone(), ttl)).collect();
    let answers = holder.extend_many(&entries).await;
    for (i, a) in answers.iter().enumerate() {
        match (i, a) {
            (2, Ok(Extension::NotHeld)) => {}
            (2, other) => panic!("the forced-out lease must not be held: {other:?}"),
            (_, Ok(Extension::Extended { .. })) => {}
            (_, other) => panic!("lease {i} must be extended: {other:?}"),
        }
    }
    let mut client = holder.client().await.unwrap();
    assert!(
        client
            .lease_time_to_live(session, None)
            .await
            .unwrap()
            .ttl()
            > 0,
        "the session is not revoked for one of its keys"
    );
    let taken = grant(&operator, &leases[2].lock, ttl).await;
    assert!(
        taken.fence > leases[2].fence,
        "the freed lock is granted anew"
    );
    operator.release(&taken, Duration::ZERO).await.unwrap();
    for (i, l) in leases.iter().enumerate() {
        if i != 2 {
            holder.release(l, Duration::ZERO).await.unwrap();
        }
    }
}

/// A lease its holder stopped renewing runs out even while the holder's other leases keep their
/// shared session alive: its key is deleted at the session's next renewal after its expiry, so
/// another store can take the lock — never before that expiry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_ran_out_does_not_live_on_with_its_session() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let (holder, other) = two_stores(&endpoints);
    let ttl = Duration::from_secs(2);
    let dropped = grant(&holder, &unique_name("ran-out"), ttl).await;
    let kept = grant(&holder, &unique_name("kept"), ttl).await;
    let req = |lock: &LockName| AcquireRequest::new(lock.clone(), 1, "o", Token::random(), ttl);
    let mut freed_at = None;
    let give_up = Instant::now() + ttl * 4;
    while Instant::now() < give_up {
        let answers = holder.extend_many(&[(kept.clone(), ttl)]).await;
        assert!(
            matches!(answers[0], Ok(Extension::Extended { .. })),
            "the renewed lease stays held: {:?}",
            answers[0]
        );
        if let Some(taken) = other
            .try_acquire(&req(&dropped.lock))
            .await
            .unwrap()
            .elected()
        {
            freed_at = Some(SystemTime::now());
            other.release(&taken, Duration::ZERO).await.unwrap();
            break;
        }
        sleep(Duration::from_millis(300)).await;
    }
    let freed_at = freed_at.expect("the lock of the lease that ran out must be freed");
    assert!(
        freed_at >= dropped.expires_at,
        "freed before the lease's expiry: at {freed_at:?}, expiry {:?}",
        dropped.expires_at
    );
    holder.release(&kept, Duration::ZERO).await.unwrap();
}

/// A session etcd no longer has (revoked here by hand) loses every lease on it; the next
/// acquisition starts a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_loses_every_lease_and_a_new_one_starts() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let ttl = Duration::from_secs(10);
    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(grant(&store, &unique_name("lost"), ttl).await);
    }
    let session = etcd_lease_of(&store, &leases[0]).await.expect("a key");
    store
        .client()
        .await
        .unwrap()
        .lease_revoke(session)
        .await
        .unwrap();
    let entries: Vec<(Lease, Duration)> = leases.iter().map(|l| (l.clone(), ttl)).collect();
    for (i, a) in store.extend_many(&entries).await.iter().enumerate() {
        assert!(
            matches!(a, Ok(Extension::NotHeld)),
            "lease {i} of a lost session: {a:?}"
        );
    }
    let again = grant(&store, &leases[0].lock, ttl).await;
    let new_session = etcd_lease_of(&store, &again).await.expect("a key");
    assert_ne!(new_session, session, "a lost session is never revived");
    store.release(&again, Duration::ZERO).await.unwrap();
}
