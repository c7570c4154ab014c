//! `LeaderGuard` and `LeaderContext`: the one face of a held lease, and its release.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{Instrument, warn};

use crate::error::Result;
use crate::events::LostReason;
use crate::hold::cell::LeaseCell;
use crate::hold::watchdog;
use crate::metrics::LockMetrics;
use crate::store::lease::{Extension, Lease, Release};

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
/// let guard = elector.try_acquire("migrations").await?.elected().expect("free lock");
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
    watchdog: Watchdog,
    done: bool,
}

impl std::fmt::Debug for LeaderGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderGuard")
            .field("lease", &self.ctx.lease())
            .finish_non_exhaustive()
    }
}

/// The guard's auto-extend watchdog.
enum Watchdog {
    /// Off (`auto_extend(false)`), or stopped.
    Off,
    /// Not started yet: a guard leaves the acquisition loop so (see
    /// [`LeaderGuard::unwatched`]).
    Due,
    /// Renewing.
    Running(JoinHandle<()>),
}

impl Watchdog {
    /// The running task, if any, leaving `Off`.
    fn take(&mut self) -> Option<JoinHandle<()>> {
        match std::mem::replace(self, Self::Off) {
            Self::Running(handle) => Some(handle),
            Self::Off | Self::Due => None,
        }
    }
}

impl LeaderGuard {
    /// A guard for `cell` whose watchdog, if `auto_extend`, is not started yet: every path that
    /// hands a guard out starts it with [`watched`](Self::watched), except `run_if_leader`'s,
    /// which starts it only if the action's first step (which the caller's task runs at once)
    /// did not finish the action: an action done in one step costs no task, and a renewal that
    /// fell due during a long first step is sent as soon as the step yields.
    pub(crate) fn unwatched(cell: LeaseCell, auto_extend: bool) -> Self {
        Self {
            ctx: LeaderContext(Arc::new(cell)),
            watchdog: if auto_extend {
                Watchdog::Due
            } else {
                Watchdog::Off
            },
            done: false,
        }
    }

    /// Starts the watchdog, if due; the guard as it was otherwise.
    pub(crate) fn watched(mut self) -> Self {
        self.watch();
        self
    }

    /// Starts the watchdog, if due. Its renewals count from the grant, so a late start renews
    /// at once if a renewal is already due.
    pub(crate) fn watch(&mut self) {
        if matches!(self.watchdog, Watchdog::Due) {
            let cell = Arc::clone(&self.ctx.0);
            self.watchdog = Watchdog::Running(tokio::spawn(watchdog::run(cell)));
        }
    }

    /// A cheap handle for the action: fence, lease, lost signal, extension (the same face the
    /// guard shows through `Deref`).
    pub fn context(&self) -> LeaderContext {
        self.ctx.clone()
    }

    /// Stops renewal and releases the lease (or shortens it to the remaining minimum lease).
    /// `Ok(Release::NotHeld)` means the lease had already ended or been taken over.
    ///
    /// # Errors
    ///
    /// [`Error::Store`](crate::Error::Store) when the store fails. After a transient error the
    /// release is retried in the background, for at most
    /// [`LET_GO_PATIENCE`](crate::limits::LET_GO_PATIENCE) and not past the lease's end (the stop paths
    /// wait for it, see [`Elector::settled`](crate::Elector::settled)); after a permanent one,
    /// or if those tries fail too, the lease ends at its expiry.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the store answered releases again in the background (release
    /// is token-checked, so a second one is harmless).
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
    let span = crate::spans::release(cell.granted(), &cell.shared.store_label);
    let released = finish_in_span(cell, watchdog)
        .instrument(span.clone())
        .await;
    crate::spans::record_outcome(&span, crate::spans::release_outcome(&released));
    released
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
                let cleanup = cell.shared.cleanup.clone();
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
                    "guard dropped outside a tokio runtime; the lease ends at its expiry");
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
    /// [`MAX_DURATION`](crate::limits::MAX_DURATION) (nothing is sent); [`Error::Store`](crate::Error::Store)
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
        let Some(now) = crate::hold::suspend::offset() else {
            return; // no suspend clock on this platform: nothing is detected
        };
        let opts = ElectionOptions::builder()
            .lease(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let elector = Elector::with_options(Arc::new(MemoryStore::new()), opts);
        let mut events = elector.subscribe();
        let Ok(crate::Outcome::Elected(guard)) = elector.try_acquire("nightly").await else {
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
