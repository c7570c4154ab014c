//! Bearer-token authentication for the management routes (usable on any route).

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use futures::future::{Either, Ready, ready};
use subtle::ConstantTimeEq;
use tower::{Layer, Service};
use tracing::debug;

use crate::error::Error;

/// A secret bearer token. Its `Debug` form is redacted and it is never logged.
///
/// ```
/// use leasehold_axum::BearerToken;
/// let token = BearerToken::new("s3cret-token")?;
/// assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
/// assert!(BearerToken::new("has space").is_err());
/// # Ok::<(), leasehold_axum::Error>(())
/// ```
#[derive(Clone)]
pub struct BearerToken(Arc<[u8]>);

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// A token from its text: non-empty visible ASCII without spaces (RFC 6750 `b64token`
    /// characters and the like). Use a long random value (e.g. 32 random bytes, hex-encoded).
    pub fn new(secret: impl AsRef<str>) -> Result<Self, Error> {
        let secret = secret.as_ref();
        if secret.is_empty() {
            return Err(Error::InvalidToken("it is empty"));
        }
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::InvalidToken(
                "it must be visible ASCII without spaces",
            ));
        }
        Ok(Self(Arc::from(secret.as_bytes())))
    }

    /// The token from environment variable `var`; `Ok(None)` when it is unset or empty.
    ///
    /// ```
    /// # use leasehold_axum::BearerToken;
    /// assert!(BearerToken::from_env("LEASEHOLD_AXUM_DOC_UNSET_VAR")?.is_none());
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn from_env(var: &str) -> Result<Option<Self>, Error> {
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => Self::new(v).map(Some),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(Error::InvalidToken("the variable is not valid UTF-8"))
            }
        }
    }

    /// True when `presented` equals the token. The comparison takes the same time whatever the
    /// position of the first differing byte (only the length may show).
    ///
    /// ```
    /// # use leasehold_axum::BearerToken;
    /// let token = BearerToken::new("abc")?;
    /// assert!(token.matches(b"abc") && !token.matches(b"abd") && !token.matches(b"ab"));
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_ref().ct_eq(presented).into()
    }

    /// Checks an `Authorization` header value of the form `Bearer <token>`.
    fn admits(&self, header: Option<&HeaderValue>) -> bool {
        let Some(value) = header.map(HeaderValue::as_bytes) else {
            return false;
        };
        match value.split_at_checked(7) {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case(b"bearer ") => {
                self.matches(rest.trim_ascii())
            }
            _ => false,
        }
    }
}

/// A tower layer that admits only requests carrying `Authorization: Bearer <token>` and answers
/// others with `401 Unauthorized` and `WWW-Authenticate: Bearer`. Usable on any route.
///
/// ```
/// use axum::{Router, routing::get};
/// use leasehold_axum::{BearerAuthLayer, BearerToken};
/// let ops: Router = Router::new()
///     .route("/ops/ping", get(|| async { "pong" }))
///     .layer(BearerAuthLayer::new(BearerToken::new("t0ken")?));
/// # Ok::<(), leasehold_axum::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BearerAuthLayer {
    token: BearerToken,
}

impl BearerAuthLayer {
    /// A layer that checks `token`.
    pub fn new(token: BearerToken) -> Self {
        Self { token }
    }
}

impl<S> Layer<S> for BearerAuthLayer {
    type Service = BearerAuthService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        BearerAuthService {
            inner,
            token: self.token.clone(),
        }
    }
}

/// The service made by [`BearerAuthLayer`].
///
/// ```
/// use tower::Layer;
/// use leasehold_axum::{BearerAuthLayer, BearerToken};
/// let svc = BearerAuthLayer::new(BearerToken::new("t0ken")?).layer(tower::service_fn(
///     |_req: axum::http::Request<axum::body::Body>| async {
///         Ok::<_, std::convert::Infallible>(axum::response::Response::new(axum::body::Body::empty()))
///     },
/// ));
/// # Ok::<(), leasehold_axum::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BearerAuthService<S> {
    inner: S,
    token: BearerToken,
}

impl<S, B> Service<Request<B>> for BearerAuthService<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response<Body>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if self.token.admits(req.headers().get(header::AUTHORIZATION)) {
            Either::Right(self.inner.call(req))
        } else {
            debug!(path = %req.uri().path(), "request refused, missing or wrong bearer token");
            Either::Left(ready(Ok(unauthorized())))
        }
    }
}

fn unauthorized() -> Response<Body> {
    let mut res = Response::new(Body::from(r#"{"error":"unauthorized"}"#));
    *res.status_mut() = StatusCode::UNAUTHORIZED;
    let h = res.headers_mut();
    h.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Bearer realm="leasehold""#),
    );
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_forms() -> Result<(), Error> {
        let t = BearerToken::new("abc")?;
        let admits = |v: &'static str| t.admits(Some(&HeaderValue::from_static(v)));
        assert!(admits("Bearer abc"));
        assert!(admits("bearer abc"));
        assert!(!admits("Bearer abcd"));
        assert!(!admits("Basic abc"));
        assert!(!admits("Bearer"));
        assert!(!t.admits(None));
        Ok(())
    }
}
