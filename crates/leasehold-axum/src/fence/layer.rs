//! `FenceLayer`: the receiving service admits each request's fence before its handler runs.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Request, Response};
use futures::future::BoxFuture;
use leasehold::fence::{
    Admission, FenceClaim, FenceRegister, MemoryFences, ResourceName, ResourceNameError,
};
use tower::{Layer, Service};
use tracing::{debug, info, warn};

use super::extract::Fenced;
use super::header::FENCE_HEADER_NAME;
use super::reply::Refusal;
use super::turns::{Turn, Turns};

/// Chooses a request's resource.
type ResourceFn =
    dyn Fn(&Parts, &FenceClaim) -> Result<ResourceName, ResourceNameError> + Send + Sync;

/// A tower layer that lets a request reach its handler only with a current fence: the
/// resource side of fenced writes over HTTP (see the [module](super) for the writer's side).
///
/// For each request it
///
/// 1. reads the `leasehold-fence` header: none → `428 Precondition Required`; a malformed claim
///    (or two headers) → `400 Bad Request`, with a JSON body saying what was wrong and what is
///    expected;
/// 2. chooses the resource: `"<lock>/<slot>"` of the claim by default, or what the
///    [`resource`](Self::resource) closure returns (e.g. from the path), validated as a
///    [`ResourceName`] (invalid → `400`);
/// 3. waits for its turn on the resource: while an admitted request for a resource is inside the
///    inner service, a later one for the same resource waits (first come, first served);
/// 4. admits the fence through the [`FenceRegister`]: a fence below one admitted before →
///    `409 Conflict` with `{"error":"stale fence","resource":…,"fence":…,"highest":…}`; a
///    register error → `503 Service Unavailable` (logged at WARN). Either way the inner service
///    is not called;
/// 5. calls the inner service with the [`Fenced`] claim (and the bare
///    [`FenceClaim`]) in the request's extensions, and keeps the turn until it has answered
///    (the response head; a streamed body is not waited for).
///
/// Step 3 is what orders the handlers' effects by fence: once fence *N + 1* is admitted, no
/// request with fence *N* is still inside the handler, and none can start. The turns are per
/// layer (clones share them) and so per process: replicas of a service that share a store-backed
/// register refuse stale fences the same way, but a request admitted on one replica may still
/// run when a higher fence is admitted on another. A turn's entry is removed when its resource
/// has no request left, so memory follows the requests in flight, not the resources ever
/// written.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use axum::{Router, body::Body, http::{Request, StatusCode}, routing::put};
/// use leasehold::{LockName, fence::FenceClaim};
/// use leasehold_axum::fence::{FenceLayer, Fenced, FencedRequest};
/// use tower::ServiceExt;
///
/// let app = Router::new()
///     .route("/orders/{id}", put(|f: Fenced| async move { format!("fence {} wrote {}", f.claim.fence, f.resource) }))
///     // One highest fence per path, in this process (any `Arc<dyn FenceRegister>` fits).
///     .route_layer(FenceLayer::default().resource(|parts, _claim| parts.uri.path().to_owned()));
///
/// let claim = |fence| FenceClaim::new(LockName::new("orders").unwrap(), 0, fence);
/// let put = |fence| Request::put("/orders/42").fenced_by_claim(&claim(fence)).body(Body::empty());
/// assert_eq!(app.clone().oneshot(put(7)?).await?.status(), StatusCode::OK);
/// assert_eq!(app.clone().oneshot(put(6)?).await?.status(), StatusCode::CONFLICT);
/// let unfenced = Request::put("/orders/42").body(Body::empty())?;
/// assert_eq!(app.oneshot(unfenced).await?.status(), StatusCode::PRECONDITION_REQUIRED);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FenceLayer {
    register: Arc<dyn FenceRegister>,
    resource: Option<Arc<ResourceFn>>,
    turns: Arc<Turns>,
}

impl Default for FenceLayer {
    /// A layer over a fresh in-process [`MemoryFences`] register.
    fn default() -> Self {
        Self::new(Arc::new(MemoryFences::new()))
    }
}

impl fmt::Debug for FenceLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FenceLayer")
            .field("register", &self.register.describe())
            .field(
                "resource",
                &if self.resource.is_some() {
                    "chosen per request"
                } else {
                    "<lock>/<slot>"
                },
            )
            .field("resources_in_use", &self.turns.len())
            .finish()
    }
}

impl FenceLayer {
    /// A layer admitting fences through `register`: [`MemoryFences`] for a service served by
    /// one process, a store-backed register (shared by replicas and restarts) otherwise.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use leasehold::fence::MemoryFences;
    /// let fences = Arc::new(MemoryFences::new());
    /// let layer = leasehold_axum::fence::FenceLayer::new(fences.clone());
    /// ```
    pub fn new(register: Arc<dyn FenceRegister>) -> Self {
        Self {
            register,
            resource: None,
            turns: Arc::default(),
        }
    }

    /// Chooses each request's resource with `choose` (from the path, a header, the claim…)
    /// instead of the claim's `"<lock>/<slot>"`. Its answer is validated as a
    /// [`ResourceName`] (1–255 bytes, no control characters); an invalid one is answered with
    /// `400 Bad Request`. Write each resource under one lock (and slot) only: fences of
    /// different locks are unrelated numbers.
    ///
    /// ```
    /// use leasehold_axum::fence::FenceLayer;
    /// // `PUT /accounts/7/balance` and `PUT /accounts/7/limit` have one highest fence each.
    /// let layer = FenceLayer::default().resource(|parts, _claim| parts.uri.path().to_owned());
    /// // One per account, whatever the route.
    /// let layer = FenceLayer::default().resource(|parts, _claim| {
    ///     parts.uri.path().split('/').take(3).collect::<Vec<_>>().join("/")
    /// });
    /// ```
    pub fn resource<F, R>(mut self, choose: F) -> Self
    where
        F: Fn(&Parts, &FenceClaim) -> R + Send + Sync + 'static,
        R: AsRef<str>,
    {
        self.resource = Some(Arc::new(move |parts: &Parts, claim: &FenceClaim| {
            ResourceName::new(choose(parts, claim))
        }));
        self
    }

    /// The register fences are admitted through.
    ///
    /// ```
    /// let layer = leasehold_axum::fence::FenceLayer::default();
    /// assert_eq!(layer.register().describe(), "in-process fence register");
    /// ```
    pub fn register(&self) -> &Arc<dyn FenceRegister> {
        &self.register
    }

    /// How many resources have a request inside the inner service or waiting for its turn
    /// (0 when the service is idle: entries do not outlive their requests).
    ///
    /// ```
    /// assert_eq!(leasehold_axum::fence::FenceLayer::default().resources_in_use(), 0);
    /// ```
    pub fn resources_in_use(&self) -> usize {
        self.turns.len()
    }

    /// Steps 1–4: the admitted claim and the turn it holds, or why the request is refused.
    async fn admit(&self, parts: &Parts) -> Result<(Fenced, Turn), Refusal> {
        let claim = read_claim(&parts.headers)?;
        let resource = match &self.resource {
            Some(choose) => choose(parts, &claim),
            None => ResourceName::new(format!("{}/{}", claim.lock, claim.slot)),
        }
        .map_err(|e| {
            debug!(error = %e, "fenced request refused: invalid resource");
            Refusal::BadResource(e.to_string())
        })?;
        let turn = self.turns.take(&resource).await;
        match self.register.admit(&resource, claim.fence).await {
            Ok(Admission::Admitted { previous }) => {
                Ok((Fenced::new(claim, resource, previous), turn))
            }
            Ok(Admission::Stale(stale)) => {
                info!(
                    resource = %stale.resource,
                    fence = stale.fence,
                    highest = stale.highest,
                    lock = %claim.lock,
                    "stale fence refused"
                );
                Err(Refusal::Stale(stale))
            }
            Err(e) => {
                let register = self.register.describe();
                warn!(error = %e, register, %resource, "fence register unavailable");
                Err(Refusal::Unavailable(register))
            }
        }
    }
}

/// The one claim of a request.
fn read_claim(headers: &HeaderMap) -> Result<FenceClaim, Refusal> {
    let mut values = headers.get_all(FENCE_HEADER_NAME).iter();
    let value = values.next().ok_or(Refusal::Missing)?;
    if values.next().is_some() {
        return Err(Refusal::Repeated);
    }
    let text = value.to_str().map_err(|_| Refusal::NotText)?;
    text.parse().map_err(|e: leasehold::fence::ClaimError| {
        debug!(error = %e, "fenced request refused: malformed claim");
        Refusal::Malformed(e.to_string())
    })
}

impl<S> Layer<S> for FenceLayer {
    type Service = FenceService<S>;
    fn layer(&self, inner: S) -> FenceService<S> {
        FenceService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`FenceLayer`].
///
/// ```
/// # use std::convert::Infallible;
/// use tower::Layer;
/// let svc = leasehold_axum::fence::FenceLayer::default().layer(tower::service_fn(
///     |_req: axum::http::Request<axum::body::Body>| async {
///         Ok::<_, Infallible>(axum::response::Response::new(axum::body::Body::empty()))
///     },
/// ));
/// ```
#[derive(Clone)]
pub struct FenceService<S> {
    inner: S,
    layer: FenceLayer,
}

impl<S> fmt::Debug for FenceService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FenceService")
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<B>> for FenceService<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The service that was polled ready is the one called; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            let (fenced, turn) = match layer.admit(&parts).await {
                Ok(admitted) => admitted,
                Err(refusal) => return Ok(refusal.into_response()),
            };
            parts.extensions.insert(fenced.claim.clone());
            parts.extensions.insert(fenced);
            let response = inner.call(Request::from_parts(parts, body)).await;
            drop(turn);
            response
        })
    }
}
