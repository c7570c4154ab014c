//! Fenced writes over HTTP: the writer sends its fence in a header, the receiving service refuses
//! stale ones.
//!
//! A holder paused past its lease (a GC pause, a frozen VM) may wake up and call a service after
//! its successor did. The service is the one place that can tell: every request carries the
//! writer's [`FenceClaim`] in the [`FENCE_HEADER`] header (`leasehold-fence: lock=…; slot=…;
//! fence=…; token-tag=…`), and [`FenceLayer`] admits it through a
//! [`FenceRegister`](leasehold::fence::FenceRegister) — the highest fence per resource — before
//! the handler runs. A stale fence gets `409 Conflict` and the handler never runs.
//!
//! * Writer side: [`fence_header`] / [`claim_header`] give the `(HeaderName, HeaderValue)` pair
//!   for any client built on `http` (reqwest's `.header(name, value)`, hyper's request builder);
//!   [`FencedRequest::fenced`] sets it on an `http::request::Builder`; [`SetFenceLayer`] sets it
//!   on every request of a tower client. The token itself never goes on the wire: a claim
//!   carries only its tag.
//! * Resource side: [`FenceLayer`] (a tower layer for `Router::route_layer` or `layer`), the
//!   [`Fenced`] extractor for handlers.
//!
//! | the request | answer | handler runs |
//! |---|---|---|
//! | no `leasehold-fence` header | `428 Precondition Required` | no |
//! | a malformed claim, or an invalid resource name | `400 Bad Request` | no |
//! | a fence below one the resource admitted | `409 Conflict` | no |
//! | the register cannot be reached | `503 Service Unavailable` | no |
//! | otherwise | the handler's answer | yes, one request per resource at a time |
//!
//! [`FenceClaim`]: leasehold::fence::FenceClaim
//! [`FENCE_HEADER`]: leasehold::fence::FENCE_HEADER

mod extract;
mod header;
mod layer;
mod reply;
pub mod sinks;
mod turns;

pub use extract::{Fenced, NotFenced};
pub use header::{
    FENCE_HEADER_NAME, FencedRequest, SetFence, SetFenceLayer, claim_header, fence_header,
};
pub use layer::{FenceLayer, FenceService};
