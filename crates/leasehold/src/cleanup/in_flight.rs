//! An acquisition attempt in flight on a store whose acquisition is not cancel-safe.
//!
//! The attempt runs in the caller's own task: an answer that comes while the caller waits costs
//! no task, channel or wake-up of its own. If the caller stops waiting before the store answered
//! — the attempt timed out, or the caller's future was dropped — the attempt is handed over to a
//! counted cleanup task ([`Cleanup`]), which reads the late answer and gives up a grant in it
//! unless the caller took that token's lease through another attempt ([`LateGrants`]).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use tokio::runtime::Handle;
use tracing::warn;

use crate::cleanup::Cleanup;
use crate::cleanup::late_grants::{Answer, LateGrants};
use crate::error::{StoreError, StoreResult};
use crate::store::contract::LeaseStore;
use crate::store::lease::{AcquireRequest, Acquisition};

type Attempt = Pin<Box<dyn Future<Output = StoreResult<Acquisition>> + Send>>;

/// One attempt; dropped before it answered, it hands itself over to a cleanup task.
pub(crate) struct InFlight<'a> {
    attempt: Option<Attempt>,
    store: &'a Arc<dyn LeaseStore>,
    cleanup: &'a Cleanup,
    /// The acquisition's grants, if one of its attempts was handed over before; a hand-over
    /// without them makes its own (nobody can take that token's lease any more).
    grants: Option<Arc<LateGrants>>,
}

impl<'a> InFlight<'a> {
    /// Sends `req` to `store` (at the first poll of [`answer`](Self::answer)).
    pub(crate) fn new(
        store: &'a Arc<dyn LeaseStore>,
        req: &AcquireRequest,
        cleanup: &'a Cleanup,
        grants: Option<Arc<LateGrants>>,
    ) -> Self {
        let sent = req.clone();
        let owned = Arc::clone(store);
        let attempt = async move {
            // A store that panics answers as a store that failed, as it did when attempts ran on
            // tasks of their own; the panic itself is reported by the panic hook.
            AssertUnwindSafe(owned.try_acquire(&sent))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(StoreError::transient(
                        "the store's acquisition attempt panicked",
                    ))
                })
        };
        Self {
            attempt: Some(Box::pin(attempt)),
            store,
            cleanup,
            grants,
        }
    }

    /// The store's answer. Cancel-safe: dropping this future leaves the attempt in flight.
    pub(crate) async fn answer(&mut self) -> Option<StoreResult<Acquisition>> {
        let attempt = self.attempt.as_mut()?;
        let outcome = attempt.await;
        self.attempt = None;
        Some(outcome)
    }

    /// Hands the attempt, unanswered, over to a cleanup task that reads its answer with the
    /// acquisition's `grants`, made now if none of its attempts was handed over before.
    pub(crate) fn abandon(mut self, grants: &mut Option<Arc<LateGrants>>) {
        let shared = grants.get_or_insert_with(|| self.new_grants());
        self.grants = Some(Arc::clone(shared));
    }

    fn new_grants(&self) -> Arc<LateGrants> {
        LateGrants::new(Arc::clone(self.store), self.cleanup.clone())
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(attempt) = self.attempt.take() else {
            return;
        };
        let grants = self.grants.take().unwrap_or_else(|| self.new_grants());
        let Ok(handle) = Handle::try_current() else {
            warn!(
                "an acquisition attempt was abandoned outside a tokio runtime; a lease \
                 it grants ends at its expiry"
            );
            return;
        };
        self.cleanup.spawn_on(&handle, async move {
            // Nobody waits any more: a grant in the answer is given up when it is dropped.
            drop(Answer::new(attempt.await, grants));
        });
    }
}
