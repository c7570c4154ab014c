//! `leasehold workbench`: serve the interactive lease-timeline page on loopback.

use std::net::SocketAddr;
use std::process::ExitCode;

use leasehold_axum::ShutdownSignal;
use leasehold_workbench::web::{self, WebError};
use tokio::net::TcpListener;

use crate::args::WorkbenchArgs;
use crate::exit::Failure;
use crate::say;

/// Runs `leasehold workbench`.
pub(crate) async fn workbench(args: WorkbenchArgs) -> Result<ExitCode, Failure> {
    let allow_remote = args.remote.allow_remote;
    let (listener, signals) = listen(args.bind, allow_remote).await?;
    serve_until_signal(listener, web::workbench_router(), allow_remote, signals).await
}

/// Installs the SIGINT/SIGTERM handlers, opens the listener (loopback unless `allow_remote`)
/// and prints the one line `listening on http://ADDR/` to stdout, which scripts and tests read
/// to find a port chosen with `--bind 127.0.0.1:0`.
pub(crate) async fn listen(
    bind: SocketAddr,
    allow_remote: bool,
) -> Result<(TcpListener, ShutdownSignal), Failure> {
    let signals = ShutdownSignal::install().map_err(|e| Failure::usage(e.to_string()))?;
    let listener = web::bind(bind, allow_remote).await.map_err(web_failure)?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::usage(format!("cannot read the listening address: {e}")))?;
    if !say::out(&format!("listening on http://{addr}/")) {
        return Err(Failure::usage("cannot write to stdout"));
    }
    Ok((listener, signals))
}

/// Serves (with the shared bounds and `Host:` check of [`web::serve`]) until SIGINT or SIGTERM,
/// then gives the requests in flight up to [`web::SHUTDOWN_GRACE`] and exits 0. A second signal
/// during that time stops at once, with exit code 128 + its number.
pub(crate) async fn serve_until_signal(
    listener: TcpListener,
    router: axum::Router,
    allow_remote: bool,
    mut signals: ShutdownSignal,
) -> Result<ExitCode, Failure> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = web::serve(listener, router, allow_remote, async move {
        let _ = stopped.await;
    });
    let mut server = std::pin::pin!(server);
    let first = tokio::select! {
        result = &mut server => return finished(result),
        signal = signals.recv() => signal,
    };
    tracing::info!(
        %first,
        grace = ?web::SHUTDOWN_GRACE,
        "leasehold: shutting down the web server; requests in flight get the grace period \
         (send the signal again to stop at once)"
    );
    let _ = stop.send(());
    tokio::select! {
        result = &mut server => finished(result),
        second = signals.recv() => {
            tracing::warn!(%second, "leasehold: stopping at once; open connections are closed");
            Ok(ExitCode::from(second.exit_code()))
        }
    }
}

fn finished(result: Result<(), WebError>) -> Result<ExitCode, Failure> {
    result.map_err(web_failure)?;
    Ok(ExitCode::SUCCESS)
}

/// A web error as a usage failure (exit 125): a refused or busy address is the caller's to fix.
pub(crate) fn web_failure(e: WebError) -> Failure {
    Failure::usage(e.to_string())
}
