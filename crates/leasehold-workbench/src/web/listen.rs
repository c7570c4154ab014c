//! Opening the listening socket (loopback unless allowed otherwise) and serving until shutdown.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};

use axum::Router;
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
pub async fn bind(addr: SocketAddr, allow_remote: bool) -> Result<TcpListener, WebError> {
    check_bind(addr, allow_remote)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| WebError::Bind { addr, source })
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish.
///
/// ```no_run
/// # async fn demo() -> Result<(), leasehold_workbench::web::WebError> {
/// use leasehold_workbench::web;
/// let listener = web::bind(web::WORKBENCH_BIND, false).await?;
/// // In a program, resolve the future on Ctrl-C / SIGTERM instead of never.
/// web::serve(listener, web::workbench_router(), std::future::pending()).await
/// # }
/// ```
pub async fn serve<F>(listener: TcpListener, router: Router, shutdown: F) -> Result<(), WebError>
where
    F: Future<Output = ()> + Send + 'static,
{
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(WebError::Serve)
}
