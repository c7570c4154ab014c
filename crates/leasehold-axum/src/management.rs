//! The management router: `GET /management/leader-election`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::future::join_all;
use leasehold::{Elector, LockName};
use tracing::warn;

use crate::auth::{BearerAuthLayer, BearerToken};
use crate::error::Error;
use crate::shard_jobs::{RunningShards, ShardsView};
use crate::status::{LeaderElectionStatus, LedgerStatus, LockStatus, LockStatusKind};

/// The default path of the management route.
pub const DEFAULT_PATH: &str = "/management/leader-election";

#[derive(Debug, Clone)]
enum Auth {
    None,
    Bearer(BearerToken),
    Caller,
    Loopback(SocketAddr),
}

/// Builds the management router: `GET /management/leader-election` answers
/// `{"locks":[{"name","status","leaderId","fence","leaderSince","leaseExpiry"}]}` for the
/// configured locks (sorted by name), asking the store on each request (see
/// [`LeaderElectionStatus`]). Add a [`LeaderOnly`](crate::LeaderOnly) campaign with
/// [`leader`](Self::leader) (or an [`Elector::lead`](leasehold::Elector::lead) lock with
/// [`lock`](Self::lock)) to show the stable leader on every node: its node id, fence and since when it leads (schedule locks show `FREE`
/// between runs, since each run takes its own lease).
///
/// [`router`](Self::router) refuses to build until an authentication decision was made:
/// * [`bearer_token`](Self::bearer_token): the built-in check (`Authorization: Bearer <token>`,
///   constant-time comparison, 401 otherwise);
/// * [`behind_caller_auth`](Self::behind_caller_auth): you add your own layer (mTLS-terminating
///   proxy, session auth, …) around the returned router;
/// * [`loopback_only`](Self::loopback_only): no authentication, only allowed when the server's
///   listening address is a loopback address.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_axum::{BearerToken, Error, Management};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// assert!(matches!(Management::new(elector.clone()).lock("report").router::<()>(), Err(Error::Unauthenticated)));
/// let router: axum::Router = Management::new(elector)
///     .lock("report")
///     .bearer_token(BearerToken::new("t0ken")?)
///     .router()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "call router() to get the routes"]
pub struct Management {
    elector: Elector,
    names: BTreeSet<String>,
    shards: Vec<ShardsView>,
    path: String,
    auth: Auth,
    #[cfg(feature = "prometheus")]
    metrics: Option<(String, crate::PrometheusMetrics)>,
}

impl Management {
    /// A builder over `elector` with no locks and the [`DEFAULT_PATH`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let m = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new())));
    /// ```
    pub fn new(elector: Elector) -> Self {
        Self {
            elector,
            names: BTreeSet::new(),
            shards: Vec::new(),
            path: DEFAULT_PATH.to_owned(),
            auth: Auth::None,
            #[cfg(feature = "prometheus")]
            metrics: None,
        }
    }

    /// Adds a lock to report (validated by [`router`](Self::router)).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let m = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new()))).lock("migrations");
    /// ```
    pub fn lock(mut self, name: impl Into<String>) -> Self {
        self.names.insert(name.into());
        self
    }

    /// Adds the lock of a [`LeaderOnly`](crate::LeaderOnly) campaign: the report then shows, on
    /// every node, which node is the stable leader, with its fence and since when it leads.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// use std::sync::Arc;
    /// use leasehold::{CancellationToken, ElectionOptions, Elector, MemoryStore};
    /// use leasehold_axum::{LeaderOnly, LockStatusKind, Management};
    ///
    /// let options = ElectionOptions::builder().node_id("web-1").build()?;
    /// let elector = Elector::with_options(Arc::new(MemoryStore::new()), options);
    /// let stop = CancellationToken::new();
    /// let leader = LeaderOnly::builder(&elector, "api-writer").start(stop.clone())?;
    /// let management = Management::new(elector).leader(&leader);
    /// while !leader.is_leader() {
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    /// }
    /// let entry = &management.status().await.locks[0];
    /// assert_eq!((entry.status, entry.leader_id.as_deref()), (LockStatusKind::Held, Some("web-1")));
    /// assert!(entry.leader_since.is_some());
    /// stop.cancel();
    /// leader.stopped().await;
    /// # Ok(()) }
    /// ```
    pub fn leader(self, leader: &crate::LeaderOnly) -> Self {
        self.lock(leader.lock().as_str())
    }

    /// Adds a running [`ShardJobs`](crate::ShardJobs) to the report: its entry under
    /// `"partitions"` says which shards this node runs the job for, the members it sees and
    /// whether the set is settled, as this node last read them (no store request). The
    /// members' locks themselves are listed by `leasehold status`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::{sync::Arc, time::Duration};
    /// use leasehold::{CancellationToken, ElectionOptions, Elector, MemoryStore, partition::PartitionSet};
    /// use leasehold_axum::{Management, ShardJobs};
    ///
    /// let options = ElectionOptions::builder().node_id("web-1").build()?;
    /// let elector = Elector::with_options(Arc::new(MemoryStore::new()), options);
    /// let set = PartitionSet::builder("tenants", 4).build()?;
    /// let jobs = ShardJobs::every(set, Duration::from_secs(30), |_shard, _ctx| async { Ok::<_, String>(()) })
    ///     .start(elector.clone(), CancellationToken::new())
    ///     .await?;
    /// jobs.wait_settled().await;
    /// let report = Management::new(elector).shards(&jobs).status().await;
    /// assert_eq!(report.partitions[0].owned, vec![0, 1, 2, 3]);
    /// assert_eq!(report.partitions[0].members, vec!["web-1"]);
    /// jobs.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn shards(mut self, running: &RunningShards) -> Self {
        self.shards.push(running.view());
        self
    }

    /// Adds several locks to report.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let m = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .locks(["a", "b"]);
    /// ```
    pub fn locks<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Serves the report at `path` instead of [`DEFAULT_PATH`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let m = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .path("/ops/leases");
    /// ```
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Also serves `metrics` at [`DEFAULT_METRICS_PATH`](crate::DEFAULT_METRICS_PATH)
    /// (`GET /metrics`, the Prometheus text format), behind the same authentication as the
    /// report: with [`bearer_token`](Self::bearer_token), give Prometheus the token
    /// (`authorization: { credentials: … }` in its scrape config). Feature `prometheus`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// use std::sync::Arc;
    /// use leasehold::{Elector, MemoryStore};
    /// use leasehold_axum::{BearerToken, Management, PrometheusMetrics};
    ///
    /// let metrics = PrometheusMetrics::install()?; // before the first election
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let ops: axum::Router = Management::new(elector)
    ///     .lock("report")
    ///     .metrics(metrics)
    ///     .bearer_token(BearerToken::new("t0ken")?)
    ///     .router()?; // GET /management/leader-election and GET /metrics, both with the token
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "prometheus")]
    pub fn metrics(self, metrics: crate::PrometheusMetrics) -> Self {
        self.metrics_at(crate::DEFAULT_METRICS_PATH, metrics)
    }

    /// [`metrics`](Self::metrics) at `path` instead of `/metrics`. Feature `prometheus`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// use leasehold_axum::{Management, PrometheusMetrics};
    /// let mine = PrometheusMetrics::from_handle(PrometheusBuilder::new().build_recorder().handle());
    /// let m = Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .metrics_at("/ops/metrics", mine);
    /// ```
    #[cfg(feature = "prometheus")]
    pub fn metrics_at(
        mut self,
        path: impl Into<String>,
        metrics: crate::PrometheusMetrics,
    ) -> Self {
        self.metrics = Some((path.into(), metrics));
        self
    }

    /// Protects the route with the built-in bearer-token check.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// # use leasehold_axum::BearerToken;
    /// let m = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .bearer_token(BearerToken::new("t0ken")?);
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn bearer_token(mut self, token: BearerToken) -> Self {
        self.auth = Auth::Bearer(token);
        self
    }

    /// Declares that the caller wraps the returned router in its own authentication layer;
    /// the router then has none of its own.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let router: axum::Router = leasehold_axum::Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .behind_caller_auth()
    ///     .router()?
    ///     .layer(tower::layer::util::Identity::new()); // your auth layer here
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn behind_caller_auth(mut self) -> Self {
        self.auth = Auth::Caller;
        self
    }

    /// Serves the route without authentication, allowed only if `listen` (the server's
    /// listening address) is a loopback address; otherwise [`router`](Self::router) fails with
    /// [`Error::NotLoopback`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// # use leasehold_axum::{Error, Management};
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// assert!(Management::new(elector.clone()).loopback_only(([127, 0, 0, 1], 9000).into()).router::<()>().is_ok());
    /// let public = Management::new(elector).loopback_only(([0, 0, 0, 0], 9000).into()).router::<()>();
    /// assert!(matches!(public, Err(Error::NotLoopback(_))));
    /// ```
    pub fn loopback_only(mut self, listen: SocketAddr) -> Self {
        self.auth = Auth::Loopback(listen);
        self
    }

    /// The current report (asks the store for every lock, concurrently). A lock whose state
    /// cannot be read is reported `UNKNOWN` and the error logged at WARN.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// use leasehold_axum::{LockStatusKind, Management};
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let _held = elector.try_acquire("report").await?.elected();
    /// let report = Management::new(elector).lock("report").status().await;
    /// assert_eq!(report.locks[0].status, LockStatusKind::Held);
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads the store.
    pub async fn status(&self) -> LeaderElectionStatus {
        report(
            &self.elector,
            self.names.iter().cloned().collect::<Vec<_>>().as_slice(),
            &self.shards,
        )
        .await
    }

    /// Validates the lock names, the paths and the authentication decision, and returns the
    /// router (merge or nest it into your app): the report, and the metrics if
    /// [`metrics`](Self::metrics) was called, both behind the authentication.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// # use leasehold_axum::{BearerToken, Management};
    /// let ops: axum::Router = Management::new(Elector::new(Arc::new(MemoryStore::new())))
    ///     .bearer_token(BearerToken::new("t0ken")?)
    ///     .router()?;
    /// let app: axum::Router = axum::Router::new().merge(ops);
    /// # Ok::<(), leasehold_axum::Error>(())
    /// ```
    pub fn router<S>(self) -> Result<Router<S>, Error>
    where
        S: Clone + Send + Sync + 'static,
    {
        if !self.path.starts_with('/') {
            return Err(Error::InvalidPath(self.path));
        }
        for name in &self.names {
            LockName::new(name.as_str())?;
        }
        let names: Arc<[String]> = self.names.into_iter().collect();
        let shards: Arc<[ShardsView]> = self.shards.into();
        let elector = self.elector;
        let route = get(move || {
            let (elector, names, shards) =
                (elector.clone(), Arc::clone(&names), Arc::clone(&shards));
            async move { respond(report(&elector, &names, &shards).await) }
        });
        let router = Router::new().route(&self.path, route);
        #[cfg(feature = "prometheus")]
        let router = match self.metrics {
            None => router,
            Some((path, _)) if !path.starts_with('/') => return Err(Error::InvalidPath(path)),
            Some((path, _)) if path == self.path => return Err(Error::PathConflict(path)),
            Some((path, metrics)) => {
                router.route(&path, get(move || std::future::ready(metrics.respond())))
            }
        };
        match self.auth {
            Auth::None => Err(Error::Unauthenticated),
            // `route_layer`: the check guards this route only, so merged into an application it leaves
            // the application's routes and its 404s alone.
            Auth::Bearer(token) => Ok(router.route_layer(BearerAuthLayer::new(token))),
            Auth::Caller => Ok(router),
            Auth::Loopback(addr) if addr.ip().is_loopback() => Ok(router),
            Auth::Loopback(addr) => Err(Error::NotLoopback(addr)),
        }
    }
}

async fn report(
    elector: &Elector,
    names: &[String],
    shards: &[ShardsView],
) -> LeaderElectionStatus {
    let locks = join_all(names.iter().map(|name| async move {
        let (state, ledger) = futures::join!(
            elector.state(name.as_str()),
            elector.period_record(name.as_str())
        );
        let mut entry = match state {
            Ok(state) => LockStatus::from_state(name.clone(), &state),
            Err(e) => {
                warn!(lock = %name, error = %e, "management could not read lock state");
                LockStatus::empty(name.clone(), LockStatusKind::Unknown)
            }
        };
        entry.ledger = match ledger {
            Ok(record) => record.as_ref().map(LedgerStatus::from),
            Err(e) => {
                warn!(lock = %name, error = %e, "management could not read the period ledger");
                None
            }
        };
        entry
    }))
    .await;
    let mut partitions: Vec<_> = shards.iter().map(ShardsView::status).collect();
    partitions.sort_by(|a, b| a.set.cmp(&b.set));
    LeaderElectionStatus { locks, partitions }
}

fn respond(report: LeaderElectionStatus) -> Response {
    let mut res = Json(report).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
