//! The writer's side: the `leasehold-fence` header of a lease, on any `http` request.

use std::task::{Context, Poll};

use axum::http::{HeaderName, HeaderValue, Request, request};
use leasehold::LeaderContext;
use leasehold::fence::{FENCE_HEADER, FenceClaim};
use tower::{Layer, Service};

/// [`FENCE_HEADER`] as an `http` header name (`leasehold-fence`).
///
/// ```
/// assert_eq!(leasehold_axum::fence::FENCE_HEADER_NAME.as_str(), "leasehold-fence");
/// ```
pub const FENCE_HEADER_NAME: HeaderName = HeaderName::from_static(FENCE_HEADER);

/// The header that carries the claim of a held lease: `(leasehold-fence, "lock=…; slot=…;
/// fence=…; token-tag=…")`. Hand it to any client built on `http` — reqwest's
/// `.header(name, value)`, hyper's `Request::builder().header(name, value)`.
///
/// The value carries the token's tag (its first 32 bits, as logs show it), never the token.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("orders").await?.elected().expect("free");
/// let (name, value) = leasehold_axum::fence::fence_header(&guard);
/// assert_eq!(name, "leasehold-fence");
/// assert!(value.to_str().unwrap().starts_with(&format!("lock=orders; slot=0; fence={}", guard.fence())));
/// # Ok(()) }
/// ```
pub fn fence_header(ctx: &LeaderContext) -> (HeaderName, HeaderValue) {
    claim_header(&FenceClaim::of(ctx))
}

/// The header that carries `claim` (for a writer that knows only lock, slot and fence, such as a
/// process given `$LEASEHOLD_LOCK`, `$LEASEHOLD_SLOT` and `$LEASEHOLD_FENCE`).
///
/// ```
/// use leasehold::LockName;
/// use leasehold::fence::FenceClaim;
///
/// let claim = FenceClaim::new(LockName::new("orders").unwrap(), 0, 42);
/// let (name, value) = leasehold_axum::fence::claim_header(&claim);
/// assert_eq!((name.as_str(), value.to_str().unwrap()), ("leasehold-fence", "lock=orders; slot=0; fence=42"));
/// ```
pub fn claim_header(claim: &FenceClaim) -> (HeaderName, HeaderValue) {
    (FENCE_HEADER_NAME, claim_value(claim))
}

/// A claim's text is ASCII letters, digits and `_-:=;` and spaces (lock names are ASCII), so it
/// is always a valid header value; the fallback (which the resource would refuse as malformed
/// with `400`) is unreachable.
fn claim_value(claim: &FenceClaim) -> HeaderValue {
    HeaderValue::try_from(claim.to_string())
        .unwrap_or_else(|_| HeaderValue::from_static("unrepresentable fence claim"))
}

/// Sets the `leasehold-fence` header on an `http::request::Builder` (hyper's, or any other
/// client's built on `http`), replacing one set before.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use axum::http::Request;
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_axum::fence::FencedRequest;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("orders").await?.elected().expect("free");
/// let request = Request::put("http://billing.internal/orders/42")
///     .fenced(&guard)
///     .body(String::from("paid"))?;
/// assert!(request.headers().contains_key("leasehold-fence"));
/// # Ok(()) }
/// ```
pub trait FencedRequest: Sized {
    /// Sets the header to the claim of the lease of `ctx` (see [`fence_header`]): the entry of
    /// every fenced request.
    fn fenced(self, ctx: &LeaderContext) -> Self {
        self.fenced_by_claim(&FenceClaim::of(ctx))
    }

    /// Sets the header to `claim`, given by hand rather than by a holder's context (see
    /// [`claim_header`]).
    fn fenced_by_claim(self, claim: &FenceClaim) -> Self;

    /// Sets the header to `claim`.
    #[deprecated(note = "use `FencedRequest::fenced_by_claim(claim)`")]
    fn fence_claim(self, claim: &FenceClaim) -> Self {
        self.fenced_by_claim(claim)
    }
}

impl FencedRequest for request::Builder {
    fn fenced_by_claim(mut self, claim: &FenceClaim) -> Self {
        // `insert`, not `header` (which appends): a second claim would make the request
        // malformed (the layer refuses a request with two claims).
        if let Some(headers) = self.headers_mut() {
            headers.insert(FENCE_HEADER_NAME, claim_value(claim));
        }
        self
    }
}

/// A tower layer for outgoing clients: every request gets the `leasehold-fence` header of one
/// lease (replacing one set before).
///
/// Build one per lease, inside the leader's action: the claim is taken when the layer is made
/// (a lease's fence never changes while it is held).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::{convert::Infallible, sync::Arc};
/// use axum::http::{Request, Response};
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_axum::fence::SetFenceLayer;
/// use tower::{Layer, Service};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("orders").await?.elected().expect("free");
/// // Any client service: hyper-util's `Client`, a `tower::ServiceBuilder` stack, …
/// let client = tower::service_fn(|req: Request<String>| async move {
///     Ok::<_, Infallible>(Response::new(req.headers().contains_key("leasehold-fence")))
/// });
/// let mut fenced = SetFenceLayer::of(&guard).layer(client);
/// let response = fenced.call(Request::new(String::new())).await?;
/// assert!(*response.body());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SetFenceLayer {
    value: HeaderValue,
}

impl SetFenceLayer {
    /// Sets the claim of the lease of `ctx`: the entry of every fenced client.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let guard = Elector::new(Arc::new(MemoryStore::new())).try_acquire("orders").await?.elected().expect("free");
    /// let layer = leasehold_axum::fence::SetFenceLayer::of(&guard);
    /// # Ok(()) }
    /// ```
    pub fn of(ctx: &LeaderContext) -> Self {
        Self::of_claim(&FenceClaim::of(ctx))
    }

    /// Sets `claim`, given by hand rather than by a holder's context.
    ///
    /// ```
    /// use leasehold::{LockName, fence::FenceClaim};
    /// let claim = FenceClaim::new(LockName::new("orders").unwrap(), 0, 42);
    /// let layer = leasehold_axum::fence::SetFenceLayer::of_claim(&claim);
    /// ```
    pub fn of_claim(claim: &FenceClaim) -> Self {
        Self {
            value: claim_value(claim),
        }
    }

    /// Sets the claim of the lease of `ctx`.
    #[deprecated(note = "use `SetFenceLayer::of(ctx)`")]
    pub fn new(ctx: &LeaderContext) -> Self {
        Self::of(ctx)
    }

    /// Sets `claim`.
    #[deprecated(note = "use `SetFenceLayer::of_claim(claim)`")]
    pub fn claim(claim: &FenceClaim) -> Self {
        Self::of_claim(claim)
    }
}

impl<S> Layer<S> for SetFenceLayer {
    type Service = SetFence<S>;
    fn layer(&self, inner: S) -> SetFence<S> {
        SetFence {
            inner,
            value: self.value.clone(),
        }
    }
}

/// The client service made by [`SetFenceLayer`]: sets the header, then calls `inner`.
///
/// ```
/// # use std::convert::Infallible;
/// use tower::Layer;
/// use leasehold::{LockName, fence::FenceClaim};
/// let claim = FenceClaim::new(LockName::new("orders").unwrap(), 0, 42);
/// let client = tower::service_fn(|_req: axum::http::Request<()>| async { Ok::<_, Infallible>(()) });
/// let fenced: leasehold_axum::fence::SetFence<_> = leasehold_axum::fence::SetFenceLayer::of_claim(&claim).layer(client);
/// ```
#[derive(Debug, Clone)]
pub struct SetFence<S> {
    inner: S,
    value: HeaderValue,
}

impl<S, B> Service<Request<B>> for SetFence<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.headers_mut()
            .insert(FENCE_HEADER_NAME, self.value.clone());
        self.inner.call(req)
    }
}
