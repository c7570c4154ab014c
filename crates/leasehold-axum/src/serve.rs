//! Serving an axum router with bounds: a header read timeout (against clients that never finish a
//! request) and a graceful shutdown that waits for requests in flight only so long.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long a client may take to send the whole head of a request (request line and headers),
/// counted from the moment the server starts waiting for it; then the connection is closed. This
/// also closes a kept-alive connection that sends nothing for this long, so a client that opens
/// connections and trickles bytes ("slowloris") cannot hold the server.
///
/// ```
/// assert_eq!(leasehold_axum::HEADER_READ_TIMEOUT.as_secs(), 10);
/// ```
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests in flight may still take once shutdown starts. New connections are refused
/// at once; when the grace period ends, connections still open are closed and [`serve`] returns.
///
/// ```
/// assert_eq!(leasehold_axum::SHUTDOWN_GRACE.as_secs(), 3);
/// ```
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Serves `router` on `listener` (HTTP/1.1) like `axum::serve(..).with_graceful_shutdown(shutdown)`,
/// with two bounds that `axum::serve` does not have:
///
/// * every request head must arrive within [`HEADER_READ_TIMEOUT`], else the connection is
///   closed — a client that opens a connection and never finishes its request cannot hold a
///   connection, nor the shutdown, forever;
/// * once `shutdown` resolves, new connections are refused at once, requests in flight get
///   [`SHUTDOWN_GRACE`], and then the connections still open are closed and the future resolves.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" }));
/// leasehold_axum::serve(listener, app, leasehold_axum::shutdown_signal()).await;
/// # Ok(()) }
/// ```
///
/// Errors of single connections (resets, timeouts, malformed requests) only end that connection
/// (logged at DEBUG); a failing `accept` (e.g. too many open files) is logged and retried.
///
/// # Cancel safety
///
/// Dropping the future stops accepting and aborts every connection at once (no grace period):
/// this is how a second signal can stop a server that is still shutting down.
pub async fn serve<F>(listener: TcpListener, router: Router, shutdown: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let (stopping, stop) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let conn = http.serve_connection(
                        TokioIo::new(stream),
                        TowerToHyperService::new(router.clone()),
                    );
                    let mut stop = stop.clone();
                    connections.spawn(async move {
                        let mut conn = std::pin::pin!(conn);
                        tokio::select! {
                            result = conn.as_mut() => {
                                if let Err(e) = result {
                                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                                }
                            }
                            () = async {
                                // The guard it returns is not Send: drop it at once.
                                let _ = stop.wait_for(|stopping| *stopping).await;
                            } => {
                                conn.as_mut().graceful_shutdown();
                                if let Err(e) = conn.await {
                                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                                }
                            }
                        }
                    });
                }
                Err(e) => accept_failed(&e).await,
            },
        }
    }
    drop(listener);
    let _ = stopping.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::info!(
            open = connections.len(),
            grace = ?SHUTDOWN_GRACE,
            "closing the connections still open after the shutdown grace period"
        );
        connections.shutdown().await;
    }
}

/// An `accept` error: a connection that failed before it was accepted is the client's; anything
/// else (e.g. too many open files) is logged and retried after a short pause, as the listener
/// itself stays usable.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tracing::debug!(error = %e, "a connection failed before it was accepted");
    } else {
        tracing::warn!(error = %e, "cannot accept a connection; retrying in 100 ms");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
