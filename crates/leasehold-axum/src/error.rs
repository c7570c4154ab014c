//! The crate's error type.

use std::net::SocketAddr;

/// A configuration error found when building a router, a layer or a job set.
///
/// ```
/// use leasehold_axum::{BearerToken, Error};
/// assert!(matches!(BearerToken::new(""), Err(Error::InvalidToken(_))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The management router was built without an authentication decision.
    #[error(
        "the management router needs authentication: call bearer_token(..), behind_caller_auth() \
         (and add your own layer), or loopback_only(addr) for a loopback listener"
    )]
    Unauthenticated,
    /// `loopback_only` was given a non-loopback address.
    #[error("the management router is unauthenticated but {0} is not a loopback address")]
    NotLoopback(SocketAddr),
    /// A bearer token was empty or not a valid header value. The token itself is never shown.
    #[error("invalid bearer token: {0}")]
    InvalidToken(&'static str),
    /// The management path does not start with `/` or is empty.
    #[error("invalid management path {0:?}: it must start with '/'")]
    InvalidPath(String),
    /// Two routes of one router were given the same path (the management report, the metrics
    /// or the health check).
    #[error("two routes share the path {0:?}: give each its own")]
    PathConflict(String),
    /// A global `metrics` recorder is already installed in this process (the facade takes one):
    /// serve that one with [`PrometheusMetrics::from_handle`](crate::PrometheusMetrics::from_handle)
    /// if it is a Prometheus recorder, or render it yourself.
    #[error(
        "a metrics recorder is already installed in this process; install one only, or serve \
         yours with PrometheusMetrics::from_handle"
    )]
    RecorderInstalled,
    /// The Prometheus exporter refused its configuration (for example a histogram's buckets).
    #[error("the Prometheus exporter refused its configuration: {0}")]
    Prometheus(String),
    /// Something that needs a tokio runtime (to spawn a task) was called outside one.
    #[error("{0} needs a tokio runtime: call it from within one")]
    NoRuntime(&'static str),
    /// An invalid lock name, invalid options, or another core error.
    #[error(transparent)]
    Leasehold(#[from] leasehold::Error),
}

impl From<leasehold::error::NameError> for Error {
    fn from(e: leasehold::error::NameError) -> Self {
        Self::Leasehold(e.into())
    }
}

impl From<leasehold::error::OptionsError> for Error {
    fn from(e: leasehold::error::OptionsError) -> Self {
        Self::Leasehold(e.into())
    }
}
