//! The live view of a real store (`leasehold serve`): the holders of chosen locks, asked of the
//! store through the elector on every request, beside leasehold-axum's management report.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::future::join_all;
use leasehold::{Elector, Holder, LeaseStore, LockName, store::LockState};
use leasehold_axum::Management;
use serde::Serialize;

use crate::web::WebError;
use crate::web::page;

/// Where the management report of leasehold-axum is mounted in the live view: the axum
/// crate's own [`DEFAULT_PATH`](leasehold_axum::DEFAULT_PATH), so the report is at the same
/// place as in an application that mounts [`Management`].
///
/// ```
/// assert_eq!(leasehold_workbench::web::MANAGEMENT_PATH, "/management/leader-election");
/// ```
pub const MANAGEMENT_PATH: &str = leasehold_axum::DEFAULT_PATH;

/// Where earlier versions of the live view mounted the report; it answers a permanent redirect
/// (308) to [`MANAGEMENT_PATH`].
const FORMER_MANAGEMENT_PATH: &str = "/manage/leader-election";

/// The live view: `GET /` (the page, refreshing every second), `GET /api/live` (a
/// [`LiveReport`]) and `GET` [`MANAGEMENT_PATH`] (leasehold-axum's management JSON for the same
/// locks; the former `/manage/leader-election` redirects there). Everything is read-only:
/// nothing here can release or take a lock.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use leasehold::{Elector, LockName, MemoryStore};
/// use leasehold_workbench::web::LiveView;
///
/// let store = Arc::new(MemoryStore::new());
/// let _held = Elector::new(store.clone()).try_acquire("nightly").await?.elected();
/// let view = LiveView::new(store, vec![LockName::new("nightly")?])?.store_label("memory:");
/// let report = view.report().await;
/// assert_eq!(report.locks[0].holders.len(), 1);
/// let router: axum::Router = view.router("127.0.0.1:7879".parse()?)?;
/// # drop(router);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LiveView {
    inner: Arc<Inner>,
}

struct Inner {
    elector: Elector,
    locks: Vec<LockName>,
    slots: u32,
    store_label: String,
    /// The secrets of the URL given as the label: a store error quoting one is scrubbed before
    /// it is served.
    secrets: Arc<[String]>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveView")
            .field("locks", &self.inner.locks)
            .field("slots", &self.inner.slots)
            .field("store", &self.inner.store_label)
            .finish_non_exhaustive()
    }
}

/// What `/api/live` answers (serialized as JSON with these field names).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # use std::sync::Arc;
/// # use leasehold::{LockName, MemoryStore};
/// # use leasehold_workbench::web::LiveView;
/// let view = LiveView::new(Arc::new(MemoryStore::new()), vec![LockName::new("a")?])?;
/// let json = serde_json::to_value(view.report().await)?;
/// assert_eq!(json["locks"][0]["lock"], "a");
/// assert_eq!(json["locks"][0]["holders"], serde_json::json!([]));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LiveReport {
    /// The store, as labelled by the caller (secrets redacted).
    pub store: String,
    /// When the snapshot was taken, by this machine's clock, in milliseconds since the epoch.
    pub checked_at_ms: u64,
    /// One entry per lock, in the order given.
    pub locks: Vec<LiveLock>,
}

/// One lock in a [`LiveReport`] (see its example).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LiveLock {
    /// The lock name.
    pub lock: String,
    /// Slots looked at (1 for a single-leader lock).
    pub slots: u32,
    /// Live holders, by slot.
    pub holders: Vec<LiveHolder>,
    /// Why the state could not be read (then `holders` is empty), else `None`.
    pub error: Option<String>,
    /// The lock's period ledger (its latest claim of a period and its latest run), held or not;
    /// `None` for a lock never claimed with a period, or when it could not be read.
    pub ledger: Option<LiveLedger>,
}

/// The period ledger of a [`LiveLock`]: "did this period's run happen, and where?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LiveLedger {
    /// The id of the window claimed, under the claim's own period length.
    pub period: i64,
    /// The window claimed, in milliseconds since the epoch (store clock): its start...
    pub from_ms: u64,
    /// ...and its end (excluded).
    pub until_ms: u64,
    /// True once the claim's action started; false while it is only claimed.
    pub ran: bool,
    /// When the claim was granted (ms since the epoch, store clock).
    pub at_ms: u64,
    /// The node id it was granted to.
    pub by: String,
    /// When the lock's latest run was granted, if any.
    pub last_run_ms: Option<u64>,
}

impl From<&leasehold::PeriodRecord> for LiveLedger {
    fn from(r: &leasehold::PeriodRecord) -> Self {
        Self {
            period: r.period,
            from_ms: epoch_ms(r.from),
            until_ms: epoch_ms(r.until),
            ran: r.started,
            at_ms: epoch_ms(r.at),
            by: r.by.clone(),
            last_run_ms: r.last_run().map(epoch_ms),
        }
    }
}

/// One holder in a [`LiveLock`] (see the example of [`LiveView`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LiveHolder {
    /// The slot (0 for a single-leader lock).
    pub slot: u32,
    /// The owner recorded in the store (its node id).
    pub owner: String,
    /// The fencing number of this grant.
    pub fence: u64,
    /// When the lease was granted, by the store's clock (ms since the epoch).
    pub acquired_at_ms: u64,
    /// When the lease ends unless renewed, by the store's clock (ms since the epoch).
    pub expires_at_ms: u64,
    /// `expires_at` minus this machine's clock, in milliseconds (0 when past).
    pub time_left_ms: u64,
}

impl LiveView {
    /// A view of `locks` on `store` (one slot each; see [`slots`](Self::slots)). Fails if
    /// `locks` is empty.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{LockName, MemoryStore};
    /// use leasehold_workbench::web::{LiveView, WebError};
    /// assert!(matches!(LiveView::new(Arc::new(MemoryStore::new()), vec![]), Err(WebError::NoLocks)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(store: Arc<dyn LeaseStore>, locks: Vec<LockName>) -> Result<Self, WebError> {
        if locks.is_empty() {
            return Err(WebError::NoLocks);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                elector: Elector::new(Arc::clone(&store)),
                locks,
                slots: 1,
                store_label: String::new(),
                secrets: Arc::from([]),
            }),
        })
    }

    /// Looks at `slots` slots of every lock (as given to `leasehold run --slots`; 1 or more).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{LockName, MemoryStore};
    /// # use leasehold_workbench::web::LiveView;
    /// let view = LiveView::new(Arc::new(MemoryStore::new()), vec![LockName::new("crawl")?])?.slots(3)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slots(self, slots: u32) -> Result<Self, WebError> {
        let mut inner = self.into_inner();
        let options = inner
            .elector
            .options()
            .to_builder()
            .max_leaders(slots.max(1))
            .build()
            .map_err(WebError::Options)?;
        inner.elector = inner.elector.reconfigured(options);
        inner.slots = slots.max(1);
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The store's name as the page shows it. It is served to every visitor, so it is scrubbed
    /// with [`leasehold::store::scrub_secrets`] (passwords and secret parameters become `***`,
    /// whatever characters they hold), and so are the store errors the page shows.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{LockName, MemoryStore};
    /// # use leasehold_workbench::web::LiveView;
    /// let view = LiveView::new(Arc::new(MemoryStore::new()), vec![LockName::new("a")?])?
    ///     .store_label("postgres://app:s3c/r3t@db/leases");
    /// assert!(format!("{view:?}").contains("postgres://app:***@db/leases"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn store_label(self, label: impl Into<String>) -> Self {
        let mut inner = self.into_inner();
        let label = label.into();
        inner.secrets = leasehold::store::url_secrets(&label).into();
        inner.store_label = leasehold::store::scrub_secrets(&label, &inner.secrets);
        Self {
            inner: Arc::new(inner),
        }
    }

    fn into_inner(self) -> Inner {
        Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            elector: shared.elector.clone(),
            locks: shared.locks.clone(),
            slots: shared.slots,
            store_label: shared.store_label.clone(),
            secrets: Arc::clone(&shared.secrets),
        })
    }

    /// Asks the store for every lock now (concurrently). A lock whose state cannot be read is
    /// reported with its `error`, the others still are.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use std::sync::Arc;
    /// # use leasehold::{LockName, MemoryStore};
    /// # use leasehold_workbench::web::LiveView;
    /// let view = LiveView::new(Arc::new(MemoryStore::new()), vec![LockName::new("a")?])?;
    /// assert!(view.report().await.locks[0].holders.is_empty());
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only reads the store.
    pub async fn report(&self) -> LiveReport {
        let inner = &self.inner;
        let locks = join_all(inner.locks.iter().map(|lock| async move {
            let (state, ledger) =
                futures::join!(inner.elector.state(lock), inner.elector.period_record(lock));
            let ledger = match ledger {
                Ok(record) => record.as_ref().map(LiveLedger::from),
                Err(e) => {
                    tracing::warn!(lock = %lock, error = %e, "live view could not read the period ledger");
                    None
                }
            };
            let mut entry = match state {
                Ok(state) => live_lock(&state, SystemTime::now()),
                Err(e) => {
                    tracing::warn!(lock = %lock, error = %e, "live view could not read lock state");
                    LiveLock {
                        lock: lock.to_string(),
                        slots: inner.slots,
                        holders: Vec::new(),
                        error: Some(leasehold::store::scrub_secrets(
                            &e.to_string(),
                            &inner.secrets,
                        )),
                        ledger: None,
                    }
                }
            };
            entry.ledger = ledger;
            entry
        }))
        .await;
        LiveReport {
            store: inner.store_label.clone(),
            checked_at_ms: epoch_ms(SystemTime::now()),
            locks,
        }
    }

    /// The routes, for a server listening on `listen` (see [`LiveView`] for the paths; a
    /// request for the former `/manage/leader-election` is redirected to [`MANAGEMENT_PATH`]).
    /// The management report is served without authentication, like the page: on a loopback
    /// address, or on another address when the caller has explicitly allowed remote access (see
    /// [`check_bind`](crate::web::check_bind)).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use leasehold::{LockName, MemoryStore};
    /// # use leasehold_workbench::web::LiveView;
    /// let view = LiveView::new(Arc::new(MemoryStore::new()), vec![LockName::new("a")?])?;
    /// let router: axum::Router = view.router("127.0.0.1:0".parse()?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn router(self, listen: SocketAddr) -> Result<Router, WebError> {
        let management = Management::new(self.inner.elector.clone())
            .locks(self.inner.locks.iter().map(ToString::to_string))
            .path(MANAGEMENT_PATH);
        let management = if listen.ip().is_loopback() {
            management.loopback_only(listen)
        } else {
            management.behind_caller_auth()
        };
        let management = management.router()?;
        // Relative to the former path (one directory below the root), so that the redirect also
        // holds when the router is nested under a prefix.
        let moved = format!("..{MANAGEMENT_PATH}");
        Ok(Router::new()
            .route("/", get(|| async { page::respond(page::LIVE_HTML) }))
            .route("/api/live", get(live))
            .route(
                FORMER_MANAGEMENT_PATH,
                get(move || {
                    let to = moved.clone();
                    async move { Redirect::permanent(&to) }
                }),
            )
            .with_state(self)
            .merge(management))
    }
}

async fn live(State(view): State<LiveView>) -> Response {
    let mut res = Json(view.report().await).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn live_lock(state: &LockState, now: SystemTime) -> LiveLock {
    LiveLock {
        lock: state.lock.to_string(),
        slots: state.slots,
        holders: state.holders.iter().map(|h| live_holder(h, now)).collect(),
        error: None,
        ledger: None,
    }
}

fn live_holder(h: &Holder, now: SystemTime) -> LiveHolder {
    LiveHolder {
        slot: h.slot,
        owner: h.owner.clone(),
        fence: h.fence,
        acquired_at_ms: epoch_ms(h.acquired_at),
        expires_at_ms: epoch_ms(h.expires_at),
        time_left_ms: millis(h.time_left(now)),
    }
}

fn epoch_ms(t: SystemTime) -> u64 {
    millis(t.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that cannot be read, whose error quotes the URL and the password (as some
    /// drivers do).
    struct Unreadable;

    const URL: &str = "postgres://app:hun'ter 2@db/leases";

    #[leasehold::store::async_trait]
    impl LeaseStore for Unreadable {
        async fn try_acquire(
            &self,
            _: &leasehold::store::AcquireRequest,
        ) -> leasehold::store::StoreResult<leasehold::store::Acquisition> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn extend(
            &self,
            _: &leasehold::Lease,
            _: Duration,
        ) -> leasehold::store::StoreResult<leasehold::store::Extension> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn release(
            &self,
            _: &leasehold::Lease,
            _: Duration,
        ) -> leasehold::store::StoreResult<leasehold::store::Release> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn start_period(
            &self,
            _: &leasehold::Lease,
        ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn period_record(
            &self,
            _: &LockName,
        ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn clear_period_ledger(
            &self,
            _: &LockName,
        ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
            Err(leasehold::store::StoreError::transient("unreadable"))
        }
        async fn state(&self, _: &LockName, _: u32) -> leasehold::store::StoreResult<LockState> {
            Err(leasehold::store::StoreError::transient(format!(
                "cannot reach {URL}: password hun'ter 2 refused"
            )))
        }
        fn describe(&self) -> String {
            "unreadable".into()
        }
    }

    #[tokio::test]
    async fn a_store_error_is_served_without_the_urls_secrets()
    -> Result<(), Box<dyn std::error::Error>> {
        let view =
            LiveView::new(Arc::new(Unreadable), vec![LockName::new("job")?])?.store_label(URL);
        let report = view.report().await;
        let error = report.locks[0].error.clone().unwrap_or_default();
        assert!(
            error.contains("cannot reach") && !error.contains("ter"),
            "{error}"
        );
        assert!(!report.store.contains("ter"), "{}", report.store);
        Ok(())
    }

    #[tokio::test]
    async fn the_live_report_shows_the_period_ledger_of_a_free_lock()
    -> Result<(), Box<dyn std::error::Error>> {
        let store: Arc<dyn LeaseStore> = Arc::new(leasehold::MemoryStore::new());
        let options = leasehold::ElectionOptions::builder()
            .node_id("web-3")
            .build()?;
        let elector = leasehold::Elector::with_options(store.clone(), options);
        let hourly = leasehold::Period::every(Duration::from_secs(3600))?;
        let ran = elector
            .run_once_per("job", hourly, |_| async { Ok::<_, String>(()) })
            .await?;
        assert!(ran.ran(), "{ran:?}");
        let view = LiveView::new(store, vec![LockName::new("job")?, LockName::new("never")?])?;
        let report = view.report().await;
        assert!(report.locks[0].holders.is_empty(), "the lock is free again");
        let ledger = report.locks[0].ledger.clone().ok_or("no ledger")?;
        assert!(ledger.ran && ledger.by == "web-3", "{ledger:?}");
        assert_eq!(ledger.until_ms - ledger.from_ms, 3_600_000);
        assert_eq!(ledger.last_run_ms, Some(ledger.at_ms));
        assert_eq!(report.locks[1].ledger, None);
        let json = serde_json::to_value(&report)?;
        assert_eq!(json["locks"][0]["ledger"]["by"], "web-3");
        Ok(())
    }

    #[test]
    fn holders_report_time_left_against_the_given_clock() -> Result<(), leasehold::error::NameError>
    {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000);
        let state = LockState {
            lock: LockName::new("job")?,
            slots: 2,
            holders: vec![Holder {
                slot: 1,
                owner: "host:1".to_owned(),
                fence: 9,
                acquired_at: t0,
                expires_at: t0 + Duration::from_secs(30),
            }],
        };
        let live = live_lock(&state, t0 + Duration::from_secs(10));
        assert_eq!(live.holders[0].time_left_ms, 20_000);
        assert_eq!(live.holders[0].expires_at_ms, 1_030_000);
        let late = live_lock(&state, t0 + Duration::from_secs(31));
        assert_eq!(late.holders[0].time_left_ms, 0);
        Ok(())
    }
}
