//! The two self-contained HTML pages, compiled into the binary.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

/// The workbench page (`/` of `leasehold workbench`): inline CSS and JavaScript, no external
/// assets, so it works offline.
///
/// ```
/// let page = leasehold_workbench::web::WORKBENCH_HTML;
/// assert!(page.contains("api/simulate") && !page.contains("src=\"http"));
/// ```
pub const WORKBENCH_HTML: &str = include_str!("../../assets/workbench.html");

/// The live view (`/` of `leasehold serve`), self-contained like [`WORKBENCH_HTML`].
///
/// ```
/// assert!(leasehold_workbench::web::LIVE_HTML.contains("api/live"));
/// ```
pub const LIVE_HTML: &str = include_str!("../../assets/live.html");

/// The manual page "Fencing your writes" (`docs/fencing.md`), served as text at `/docs/fencing`
/// for the Fencing scenario's link.
///
/// ```
/// assert!(leasehold_workbench::web::FENCING_MD.starts_with("# Fencing your writes"));
/// ```
pub const FENCING_MD: &str = include_str!("../../docs/fencing.md");

/// A manual page (markdown) as plain UTF-8 text, not to be sniffed as anything else.
pub(crate) fn manual(text: &'static str) -> Response {
    let mut res = text.into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/markdown; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// Only inline code and this origin: the pages load nothing from anywhere else.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// `html` as a response with a strict content security policy and no caching (the page is
/// embedded in the binary, so a new build must never be hidden by a cached copy).
pub(crate) fn respond(html: &'static str) -> Response {
    let mut res = Html(html).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}
