//! Real servers on 127.0.0.1:0 sharing one store: jobs, shutdown, management, leader-only routes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::http::{StatusCode, header};
use common::{TOKEN, WRITER, eventually, get_path, management, serve, start};
use leasehold::store::{AcquireRequest, StoreResult, async_trait};
use leasehold::{
    CancellationToken, Job, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release, Token},
};
use leasehold_axum::{BearerToken, Error, Management};

type Runs = Arc<Mutex<Vec<String>>>;

/// A job that records which node ran it and then works for a long time.
fn long_job(node: &str, runs: &Runs) -> Job {
    let (node, runs) = (node.to_string(), runs.clone());
    Job::every("report", Duration::from_millis(50), move |_ctx| {
        let (node, runs) = (node.clone(), runs.clone());
        async move {
            runs.lock().unwrap().push(node);
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, String>(())
        }
    })
}

fn runs_of(runs: &Runs) -> Vec<String> {
    runs.lock().unwrap().clone()
}

fn lock_entry(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_one_instance_and_moves_at_once_when_it_shuts_down_mid_action() {
    job_moves_on_shutdown(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_on_a_shared_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}",
        dir.path().join("leases.db").to_str().unwrap()
    );
    job_moves_on_shutdown(Arc::new(
        leasehold_sql::SqlStore::connect(&url).await.unwrap(),
    ))
    .await;
}

async fn job_moves_on_shutdown(store: Arc<dyn LeaseStore>) {
    let runs: Runs = Arc::default();
    let grace = Duration::from_millis(200);
    let a = start(
        store.clone(),
        "node-a",
        vec![long_job("node-a", &runs)],
        grace,
    )
    .await;
    let b = start(
        store.clone(),
        "node-b",
        vec![long_job("node-b", &runs)],
        grace,
    )
    .await;

    assert!(
        eventually(Duration::from_secs(5), || async {
            !runs_of(&runs).is_empty()
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(500)).await; // ten more ticks on each instance
    let first = runs_of(&runs);
    assert_eq!(
        first.len(),
        1,
        "exactly one instance runs the job: {first:?}"
    );
    let leader = first[0].clone();
    for addr in [a.addr, b.addr] {
        let entry = lock_entry(&management(addr).await, "report");
        assert_eq!(entry["status"], "HELD");
        assert_eq!(entry["leaderId"], leader.as_str());
    }

    let (gone, stays) = if leader == "node-a" { (a, b) } else { (b, a) };
    let took = gone.stop().await;
    assert!(
        took < Duration::from_secs(3),
        "shutdown mid-action took {took:?}"
    );
    assert!(took >= grace, "the action had its grace period: {took:?}");
    let other = if leader == "node-a" {
        "node-b"
    } else {
        "node-a"
    };
    assert!(
        eventually(Duration::from_secs(2), || async {
            runs_of(&runs).len() == 2
        })
        .await,
        "the other instance took over at once: {:?}",
        runs_of(&runs)
    );
    assert_eq!(runs_of(&runs)[1], other);
    let entry = lock_entry(&management(stays.addr).await, "report");
    assert_eq!(entry["leaderId"], other);
    let took = stays.stop().await;
    assert!(took < Duration::from_secs(3), "{took:?}");
    let state = store
        .state(&LockName::new("report").unwrap(), 1)
        .await
        .unwrap();
    assert!(state.is_free(), "both instances released: {state:?}");
}

/// A store whose acquisitions hang for a while before reaching the real store.
struct SlowAcquire {
    inner: Arc<dyn LeaseStore>,
    delay: Duration,
}

#[async_trait]
impl LeaseStore for SlowAcquire {
    async fn try_acquire(
        &self,
        req: &AcquireRequest,
    ) -> StoreResult<leasehold::store::Acquisition> {
        tokio::time::sleep(self.delay).await;
        self.inner.try_acquire(req).await
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }
    async fn start_period(
        &self,
        lease: &Lease,
    ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
        self.inner.start_period(lease).await
    }
    async fn period_record(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }
    fn describe(&self) -> String {
        "slow-acquire".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_acquisition_is_prompt_and_leaves_the_lock_free() {
    let inner: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let slow: Arc<dyn LeaseStore> = Arc::new(SlowAcquire {
        inner: inner.clone(),
        delay: Duration::from_secs(3),
    });
    let runs: Runs = Arc::default();
    let grace = Duration::from_secs(10);
    let a = start(slow, "node-a", vec![long_job("node-a", &runs)], grace).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // node-a is inside its acquisition
    let took = a.stop().await;
    // Stopping waits for the store's answer to the acquisition in flight (bounded by
    // SETTLE_TIMEOUT) and releases what it grants: nothing outlives `stopped()`.
    assert!(
        took >= Duration::from_secs(2) && took < leasehold::limits::SETTLE_TIMEOUT,
        "shutdown during acquisition took {took:?}"
    );
    let state = inner
        .state(&LockName::new("report").unwrap(), 1)
        .await
        .unwrap();
    assert!(state.is_free(), "the late grant was released: {state:?}");

    let b = start(
        inner.clone(),
        "node-b",
        vec![long_job("node-b", &runs)],
        Duration::from_millis(200),
    )
    .await;
    assert!(
        eventually(Duration::from_secs(2), || async {
            !runs_of(&runs).is_empty()
        })
        .await,
        "node-b ran the job at once"
    );
    assert_eq!(runs_of(&runs), ["node-b"]);
    let took = b.stop().await;
    assert!(took < Duration::from_secs(3), "{took:?}");
    let state = inner
        .state(&LockName::new("report").unwrap(), 1)
        .await
        .unwrap();
    assert!(state.is_free(), "{state:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_json_shape_and_escaping() {
    let store = Arc::new(MemoryStore::new());
    // Another client (not bound by our node-id rules) recorded an owner that needs escaping.
    let owner = "node \"q\"\n\\ </script> \u{1} é";
    store
        .try_acquire(&AcquireRequest::new(
            LockName::new("weird").unwrap(),
            1,
            Arc::from(owner),
            Token::random(),
            Duration::from_secs(30),
        ))
        .await
        .unwrap()
        .elected()
        .unwrap();
    let elector = common::elector(store, "node-a");
    let stop = CancellationToken::new();
    let router: Router = Management::new(elector)
        .locks(["weird", "free-lock"])
        .bearer_token(BearerToken::new(TOKEN).unwrap())
        .router()
        .unwrap();
    let (addr, server) = serve(router, stop.clone().cancelled_owned()).await;

    let reply = get_path(
        addr,
        "/management/leader-election",
        Some(&format!("Bearer {TOKEN}")),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(reply.headers[header::CACHE_CONTROL], "no-store");
    assert!(
        !reply.body.contains('\n'),
        "newlines are escaped: {}",
        reply.body
    );
    assert!(
        reply.body.contains(r#"node \"q\"\n\\ </script> \u0001 é"#),
        "{}",
        reply.body
    );

    let report: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    let locks = report["locks"].as_array().unwrap();
    let names: Vec<&str> = locks.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["free-lock", "weird"], "sorted by name");
    for lock in locks {
        let mut keys: Vec<&String> = lock.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "fence",
                "leaderId",
                "leaderSince",
                "leaseExpiry",
                "ledger",
                "name",
                "status"
            ]
        );
    }
    assert_eq!(
        locks[0],
        serde_json::json!({"name":"free-lock","status":"FREE","leaderId":null,"fence":null,"leaderSince":null,"leaseExpiry":null,"ledger":null})
    );
    let weird = &locks[1];
    assert_eq!(weird["status"], "HELD");
    assert_eq!(weird["leaderId"], owner);
    assert_eq!(weird["fence"], 1);
    let expiry = weird["leaseExpiry"].as_str().unwrap();
    assert!(
        expiry.ends_with('Z') && expiry.as_bytes()[10] == b'T',
        "{expiry}"
    );
    let year: u64 = expiry[..4].parse().unwrap();
    let now_year = 1970
        + SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 31_556_952;
    assert!(year.abs_diff(now_year) <= 1, "{expiry}");

    stop.cancel();
    server.await.unwrap();
}

/// The report shows each lock's period ledger, held or not: "did tonight's run happen, and
/// where?" is answered on every replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_shows_the_period_ledger_of_a_free_lock() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let ran_on = common::elector(store.clone(), "node-b");
    let nightly = leasehold::Period::every(Duration::from_secs(86_400)).unwrap();
    let ran = ran_on
        .run_once_per("nightly", nightly, |_| async { Ok::<_, String>(()) })
        .await
        .unwrap();
    assert!(ran.ran(), "{ran:?}");
    let stop = CancellationToken::new();
    let router: Router = Management::new(common::elector(store, "node-a"))
        .locks(["nightly", "never"])
        .bearer_token(BearerToken::new(TOKEN).unwrap())
        .router()
        .unwrap();
    let (addr, server) = serve(router, stop.clone().cancelled_owned()).await;
    let report = management(addr).await;
    let entry = lock_entry(&report, "nightly");
    assert_eq!(entry["status"], "FREE", "{entry}");
    let ledger = &entry["ledger"];
    assert_eq!(ledger["state"], "RAN", "{entry}");
    assert_eq!(ledger["by"], "node-b");
    assert_eq!(ledger["lengthMs"], 86_400_000);
    let at = ledger["at"].as_str().unwrap();
    assert_eq!(at.len(), "2026-12-04T01:58:34.402Z".len(), "{at}");
    assert_eq!(ledger["lastRun"], at);
    assert!(lock_entry(&report, "never")["ledger"].is_null());
    stop.cancel();
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_and_wrong_token_requests_are_refused() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let a = start(store.clone(), "node-a", vec![], Duration::from_secs(1)).await;
    for auth in [
        None,
        Some("Bearer wrong-token"),
        Some(&*format!("Bearer {TOKEN}x")),
        Some(&*format!("Basic {TOKEN}")),
        Some("Bearer "),
    ] {
        let reply = get_path(a.addr, "/management/leader-election", auth).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(
            reply.headers[header::WWW_AUTHENTICATE],
            r#"Bearer realm="leasehold""#
        );
        assert!(!reply.body.contains(TOKEN));
    }
    let ok = get_path(
        a.addr,
        "/management/leader-election",
        Some(&format!("Bearer {TOKEN}")),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK);
    a.stop().await;

    // Building the router without an authentication decision fails at startup.
    let elector = common::elector(store, "node-a");
    assert!(matches!(
        Management::new(elector.clone()).router::<()>(),
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        Management::new(elector)
            .loopback_only("0.0.0.0:8080".parse().unwrap())
            .router::<()>(),
        Err(Error::NotLoopback(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_only_routes_answer_503_with_retry_after_on_the_follower() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let a = start(store.clone(), "node-a", vec![], Duration::from_secs(1)).await;
    assert!(eventually(Duration::from_secs(3), || async { a.leader.is_leader() }).await);
    let b = start(store.clone(), "node-b", vec![], Duration::from_secs(1)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!b.leader.is_leader());

    let led = get_path(a.addr, "/write", None).await;
    assert_eq!(led.status, StatusCode::OK);
    assert_eq!(led.body, format!("fence {}", a.leader.fence().unwrap()));
    let refused = get_path(b.addr, "/write", None).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers[header::RETRY_AFTER], "2", "1.5 s rounds up");
    assert!(refused.body.contains(WRITER));
    // The 503 names the leader, so a proxy or client can go there.
    let body: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(body["leader"], "node-a", "{}", refused.body);
    assert_eq!(refused.headers[leasehold_axum::LEADER_HEADER], "node-a");
    assert_eq!(
        get_path(b.addr, "/health", None).await.status,
        StatusCode::OK
    );
    // Every node's report shows the stable leader: who, with which fence, since when.
    let entry = lock_entry(&management(b.addr).await, WRITER);
    assert_eq!(entry["status"], "HELD");
    assert_eq!(entry["leaderId"], "node-a");
    assert_eq!(entry["fence"], a.leader.fence().unwrap());
    let since_a = entry["leaderSince"].as_str().unwrap().to_owned();
    assert!(since_a.ends_with('Z'), "{since_a}");
    tokio::time::sleep(Duration::from_secs(2)).await; // renewals keep the term's start
    let entry = lock_entry(&management(a.addr).await, WRITER);
    assert_eq!(entry["leaderSince"], since_a.as_str());

    let took = a.stop().await;
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        eventually(Duration::from_secs(2), || async { b.leader.is_leader() }).await,
        "the follower took over"
    );
    assert_eq!(
        get_path(b.addr, "/write", None).await.status,
        StatusCode::OK
    );
    let entry = lock_entry(&management(b.addr).await, WRITER);
    assert_eq!(entry["leaderId"], "node-b");
    assert_eq!(entry["fence"], b.leader.fence().unwrap());
    assert!(entry["leaderSince"].as_str().unwrap() > since_a.as_str());
    b.stop().await;
}

/// Merged into an application, the management router's bearer check guards its own route only:
/// the application's routes stay open and its unknown paths stay 404 (not 401).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_check_guards_only_the_management_route_once_merged() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let elector = common::elector(store, "node-a");
    let management: Router = Management::new(elector)
        .locks(["nightly"])
        .bearer_token(BearerToken::new(TOKEN).unwrap())
        .router()
        .unwrap();
    let app: Router = Router::new()
        .route("/hello", axum::routing::get(|| async { "hi" }))
        .merge(management);
    let stop = CancellationToken::new();
    let (addr, server) = serve(app, stop.clone().cancelled_owned()).await;
    assert_eq!(get_path(addr, "/hello", None).await.status, StatusCode::OK);
    assert_eq!(
        get_path(addr, "/no-such-page", None).await.status,
        StatusCode::NOT_FOUND
    );
    let guarded = get_path(addr, "/management/leader-election", None).await;
    assert_eq!(guarded.status, StatusCode::UNAUTHORIZED);
    let token = format!("Bearer {TOKEN}");
    let ok = get_path(addr, "/management/leader-election", Some(&token)).await;
    assert_eq!(ok.status, StatusCode::OK);
    stop.cancel();
    server.await.unwrap();
}
