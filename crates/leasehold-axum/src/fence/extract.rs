//! `Fenced`: what the fence layer admitted, for the handler.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use leasehold::fence::{FenceClaim, ResourceName};
use serde_json::json;

use super::reply::json_response;

/// The admitted claim of a request that passed [`FenceLayer`](super::FenceLayer): an axum
/// extractor, and a request extension (`Extension<Fenced>`; the bare
/// [`FenceClaim`] is an extension too).
///
/// While the handler runs, no other request for the same resource does (through the same
/// layer), and no request with a lower fence can start: write to the resource here.
///
/// ```
/// use leasehold_axum::fence::Fenced;
///
/// async fn handler(fenced: Fenced) -> String {
///     format!("{} accepted fence {}", fenced.resource, fenced.claim.fence)
/// }
/// let app: axum::Router = axum::Router::new()
///     .route("/orders/42", axum::routing::put(handler))
///     .route_layer(leasehold_axum::fence::FenceLayer::default());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fenced {
    /// The writer's claim (lock, slot, fence, token tag) from the request's header.
    pub claim: FenceClaim,
    /// The resource the fence was admitted for.
    pub resource: ResourceName,
    /// The resource's highest fence before this request (`None` for its first write).
    pub previous: Option<u64>,
}

impl Fenced {
    pub(crate) fn new(claim: FenceClaim, resource: ResourceName, previous: Option<u64>) -> Self {
        Self {
            claim,
            resource,
            previous,
        }
    }
}

/// The rejection of the [`Fenced`] extractor on a route without a
/// [`FenceLayer`](super::FenceLayer): `500 Internal Server Error` (a wiring mistake of the
/// service, not the client's), and the handler does not run.
///
/// ```
/// use axum::response::IntoResponse;
/// let res = leasehold_axum::fence::NotFenced.into_response();
/// assert_eq!(res.status(), axum::http::StatusCode::INTERNAL_SERVER_ERROR);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the route takes `Fenced` but has no FenceLayer (add it with Router::route_layer)")]
pub struct NotFenced;

impl IntoResponse for NotFenced {
    fn into_response(self) -> Response {
        json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": "route not fenced", "detail": self.to_string() }),
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Fenced {
    type Rejection = NotFenced;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Self>().cloned().ok_or(NotFenced)
    }
}
