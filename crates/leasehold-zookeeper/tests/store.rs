//! What is particular to the ZooKeeper store, against a real server: its node layout, its
//! clock-skew tolerance, and a holder cut off from the server by the testkit's fault proxy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use leasehold::store::AcquireRequest;
use leasehold::{
    ElectionOptions, Elector, LeaseStore, LockName, LostReason, RetryPolicy,
    store::{Release, Token},
};
use leasehold_testkit::proxy::{FaultProxy, loopback_authority, via_proxy};
use leasehold_testkit::safety::FencedResource;
use leasehold_testkit::unique_name;
use leasehold_zookeeper::ZooKeeperStore;
use tokio::time::{sleep, timeout};

fn request(lock: &LockName, slots: u32, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, "node-a", Token::random(), ttl)
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

/// Slot nodes live at `<chroot><prefix>/locks/<lock>/slot-<n>` (chroot and parents created by the
/// store), stay after release (marked free), and the fence is `czxid` + the grant's version, so
/// it rises with every grant of the slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_nodes_live_under_the_chroot_and_are_marked_free_not_deleted() {
    let Some(url) = common::url() else { return };
    let chroot = format!("/lhchroot-{}", &Token::random().to_hex()[..8]);
    let store = ZooKeeperStore::connect_with(&format!("{url}{chroot}"), common::options())
        .await
        .unwrap();
    let lock = LockName::new(format!("{}/daily", unique_name("layout"))).unwrap();
    let path = store.slot_path(&lock, 0);
    assert!(path.starts_with(&format!("{chroot}/lhtest-")), "{path}");
    assert!(path.ends_with("%2Fdaily/slot-0"), "{path}");

    let first = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("a free lock");
    let client = store.client().await.unwrap();
    let (data, stat) = client.get_data(&path).await.unwrap();
    assert!(String::from_utf8_lossy(&data).starts_with("leasehold/1 held 0 5000 - "));
    assert_eq!(first.fence, u64::try_from(stat.czxid).unwrap());

    assert_eq!(
        store.release(&first, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let (data, _) = client.get_data(&path).await.unwrap();
    assert!(String::from_utf8_lossy(&data).starts_with("leasehold/1 free "));

    let second = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("free again");
    let (_, stat2) = client.get_data(&path).await.unwrap();
    assert_eq!(stat2.czxid, stat.czxid, "the same node, never deleted");
    assert_eq!(
        second.fence,
        u64::try_from(stat.czxid + i64::from(stat2.version)).unwrap()
    );
    assert!(second.fence > first.fence);
    store.release(&second, Duration::ZERO).await.unwrap();
}

/// Another client's release signal fires for releases that free the lock (a release, a forced
/// release) and for nothing else: grants and renewals, which change the slot node just as much,
/// wake nobody (before, every renewal woke every waiter and partition member, which then read
/// again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_releases_wake_another_clients_waiters() {
    const QUIET: Duration = Duration::from_millis(1_500);
    let Some(url) = common::url() else { return };
    let options = common::options();
    let holder = ZooKeeperStore::connect_with(&url, options.clone())
        .await
        .unwrap();
    let waiter = ZooKeeperStore::connect_with(&url, options).await.unwrap();
    let lock = LockName::new(unique_name("wake")).unwrap();
    let ttl = Duration::from_secs(10);
    let take = || async {
        holder
            .try_acquire(&request(&lock, 1, ttl))
            .await
            .unwrap()
            .elected()
            .expect("a free lock")
    };
    let lease = take().await;
    let mut signal = waiter
        .release_signal(&lock)
        .expect("ZooKeeper signals releases");
    // The watch wakes everyone once when it is set up (changes before it were not seen).
    let _ = timeout(Duration::from_secs(5), signal.released()).await;
    for _ in 0..3 {
        assert!(
            matches!(
                holder.extend(&lease, ttl).await.unwrap(),
                leasehold::store::Extension::Extended { .. }
            ),
            "renewed"
        );
    }
    assert!(
        timeout(QUIET, signal.released()).await.is_err(),
        "renewals woke a waiter"
    );
    assert_eq!(
        holder.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    timeout(Duration::from_secs(5), signal.released())
        .await
        .expect("the release wakes the other client's waiter");

    let again = take().await;
    assert!(
        timeout(QUIET, signal.released()).await.is_err(),
        "a grant woke a waiter"
    );
    let freed = holder.force_release(&lock, 1).await.unwrap();
    assert_eq!(freed.len(), 1, "{freed:?}");
    assert_eq!(freed[0].fence, again.fence);
    timeout(Duration::from_secs(5), signal.released())
        .await
        .expect("the forced release wakes the other client's waiter");
}

/// Leases must be longer than twice the clock-skew tolerance; the error is permanent and names
/// the option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_shorter_than_twice_the_tolerance_are_refused() {
    let Some(url) = common::url() else { return };
    let options = common::options().with_clock_skew_tolerance(Duration::from_millis(400));
    let store = ZooKeeperStore::connect_lazy(&url, options).unwrap();
    let lock = unique_name("floor");
    let e = store
        .try_acquire(&request(&lock, 1, Duration::from_millis(800)))
        .await
        .expect_err("800 ms is not more than 2 × 400 ms");
    assert!(!e.is_transient(), "{e}");
    assert!(e.to_string().contains("clock-skew tolerance"), "{e}");
    assert!(
        store
            .try_acquire(&request(&lock, 1, Duration::from_millis(900)))
            .await
            .unwrap()
            .is_elected()
    );
}

/// An ended lease is taken over only once the ensemble's time is the tolerance past its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_lease_is_taken_over_only_after_the_tolerance() {
    let Some(url) = common::url() else { return };
    let options = common::options().with_clock_skew_tolerance(Duration::from_millis(1500));
    let a = ZooKeeperStore::connect_lazy(&url, options.clone()).unwrap();
    let b = ZooKeeperStore::connect_lazy(&url, options).unwrap();
    let lock = unique_name("tolerance");
    let first = a
        .try_acquire(&request(&lock, 1, Duration::from_millis(3100)))
        .await
        .unwrap()
        .elected()
        .expect("free");
    // 300 ms after the end: ended for its holder, not yet for others.
    sleep(
        first
            .expires_at
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            + Duration::from_millis(300),
    )
    .await;
    assert_eq!(
        a.extend(&first, Duration::from_secs(4)).await.unwrap(),
        leasehold::store::Extension::NotHeld,
        "its holder may no longer extend it"
    );
    assert!(
        !b.try_acquire(&request(&lock, 1, Duration::from_secs(4)))
            .await
            .unwrap()
            .is_elected(),
        "within the tolerance the lease is not taken over"
    );
    sleep(Duration::from_millis(1500)).await;
    let next = b
        .try_acquire(&request(&lock, 1, Duration::from_secs(4)))
        .await
        .unwrap()
        .elected()
        .expect("taken over after the tolerance");
    assert!(next.fence > first.fence);
    assert_eq!(
        a.release(&first, Duration::ZERO).await.unwrap(),
        Release::NotHeld
    );
}

/// The holder's connection is cut by the fault proxy: it reports `Lost` at its local deadline,
/// while the server still holds its lease; a successor on a direct connection acquires only
/// after that, with a higher fence; the stale holder's release, once the network heals, changes
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_holder_is_lost_at_its_deadline_before_any_successor() {
    const LEASE: Duration = Duration::from_millis(1500);
    let Some(url) = common::url() else { return };
    let (_, target) = loopback_authority(&url).expect("a loopback test server");
    let proxy = FaultProxy::start(target).await.unwrap();
    let options = common::options();
    let holder_store = Arc::new(
        ZooKeeperStore::connect_lazy(
            &via_proxy(&url, proxy.addr()).unwrap(),
            options
                .clone()
                .with_request_timeout(Duration::from_millis(300)),
        )
        .unwrap(),
    );
    let direct = Arc::new(ZooKeeperStore::connect_lazy(&url, options).unwrap());
    let lock = unique_name("cut");
    let resource = FencedResource::new("resource");

    let holder = elector(holder_store.clone(), "holder", Duration::ZERO, LEASE);
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("free");
    resource.write(guard.fence(), "holder").unwrap();
    sleep(LEASE / 2).await; // at least one renewal through the proxy
    assert!(!guard.is_lost());

    proxy.cut().await;
    let reason = timeout(LEASE * 2, guard.lost())
        .await
        .expect("a cut-off holder must report Lost");
    assert_eq!(reason, LostReason::DeadlinePassed);
    let state = direct.state(&lock, 1).await.unwrap();
    let row = state
        .holder()
        .expect("the server still holds the lease when the holder reports Lost");
    assert_eq!(row.fence, guard.fence());
    let early = row
        .expires_at
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    println!("holder reported Lost {early:?} before the lease's end on the server");

    let successor = elector(
        direct.clone(),
        "successor",
        LEASE * 4,
        Duration::from_secs(30),
    );
    let next = successor
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("the successor acquires after the lease ended");
    assert!(next.fence() > guard.fence());
    assert!(
        next.lease().acquired_at >= row.expires_at,
        "granted only after the old lease ended"
    );
    resource.write(next.fence(), "successor").unwrap();
    assert!(resource.write(guard.fence(), "holder").is_err());

    proxy.heal().await;
    timeout(Duration::from_secs(15), async {
        while holder_store.ping().await.is_err() {
            sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("the healed holder's store answers again");
    let released = guard.release().await.unwrap();
    assert_eq!(released, Release::NotHeld);
    let row = direct.state(&lock, 1).await.unwrap();
    assert_eq!(row.holder().map(|h| h.fence), Some(next.fence()));
    next.release().await.unwrap();
}

/// A URL parameter the store does not know is refused, with the known ones listed.
#[test]
fn unknown_url_parameters_are_refused() {
    let e = ZooKeeperStore::connect_lazy("zk://127.0.0.1:2181?skw=1s", Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown parameter \"skw\""), "{e}");
    assert!(e.contains("skew"), "{e}");
}
