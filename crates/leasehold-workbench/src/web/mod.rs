//! The web side of the workbench: the interactive page with its JSON API
//! ([`workbench_router`], for `leasehold workbench`) and the live view of a real store
//! ([`LiveView`], for `leasehold serve`), plus the loopback-by-default listener both use
//! ([`bind`], [`serve`]: bounded header reading and shutdown, and a [`HostCheck`] against DNS
//! rebinding).
//!
//! Both pages are single self-contained HTML files compiled into the binary ([`WORKBENCH_HTML`],
//! [`LIVE_HTML`]): no external scripts, styles or fonts, so they work offline.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use leasehold_workbench::web;
//! let listener = web::bind("127.0.0.1:0".parse()?, false).await?;
//! tracing::info!("listening on http://{}/", listener.local_addr()?);
//! web::serve(listener, web::workbench_router(), false, leasehold_axum::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

mod api;
mod error;
mod listen;
mod live;
mod page;

pub use api::workbench_router;
pub use error::{ERROR_CODES, WebError};
pub use listen::{
    HEADER_READ_TIMEOUT, HostCheck, LIVE_BIND, SHUTDOWN_GRACE, WORKBENCH_BIND, bind, check_bind,
    serve,
};
pub use live::{LiveHolder, LiveLedger, LiveLock, LiveReport, LiveView, MANAGEMENT_PATH};
pub use page::{FENCING_MD, LIVE_HTML, VERSION, WORKBENCH_HTML};
