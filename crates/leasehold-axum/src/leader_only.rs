//! `LeaderOnly`: hold a lock in the background and let routes run only while holding it.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use futures::future::{BoxFuture, Either};
use leasehold::{CancellationToken, Elector, LeaderContext, LockName, RetryPolicy, TermEnd};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};
use tower::{Layer, Service};
use tracing::{Instrument, debug, info, info_span, warn};

use crate::error::Error;

/// The fence of the lease under which a [`LeaderOnly`] route runs, inserted into the request's
/// extensions: pass it to the resource the handler writes to.
///
/// ```
/// use axum::Extension;
/// use leasehold_axum::LeaderFence;
/// async fn handler(Extension(LeaderFence(fence)): Extension<LeaderFence>) -> String {
///     format!("writing with fence {fence}")
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderFence(pub u64);

struct Shared {
    lock: LockName,
    /// The campaign's elector: `stopped` waits for its cleanup.
    elector: Elector,
    current: Mutex<Option<LeaderContext>>,
    retry_after: HeaderValue,
    task: Mutex<Option<JoinHandle<()>>>,
    /// Who holds the lock, as a follower last read it (for its 503s), and when.
    seen: tokio::sync::Mutex<Option<(Instant, Option<String>)>>,
}

/// How long a follower's reading of the leader serves its 503s before the next 503 reads again.
const LEADER_SEEN_FOR: Duration = Duration::from_secs(1);

/// How long a 503 waits for that reading; past it, the answer names the leader last seen (or
/// none).
const LEADER_READ_WAIT: Duration = Duration::from_millis(250);

impl Shared {
    fn set(&self, ctx: Option<LeaderContext>) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = ctx;
    }

    /// The live lease's fence, if this node holds the lock and its local deadline has not passed.
    fn fence(&self) -> Option<u64> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        current
            .as_ref()
            .filter(|c| !c.is_lost())
            .map(LeaderContext::fence)
    }
}

/// Campaigns for one lock in the background and tells whether this node holds it, for routes
/// that must run on the leader only (see [`layer`](Self::layer)).
///
/// Design: a background task leads the lock with [`Elector::lead`] (the stable leader of the
/// core: renewal always on, a new term after a loss, nothing left behind at shutdown); while a
/// term lasts this node is leader. When the lease is lost (the guard's `lost()` signal, which
/// fires at the conservative local deadline, before the store can hand the lock on) or shutdown
/// starts, it stops answering as leader *before* releasing. Every request re-checks the lease's
/// local deadline, so a stalled renewal is never served as leadership. Other processes see the
/// leader with [`Elector::leadership`] or the [`Management`](crate::Management) report of this
/// lock (holder, fence, since). Use a lock name of its
/// own, not one of your jobs' names (the campaign holds it all the time).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// use std::{sync::Arc, time::Duration};
/// use axum::{Router, routing::post};
/// use leasehold::{CancellationToken, Elector, MemoryStore};
/// use leasehold_axum::LeaderOnly;
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let shutdown = CancellationToken::new();
/// let leader = LeaderOnly::builder(&elector, "api-writer")
///     .retry_after(Duration::from_secs(2))
///     .start(shutdown.clone())?;
/// let app: Router = Router::new()
///     .route("/rebuild", post(|| async { "rebuilding" }))
///     .route_layer(leader.layer());
/// shutdown.cancel();
/// leader.stopped().await; // lease released
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderOnly {
    shared: Arc<Shared>,
    alive: Alive,
}

/// Held by every handle of a campaign ([`LeaderOnly`], its layers and services): when the
/// last one is dropped the campaign ends as on shutdown, releasing the lease, instead of
/// holding the lock for nobody.
type Alive = Arc<tokio_util::sync::DropGuard>;

impl std::fmt::Debug for LeaderOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderOnly")
            .field("lock", &self.shared.lock)
            .field("fence", &self.shared.fence())
            .finish_non_exhaustive()
    }
}

/// Configures a [`LeaderOnly`] campaign; see [`LeaderOnly::builder`].
///
/// ```
/// # use std::{sync::Arc, time::Duration};
/// # use leasehold::{Elector, MemoryStore};
/// let builder = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "writer")
///     .retry_after(Duration::from_secs(1))
///     .retry_interval(Duration::from_millis(500));
/// ```
#[derive(Debug, Clone)]
#[must_use = "call start() to campaign"]
pub struct LeaderOnlyBuilder {
    elector: Elector,
    name: String,
    retry_after: Duration,
    retry_interval: Duration,
}

impl LeaderOnlyBuilder {
    /// The `Retry-After` followers answer with (rounded up to whole seconds, at least 1; default 5 s).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore};
    /// let b = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .retry_after(Duration::from_millis(1500)); // answered as `Retry-After: 2`
    /// ```
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = after;
        self
    }

    /// How often a follower tries for the lock at least (the elector's own retry pause, if
    /// shorter, wins; the store's release signal wakes it at once where it has one) and how long
    /// the campaign pauses after a permanent store error (default 1 s; at least
    /// [`leasehold::limits::MIN_LEADERSHIP_POLL`], checked by [`start`](Self::start)).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{Elector, MemoryStore};
    /// let b = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .retry_interval(Duration::from_millis(250));
    /// ```
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval;
        self
    }

    /// Validates the lock name and options (`auto_extend` needs a lease of at least 75 ms;
    /// `retry_after` and `retry_interval` are at most [`leasehold::limits::MAX_DURATION`], and
    /// `retry_interval` at least [`leasehold::limits::MIN_LEADERSHIP_POLL`]) and starts the
    /// campaign on the current runtime; cancelling `shutdown` ends it and releases
    /// the lease, and so does dropping the last handle (the [`LeaderOnly`] and its clones,
    /// layers and services).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # use std::{sync::Arc, time::Duration};
    /// # use leasehold::{CancellationToken, ElectionOptions, Elector, MemoryStore};
    /// // A 10 ms lease is valid only without renewal, which a leader's campaign turns on:
    /// let short = ElectionOptions::builder()
    ///     .lease(Duration::from_millis(10))
    ///     .auto_extend(false)
    ///     .build()
    ///     .unwrap();
    /// let elector = Elector::with_options(Arc::new(MemoryStore::new()), short);
    /// // auto_extend cannot renew a 10 ms lease in time: a startup error, not a silent failure.
    /// assert!(leasehold_axum::LeaderOnly::builder(&elector, "w").start(CancellationToken::new()).is_err());
    /// # }
    /// ```
    pub fn start(self, shutdown: CancellationToken) -> Result<LeaderOnly, Error> {
        let lock = LockName::new(self.name.as_str())?;
        leasehold::store::check_duration("retry_after", self.retry_after)
            .map_err(leasehold::Error::from)?;
        if self.retry_interval < leasehold::limits::MIN_LEADERSHIP_POLL {
            // A shorter pause would turn a follower (or a failing store) into a busy loop.
            return Err(
                leasehold::Error::from(leasehold::limits::LimitError::DurationTooShort {
                    what: "retry_interval",
                    value: self.retry_interval,
                    min: leasehold::limits::MIN_LEADERSHIP_POLL,
                    constant: "MIN_LEADERSHIP_POLL",
                })
                .into(),
            );
        }
        leasehold::store::check_duration("retry_interval", self.retry_interval)
            .map_err(leasehold::Error::from)?;
        let current = self.elector.options();
        // Followers try at least every `retry_interval` (or the elector's own, shorter,
        // retry pause), woken at once by the store's release signal where it has one.
        // Without a policy of its own the elector follows the store's, whose pauses end at
        // 250 ms: only a shorter interval needs a policy here.
        let policy = current.retry().copied().unwrap_or_default();
        let mut options = current.to_builder().auto_extend(true);
        if policy.max() > self.retry_interval {
            let max = self.retry_interval;
            let capped = RetryPolicy::new(policy.initial().min(max), max, policy.jitter())
                .and_then(|p| p.with_growth(policy.growth()));
            if let Ok(capped) = capped {
                options = options.retry(capped);
            }
        }
        let options = options.build()?;
        let elector = self.elector.reconfigured(options);
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        let shared = Arc::new(Shared {
            lock: lock.clone(),
            elector: elector.clone(),
            current: Mutex::new(None),
            retry_after: HeaderValue::from(secs.max(1)),
            task: Mutex::new(None),
            seen: tokio::sync::Mutex::new(None),
        });
        let span =
            info_span!("leasehold.leader_only", lock = %lock, node = elector.options().node_id());
        // Ends with `shutdown`, or when the last handle is dropped.
        let stop = shutdown.child_token();
        let alive = Arc::new(stop.clone().drop_guard());
        let task = tokio::spawn(
            campaign(
                elector,
                lock,
                Arc::clone(&shared),
                stop,
                self.retry_interval,
            )
            .instrument(span),
        );
        *shared.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        Ok(LeaderOnly { shared, alive })
    }
}

impl LeaderOnly {
    /// A campaign for lock `name` over (a reconfigured copy of) `elector`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{Elector, MemoryStore};
    /// let builder = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "writer");
    /// ```
    pub fn builder(elector: &Elector, name: impl Into<String>) -> LeaderOnlyBuilder {
        LeaderOnlyBuilder {
            elector: elector.clone(),
            name: name.into(),
            retry_after: Duration::from_secs(5),
            retry_interval: Duration::from_secs(1),
        }
    }

    /// True while this node holds a live lease on the lock.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .start(CancellationToken::new())?;
    /// let _ = leader.is_leader(); // true once the background task won the lock
    /// # Ok(()) }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.shared.fence().is_some()
    }

    /// The fence of the live lease, if this node holds it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .start(CancellationToken::new())?;
    /// if let Some(fence) = leader.fence() { tracing::info!(fence, "leading"); }
    /// # Ok(()) }
    /// ```
    pub fn fence(&self) -> Option<u64> {
        self.shared.fence()
    }

    /// The lock name.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .start(CancellationToken::new())?;
    /// assert_eq!(leader.lock().as_str(), "w");
    /// # Ok(()) }
    /// ```
    pub fn lock(&self) -> &LockName {
        &self.shared.lock
    }

    /// The tower layer: requests pass on the leader (with a [`LeaderFence`] extension); followers
    /// get `503 Service Unavailable` with `Retry-After`, naming the leader (its node id, as the
    /// store records it) in the JSON body's `leader` and the `Leasehold-Leader` header, so a
    /// proxy or client can send the request there (set each replica's
    /// [`node_id`](leasehold::ElectionOptionsBuilder::node_id) to an address it can route to).
    /// A follower reads the leader from the store at most once a second, and only when it
    /// answers 503s; `leader` is `null` when the lock is free or the store did not answer within
    /// 250 ms. Use it with `Router::route_layer`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// use axum::{Router, routing::get};
    /// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .start(CancellationToken::new())?;
    /// let app: Router = Router::new().route("/x", get(|| async { "ok" })).route_layer(leader.layer());
    /// # Ok(()) }
    /// ```
    pub fn layer(&self) -> LeaderOnlyLayer {
        LeaderOnlyLayer {
            shared: Arc::clone(&self.shared),
            alive: Arc::clone(&self.alive),
        }
    }

    /// Resolves when the campaign has ended (after the shutdown token was cancelled) and the
    /// lease was released — also a lease the store granted after shutdown cancelled an
    /// acquisition in flight, and a lost lease's release: the elector has
    /// [settled](Elector::settled) (waiting at most [`leasehold::limits::SETTLE_TIMEOUT`] for the
    /// store). Nothing the campaign started outlives it, so the process may exit right after.
    /// Only the first caller waits for the campaign; later calls wait only for the elector to
    /// settle.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting and nothing else: the campaign still ends and
    /// releases once the token is cancelled, but a later call then waits only for the elector
    /// to settle, no longer for the campaign.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// # use std::sync::Arc;
    /// # use leasehold::{CancellationToken, Elector, MemoryStore};
    /// let stop = CancellationToken::new();
    /// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
    ///     .start(stop.clone())?;
    /// stop.cancel();
    /// leader.stopped().await;
    /// assert!(!leader.is_leader());
    /// # Ok(()) }
    /// ```
    pub async fn stopped(&self) {
        let task = self
            .shared
            .task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.shared
            .elector
            .settled_within(leasehold::limits::SETTLE_TIMEOUT)
            .await;
    }
}

/// The campaign: [`Elector::lead`] with a term that publishes its lease to the layer and waits.
/// A permanent store error ends `lead`; the campaign then pauses `retry_interval` and leads
/// again, so a misconfigured store shows as warnings and 503s, not a dead campaign.
async fn campaign(
    elector: Elector,
    lock: LockName,
    shared: Arc<Shared>,
    stop: CancellationToken,
    retry_interval: Duration,
) {
    loop {
        let led = elector
            .lead(lock.clone(), stop.clone(), |ctx| {
                let serving = Serving::start(&shared, ctx);
                async move {
                    let _serving = serving;
                    // Serve until `lead` ends the term (lease lost, or shutdown): it drops this
                    // future — and `_serving` with it — before it releases the lease.
                    std::future::pending::<TermEnd>().await
                }
            })
            .await;
        match led {
            Ok(()) => return,
            Err(e) => {
                warn!(error = %e, "leader-only campaign could not reach the store");
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    () = sleep(retry_interval) => {}
                }
            }
        }
    }
}

/// One term of the campaign: while it lives, the layer serves as leader.
struct Serving {
    shared: Arc<Shared>,
    fence: u64,
}

impl Serving {
    fn start(shared: &Arc<Shared>, ctx: LeaderContext) -> Self {
        let fence = ctx.fence();
        info!(fence, "this node now serves leader-only routes");
        shared.set(Some(ctx));
        Self {
            shared: Arc::clone(shared),
            fence,
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Stop answering as leader before the lease is released (or handed on).
        self.shared.set(None);
        debug!(
            fence = self.fence,
            "this node no longer serves leader-only routes"
        );
    }
}

/// The tower layer of a [`LeaderOnly`] campaign; see [`LeaderOnly::layer`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// # use std::sync::Arc;
/// # use leasehold::{CancellationToken, Elector, MemoryStore};
/// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
///     .start(CancellationToken::new())?;
/// let layer: leasehold_axum::LeaderOnlyLayer = leader.layer();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderOnlyLayer {
    shared: Arc<Shared>,
    alive: Alive,
}

impl std::fmt::Debug for LeaderOnlyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderOnlyLayer")
            .field("lock", &self.shared.lock)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for LeaderOnlyLayer {
    type Service = LeaderOnlyService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        LeaderOnlyService {
            inner,
            shared: Arc::clone(&self.shared),
            _alive: Arc::clone(&self.alive),
        }
    }
}

/// The service made by [`LeaderOnlyLayer`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
/// # use std::sync::Arc;
/// # use leasehold::{CancellationToken, Elector, MemoryStore};
/// use tower::Layer;
/// let leader = leasehold_axum::LeaderOnly::builder(&Elector::new(Arc::new(MemoryStore::new())), "w")
///     .start(CancellationToken::new())?;
/// let svc = leader.layer().layer(tower::service_fn(|_req: axum::http::Request<axum::body::Body>| async {
///     Ok::<_, std::convert::Infallible>(axum::response::Response::new(axum::body::Body::empty()))
/// }));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderOnlyService<S> {
    inner: S,
    shared: Arc<Shared>,
    _alive: Alive,
}

impl<S> std::fmt::Debug for LeaderOnlyService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderOnlyService")
            .field("lock", &self.shared.lock)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<B>> for LeaderOnlyService<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Either<BoxFuture<'static, Result<Response<Body>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        match self.shared.fence() {
            Some(fence) => {
                req.extensions_mut().insert(LeaderFence(fence));
                Either::Right(self.inner.call(req))
            }
            None => {
                let shared = Arc::clone(&self.shared);
                Either::Left(Box::pin(async move {
                    let leader = leader_seen(&shared).await;
                    Ok(not_leader(&shared, leader.as_deref()))
                }))
            }
        }
    }
}

/// The leader as this follower last read it, read again (at most once per
/// [`LEADER_SEEN_FOR`], waiting at most [`LEADER_READ_WAIT`]) when that reading is old.
async fn leader_seen(shared: &Shared) -> Option<String> {
    let read = async {
        let mut seen = shared.seen.lock().await;
        match &*seen {
            Some((at, leader)) if at.elapsed() < LEADER_SEEN_FOR => leader.clone(),
            _ => {
                let leader = match shared.elector.state(shared.lock.as_str()).await {
                    Ok(state) => state.holder().map(|h| h.owner.clone()),
                    Err(e) => {
                        debug!(error = %e, "a follower could not read the leader");
                        None
                    }
                };
                *seen = Some((Instant::now(), leader.clone()));
                leader
            }
        }
    };
    match timeout(LEADER_READ_WAIT, read).await {
        Ok(leader) => leader,
        Err(_) => shared
            .seen
            .try_lock()
            .ok()
            .and_then(|s| s.as_ref().and_then(|(_, l)| l.clone())),
    }
}

fn not_leader(shared: &Shared, leader: Option<&str>) -> Response<Body> {
    let body = serde_json::json!({
        "error": "not the leader",
        "lock": shared.lock.as_str(),
        "leader": leader,
    });
    let mut res = Response::new(Body::from(body.to_string()));
    *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let h = res.headers_mut();
    h.insert(header::RETRY_AFTER, shared.retry_after.clone());
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    // A node id that is not a valid header value (non-ASCII) is in the body only.
    if let Some(value) = leader.and_then(|l| HeaderValue::from_str(l).ok()) {
        h.insert(LEADER_HEADER, value);
    }
    res
}

/// The header of a follower's 503 that names the leader's node id.
pub const LEADER_HEADER: &str = "leasehold-leader";
