//! A health check with client-go's semantics (its `HealthzAdaptor`): unhealthy only while this
//! node leads a lock and has not renewed the lease for the lease duration plus a tolerance.

use std::fmt;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leasehold::{Elector, LockName};

use crate::error::Error;

/// The default path of the health route.
pub const DEFAULT_HEALTH_PATH: &str = "/healthz";

/// How long past the lease a leader may go without renewing before it is reported unhealthy by
/// default: 20 s, client-go's usual `HealthzAdaptor` timeout.
pub const DEFAULT_HEALTH_TOLERANCE: Duration = Duration::from_secs(20);

/// A health check over an [`Elector`] and every elector derived from it (clones, tenant and
/// reconfigured copies, so also the [`LeaderJobs`](crate::LeaderJobs) and
/// [`LeaderOnly`](crate::LeaderOnly) built from it), for a liveness probe.
///
/// Like client-go's `HealthzAdaptor`, it is unhealthy only when this node leads: while a guard
/// is held (not yet released, lost or not) whose last successful grant or renewal was sent more
/// than its lease plus the [`tolerance`](Self::tolerance) ago. A follower, a node that holds
/// nothing, and a leader whose renewals fail but are still within that time are healthy: a
/// restart would not help them. In leasehold the watchdog reports a lease lost at its local
/// deadline, and the campaigns ([`LeaderOnly`](crate::LeaderOnly),
/// [`Elector::lead`](leasehold::Elector::lead), the jobs) release it at once; what this catches is a
/// process that goes on holding a guard without renewing it: an action that ignores
/// [`lost`](leasehold::LeaderContext::lost), a guard taken without `auto_extend` and never
/// extended, a stuck task. The check reads local state only (no store call), so probes are cheap.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_axum::LeaderHealth;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let health = LeaderHealth::new(&elector).tolerance(Duration::from_secs(10));
/// assert!(health.check().is_ok()); // holds nothing
/// let probes: axum::Router = health.router()?; // GET /healthz: 200 "ok", or 503 and why
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "call router() or check()"]
pub struct LeaderHealth {
    elector: Elector,
    tolerance: Duration,
    path: String,
}

/// Why [`LeaderHealth::check`] failed: a lease this node holds and has not renewed for longer
/// than its lease plus the tolerance (the most overdue one, if several).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unhealthy {
    /// The lock.
    pub lock: LockName,
    /// The slot.
    pub slot: u32,
    /// The fence.
    pub fence: u64,
    /// The time since its last successful grant or renewal was sent.
    pub since_renewal: Duration,
    /// Its lease plus the tolerance: the most that was allowed.
    pub allowed: Duration,
}

impl fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this node leads {} (slot {}, fence {}) but has not renewed its lease for {:.1}s, \
             more than the lease plus the tolerance ({:.1}s)",
            self.lock,
            self.slot,
            self.fence,
            self.since_renewal.as_secs_f64(),
            self.allowed.as_secs_f64()
        )
    }
}

impl std::error::Error for Unhealthy {}

impl LeaderHealth {
    /// A check over `elector` with the [`DEFAULT_HEALTH_TOLERANCE`] at the
    /// [`DEFAULT_HEALTH_PATH`].
    pub fn new(elector: &Elector) -> Self {
        Self {
            elector: elector.clone(),
            tolerance: DEFAULT_HEALTH_TOLERANCE,
            path: DEFAULT_HEALTH_PATH.to_owned(),
        }
    }

    /// How long past its lease a held lease may go unrenewed before the node is unhealthy
    /// (client-go's `maxTolerableExpiredLease`). Any duration; 0 reports a leader unhealthy as
    /// soon as its lease has run out unrenewed.
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore};
    /// let h = leasehold_axum::LeaderHealth::new(&Elector::new(Arc::new(MemoryStore::new())))
    ///     .tolerance(Duration::from_secs(5));
    /// ```
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Serves the check at `path` instead of [`DEFAULT_HEALTH_PATH`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let h = leasehold_axum::LeaderHealth::new(&Elector::new(Arc::new(MemoryStore::new())))
    ///     .path("/livez");
    /// ```
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Checks now: `Err` with the most overdue lease when this node holds a lease it has not
    /// renewed for longer than the lease plus the tolerance.
    ///
    /// # Errors
    ///
    /// [`Unhealthy`], as described.
    pub fn check(&self) -> Result<(), Unhealthy> {
        let worst = self
            .elector
            .held_leases()
            .into_iter()
            .map(|held| {
                let allowed = held.renewed_for.saturating_add(self.tolerance);
                (held.since_renewal(), allowed, held)
            })
            .filter(|(since, allowed, _)| since > allowed)
            .max_by_key(|(since, allowed, _)| since.saturating_sub(*allowed));
        match worst {
            None => Ok(()),
            Some((since_renewal, allowed, held)) => Err(Unhealthy {
                lock: held.lock,
                slot: held.slot,
                fence: held.fence,
                since_renewal,
                allowed,
            }),
        }
    }

    /// The route: `GET` at the path answers `200 ok`, or `503 Service Unavailable` with the
    /// reason (lock name, slot, fence and times; no secret). It has no authentication: probes
    /// (kubelet) call it, and it shows no more than the lock name. Merge it into your app.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] when the path does not start with `/`.
    pub fn router<S>(self) -> Result<Router<S>, Error>
    where
        S: Clone + Send + Sync + 'static,
    {
        if !self.path.starts_with('/') {
            return Err(Error::InvalidPath(self.path));
        }
        let path = self.path.clone();
        Ok(Router::new().route(
            &path,
            get(move || std::future::ready(respond(self.check()))),
        ))
    }
}

fn respond(check: Result<(), Unhealthy>) -> Response {
    let mut res = match check {
        Ok(()) => (StatusCode::OK, "ok\n".to_owned()).into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {why}\n"),
        )
            .into_response(),
    };
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
