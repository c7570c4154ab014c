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
    /// The loop behind [`Elector::lead`](crate::Elector::lead).
    pub(crate) async fn lead_terms<F, Fut>(
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
