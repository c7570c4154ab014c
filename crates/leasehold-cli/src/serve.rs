//! `leasehold serve`: a live view of the holders of chosen locks on a real store, beside the
//! management report of leasehold-axum.

use std::process::ExitCode;

use leasehold_workbench::web::LiveView;

use crate::args::ServeArgs;
use crate::exit::Failure;
use crate::store::StoreUrl;
use crate::workbench::{listen, serve_until_signal, web_failure};

/// Runs `leasehold serve`.
pub(crate) async fn serve(args: ServeArgs, url: StoreUrl) -> Result<ExitCode, Failure> {
    let store = url.open().await?;
    let view = LiveView::new(store, args.locks)
        .and_then(|v| v.slots(args.slots))
        .map_err(web_failure)?
        .store_label(url.redacted());
    let allow_remote = args.remote.allow_remote;
    let (listener, signals) = listen(args.bind, allow_remote).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::usage(format!("cannot read the listening address: {e}")))?;
    let router = view.router(addr).map_err(web_failure)?;
    serve_until_signal(listener, router, allow_remote, signals).await
}
