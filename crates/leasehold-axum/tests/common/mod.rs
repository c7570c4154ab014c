//! Test helpers: real servers on 127.0.0.1:0 and a small HTTP client.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    unreachable_pub,
    dead_code
)] // test helpers

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::routing::get;
use axum::{Extension, Router};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leasehold::{CancellationToken, ElectionOptions, Elector, Job, LeaseStore};
use leasehold_axum::{BearerToken, LeaderFence, LeaderJobs, LeaderOnly, RunningJobs};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub const TOKEN: &str = "test-token-0123456789";
pub const WRITER: &str = "writer";

pub fn elector(store: Arc<dyn LeaseStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    Elector::with_options(store, opts)
}

/// One application instance: jobs, management (bearer token), a leader-only route `/write`.
pub struct Instance {
    pub addr: SocketAddr,
    pub shutdown: CancellationToken,
    pub jobs: RunningJobs,
    pub leader: LeaderOnly,
    server: JoinHandle<()>,
}

pub async fn start(
    store: Arc<dyn LeaseStore>,
    node: &str,
    jobs: Vec<Job>,
    grace: Duration,
) -> Instance {
    let elector = elector(store, node);
    let shutdown = CancellationToken::new();
    let jobs = jobs
        .into_iter()
        .fold(LeaderJobs::new(elector.clone()), LeaderJobs::job)
        .grace_period(grace)
        .start(shutdown.clone())
        .unwrap();
    let leader = LeaderOnly::builder(&elector, WRITER)
        .retry_after(Duration::from_millis(1500))
        .retry_interval(Duration::from_millis(200))
        .start(shutdown.clone())
        .unwrap();
    let management = jobs
        .management()
        .leader(&leader)
        .bearer_token(BearerToken::new(TOKEN).unwrap())
        .router()
        .unwrap();
    let app = Router::new()
        .route(
            "/write",
            get(
                |Extension(LeaderFence(fence)): Extension<LeaderFence>| async move {
                    format!("fence {fence}")
                },
            ),
        )
        .route_layer(leader.layer())
        .route("/health", get(|| async { "ok" }))
        .merge(management);
    let (addr, server) = serve(app, jobs.shutdown_signal()).await;
    Instance {
        addr,
        shutdown,
        jobs,
        leader,
        server,
    }
}

/// Serves `app` on 127.0.0.1:0 until `signal` resolves.
pub async fn serve(
    app: Router,
    signal: impl std::future::Future<Output = ()> + Send + 'static,
) -> (SocketAddr, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(signal)
            .await
            .unwrap();
    });
    (addr, server)
}

impl Instance {
    /// Cancels the shared token and waits for jobs, campaign and server; returns how long it took.
    pub async fn stop(self) -> Duration {
        let start = Instant::now();
        self.shutdown.cancel();
        self.jobs.stopped().await;
        self.leader.stopped().await;
        self.server.await.unwrap();
        start.elapsed()
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

pub async fn get_path(addr: SocketAddr, path: &str, auth: Option<&str>) -> Reply {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut req = Request::get(format!("http://{addr}{path}"));
    if let Some(value) = auth {
        req = req.header(header::AUTHORIZATION, value);
    }
    let res = client
        .request(req.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

pub async fn management(addr: SocketAddr) -> serde_json::Value {
    let reply = get_path(
        addr,
        "/management/leader-election",
        Some(&format!("Bearer {TOKEN}")),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

/// Polls `check` every 20 ms until it holds or `within` passes; returns whether it held.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
