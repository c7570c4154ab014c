//! The [`FencedSink`] adapter of fenced writes over HTTP, so that one scenario (the testkit's
//! paused stale holder, the benchmark's fenced-sinks safety runs) can drive them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, Response, StatusCode};
use axum::routing::put;
use leasehold::LeaderContext;
use leasehold::fence::{
    FenceRegister, FencedSink, MemoryFences, ResourceName, SinkAnswer, SinkError,
};
use leasehold::store::async_trait;
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use tower::ServiceExt;

use super::{FenceLayer, Fenced, FencedRequest};

/// The prefix of a value's path: `/values/<percent-encoded resource>`.
const VALUES: &str = "/values/";

/// The most a reply body is read (a value or a short JSON refusal).
const MAX_REPLY: usize = 64 * 1024;

type Values = Arc<Mutex<HashMap<ResourceName, u64>>>;

fn values(values: &Values) -> MutexGuard<'_, HashMap<ResourceName, u64>> {
    values.lock().unwrap_or_else(|p| p.into_inner())
}

/// A [`FencedSink`] over HTTP, driven in process (`tower::ServiceExt::oneshot`): a [`Router`]
/// whose `PUT /values/<resource>` is behind a [`FenceLayer`] (any register; the resource is
/// taken from the path) and stores the body's number for the resource, and whose
/// `GET /values/<resource>` (not fenced) reads it back (`404` before the first write).
///
/// A write sends the claim of `ctx` in the `leasehold-fence` header: a `2xx` answer is an
/// accepted write, `409 Conflict` a refused one, anything else an error.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use leasehold::MemoryStore;
/// use leasehold_axum::fence::sinks::HttpSink;
/// use leasehold_testkit::SharedStore;
/// use leasehold_testkit::stale_holder::{self, StaleHolderConfig};
///
/// let factory = SharedStore::new(Arc::new(MemoryStore::new()));
/// let config = StaleHolderConfig { rounds: 20, expire_every: 0, ..Default::default() };
/// let report = stale_holder::run(&factory, &HttpSink::in_memory(), &config).await;
/// assert!(report.passed(), "{report}");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HttpSink {
    app: Router,
    layer: FenceLayer,
}

impl HttpSink {
    /// A sink whose layer admits fences through `register`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use leasehold::fence::MemoryFences;
    /// let sink = leasehold_axum::fence::sinks::HttpSink::new(Arc::new(MemoryFences::new()));
    /// ```
    pub fn new(register: Arc<dyn FenceRegister>) -> Self {
        let layer =
            FenceLayer::new(register).resource(|parts, _claim| resource_of(parts.uri.path()));
        let stored = Values::default();
        let (to_write, to_read) = (Arc::clone(&stored), stored);
        let write = move |fenced: Fenced, body: String| {
            let values = Arc::clone(&to_write);
            async move { store(&values, fenced, &body) }
        };
        let read = move |req: Request<Body>| {
            let values = Arc::clone(&to_read);
            async move { load(&values, &req) }
        };
        let app = Router::new().route(
            &format!("{VALUES}{{*resource}}"),
            put(write).route_layer(layer.clone()).get(read),
        );
        Self { app, layer }
    }

    /// A sink over a fresh in-process [`MemoryFences`] register.
    ///
    /// ```
    /// let sink = leasehold_axum::fence::sinks::HttpSink::in_memory();
    /// ```
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryFences::new()))
    }

    /// The router, e.g. to serve it on a real listener.
    ///
    /// ```
    /// let app: axum::Router = leasehold_axum::fence::sinks::HttpSink::in_memory().router();
    /// ```
    pub fn router(&self) -> Router {
        self.app.clone()
    }

    /// The sink's fence layer.
    ///
    /// ```
    /// let sink = leasehold_axum::fence::sinks::HttpSink::in_memory();
    /// assert_eq!(sink.layer().resources_in_use(), 0);
    /// ```
    pub fn layer(&self) -> &FenceLayer {
        &self.layer
    }

    /// The path of `resource`'s value.
    ///
    /// ```
    /// use leasehold::fence::ResourceName;
    /// let path = leasehold_axum::fence::sinks::HttpSink::path(&ResourceName::new("orders/42").unwrap());
    /// assert_eq!(path, "/values/orders%2F42");
    /// ```
    pub fn path(resource: &ResourceName) -> String {
        format!(
            "{VALUES}{}",
            utf8_percent_encode(resource.as_str(), NON_ALPHANUMERIC)
        )
    }

    async fn send(&self, req: Request<Body>) -> Result<(StatusCode, String), SinkError> {
        let res: Response<Body> = self.app.clone().oneshot(req).await?;
        let status = res.status();
        let body = to_bytes(res.into_body(), MAX_REPLY).await?;
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// The resource of a value's path (an invalid one is refused by the layer with `400`).
fn resource_of(path: &str) -> String {
    let encoded = path.strip_prefix(VALUES).unwrap_or_default();
    percent_decode_str(encoded).decode_utf8_lossy().into_owned()
}

fn store(values: &Values, fenced: Fenced, body: &str) -> (StatusCode, String) {
    match body.trim().parse::<u64>() {
        Ok(value) => {
            self::values(values).insert(fenced.resource, value);
            (StatusCode::NO_CONTENT, String::new())
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            format!("the body must be an integer 0-18446744073709551615: {e}"),
        ),
    }
}

fn load(values: &Values, req: &Request<Body>) -> (StatusCode, String) {
    let resource = resource_of(req.uri().path());
    match ResourceName::new(&resource)
        .ok()
        .and_then(|r| self::values(values).get(&r).copied())
    {
        Some(value) => (StatusCode::OK, value.to_string()),
        None => (StatusCode::NOT_FOUND, format!("no value for {resource:?}")),
    }
}

#[async_trait]
impl FencedSink for HttpSink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let req = Request::put(Self::path(resource))
            .fenced(ctx)
            .body(Body::from(value.to_string()))?;
        match self.send(req).await? {
            (status, _) if status.is_success() => Ok(true),
            (StatusCode::CONFLICT, _) => Ok(false),
            (status, body) => Err(format!("PUT {resource}: HTTP {status}: {body}").into()),
        }
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        let req = Request::get(Self::path(resource)).body(Body::empty())?;
        match self.send(req).await? {
            (StatusCode::OK, body) => Ok(Some(body.trim().parse()?)),
            (StatusCode::NOT_FOUND, _) => Ok(None),
            (status, body) => Err(format!("GET {resource}: HTTP {status}: {body}").into()),
        }
    }

    fn describe(&self) -> String {
        format!("http ({})", self.layer.register().describe())
    }
}
