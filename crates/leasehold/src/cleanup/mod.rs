//! No lease left behind: everything that frees, in the background, a lease this elector may
//! hold but no longer wants, and the counted tasks that do it.
//!
//! An acquisition sends its attempts through [`attempts::Attempts`], the acquisition loop's
//! seam to this module. Behind it:
//!
//! * [`in_flight`]: an attempt the caller stopped waiting for (timed out, or its future dropped)
//!   on a store whose acquisition is not cancel-safe is handed over to a cleanup task;
//! * [`late_grants`]: a grant such an attempt receives after that is released, unless the caller
//!   took that token's lease through another attempt;
//! * [`in_doubt`]: an acquisition whose attempt was answered with a transient error, and which
//!   ends without a definite answer, frees whatever lease its token may hold;
//! * [`background_release`]: the release itself, retried through transient errors for at most
//!   [`LET_GO_PATIENCE`](crate::limits::LET_GO_PATIENCE); a failed release of a guard goes the same way.
//!
//! [`Cleanup`] counts those tasks (and a dropped guard's release), so that the stop paths can
//! wait for them (`Elector::settled`). It is a small equivalent of
//! `tokio_util::task::TaskTracker` that needs no closing: an elector is shared and stays usable
//! after one of its users stopped, so "settled" means "nothing counted is running right now".

pub(crate) mod attempts;
pub(crate) mod background_release;
pub(crate) mod in_doubt;
pub(crate) mod in_flight;
pub(crate) mod late_grants;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;

/// Counts the cleanup tasks of one elector and its clones, tenants and reconfigured copies.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cleanup(Arc<watch::Sender<usize>>);

/// One counted task; dropping it (when the task ends, or is dropped with its runtime) uncounts
/// it. `done` is set when the task's work ended: a task dropped unfinished — its runtime shut
/// down first — is reported, since the lease it was to release then ends only at its expiry.
struct Pending {
    count: Arc<watch::Sender<usize>>,
    done: std::cell::Cell<bool>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.count.send_modify(|n| *n = n.saturating_sub(1));
        if !self.done.get() {
            tracing::warn!(
                "the runtime shut down before a lease was released (or before an \
                 abandoned acquisition was answered); such a lease ends at its expiry (await the \
                 guard's release, or Elector::settled, before shutting the runtime down)"
            );
        }
    }
}

impl Cleanup {
    /// Spawns `work` on `handle`, counted until it ends.
    pub(crate) fn spawn_on<F>(&self, handle: &Handle, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.0.send_modify(|n| *n += 1);
        let pending = Pending {
            count: Arc::clone(&self.0),
            done: std::cell::Cell::new(false),
        };
        handle.spawn(async move {
            work.await;
            pending.done.set(true);
        });
    }

    /// True if no counted task is running.
    pub(crate) fn is_settled(&self) -> bool {
        *self.0.borrow() == 0
    }

    /// Resolves when no counted task is running (at once if none is). Cancel-safe.
    pub(crate) async fn settled(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// [`settled`](Self::settled), bounded by `limit`; false (with a warning) if it ran out.
    pub(crate) async fn settled_within(&self, limit: Duration) -> bool {
        if tokio::time::timeout(limit, self.settled()).await.is_ok() {
            return true;
        }
        tracing::warn!(
            ?limit,
            pending = *self.0.borrow(),
            "the store did not answer an abandoned acquisition or a release in time; \
             a lease it grants or keeps now ends at its expiry"
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn settles_when_every_counted_task_ended() {
        let cleanup = Cleanup::default();
        assert!(cleanup.is_settled());
        cleanup.settled().await; // nothing counted: at once
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        cleanup.spawn_on(&Handle::current(), async move {
            let _ = rx.await;
        });
        assert!(!cleanup.is_settled());
        assert!(!cleanup.settled_within(Duration::from_secs(1)).await);
        let _ = tx.send(());
        assert!(cleanup.settled_within(Duration::from_secs(1)).await);
        assert!(cleanup.is_settled());
    }
}
