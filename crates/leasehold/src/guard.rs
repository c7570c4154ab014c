//! `LeaderGuard`: a held lease, its local deadline, its lost signal and its release.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{Instrument, debug, warn};

use crate::cleanup::Cleanup;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::events::{Event, Events, LostReason};
use crate::lease::{Extension, Lease, Release};
use crate::line::Lines;
use crate::metrics::LockMetrics;
use crate::store::LeaseStore;
use crate::{suspend, watchdog};

/// The safety margin taken off a lease for the local deadline: a tenth of the lease, at least
/// 1 ms, at most half the lease. It covers clock-rate drift between this host and the store and
/// scheduling delay between noticing the deadline and acting on it.
pub(crate) fn safety_margin(ttl: Duration) -> Duration {
    (ttl / 10).max(Duration::from_millis(1)).min(ttl / 2)
}

/// State shared by a guard, its contexts and its watchdog.
pub(crate) struct LeaseCell {
    pub(crate) store: Arc<dyn LeaseStore>,
    pub(crate) events: Events,
    metrics: Arc<LockMetrics>,
    /// The electing engine's lines: a release wakes the first of its tasks waiting in line.
    lines: Arc<Lines>,
    /// The electing engine's cleanup tasks: a dropped guard's release is counted there.
    cleanup: Cleanup,
    pub(crate) ttl: Duration,
    min_lease: Duration,
    /// Monotonic instant at which the acquisition succeeded (min-lease is counted from here).
    acquired: Instant,
    /// The lease as granted; its `expires_at` is kept current in `state`.
    granted: Lease,
    state: Mutex<CellState>,
    lost_flag: AtomicBool,
    lost_notify: Notify,
    pub(crate) stop: Notify,
    pub(crate) stopping: AtomicBool,
    /// One extension in flight at a time (watchdog or manual), so answers arrive in the order
    /// the store applied them and the local deadline always follows the store's expiry.
    pub(crate) extending: tokio::sync::Mutex<()>,
}

struct CellState {
    expires_at: SystemTime,
    deadline: Instant,
    /// [`suspend::offset`] when the request behind `deadline` was sent: a suspend since then
    /// moves the real deadline closer (see [`suspend`]).
    boot_offset: Option<suspend::Offset>,
    lost: Option<LostReason>,
}

impl LeaseCell {
    /// A cell for `lease`, granted by `engine`'s store to a request sent at `sent_at` and
    /// answered at `acquired`.
    pub(crate) fn new(
        engine: &Engine,
        metrics: Arc<LockMetrics>,
        lease: Lease,
        sent_at: Instant,
        acquired: Instant,
    ) -> Self {
        let ttl = engine.options.lease;
        Self {
            store: Arc::clone(&engine.store),
            events: engine.events.clone(),
            metrics,
            lines: Arc::clone(&engine.lines),
            cleanup: engine.cleanup.clone(),
            ttl,
            min_lease: engine.options.min_lease,
            acquired,
            state: Mutex::new(CellState {
                expires_at: lease.expires_at,
                deadline: crate::limits::deadline_after(sent_at, ttl - safety_margin(ttl)),
                boot_offset: suspend::offset(),
                lost: None,
            }),
            granted: lease,
            lost_flag: AtomicBool::new(false),
            lost_notify: Notify::new(),
            stop: Notify::new(),
            stopping: AtomicBool::new(false),
            extending: tokio::sync::Mutex::new(()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CellState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease with its current expiry.
    pub(crate) fn lease(&self) -> Lease {
        let mut lease = self.granted.clone();
        lease.expires_at = self.state().expires_at;
        lease
    }

    /// The lease as granted (its `expires_at` may be stale): what store calls need.
    pub(crate) fn granted(&self) -> &Lease {
        &self.granted
    }

    pub(crate) fn expires_at(&self) -> SystemTime {
        self.state().expires_at
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.state().deadline
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        if !self.lost_flag.load(Ordering::Acquire) {
            if Instant::now() >= self.deadline() || self.suspended_past_deadline() {
                self.mark_lost(LostReason::DeadlinePassed);
            } else {
                return None;
            }
        }
        self.state().lost
    }

    pub(crate) fn metrics(&self) -> &LockMetrics {
        &self.metrics
    }

    /// True if the host was suspended since the last grant or renewal was sent, for so long that
    /// the local deadline has passed in real time although the monotonic clock, which stood
    /// still meanwhile, has not reached it.
    fn suspended_past_deadline(&self) -> bool {
        let (deadline, base) = {
            let st = self.state();
            (st.deadline, st.boot_offset)
        };
        let Some(suspended) = suspend::since(base) else {
            return false;
        };
        let past = Instant::now()
            .checked_add(suspended)
            .is_none_or(|real_now| real_now >= deadline);
        if past {
            let g = &self.granted;
            warn!(lock = %g.lock, slot = g.slot, fence = g.fence, ?suspended,
                "leasehold: the host was suspended past the lease's local deadline; the store may have expired it");
        }
        past
    }

    /// Reports the first failure of a run of failed renewals: a warning and a
    /// [`RenewalFailing`](Event::RenewalFailing) event, ahead of any `Lost`.
    pub(crate) fn renewal_failing(&self, error: &str) {
        let g = &self.granted;
        let expires_at = self.expires_at();
        warn!(lock = %g.lock, slot = g.slot, fence = g.fence, error,
            "leasehold: lease renewal failing; retrying until the local deadline, then the lease is lost");
        self.events.emit(|| Event::RenewalFailing {
            lock: g.lock.clone(),
            slot: g.slot,
            fence: g.fence,
            error: error.to_owned(),
            expires_at,
        });
    }

    /// Records a successful extension whose request was sent at `sent_at`: the store's expiry is
    /// now its clock + `ttl` (which may be sooner than before), so the local deadline follows it.
    /// Callers hold `extending`, so extensions are applied and recorded in the same order.
    /// `sent_offset` is [`suspend::offset`] read when the request was sent.
    pub(crate) fn extended(
        &self,
        sent_at: Instant,
        sent_offset: Option<suspend::Offset>,
        ttl: Duration,
        expires_at: SystemTime,
    ) {
        {
            let mut st = self.state();
            if st.lost.is_some() {
                return;
            }
            st.boot_offset = sent_offset;
            st.deadline = crate::limits::deadline_after(sent_at, ttl - safety_margin(ttl));
            st.expires_at = expires_at;
        }
        self.metrics.extended();
        let g = &self.granted;
        self.events.emit(|| Event::Extended {
            lock: g.lock.clone(),
            slot: g.slot,
            fence: g.fence,
            expires_at,
        });
    }

    /// Marks the lease lost (once): wakes `lost()` waiters, emits `Lost`, counts it.
    pub(crate) fn mark_lost(&self, reason: LostReason) {
        {
            let mut st = self.state();
            if st.lost.is_some() {
                return;
            }
            st.lost = Some(reason);
        }
        let (lock, slot, fence) = (
            self.granted.lock.clone(),
            self.granted.slot,
            self.granted.fence,
        );
        self.lost_flag.store(true, Ordering::Release);
        self.lost_notify.notify_waiters();
        warn!(lock = %lock, slot, fence, %reason, "leasehold: lease lost");
        self.metrics.lost(reason);
        self.events.emit(|| Event::Lost {
            lock,
            slot,
            fence,
            reason,
        });
    }

    /// Resolves when the lease is lost or its local deadline passes.
    pub(crate) async fn lost(&self) -> LostReason {
        loop {
            let notified = self.lost_notify.notified();
            if let Some(reason) = self.lost_reason() {
                return reason;
            }
            let mut wake = self.deadline();
            if suspend::detectable() {
                // The monotonic clock stands still while the host is suspended: look again now
                // and then, so a suspend past the deadline is noticed soon after waking up.
                wake = wake.min(Instant::now() + suspend::SUSPEND_CHECK);
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    pub(crate) async fn extend(&self, ttl: Duration) -> Result<Extension> {
        crate::limits::check_duration("extension", ttl)?;
        let _one_at_a_time = self.extending.lock().await;
        let lease = &self.granted;
        let sent_at = Instant::now();
        let sent_offset = suspend::offset();
        let outcome = self
            .store
            .extend(lease, ttl)
            .await
            .map_err(|e| Error::store(&lease.lock, e))?;
        match outcome {
            Extension::Extended { expires_at } => {
                self.extended(sent_at, sent_offset, ttl, expires_at);
            }
            Extension::NotHeld => self.mark_lost(LostReason::NotHeld),
        }
        Ok(outcome)
    }

    /// The remaining minimum lease, counted from after acquisition.
    fn linger(&self) -> Duration {
        if self.min_lease.is_zero() {
            return Duration::ZERO;
        }
        self.min_lease.saturating_sub(self.acquired.elapsed())
    }

    /// Releases on the store (after the watchdog stopped) and reports it.
    async fn release(&self) -> Result<Release> {
        let lease = &self.granted;
        let linger = self.linger();
        let outcome = self.store.release(lease, linger).await;
        self.metrics.released();
        match &outcome {
            Ok(Release::Released) => {
                if linger.is_zero() {
                    self.lines.released(&lease.lock);
                }
                debug!(lock = %lease.lock, slot = lease.slot, fence = lease.fence, ?linger, "leasehold: released");
                self.events.emit(|| Event::Released {
                    lock: lease.lock.clone(),
                    slot: lease.slot,
                    fence: lease.fence,
                    linger,
                });
            }
            Ok(Release::NotHeld) => {
                debug!(lock = %lease.lock, slot = lease.slot, "leasehold: release found the lease no longer held");
                self.mark_lost(LostReason::NotHeld);
            }
            Err(e) => {
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, "leasehold: release failed; the lease ends at its expiry");
            }
        }
        outcome.map_err(|e| Error::store(&lease.lock, e))
    }
}

/// A held lease. Dropping it releases the lease (on a background task, which
/// [`Elector::settled`](crate::Elector::settled) waits for); call [`release`](Self::release) to
/// release and wait for the store's answer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let guard = elector.try_acquire("migrations").await?.expect("free lock");
/// assert_eq!(guard.fence(), 1);
/// assert_eq!(guard.lease().lock.as_str(), "migrations");
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the lease at once"]
pub struct LeaderGuard {
    /// The held lease's one face: every accessor (fence, lease, lost, extend, …) is the
    /// context's, reached through `Deref`.
    ctx: LeaderContext,
    watchdog: Option<JoinHandle<()>>,
    done: bool,
}

impl std::fmt::Debug for LeaderGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderGuard")
            .field("lease", &self.ctx.lease())
            .finish_non_exhaustive()
    }
}

impl LeaderGuard {
    pub(crate) fn new(cell: LeaseCell, auto_extend: bool) -> Self {
        let cell = Arc::new(cell);
        let watchdog = auto_extend.then(|| tokio::spawn(watchdog::run(Arc::clone(&cell))));
        Self {
            ctx: LeaderContext(cell),
            watchdog,
            done: false,
        }
    }

    /// A cheap handle for the action: fence, lease, lost signal, extension (the same face the
    /// guard shows through `Deref`).
    pub fn context(&self) -> LeaderContext {
        self.ctx.clone()
    }

    /// Stops renewal and releases the lease (or shortens it to the remaining minimum lease).
    /// `Ok(Release::NotHeld)` means the lease had already ended or been taken over.
    pub async fn release(mut self) -> Result<Release> {
        let watchdog = self.watchdog.take();
        let outcome = finish(&self.ctx.0, watchdog).await;
        // Only now: if this future is dropped before the store answered, `Drop` releases again
        // (release is token-checked, so a second release is harmless).
        self.done = true;
        outcome
    }

    pub(crate) fn metrics(&self) -> &LockMetrics {
        self.ctx.0.metrics()
    }

    /// The monotonic instant right after the store granted the lease.
    pub(crate) fn acquired_at(&self) -> Instant {
        self.ctx.0.acquired
    }
}

impl std::ops::Deref for LeaderGuard {
    type Target = LeaderContext;

    /// The guard's lease: [`fence`](LeaderContext::fence), [`lease`](LeaderContext::lease),
    /// [`slot`](LeaderContext::slot), [`lost`](LeaderContext::lost),
    /// [`extend`](LeaderContext::extend) and the rest are the context's.
    fn deref(&self) -> &LeaderContext {
        &self.ctx
    }
}

/// Stops the watchdog, waiting for an extension in flight, then releases.
async fn finish(cell: &LeaseCell, watchdog: Option<JoinHandle<()>>) -> Result<Release> {
    let g = cell.granted();
    let span =
        tracing::debug_span!("leasehold.release", lock = %g.lock, slot = g.slot, fence = g.fence);
    finish_in_span(cell, watchdog).instrument(span).await
}

async fn finish_in_span(cell: &LeaseCell, watchdog: Option<JoinHandle<()>>) -> Result<Release> {
    if let Some(handle) = watchdog {
        cell.stopping.store(true, Ordering::Release);
        cell.stop.notify_one();
        let _ = handle.await;
    }
    cell.release().await
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let cell = Arc::clone(&self.ctx.0);
        let watchdog = self.watchdog.take();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let cleanup = cell.cleanup.clone();
                cleanup.spawn_on(&handle, async move {
                    let _ = finish(&cell, watchdog).await;
                });
            }
            Err(_) => {
                // Nothing can release it from here; at least stop renewing it.
                if let Some(watchdog) = watchdog {
                    watchdog.abort();
                }
                let lease = cell.lease();
                warn!(lock = %lease.lock, slot = lease.slot,
                    "leasehold: guard dropped outside a tokio runtime; the lease ends at its expiry");
            }
        }
    }
}

/// What the action can reach of its lease: the fence to pass to the resource, the lost signal and
/// manual extension. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// let elector = Elector::new(Arc::new(MemoryStore::new()));
/// let fence = elector.run_if_leader("export", |ctx| async move {
///     // write_to_resource(data, ctx.fence())
///     ctx.fence()
/// }).await?;
/// assert_eq!(fence, Some(1));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderContext(Arc<LeaseCell>);

impl std::fmt::Debug for LeaderContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LeaderContext")
            .field(&self.0.lease())
            .finish()
    }
}

impl LeaderContext {
    /// The fencing number.
    pub fn fence(&self) -> u64 {
        self.0.granted().fence
    }
    /// The lock (the full, namespaced name).
    pub fn lock(&self) -> &crate::LockName {
        &self.0.granted().lock
    }
    /// The slot (0 for single-leader locks).
    pub fn slot(&self) -> u32 {
        self.0.granted().slot
    }
    /// The store's expiry as last seen.
    pub fn expires_at(&self) -> SystemTime {
        self.0.expires_at()
    }
    /// The lease as last seen.
    pub fn lease(&self) -> Lease {
        self.0.lease()
    }
    /// True once the lease is lost or its local deadline has passed.
    pub fn is_lost(&self) -> bool {
        self.0.lost_reason().is_some()
    }
    /// Resolves when the lease is lost or can no longer be proven (local deadline passed).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only watches; call it again to keep watching.
    pub async fn lost(&self) -> LostReason {
        self.0.lost().await
    }
    /// Extends the lease to end `ttl` from now (store clock). `NotHeld` also marks the lease
    /// lost.
    ///
    /// # Errors
    ///
    /// [`Error::Limit`](crate::Error::Limit) for a `ttl` beyond
    /// [`MAX_DURATION`](crate::MAX_DURATION) (nothing is sent); [`Error::Store`](crate::Error::Store)
    /// when the store fails.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the wait for the store's answer; the extension may still be
    /// applied, which only lengthens the lease this holder already has.
    pub async fn extend(&self, ttl: Duration) -> Result<Extension> {
        self.0.extend(ttl).await
    }
    /// The conservative local deadline.
    pub fn local_deadline(&self) -> Instant {
        self.0.deadline()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{ElectionOptions, Elector, MemoryStore};

    /// A suspend cannot be staged in a test; moving the guard's reading of the suspend clock back
    /// by a minute is what the guard would see after the host slept for a minute.
    #[tokio::test(flavor = "current_thread")]
    async fn a_suspend_longer_than_the_lease_is_a_loss_at_once() {
        let Some(now) = suspend::offset() else {
            return; // no suspend clock on this platform: nothing is detected
        };
        let opts = ElectionOptions::builder()
            .lease(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let elector = Elector::with_options(Arc::new(MemoryStore::new()), opts);
        let mut events = elector.subscribe();
        let Ok(Some(guard)) = elector.try_acquire("nightly").await else {
            panic!("free lock");
        };
        assert!(!guard.is_lost(), "no suspend yet");
        let secs = |n: i128| n * 1_000_000_000;
        guard.ctx.0.state().boot_offset = Some(now - secs(5));
        assert!(!guard.is_lost(), "5 s asleep: 30 s lease still valid");
        guard.ctx.0.state().boot_offset = Some(now - secs(60));
        assert!(
            guard.local_deadline() > Instant::now(),
            "the monotonic deadline lies ahead"
        );
        assert!(
            guard.is_lost(),
            "60 s asleep: the 30 s lease cannot be proven"
        );
        assert_eq!(guard.lost().await, LostReason::DeadlinePassed);
        let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.kind())
            .collect();
        assert_eq!(kinds, ["elected", "lost"]);
        assert!(matches!(guard.release().await, Ok(Release::Released)));
    }
}
