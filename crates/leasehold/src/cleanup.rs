//! The background work an elector starts for cleanup, counted so that stop paths can wait for
//! it: the release of a dropped guard, and an abandoned acquisition attempt that releases a lease
//! granted after its caller stopped waiting.
//!
//! A small equivalent of `tokio_util::task::TaskTracker` that needs no closing: an elector is
//! shared and stays usable after one of its users stopped, so "settled" means "nothing counted
//! is running right now".

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;

/// How long the stop paths of [`Schedule`](crate::Schedule), the blocking facade and the
/// integrations (`leasehold-axum`, the CLI) wait at most for an elector to
/// [settle](crate::Elector::settled): for the store to answer an acquisition that was in flight
/// when they stopped, and the release of a lease it granted late. A store that has not answered
/// by then is treated as unreachable; such a lease then ends at its expiry.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

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
