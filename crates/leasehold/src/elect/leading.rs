//! Leading: the terms of [`Elector::lead`](crate::Elector::lead) (contend, lead until the action
//! ends or the lease is lost, contend again) and the stream behind
//! [`Elector::leadership`](crate::Elector::leadership).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::sleep;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, warn};

use crate::elect::elector::Elector;
use crate::elect::lead::{LeadershipStream, TermEnd};
use crate::error::{Error, Result};
use crate::events::LostReason;
use crate::hold::guard::LeaderContext;
use crate::limits::SETTLE_TIMEOUT;
use crate::name::{IntoLockName, LockName};

/// How one term ended.
enum Ended {
    Stopped,
    Lost(LostReason),
    Returned(TermEnd),
    Panicked(Box<dyn std::any::Any + Send>),
}

impl Elector {
    /// Leads `name` as a **stable leader**: contends until elected, runs `action` for the term,
    /// and contends again when the term ends — until `stop` is cancelled or the action returns
    /// [`TermEnd::Stop`].
    ///
    /// * **Contending** waits as long as it takes: the store's release signal (where it has one)
    ///   wakes it at once, otherwise it polls with the elector's [`RetryPolicy`], at least every
    ///   [`RetryPolicy::max`] (250 ms by default). A follower therefore takes over a crashed
    ///   leader's lock within the lease plus one such interval.
    /// * **A term** begins when the lease is granted: `action` is called with the term's
    ///   [`LeaderContext`] (fence, lease, [`lost`](LeaderContext::lost)). The lease is renewed
    ///   in the background throughout (`auto_extend` is always on here; `min_lease` is ignored
    ///   so that stepping down frees the lock at once). The term ends when the action returns,
    ///   when the lease is lost (at its conservative local deadline, before the store can hand
    ///   the lock on), or when `stop` is cancelled. On loss and on stop the action's future is
    ///   **dropped** (cancelled at its next `.await`); either way it has ended before the lease
    ///   is released, so it never runs without the lease.
    /// * **The action's answer**: [`TermEnd::Resign`] releases and contends again after one
    ///   retry pause (giving a waiting node the lock); [`TermEnd::Stop`] releases and returns.
    ///   After a loss, this node contends again at once.
    ///
    /// Events: [`Event::Elected`](crate::Event::Elected) when a term begins,
    /// [`Event::Lost`](crate::Event::Lost) on loss, [`Event::Released`](crate::Event::Released)
    /// when it steps down; logs under the `leasehold.lead` span at INFO (elected, resigned,
    /// stopped) and WARN (lost, store failing). To see the leader from other processes, use
    /// [`leadership`](Self::leadership).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
    /// use std::sync::Arc;
    /// use leasehold::{CancellationToken, Elector, MemoryStore, TermEnd};
    ///
    /// let elector = Elector::new(Arc::new(MemoryStore::new()));
    /// let stop = CancellationToken::new();
    /// # stop.cancel(); // the doc test does not wait for a term
    /// elector
    ///     .lead("reconciler", stop.clone(), |ctx| async move {
    ///         // Reconcile with ctx.fence() until the lease is lost or `stop` is cancelled
    ///         // (this future is then dropped); return to step down.
    ///         let _fence = ctx.fence();
    ///         ctx.lost().await;
    ///         TermEnd::Resign
    ///     })
    ///     .await?; // returns once `stop` is cancelled, the lease released
    /// assert!(elector.state("reconciler").await?.is_free());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Name`](crate::Error::Name) for an invalid lock name,
    /// [`Error::Options`](crate::Error::Options) if the lease is too short to renew (see
    /// `auto_extend`), [`Error::Store`](crate::Error::Store) for a **permanent** store error
    /// while contending (transient ones are retried, with a warning). The lease is released
    /// before any error is returned. A panic in the action releases the lease and then resumes.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the action and releases the lease in the background (tracked:
    /// [`settled`](Self::settled) waits for it). Cancelling `stop` is the graceful way: `lead`
    /// then releases the lease and waits (at most [`SETTLE_TIMEOUT`](crate::limits::SETTLE_TIMEOUT)) for
    /// this elector's cleanup before returning, so nothing it started outlives it.
    ///
    /// [`RetryPolicy`]: crate::RetryPolicy
    /// [`RetryPolicy::max`]: crate::RetryPolicy::max
    /// [`TermEnd::Resign`]: crate::TermEnd::Resign
    /// [`TermEnd::Stop`]: crate::TermEnd::Stop
    pub async fn lead<F, Fut>(
        &self,
        name: impl IntoLockName,
        stop: CancellationToken,
        action: F,
    ) -> Result<()>
    where
        F: FnMut(LeaderContext) -> Fut,
        Fut: Future<Output = TermEnd>,
    {
        let lock = self.lock_name(name)?;
        // A stable leader renews while it leads and leaves nothing behind when it steps down.
        let options = self
            .options
            .to_builder()
            .auto_extend(true)
            .min_lease(Duration::ZERO)
            .build()?;
        let elector = self.reconfigured(options);
        let span =
            tracing::info_span!("leasehold.lead", lock = %lock, node = elector.options.node_id());
        let outcome = elector.terms(&lock, &stop, action).instrument(span).await;
        // A dropped guard's release or an abandoned acquisition may still be in flight: nothing
        // started for this campaign outlives it (bounded, in case the store does not answer).
        elector.shared.cleanup.settled_within(SETTLE_TIMEOUT).await;
        outcome
    }

    async fn terms<F, Fut>(
        &self,
        lock: &LockName,
        stop: &CancellationToken,
        mut action: F,
    ) -> Result<()>
    where
        F: FnMut(LeaderContext) -> Fut,
        Fut: Future<Output = TermEnd>,
    {
        loop {
            let guard = tokio::select! {
                biased;
                () = stop.cancelled() => return Ok(()),
                guard = self.contend(lock) => guard?,
            };
            let fence = guard.fence();
            info!(lock = %lock, fence, "elected; leading until the action ends or the lease is lost");
            let ended = {
                let term = AssertUnwindSafe(action(guard.context())).catch_unwind();
                tokio::pin!(term);
                tokio::select! {
                    biased;
                    () = stop.cancelled() => Ended::Stopped,
                    reason = guard.lost() => Ended::Lost(reason),
                    end = &mut term => end.map_or_else(Ended::Panicked, Ended::Returned),
                }
                // The action is dropped here, before the lease is released: it never runs
                // without the lease.
            };
            guard.metrics().action_finished(
                guard.acquired_at().elapsed(),
                matches!(ended, Ended::Panicked(_)),
            );
            let _ = guard.release().await;
            match ended {
                Ended::Stopped => {
                    info!(lock = %lock, fence, "stopped leading; lease released");
                    return Ok(());
                }
                Ended::Lost(reason) => {
                    warn!(lock = %lock, fence, %reason, "leadership lost; the action was cancelled; contending again");
                }
                Ended::Returned(TermEnd::Stop) => {
                    info!(lock = %lock, fence, "the action stopped leading; lease released");
                    return Ok(());
                }
                Ended::Returned(TermEnd::Resign) => {
                    info!(lock = %lock, fence, "resigned; lease released; contending again");
                    let pause = self.options.longest_pause();
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => return Ok(()),
                        () = sleep(pause) => {}
                    }
                }
                Ended::Panicked(panic) => std::panic::resume_unwind(panic),
            }
        }
    }

    /// Builds the stream behind [`Elector::leadership`](crate::Elector::leadership).
    pub(crate) fn leadership_stream(
        &self,
        name: impl IntoLockName,
        poll: Duration,
    ) -> Result<LeadershipStream> {
        let lock = self.lock_name(name)?;
        LeadershipStream::new(Arc::clone(&self.shared.store), lock, poll).map_err(Error::from)
    }
}
