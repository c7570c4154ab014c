//! The fence layer: every refusal and its body, the handler never running for a refused request,
//! one request per resource at a time, the resource closure, and the header's round trip — in
//! process (`oneshot` on a `Router`) and over a real loopback server with hyper's client.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
#![cfg(feature = "fence")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::routing::put;
use axum::{Extension, Json, Router};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use leasehold::fence::{
    Admission, FENCE_HEADER, FenceClaim, FenceRegister, MemoryFences, ResourceName,
};
use leasehold::store::{StoreResult, async_trait};
use leasehold::{CancellationToken, Elector, LockName, MemoryStore, store::StoreError};
use leasehold_axum::fence::{
    FENCE_HEADER_NAME, FenceLayer, Fenced, FencedRequest, SetFenceLayer, claim_header, fence_header,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tower::{Layer, ServiceExt};

/// A running handler: its fence, and the sender that lets it finish.
type Entered = (u64, oneshot::Sender<()>);

/// A router whose `PUT /orders/{id}` handler logs its start and end and answers what it was
/// admitted with; with `gate`, each handler reports that it entered and waits to be let go.
struct App {
    router: Router,
    layer: FenceLayer,
    log: Arc<Mutex<Vec<String>>>,
}

impl App {
    fn new(layer: FenceLayer) -> Self {
        Self::build(layer, None)
    }

    fn gated(layer: FenceLayer) -> (Self, mpsc::UnboundedReceiver<Entered>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self::build(layer, Some(tx)), rx)
    }

    fn build(layer: FenceLayer, gate: Option<mpsc::UnboundedSender<Entered>>) -> Self {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let handler_log = Arc::clone(&log);
        let handler = move |fenced: Fenced, Extension(claim): Extension<FenceClaim>| {
            let (log, gate) = (Arc::clone(&handler_log), gate.clone());
            async move {
                let fence = fenced.claim.fence;
                log.lock().unwrap().push(format!("enter {fence}"));
                if let Some(gate) = gate {
                    let (go, wait) = oneshot::channel();
                    gate.send((fence, go)).unwrap();
                    wait.await.unwrap();
                }
                log.lock().unwrap().push(format!("exit {fence}"));
                Json(json!({
                    "resource": fenced.resource.as_str(),
                    "previous": fenced.previous,
                    "claim": claim.to_string(),
                }))
            }
        };
        let router = Router::new()
            .route("/orders/{id}", put(handler))
            .route_layer(layer.clone());
        Self { router, layer, log }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// How many handlers started.
    fn ran(&self) -> usize {
        self.log().iter().filter(|e| e.starts_with("enter")).count()
    }
}

fn claim(slot: u32, fence: u64) -> FenceClaim {
    FenceClaim::new(LockName::new("orders").unwrap(), slot, fence)
}

fn put_claim(path: &str, claim: &FenceClaim) -> Request<Body> {
    Request::put(path)
        .fenced_by_claim(claim)
        .body(Body::empty())
        .unwrap()
}

/// Sends `req` in process; the status, the content type and the body as JSON (`null` if none).
async fn send(router: Router, req: Request<Body>) -> (StatusCode, Value) {
    let res = router.oneshot(req).await.unwrap();
    let status = res.status();
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t == "application/json");
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    assert!(json || body.is_empty(), "{status}: not JSON: {value}");
    (status, value)
}

async fn put_fence(router: Router, path: &'static str, fence: u64) -> (StatusCode, Value) {
    send(router, put_claim(path, &claim(0, fence))).await
}

#[tokio::test]
async fn a_request_without_a_claim_gets_428_saying_what_is_expected_and_the_handler_never_runs() {
    let app = App::new(FenceLayer::default());
    let req = Request::put("/orders/1").body(Body::empty()).unwrap();
    let (status, body) = send(app.router.clone(), req).await;
    assert_eq!(status, StatusCode::PRECONDITION_REQUIRED);
    assert_eq!(body["error"], "missing fence claim");
    assert!(
        body["detail"].as_str().unwrap().contains(FENCE_HEADER),
        "{body}"
    );
    assert!(
        body["expected"]
            .as_str()
            .unwrap()
            .contains("lock=<name>; slot=<n>; fence=<n>"),
        "{body}"
    );
    assert_eq!(app.ran(), 0);
}

#[tokio::test]
async fn malformed_claims_get_400_with_the_claim_error_and_the_handler_never_runs() {
    let app = App::new(FenceLayer::default());
    let with = |value: HeaderValue| {
        Request::put("/orders/1")
            .header(FENCE_HEADER_NAME, value)
            .body(Body::empty())
            .unwrap()
    };
    let cases = [
        (
            with(HeaderValue::from_static("lock=orders; fence=-1")),
            "fence claim field `fence` is \"-1\"; expected an integer",
        ),
        (
            with(HeaderValue::from_static("fence=3")),
            "fence claim lacks `lock`",
        ),
        (
            with(HeaderValue::from_static("lock=orders; fence=3; owner=me")),
            "is not one of lock=<name>",
        ),
        (
            with(HeaderValue::from_bytes(b"lock=\xff; fence=1").unwrap()),
            "is not visible ASCII text",
        ),
        (
            // Two claims: which one would count? Neither.
            Request::put("/orders/1")
                .header(FENCE_HEADER_NAME, "lock=orders; fence=3")
                .header(FENCE_HEADER_NAME, "lock=orders; fence=4")
                .body(Body::empty())
                .unwrap(),
            "more than one leasehold-fence header",
        ),
    ];
    for (req, detail) in cases {
        let (status, body) = send(app.router.clone(), req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"], "malformed fence claim", "{body}");
        assert!(
            body["detail"].as_str().unwrap().contains(detail),
            "{detail:?} not in {body}"
        );
        assert!(body["expected"].as_str().unwrap().contains("fence=<n>"));
    }
    assert_eq!(app.ran(), 0);
    assert!(
        app.layer
            .register()
            .highest(&res("orders/0"))
            .await
            .unwrap()
            .is_none()
    );
}

fn res(name: &str) -> ResourceName {
    ResourceName::new(name).unwrap()
}

#[tokio::test]
async fn a_stale_fence_gets_409_with_the_highest_and_the_handler_never_runs() {
    let app = App::new(FenceLayer::default());
    let router = || app.router.clone();
    let (status, body) = put_fence(router(), "/orders/1", 7).await;
    assert_eq!((status, &body["previous"]), (StatusCode::OK, &Value::Null));
    assert_eq!(body["resource"], "orders/0", "the default: <lock>/<slot>");
    // The same holder again: equal fences are admitted.
    let (status, body) = put_fence(router(), "/orders/1", 7).await;
    assert_eq!((status, &body["previous"]), (StatusCode::OK, &json!(7)));

    let (status, body) = put_fence(router(), "/orders/1", 6).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        json!({"error": "stale fence", "resource": "orders/0", "fence": 6, "highest": 7})
    );
    assert_eq!(app.log(), ["enter 7", "exit 7", "enter 7", "exit 7"]);

    let (status, body) = put_fence(router(), "/orders/1", 8).await;
    assert_eq!((status, &body["previous"]), (StatusCode::OK, &json!(7)));
    assert_eq!(app.ran(), 3);
}

/// A real register with a switch that makes it unreachable, as a store-backed register is when
/// its store is down.
#[derive(Debug, Default)]
struct SwitchedFences {
    fences: MemoryFences,
    down: AtomicBool,
}

impl SwitchedFences {
    fn check(&self) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::transient("connection refused"));
        }
        Ok(())
    }
}

#[async_trait]
impl FenceRegister for SwitchedFences {
    async fn admit(&self, resource: &ResourceName, fence: u64) -> StoreResult<Admission> {
        self.check()?;
        self.fences.admit(resource, fence).await
    }

    async fn highest(&self, resource: &ResourceName) -> StoreResult<Option<u64>> {
        self.check()?;
        self.fences.highest(resource).await
    }

    fn describe(&self) -> String {
        "switched fence register".to_owned()
    }
}

#[tokio::test]
async fn an_unreachable_register_gets_503_and_the_handler_never_runs() {
    let register = Arc::new(SwitchedFences::default());
    let app = App::new(FenceLayer::new(register.clone()));
    register.down.store(true, Ordering::SeqCst);
    let res = app
        .router
        .clone()
        .oneshot(put_claim("/orders/1", &claim(0, 3)))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.headers()[header::RETRY_AFTER], "1");
    let body: Value =
        serde_json::from_slice(&res.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"], "fence register unavailable");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("switched fence register"),
        "{body}"
    );
    assert!(
        !body.to_string().contains("connection refused"),
        "store details stay in the logs: {body}"
    );
    assert_eq!(app.ran(), 0);

    register.down.store(false, Ordering::SeqCst);
    let (status, _) = put_fence(app.router.clone(), "/orders/1", 3).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(app.ran(), 1);
}

#[tokio::test]
async fn the_resource_closure_chooses_each_requests_resource() {
    let layer = FenceLayer::default()
        .resource(|parts, _claim| parts.uri.path().trim_start_matches('/').to_owned());
    let app = App::new(layer);
    let router = || app.router.clone();
    let (status, body) = put_fence(router(), "/orders/1", 7).await;
    assert_eq!(
        (status, &body["resource"]),
        (StatusCode::OK, &json!("orders/1"))
    );
    // Another resource has its own highest fence.
    let (status, body) = put_fence(router(), "/orders/2", 5).await;
    assert_eq!(
        (status, &body["resource"]),
        (StatusCode::OK, &json!("orders/2"))
    );
    let (status, body) = put_fence(router(), "/orders/1", 5).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        json!({"error": "stale fence", "resource": "orders/1", "fence": 5, "highest": 7})
    );
    assert_eq!(app.ran(), 2);

    // An invalid resource name: 400, and nothing admitted.
    let long: &'static str = format!("/orders/{}", "x".repeat(300)).leak();
    let (status, body) = put_fence(router(), long, 9).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid resource");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("at most 255 bytes"),
        "{body}"
    );
    assert_eq!(app.ran(), 2);
    assert_eq!(app.layer.resources_in_use(), 0);
}

#[tokio::test]
async fn the_default_resource_is_the_claims_lock_and_slot() {
    let app = App::new(FenceLayer::default());
    let router = || app.router.clone();
    let (status, body) = send(router(), put_claim("/orders/1", &claim(2, 9))).await;
    assert_eq!(
        (status, &body["resource"]),
        (StatusCode::OK, &json!("orders/2"))
    );
    // Slots are separate resources: fences of different slots are unrelated numbers.
    let (status, _) = send(router(), put_claim("/orders/1", &claim(3, 1))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(router(), put_claim("/orders/1", &claim(2, 8))).await;
    assert_eq!(
        (status, &body["resource"]),
        (StatusCode::CONFLICT, &json!("orders/2"))
    );

    // The longest lock name makes a default resource longer than a resource name may be.
    let longest = FenceClaim::new(LockName::new("l".repeat(255)).unwrap(), 0, 1);
    let (status, body) = send(router(), put_claim("/orders/1", &longest)).await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid resource"))
    );
    assert_eq!(app.ran(), 2);
}

#[tokio::test]
async fn a_later_fence_waits_for_the_running_one_and_an_older_fence_after_it_is_refused() {
    let (app, mut entered) = App::gated(FenceLayer::default());
    let orders = res("orders/0");

    // Fence 5's handler is running (and slow).
    let five = tokio::spawn(put_fence(app.router.clone(), "/orders/1", 5));
    let (fence, let_five_go) = entered.recv().await.unwrap();
    assert_eq!(fence, 5);

    // Fence 6 arrives: it waits for its turn, not yet admitted.
    let mut six = Box::pin(put_fence(app.router.clone(), "/orders/1", 6));
    assert!(futures::poll!(six.as_mut()).is_pending());
    assert!(entered.try_recv().is_err(), "6 must not start while 5 runs");
    assert_eq!(
        app.layer.register().highest(&orders).await.unwrap(),
        Some(5)
    );
    assert_eq!(app.layer.resources_in_use(), 1);

    // 5 finishes; then 6 is admitted and runs.
    let six = tokio::spawn(six);
    let_five_go.send(()).unwrap();
    assert_eq!(five.await.unwrap().0, StatusCode::OK);
    let (fence, let_six_go) = entered.recv().await.unwrap();
    assert_eq!(fence, 6);
    assert_eq!(
        app.layer.register().highest(&orders).await.unwrap(),
        Some(6)
    );

    // A fence-5 request arriving now (6 admitted, still running) waits, then is refused.
    let mut late_five = Box::pin(put_fence(app.router.clone(), "/orders/1", 5));
    assert!(futures::poll!(late_five.as_mut()).is_pending());
    let_six_go.send(()).unwrap();
    assert_eq!(six.await.unwrap().0, StatusCode::OK);
    let (status, body) = late_five.await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!((&body["fence"], &body["highest"]), (&json!(5), &json!(6)));

    assert!(entered.try_recv().is_err(), "the late 5 never ran");
    assert_eq!(app.log(), ["enter 5", "exit 5", "enter 6", "exit 6"]);
    assert_eq!(app.layer.resources_in_use(), 0);
}

#[tokio::test]
async fn other_resources_do_not_wait_and_idle_resources_are_forgotten() {
    let (app, mut entered) = App::gated(FenceLayer::default());
    let slot = |slot, fence| {
        send(
            app.router.clone(),
            put_claim("/orders/1", &claim(slot, fence)),
        )
    };

    let zero = tokio::spawn(slot(0, 5));
    let (_, let_zero_go) = entered.recv().await.unwrap();
    // Slot 1 is another resource: it runs while slot 0's handler is still inside.
    let one = tokio::spawn(slot(1, 5));
    let (_, let_one_go) = entered.recv().await.unwrap();
    assert_eq!(app.layer.resources_in_use(), 2);
    let_one_go.send(()).unwrap();
    assert_eq!(one.await.unwrap().0, StatusCode::OK);
    assert_eq!(app.layer.resources_in_use(), 1);
    let_zero_go.send(()).unwrap();
    assert_eq!(zero.await.unwrap().0, StatusCode::OK);
    assert_eq!(app.layer.resources_in_use(), 0);

    // Many resources later, the layer remembers none of them (the register remembers all).
    let fences = Arc::new(MemoryFences::new());
    let app = App::new(FenceLayer::new(fences.clone()));
    for s in 0..200 {
        let (status, _) = send(app.router.clone(), put_claim("/orders/1", &claim(s, 1))).await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!((app.layer.resources_in_use(), fences.len()), (0, 200));
}

#[tokio::test]
async fn a_request_dropped_inside_the_handler_hands_the_turn_on() {
    let (app, mut entered) = App::gated(FenceLayer::default());
    let five = tokio::spawn(put_fence(app.router.clone(), "/orders/1", 5));
    let (_, _let_five_go) = entered.recv().await.unwrap();
    let six = tokio::spawn(put_fence(app.router.clone(), "/orders/1", 6));
    // The client of 5 goes away (hyper drops the request's future): 6 gets its turn.
    five.abort();
    assert!(five.await.unwrap_err().is_cancelled());
    let (fence, let_six_go) = entered.recv().await.unwrap();
    assert_eq!(fence, 6);
    let_six_go.send(()).unwrap();
    assert_eq!(six.await.unwrap().0, StatusCode::OK);
    assert_eq!(app.layer.resources_in_use(), 0);
}

#[tokio::test]
async fn the_header_round_trips_the_leases_claim_without_its_token() {
    let elector = Elector::new(Arc::new(MemoryStore::new()));
    let guard = elector
        .try_acquire("orders")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let token = guard.lease().token.to_hex();

    let (name, value) = fence_header(&guard);
    assert_eq!(name.as_str(), FENCE_HEADER);
    let text = value.to_str().unwrap();
    assert_eq!(text.parse::<FenceClaim>().unwrap(), FenceClaim::of(&guard));
    assert!(!text.contains(&token), "the token must stay in the process");
    assert!(
        text.ends_with(&format!("token-tag={}", &token[..8])),
        "{text}"
    );
    assert_eq!(claim_header(&FenceClaim::of(&guard)), (name, value.clone()));

    // `.fenced` replaces, never adds: a request carries one claim.
    let req = Request::put("/orders/1")
        .fenced_by_claim(&claim(0, 1))
        .fenced(&guard)
        .body(())
        .unwrap();
    let all: Vec<_> = req.headers().get_all(FENCE_HEADER).iter().collect();
    assert_eq!(all, [&value]);
}

/// Serves `app` on 127.0.0.1:0; sends requests with hyper's client.
struct Server {
    base: String,
    stop: CancellationToken,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

impl Server {
    async fn start(app: Router) -> Self {
        let stop = CancellationToken::new();
        let (addr, _task) = common::serve(app, stop.clone().cancelled_owned()).await;
        let client = Client::builder(TokioExecutor::new()).build_http();
        Self {
            base: format!("http://{addr}"),
            stop,
            client,
        }
    }

    async fn send(
        &self,
        req: axum::http::request::Builder,
        body: &'static str,
    ) -> (StatusCode, String) {
        let req = req
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        let res = self.client.request(req).await.unwrap();
        let status = res.status();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    fn put(&self, path: &str) -> axum::http::request::Builder {
        Request::put(format!("{}{path}", self.base))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tcp_the_successor_writes_and_the_paused_holder_gets_409() {
    let written: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let to_write = Arc::clone(&written);
    let app = Router::new()
        .route(
            "/orders/{id}",
            put(
                move |Extension(claim): Extension<FenceClaim>, body: String| {
                    let written = Arc::clone(&to_write);
                    async move { written.lock().unwrap().push((claim.to_string(), body)) }
                },
            ),
        )
        .route_layer(FenceLayer::default());
    let server = Server::start(app).await;

    let store = Arc::new(MemoryStore::new());
    let (a, b) = (Elector::new(store.clone()), Elector::new(store));
    let paused = a.try_acquire("orders").await.unwrap().elected().unwrap();
    b.force_release("orders").await.unwrap(); // `paused` froze past its lease
    let successor = b.try_acquire("orders").await.unwrap().elected().unwrap();
    assert!(successor.fence() > paused.fence());

    let (status, _) = server
        .send(server.put("/orders/42").fenced(&successor), "paid")
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = server
        .send(server.put("/orders/42").fenced(&paused), "cancelled")
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({
            "error": "stale fence",
            "resource": "orders/0",
            "fence": paused.fence(),
            "highest": successor.fence(),
        })
    );
    let (status, _) = server.send(server.put("/orders/42"), "no claim").await;
    assert_eq!(status, StatusCode::PRECONDITION_REQUIRED);
    let (status, body) = server
        .send(
            server.put("/orders/42").header(FENCE_HEADER, "lock=orders"),
            "no fence",
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("fence claim lacks `fence`"), "{body}");

    // The client-side layer over hyper's client: the successor writes again.
    let fenced_client = SetFenceLayer::of(&successor).layer(server.client.clone());
    let req = Request::put(format!("{}/orders/42", server.base))
        .body(Full::new(Bytes::from_static(b"shipped")))
        .unwrap();
    let res = fenced_client.oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // The handler saw the successor's claim, twice, and never the paused holder's.
    let claim = FenceClaim::of(&successor).to_string();
    assert_eq!(
        *written.lock().unwrap(),
        [
            (claim.clone(), "paid".to_owned()),
            (claim, "shipped".to_owned())
        ]
    );
    server.stop.cancel();
}
