//! `leasehold workbench`: serve the interactive lease-timeline page on loopback.

use std::net::SocketAddr;
use std::process::ExitCode;

use leasehold_workbench::web::{self, WebError};
use tokio::net::TcpListener;

use crate::args::WorkbenchArgs;
use crate::exit::Failure;
use crate::say;
use crate::signals::Signals;

/// Runs `leasehold workbench`.
pub(crate) async fn workbench(args: WorkbenchArgs) -> Result<ExitCode, Failure> {
    let (listener, signals) = listen(args.bind, args.remote.allow_remote).await?;
    serve_until_signal(listener, web::workbench_router(), signals).await
}

/// Installs the shutdown signal handlers, opens the listener (loopback unless `allow_remote`)
/// and prints the one line `listening on http://ADDR/` to stdout, which scripts and tests read
/// to find a port chosen with `--bind 127.0.0.1:0`.
pub(crate) async fn listen(
    bind: SocketAddr,
    allow_remote: bool,
) -> Result<(TcpListener, Signals), Failure> {
    let signals = Signals::install()
        .map_err(|e| Failure::usage(format!("cannot install signal handlers: {e}")))?;
    let listener = web::bind(bind, allow_remote).await.map_err(web_failure)?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::usage(format!("cannot read the listening address: {e}")))?;
    if !say::out(&format!("listening on http://{addr}/")) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok((listener, signals))
}

/// Serves until SIGINT, SIGTERM, SIGHUP or SIGQUIT, then finishes the requests in flight.
pub(crate) async fn serve_until_signal(
    listener: TcpListener,
    router: axum::Router,
    mut signals: Signals,
) -> Result<ExitCode, Failure> {
    let shutdown = async move {
        let signal = signals.recv().await;
        tracing::info!(%signal, "leasehold: shutting down the web server");
    };
    web::serve(listener, router, shutdown)
        .await
        .map_err(web_failure)?;
    Ok(ExitCode::SUCCESS)
}

/// A web error as a usage failure (exit 125): a refused or busy address is the caller's to fix.
pub(crate) fn web_failure(e: WebError) -> Failure {
    Failure::usage(e.to_string())
}
