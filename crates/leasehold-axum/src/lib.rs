//! # leasehold-axum
//!
//! [axum] and [tower] integration for [`leasehold`]: what the Ktor plugin is to Ktor.
//!
//! * [`LeaderJobs`]: an application-owned set of leader-only periodic jobs built from one
//!   [`Elector`](leasehold::Elector), started with the app and stopped by the same
//!   [`CancellationToken`] that drives
//!   `axum::serve(..).with_graceful_shutdown(..)`; per-job metrics (see [`job_metrics`]).
//! * [`ShardJobs`]: the partition form of a job: a periodic action run once per shard this node
//!   owns in a [`PartitionSet`](leasehold::partition::PartitionSet), each run with its shard's
//!   own lease; [`RunningShards::status`] shows the owned shards.
//! * [`Management`]: a router for `GET /management/leader-election` that refuses to build
//!   without an authentication decision (built-in [`BearerToken`], the caller's own layer, or
//!   loopback only).
//! * [`PrometheusMetrics`] (feature `prometheus`, on by default): installs a Prometheus recorder
//!   for the core's and the jobs' metrics; [`Management::metrics`] serves it at `GET /metrics`
//!   behind the management route's authentication.
//! * [`LeaderHealth`]: a `GET /healthz` route with client-go's semantics, unhealthy (503) only
//!   while this node leads a lock it has not renewed for the lease plus a tolerance.
//! * [`LeaderOnly`]: a tower layer that runs a route only on the current holder of a lock and
//!   answers followers with `503 Service Unavailable` and `Retry-After`.
//! * [`fence`] (feature `fence`, on by default): fenced writes over HTTP. The writer sends its
//!   lease's fence in the `leasehold-fence` header ([`fence_header`], [`FencedRequest::fenced`],
//!   [`SetFenceLayer::of`]); the receiving service's [`FenceLayer`] answers a stale fence with
//!   `409 Conflict` before the handler runs, and runs one request per resource at a time. An
//!   application that needs only leader-only jobs and routes sets `default-features = false`
//!   (with `features = ["prometheus"]` to keep the metrics) and compiles no fenced write.
//! * [`shutdown_signal`] / [`ShutdownSignal`] (the core's, re-exported): SIGINT and SIGTERM
//!   (Ctrl-C on non-Unix systems) as the future that starts that shutdown — orchestrators stop
//!   processes with SIGTERM.
//! * [`serve`]: `axum::serve` with graceful shutdown, plus a header read timeout
//!   ([`HEADER_READ_TIMEOUT`]) and a bound on the wait for requests in flight
//!   ([`SHUTDOWN_GRACE`]), so no client can hold the process after the signal.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::{sync::Arc, time::Duration};
//! use leasehold::{CancellationToken, Elector, MemoryStore};
//! use leasehold_axum::{BearerToken, Job, LeaderJobs};
//!
//! let elector = Elector::new(Arc::new(MemoryStore::new()));
//! let shutdown = CancellationToken::new();
//! let jobs = LeaderJobs::new(elector)
//!     .job(
//!         Job::every("refresh-projection", Duration::from_secs(60), |ctx| async move {
//!             tracing::info!(fence = ctx.fence(), "refreshing");
//!             Ok::<_, std::io::Error>(())
//!         })
//!         // Every replica attempts each minute near its start; the store's period ledger
//!         // grants each minute to one of them, and the others skip it.
//!         .initial_delay(Duration::from_secs(5)),
//!     )
//!     .start(shutdown.clone())?;
//! let management = jobs
//!     .management()
//!     .bearer_token(BearerToken::new("s3cret-token")?)
//!     .router()?;
//! let app = axum::Router::new().merge(management);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // SIGINT or SIGTERM (what systemd, Kubernetes and docker send) stops server and jobs together.
//! let signal = leasehold_axum::shutdown_signal();
//! let stop = shutdown.clone();
//! // axum::serve(..).with_graceful_shutdown(..) with a header read timeout and a bounded shutdown.
//! leasehold_axum::serve(listener, app, async move {
//!     signal.await;
//!     stop.cancel();
//! })
//! .await;
//! jobs.stopped().await; // jobs finished (within the grace period) and released their leases
//! # Ok(()) }
//! ```

mod auth;
mod error;
#[cfg(feature = "fence")]
pub mod fence;
mod health;
pub mod job_metrics;
mod jobs;
mod leader_only;
mod management;
#[cfg(feature = "prometheus")]
mod prometheus;
mod serve;
mod shard_jobs;
mod status;

pub use auth::{BearerAuthLayer, BearerAuthService, BearerToken};
pub use error::Error;
#[cfg(feature = "fence")]
pub use fence::{
    FenceLayer, FenceService, Fenced, FencedRequest, SetFenceLayer, claim_header, fence_header,
};
pub use health::{DEFAULT_HEALTH_PATH, DEFAULT_HEALTH_TOLERANCE, LeaderHealth, Unhealthy};
pub use jobs::{DEFAULT_GRACE_PERIOD, LeaderJobs, RunningJobs};
pub use leader_only::{
    LEADER_HEADER, LeaderFence, LeaderOnly, LeaderOnlyBuilder, LeaderOnlyLayer, LeaderOnlyService,
};
/// The core's stop-request helpers, re-exported here for axum programs.
pub use leasehold::{
    shutdown::{ShutdownSignal, StopSignal},
    shutdown_signal,
};
pub use management::{DEFAULT_PATH, Management};
#[cfg(feature = "prometheus")]
pub use prometheus::{DEFAULT_METRICS_PATH, PrometheusMetrics, UPKEEP_INTERVAL};
pub use serve::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE, serve};
pub use shard_jobs::{RunningShards, ShardJobs, ShardJobsStatus};
pub use status::{LeaderElectionStatus, LedgerStatus, LockStatus, LockStatusKind};

pub use leasehold::{CancellationToken, Job};

/// The manual page `docs/leasehold-axum.md`, compiled as doc tests so its code stays true.
/// (Its fencing sections need the `fence` feature.)
#[cfg(all(doctest, feature = "fence"))]
#[doc = include_str!("../docs/leasehold-axum.md")]
pub struct ManualDoctests;
