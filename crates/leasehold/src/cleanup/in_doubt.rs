//! An acquisition in doubt: one of its attempts was answered with a transient error, and the
//! store may have granted it all the same. Ended without a definite answer, the acquisition lets
//! go of whatever lease its token holds ([`release_in_background`]).

use std::sync::Arc;

use tokio::time::Instant;
use tracing::debug;

use crate::cleanup::Cleanup;
use crate::cleanup::background_release::{Unwanted, release_in_background};
use crate::name::LockName;
use crate::options::ElectionOptions;
use crate::store::contract::LeaseStore;
use crate::store::lease::Token;

/// An acquisition's token while one of its attempts may have been granted without the answer
/// being read: raised by an attempt answered with a transient error, cleared by a definite
/// answer (granted, held by another, already ran). Dropped while raised — the acquisition gave
/// up, failed or was cancelled — it lets go of whatever lease that token holds.
pub(crate) struct InDoubt<'a> {
    store: &'a Arc<dyn LeaseStore>,
    cleanup: &'a Cleanup,
    /// The elector's options: its node id, slots and lease.
    options: &'a ElectionOptions,
    lock: &'a LockName,
    /// The token in doubt and when its earliest unanswered attempt was sent.
    raised: Option<(Token, Instant)>,
}

impl<'a> InDoubt<'a> {
    /// No doubt yet, about an acquisition of `lock` on `store` by an elector with `options`,
    /// whose background work is counted in `cleanup`.
    pub(crate) fn new(
        store: &'a Arc<dyn LeaseStore>,
        cleanup: &'a Cleanup,
        options: &'a ElectionOptions,
        lock: &'a LockName,
    ) -> Self {
        Self {
            store,
            cleanup,
            options,
            lock,
            raised: None,
        }
    }

    /// An attempt of `token` sent at `sent_at` was answered with a transient error. The doubt
    /// counts from the earliest such attempt of one token.
    pub(crate) fn raise(&mut self, token: Token, sent_at: Instant) {
        if self.raised.is_some_and(|(t, _)| t != token) {
            self.settle();
        }
        self.raised.get_or_insert((token, sent_at));
    }

    /// A definite answer: the token holds nothing unseen (or the caller took its lease).
    pub(crate) fn clear(&mut self) {
        self.raised = None;
    }

    /// When the earliest attempt in doubt was sent, if one is.
    pub(crate) fn since(&self) -> Option<Instant> {
        self.raised.map(|(_, since)| since)
    }

    /// Lets go of the lease the token in doubt may hold, in the background, and clears the
    /// doubt (the acquisition goes on with another token, or ends). A grant to that token ends
    /// at most a lease after its earliest unanswered attempt was sent.
    pub(crate) fn settle(&mut self) {
        let Some((token, since)) = self.raised.take() else {
            return;
        };
        debug!(lock = %self.lock, "an attempt answered with an error may have been granted; freeing its lease if it was");
        let unwanted = Unwanted::Token {
            lock: self.lock.clone(),
            slots: self.options.max_leaders,
            owner: Arc::clone(&self.options.node_id),
            token,
        };
        let ends = crate::limits::deadline_after(since, self.options.lease);
        release_in_background(self.store, self.cleanup, unwanted, ends);
    }
}

impl Drop for InDoubt<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}
