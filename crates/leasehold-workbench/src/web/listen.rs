//! Opening the listening socket (loopback unless allowed otherwise) and serving until shutdown,
//! with bounded header reading, a bounded graceful shutdown and a `Host:` check.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
pub use leasehold_axum::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE};
use tokio::net::TcpListener;

use crate::web::WebError;

/// Where `leasehold workbench` listens unless told otherwise.
///
/// ```
/// assert_eq!(leasehold_workbench::web::WORKBENCH_BIND.to_string(), "127.0.0.1:7878");
/// ```
pub const WORKBENCH_BIND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 7878);

/// Where `leasehold serve` listens unless told otherwise.
///
/// ```
/// assert_eq!(leasehold_workbench::web::LIVE_BIND.to_string(), "127.0.0.1:7879");
/// ```
pub const LIVE_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 7879);

/// Checks that `addr` is a loopback address, unless `allow_remote`: the pages have no
/// authentication, so exposing them beyond this machine must be a deliberate choice.
///
/// ```
/// use leasehold_workbench::web::{WebError, check_bind};
/// assert!(check_bind("127.0.0.1:0".parse()?, false).is_ok());
/// assert!(check_bind("[::1]:7878".parse()?, false).is_ok());
/// assert!(matches!(check_bind("0.0.0.0:7878".parse()?, false), Err(WebError::NotLoopback(_))));
/// assert!(check_bind("0.0.0.0:7878".parse()?, true).is_ok());
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
pub fn check_bind(addr: SocketAddr, allow_remote: bool) -> Result<(), WebError> {
    if allow_remote || addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(WebError::NotLoopback(addr))
    }
}

/// Checks `addr` with [`check_bind`] and opens the listening socket (port 0 picks a free port;
/// ask the listener for `local_addr()` to learn it).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let listener = leasehold_workbench::web::bind("127.0.0.1:0".parse()?, false).await?;
/// assert_ne!(listener.local_addr()?.port(), 0);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`WebError`] for a non-loopback address without `allow_remote`, or the I/O error of binding.
///
/// # Cancel safety
///
/// Dropping the future before it resolves leaves no socket bound.
pub async fn bind(addr: SocketAddr, allow_remote: bool) -> Result<TcpListener, WebError> {
    check_bind(addr, allow_remote)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| WebError::Bind { addr, source })
}

/// Serves `router` on `listener` until `shutdown` resolves, with the bounds of
/// [`leasehold_axum::serve`]: each request head must arrive within [`HEADER_READ_TIMEOUT`], and
/// after `shutdown` requests in flight get at most [`SHUTDOWN_GRACE`] before the connections still
/// open are closed. Every request passes the [`HostCheck`] for the listener's address and
/// `allow_remote` (the same value as given to [`bind`]): without `allow_remote`, a request naming
/// any other host is answered `421 Misdirected Request`.
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold_workbench::web::WebError> {
/// use leasehold_workbench::web;
/// let listener = web::bind(web::WORKBENCH_BIND, false).await?;
/// // SIGINT or SIGTERM starts the shutdown.
/// web::serve(listener, web::workbench_router(), false, leasehold_axum::shutdown_signal()).await
/// # }
/// ```
///
/// # Errors
///
/// [`WebError::Serve`] if the listener's address cannot be read. Errors of single connections
/// (resets, timeouts, malformed requests) only end that connection.
///
/// # Cancel safety
///
/// Dropping the future stops accepting and aborts every connection at once (no grace period):
/// this is how a second signal stops a server that is still shutting down.
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    allow_remote: bool,
    shutdown: F,
) -> Result<(), WebError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let bound = listener.local_addr().map_err(WebError::Serve)?;
    let router = HostCheck::new(bound, allow_remote).apply(router);
    leasehold_axum::serve(listener, router, shutdown).await;
    Ok(())
}

/// The `Host:` check against DNS rebinding: a web page on another site cannot read a server on
/// this machine's loopback address, unless it makes its own name resolve to 127.0.0.1 — its
/// requests then carry its own name in `Host:`. So, unless remote access was allowed, a request
/// is answered only if it names this server: `localhost`, `127.0.0.1`, `[::1]` or the address
/// listened on, each with the port listened on (no port means 80), in `Host:` and in an
/// absolute request target. Anything else, or no host at all, gets `421 Misdirected Request`
/// with a one-line explanation.
///
/// [`serve`] applies it to every request; [`apply`](Self::apply) adds it to another router.
///
/// ```
/// use leasehold_workbench::web::HostCheck;
/// let check = HostCheck::new("127.0.0.1:7878".parse()?, false);
/// assert!(check.allows("localhost:7878"));
/// assert!(check.allows("127.0.0.1:7878"));
/// assert!(check.allows("[::1]:7878"));
/// assert!(!check.allows("evil.example:7878"));
/// assert!(!check.allows("localhost:8080")); // another port
/// assert!(!check.allows("localhost")); // port 80
/// assert!(HostCheck::new("127.0.0.1:7878".parse()?, true).allows("evil.example"));
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct HostCheck {
    bound: SocketAddr,
    allow_remote: bool,
}

impl HostCheck {
    /// The check for a server listening on `bound` (its real address: after binding port 0,
    /// the listener's `local_addr()`); `allow_remote` accepts every host.
    pub fn new(bound: SocketAddr, allow_remote: bool) -> Self {
        Self {
            bound,
            allow_remote,
        }
    }

    /// Whether a request naming `host` (the value of `Host:`, `name[:port]`) is answered.
    pub fn allows(&self, host: &str) -> bool {
        if self.allow_remote {
            return true;
        }
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        if port != self.bound.port() {
            return false;
        }
        let listened = match self.bound.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        ["localhost", "127.0.0.1", "[::1]", listened.as_str()]
            .iter()
            .any(|allowed| name.eq_ignore_ascii_case(allowed))
    }

    /// `router` with this check in front of every route (and of its fallback).
    pub fn apply(self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(self, check_host))
    }

    fn allows_request(&self, req: &Request) -> bool {
        if self.allow_remote {
            return true;
        }
        let header = req.headers().get(header::HOST);
        let target = req.uri().authority();
        if header.is_none() && target.is_none() {
            return false;
        }
        let header_ok = header.is_none_or(|h| h.to_str().is_ok_and(|h| self.allows(h)));
        let target_ok = target.is_none_or(|a| self.allows(a.as_str()));
        header_ok && target_ok
    }
}

/// Splits `name[:port]` (`[v6]` in brackets); the port defaults to 80. `None` if malformed.
fn split_host(host: &str) -> Option<(&str, u16)> {
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        if rest.is_empty() {
            (name, None)
        } else {
            (name, Some(rest.strip_prefix(':')?))
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port = match port {
        None => 80,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok()?,
        Some(_) => return None,
    };
    Some((name, port))
}

async fn check_host(State(check): State<HostCheck>, req: Request, next: Next) -> Response {
    if check.allows_request(&req) {
        return next.run(req).await;
    }
    let port = check.bound.port();
    (
        StatusCode::MISDIRECTED_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!(
            "421 Misdirected Request: this server answers only to http://localhost:{port}/ and \
             http://127.0.0.1:{port}/ (a protection against DNS rebinding); start it with \
             --allow-remote to accept other host names\n"
        ),
    )
        .into_response()
}
