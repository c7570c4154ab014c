//! Errors of the web layer: starting a server, and the JSON errors the API answers with.

use std::net::SocketAddr;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Why a workbench or live-view server could not start or stopped with an error.
///
/// ```
/// use leasehold_workbench::web::{WebError, check_bind};
/// let err = check_bind("192.0.2.7:7878".parse()?, false).unwrap_err();
/// assert!(matches!(err, WebError::NotLoopback(_)));
/// assert!(err.to_string().contains("--allow-remote"));
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The bind address is not a loopback address and remote access was not allowed.
    #[error(
        "refusing to listen on {0}: it is not a loopback address, and the page and its API have \
         no authentication (anyone who can reach the port could read lock holders). Bind to \
         127.0.0.1 or [::1], or pass --allow-remote if the network in front of it is trusted"
    )]
    NotLoopback(SocketAddr),
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("the web server failed: {0}")]
    Serve(#[source] std::io::Error),
    /// The management routes could not be built (e.g. an invalid lock name).
    #[error("cannot build the management routes: {0}")]
    Management(#[from] leasehold_axum::Error),
    /// The live view's slot count was refused by the group options.
    #[error("invalid live view options: {0}")]
    Options(#[source] leasehold::OptionsError),
    /// No lock was given to the live view.
    #[error("the live view needs at least one lock (--lock NAME)")]
    NoLocks,
}

/// The body of every 4xx/5xx answer of the API: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    error: String,
}

impl ApiError {
    /// 400 Bad Request with `message` (say what was wrong and what is allowed).
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            error: message.into(),
        }
    }

    /// 500 Internal Server Error with `message`.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self)).into_response()
    }
}
