//! The fence layer's refusals: a status and a short JSON body saying what was wrong.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use leasehold::fence::{FENCE_HEADER, StaleFence};
use serde_json::{Value, json};

/// What every claim must look like, in the refusals that are about the claim.
const EXPECTED: &str = "header `leasehold-fence: lock=<name>; slot=<n>; fence=<n>` \
                        (slot optional, token-tag=<8 hex digits> optional)";

/// Why a request was refused before its handler ran.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No claim header.
    Missing,
    /// Two or more claim headers.
    Repeated,
    /// A claim header that is not text.
    NotText,
    /// A claim that did not parse (its [`ClaimError`](leasehold::fence::ClaimError)'s message).
    Malformed(String),
    /// The resource chosen for the request is not a valid resource name (the error's message).
    BadResource(String),
    /// A higher fence was admitted for the resource before.
    Stale(StaleFence),
    /// The register could not be asked (its description; never the error, which may hold
    /// store details).
    Unavailable(String),
}

impl Refusal {
    /// The status and JSON body.
    pub(crate) fn into_response(self) -> Response<Body> {
        let (status, body) = match self {
            Self::Missing => (
                StatusCode::PRECONDITION_REQUIRED,
                json!({
                    "error": "missing fence claim",
                    "detail": format!("the request has no {FENCE_HEADER} header"),
                    "expected": EXPECTED,
                }),
            ),
            Self::Repeated => claim_error(format!(
                "the request has more than one {FENCE_HEADER} header"
            )),
            Self::NotText => claim_error(format!(
                "the {FENCE_HEADER} header is not visible ASCII text"
            )),
            Self::Malformed(detail) => claim_error(detail),
            Self::BadResource(detail) => (
                StatusCode::BAD_REQUEST,
                json!({ "error": "invalid resource", "detail": detail }),
            ),
            Self::Stale(stale) => (
                StatusCode::CONFLICT,
                json!({
                    "error": "stale fence",
                    "resource": stale.resource.as_str(),
                    "fence": stale.fence,
                    "highest": stale.highest,
                }),
            ),
            Self::Unavailable(register) => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({
                    "error": "fence register unavailable",
                    "detail": format!("{register} could not be reached; the write was not attempted"),
                }),
            ),
        };
        let mut res = json_response(status, &body);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        res
    }
}

fn claim_error(detail: String) -> (StatusCode, Value) {
    (
        StatusCode::BAD_REQUEST,
        json!({ "error": "malformed fence claim", "detail": detail, "expected": EXPECTED }),
    )
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut res = Response::new(Body::from(body.to_string()));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}
