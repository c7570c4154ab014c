//! What is particular to the etcd store, against a real etcd: the key layout, fences that are
//! creation revisions, the whole-second etcd lease behind a lease, foreign keys, watch wake-ups,
//! URLs through the registry, and authentication on a private member with auth enabled.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, Permission};
use leasehold::store::AcquireRequest;
use leasehold::{
    ElectionOptions, Elector, LeaseStore, RetryPolicy,
    store::{OpenError, Release, StoreRegistry, Token},
};
use leasehold_etcd::{EtcdOpener, EtcdStore};
use leasehold_testkit::unique_name;
use tokio::time::{Instant, sleep, timeout};

fn request(lock: &leasehold::LockName, slots: u32, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(lock.clone(), slots, "n", Token::random(), ttl)
}

fn store(endpoints: &str) -> EtcdStore {
    EtcdStore::connect_lazy(&common::url(endpoints), common::options()).unwrap()
}

/// The slot key holds the lease, attached to an etcd lease of the TTL rounded up to whole
/// seconds; the fence is the key's creation revision; `expires_at` is the lease asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_is_a_key_on_an_etcd_lease_fenced_by_its_creation_revision() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let lock = unique_name("layout");
    let lease = store
        .try_acquire(&request(&lock, 1, Duration::from_millis(1500)))
        .await
        .unwrap()
        .elected()
        .expect("granted");
    assert_eq!(
        lease.expires_at.duration_since(lease.acquired_at).unwrap(),
        Duration::from_millis(1500),
        "expires_at is the lease asked for"
    );
    let key = store.key(&lock, 0);
    assert!(key.ends_with(&format!("/{lock}/0")), "{key}");
    let mut client = store.client().await.unwrap();
    let got = client.get(key.as_str(), None).await.unwrap();
    let kv = &got.kvs()[0];
    assert_eq!(u64::try_from(kv.create_revision()).unwrap(), lease.fence);
    assert!(kv.value_str().unwrap().contains(&lease.token.to_hex()));
    let ttl = client.lease_time_to_live(kv.lease(), None).await.unwrap();
    assert_eq!(ttl.granted_ttl(), 2, "1.5 s is rounded up to 2 s");

    // Another write to the cluster, then a new grant of the same slot: a higher fence.
    client
        .put(format!("{}/unrelated", store.options().prefix()), "x", None)
        .await
        .unwrap();
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    assert!(
        client
            .get(key.as_str(), None)
            .await
            .unwrap()
            .kvs()
            .is_empty(),
        "released: key gone"
    );
    assert!(
        client
            .lease_time_to_live(kv.lease(), None)
            .await
            .unwrap()
            .ttl()
            > 0,
        "released: the key's etcd lease is the store's session, which lives on for its other keys"
    );
    let next = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("granted again");
    assert!(
        next.fence > lease.fence + 1,
        "fences are revisions: {} then {}",
        lease.fence,
        next.fence
    );
    store.release(&next, Duration::ZERO).await.unwrap();
}

/// Keys under the prefix that the store did not write are never mistaken for holders nor
/// overwritten: their slot is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_keys_are_never_reported_nor_overwritten() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = store(&endpoints);
    let lock = unique_name("foreign");
    let mut client = store.client().await.unwrap();
    for (suffix, value) in [("0", "not a lease"), ("01", "x"), ("x", "x"), ("1/2", "x")] {
        let key = format!("{}/{lock}/{suffix}", store.options().prefix());
        client.put(key, value, None).await.unwrap();
    }
    let state = store.state(&lock, 3).await.unwrap();
    assert!(state.is_free(), "{state:?}");
    // Slot 0's key exists (foreign), so slot 1 is granted, not an overwrite of slot 0.
    let lease = store
        .try_acquire(&request(&lock, 3, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("granted");
    assert_eq!(lease.slot, 1);
    store.release(&lease, Duration::ZERO).await.unwrap();
}

/// A release on one store wakes a waiter on another store through the watch, much sooner than
/// its polling (1 s pauses here) would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_wake_waiters_on_other_stores_through_the_watch() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let options = common::options();
    let url = common::url(&endpoints);
    let make = || Arc::new(EtcdStore::connect_lazy(&url, options.clone()).unwrap());
    let slow_poll = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(1), 0.0).unwrap();
    let elector = |store: Arc<EtcdStore>, wait: Duration| {
        Elector::with_options(
            store,
            ElectionOptions::builder()
                .wait(wait)
                .lease(Duration::from_secs(10))
                .retry(slow_poll)
                .build()
                .unwrap(),
        )
    };
    let lock = unique_name("wake");
    for forced in [false, true] {
        let holder_store = make();
        let holder = elector(Arc::clone(&holder_store), Duration::ZERO);
        let guard = holder
            .try_acquire(&lock)
            .await
            .unwrap()
            .elected()
            .expect("elected");
        let waiter = elector(make(), Duration::from_secs(10));
        let name = lock.clone();
        let waiting = tokio::spawn(async move {
            let g = waiter
                .try_acquire(&name)
                .await
                .unwrap()
                .elected()
                .expect("elected after the release");
            (Instant::now(), g)
        });
        sleep(Duration::from_millis(1300)).await; // the waiter is past its first poll
        let released = Instant::now();
        if forced {
            let freed = holder_store.force_release(&lock, 1).await.unwrap();
            assert_eq!(freed.len(), 1);
            assert_eq!(freed[0].fence, guard.fence());
        } else {
            guard.release().await.unwrap();
        }
        let (acquired, next) = timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        let took = acquired - released;
        println!("forced={forced}: the waiter acquired {took:?} after the release");
        assert!(
            took < Duration::from_millis(500),
            "woken by the watch, not by polling: {took:?}"
        );
        next.release().await.unwrap();
    }
}

/// URLs open through the registry; passwords never appear in descriptions or errors; unknown
/// parameters are refused with the list of known ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_open_through_the_registry_without_showing_passwords() {
    let registry = StoreRegistry::new().with(EtcdOpener::new());
    let e = registry
        .open("etcd://u:hunter2@127.0.0.1:1/p?colour=blue")
        .await
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(matches!(e, OpenError::Invalid { .. }), "{text}");
    assert!(
        text.contains("colour") && text.contains("request_timeout"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let e = registry
        .open("etcd://u:hunter2@127.0.0.1:1/p?request_timeout=300ms")
        .await
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(matches!(e, OpenError::Connect { .. }), "{text}");
    assert!(!text.contains("hunter2"), "{text}");

    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let store = registry
        .open(&format!("etcd://{endpoints}/lhtest-registry"))
        .await
        .unwrap();
    assert_eq!(
        store.describe(),
        format!("etcd://{endpoints}/lhtest-registry")
    );
}

/// A private etcd member; killed and its data removed when dropped.
struct Member {
    _child: tokio::process::Child,
    dir: tempfile::TempDir,
    endpoint: String,
}

impl Member {
    /// Starts a member, with client TLS when `tls` (a P-256 test CA and server certificate made
    /// with openssl in its directory: `ca.pem`), and waits until it answers TCP.
    async fn start(tls: bool) -> Option<Self> {
        if !common::etcd_installed() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        if tls && !make_certificates(dir.path()) {
            return None;
        }
        let (client_port, peer_port) = (common::free_port(), common::free_port());
        let scheme = if tls { "https" } else { "http" };
        let client_url = format!("{scheme}://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut command = tokio::process::Command::new("etcd");
        command
            .args(["--name", "private", "--data-dir"])
            .arg(dir.path().join("data"))
            .args([
                "--listen-client-urls",
                &client_url,
                "--advertise-client-urls",
                &client_url,
            ])
            .args([
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
            ])
            .args(["--initial-cluster", &format!("private={peer_url}")])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        if tls {
            command
                .arg("--cert-file")
                .arg(dir.path().join("server.pem"))
                .arg("--key-file")
                .arg(dir.path().join("server.key"));
        }
        let child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let endpoint = format!("127.0.0.1:{client_port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(&endpoint).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the private member did not start"
            );
            sleep(Duration::from_millis(50)).await;
        }
        Some(Self {
            _child: child,
            dir,
            endpoint,
        })
    }

    /// A plain client, retried until the member has elected itself.
    async fn client(&self) -> Client {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let connected = async {
                let mut c = Client::connect([format!("http://{}", self.endpoint)], None)
                    .await
                    .ok()?;
                c.get("x", None).await.ok()?;
                Some(c)
            };
            if let Ok(Some(c)) = timeout(Duration::from_secs(2), connected).await {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "the private member did not answer"
            );
            sleep(Duration::from_millis(100)).await;
        }
    }

    /// Creates `root` and an `app` user allowed on prefix `app/`, and turns authentication on.
    async fn enable_auth(&self) {
        let mut client = self.client().await;
        client.user_add("root", "rootpw", None).await.unwrap();
        client.user_grant_role("root", "root").await.unwrap();
        client.role_add("app").await.unwrap();
        client
            .role_grant_permission("app", Permission::read_write("app/").with_prefix())
            .await
            .unwrap();
        client.user_add("app", "s3cr:t", None).await.unwrap();
        client.user_grant_role("app", "app").await.unwrap();
        client.auth_enable().await.unwrap();
    }
}

/// A test CA and a server certificate for 127.0.0.1 signed by it (P-256: rustls does not verify
/// P-521 signatures, which etcd's own `--auto-tls` certificates use). False (skip) when openssl
/// is missing outside CI.
fn make_certificates(dir: &std::path::Path) -> bool {
    let openssl = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !openssl(&["version"]) {
        assert!(
            std::env::var_os("CI").is_none(),
            "openssl is needed for the TLS test"
        );
        return false;
    }
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=leasehold test CA",
        ],
    ]
    .concat();
    let csr = [
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ]
    .concat();
    let sign = [
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ];
    assert!(
        openssl(&ca) && openssl(&csr) && openssl(&sign),
        "openssl could not make the test certificates"
    );
    true
}

/// `etcds://` with `ca_file` trusts the member's certificate and works; without it, the
/// certificate of an unknown CA is refused, and plain text against the TLS port fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcds_urls_speak_tls_and_check_the_certificate() {
    let Some(member) = Member::start(true).await else {
        return;
    };
    let cert = member.dir.path().join("ca.pem");
    let ep = &member.endpoint;
    let url = format!("etcds://{ep}/tls?ca_file={}", cert.display());
    let deadline = Instant::now() + Duration::from_secs(20);
    let store = loop {
        match EtcdStore::connect(&url).await {
            Ok(store) => break store,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "etcds:// with the member's certificate: {e}"
                );
                sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let lock = unique_name("tls");
    let lease = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("granted over TLS");
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );

    match EtcdStore::connect(&format!("etcds://{ep}/tls?request_timeout=1s")).await {
        Err(OpenError::Connect { source, .. }) => {
            assert!(
                !source.is_transient(),
                "a certificate problem is permanent: {source}"
            );
            assert!(source.message().contains("TLS"), "{source}");
        }
        Err(e) => panic!("expected a connection error, got {e}"),
        Ok(_) => panic!("a certificate of an unknown CA must not be trusted without ca_file"),
    }
    let plain = EtcdStore::connect(&format!("etcd://{ep}/tls?request_timeout=1s")).await;
    assert!(plain.is_err(), "plain text against a TLS port must fail");
}

/// `user:password@` authenticates (the password percent-decoded); the store works within the
/// user's prefix; a wrong password is a permanent error that does not show the password; a
/// prefix outside the user's permissions is a permanent error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_password_authenticate_and_wrong_ones_are_permanent_errors() {
    let Some(member) = Member::start(false).await else {
        return;
    };
    member.enable_auth().await;
    let ep = &member.endpoint;
    let store = EtcdStore::connect(&format!("etcd://app:s3cr%3At@{ep}/app"))
        .await
        .unwrap();
    assert_eq!(store.describe(), format!("etcd://app:***@{ep}/app"));
    let lock = unique_name("auth");
    let lease = store
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .unwrap()
        .elected()
        .expect("granted");
    assert_eq!(
        store
            .state(&lock, 1)
            .await
            .unwrap()
            .holder()
            .map(|h| h.fence),
        Some(lease.fence)
    );
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );

    let e = EtcdStore::connect(&format!("etcd://app:wrong-pw@{ep}/app"))
        .await
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(!text.contains("wrong-pw"), "{text}");
    match e {
        OpenError::Connect { source, .. } => assert!(!source.is_transient(), "{source}"),
        other => panic!("expected a connection error, got {other}"),
    }

    let outside = EtcdStore::connect_lazy(
        &format!("etcd://app:s3cr%3At@{ep}/other"),
        Default::default(),
    )
    .unwrap();
    let e = outside
        .try_acquire(&request(&lock, 1, Duration::from_secs(5)))
        .await
        .expect_err("no permission outside app/");
    assert!(!e.is_transient(), "{e}");
}

/// A release made while a store's watch stream was down still wakes its waiter once the stream
/// is back: the new stream resumes after the last revision the old one reported. (Polling here
/// pauses 8 s, so only the resumed watch explains a hand-off within 5 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_during_a_watch_outage_still_wakes_the_waiter() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let target = endpoints.split(',').next().unwrap().parse().unwrap();
    let proxy = leasehold_testkit::proxy::FaultProxy::start(target)
        .await
        .unwrap();
    let options = common::options();
    let direct =
        Arc::new(EtcdStore::connect_lazy(&common::url(&endpoints), options.clone()).unwrap());
    let proxied = Arc::new(
        EtcdStore::connect_lazy(&common::url(&proxy.addr().to_string()), options).unwrap(),
    );
    let lock = unique_name("watch-outage");
    let holder = Elector::new(direct);
    let guard = holder
        .try_acquire(&lock)
        .await
        .unwrap()
        .elected()
        .expect("elected");
    let slow_poll = RetryPolicy::new(Duration::from_secs(8), Duration::from_secs(8), 0.0).unwrap();
    let waiter = Elector::with_options(
        proxied,
        ElectionOptions::builder()
            .wait(Duration::from_secs(20))
            .lease(Duration::from_secs(10))
            .retry(slow_poll)
            .build()
            .unwrap(),
    );
    let name = lock.clone();
    let started = Instant::now();
    let waiting = tokio::spawn(async move { waiter.try_acquire(&name).await });
    sleep(Duration::from_millis(700)).await; // subscribed, first attempt made, watch open

    proxy.cut().await;
    sleep(Duration::from_millis(300)).await;
    assert_eq!(guard.release().await.unwrap(), Release::Released);
    sleep(Duration::from_millis(300)).await;
    proxy.heal().await;

    let next = timeout(Duration::from_secs(15), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    println!("the waiter acquired {took:?} after it started waiting");
    let next = next.elected().expect("elected after the release");
    assert!(
        took < Duration::from_secs(5),
        "woken by the resumed watch, not by its 8 s poll: {took:?}"
    );
    next.release().await.unwrap();
}
