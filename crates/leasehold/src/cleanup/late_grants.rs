//! Who owns a lease granted to an acquisition's attempts: the caller, or nobody.
//!
//! An acquisition sends its attempts with one token, so that the store hands back a lease an
//! earlier attempt got but whose answer was lost. On a store whose acquisition is not
//! cancel-safe an attempt the caller stops waiting for is handed over to a cleanup task
//! (`flight`), and its answer can come after that: the attempt timed out (and the next one went
//! out with the same token), or the caller's future was dropped while the attempt was in
//! flight. A grant nobody reads must be released — unless another attempt of the same
//! acquisition got that lease back and the caller took it, since releasing by token would free
//! the caller's lease. And once a token's lease is being released the caller must not take it.
//!
//! [`LateGrants`] decides both under one lock, per token: a token the caller took is never released
//! by a late answer ([`Answer`]'s drop), and a token given up that way is never taken
//! ([`Answer::read`]); the caller then goes on with a new token.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use crate::cleanup::Cleanup;
use crate::cleanup::background_release::{Unwanted, release_in_background};
use crate::error::StoreResult;
use crate::store::contract::LeaseStore;
use crate::store::lease::{Acquisition, Lease, Token};

/// The grants to one acquisition's attempts, on a store whose acquisition is not cancel-safe.
pub(crate) struct LateGrants {
    tokens: Mutex<Tokens>,
    store: Arc<dyn LeaseStore>,
    cleanup: Cleanup,
}

#[derive(Default)]
struct Tokens {
    /// The token whose lease the caller took.
    taken: Option<Token>,
    /// Tokens whose leases were granted to answers nobody read, and are released.
    given_up: Vec<Token>,
}

impl LateGrants {
    pub(crate) fn new(store: Arc<dyn LeaseStore>, cleanup: Cleanup) -> Arc<Self> {
        Arc::new(Self {
            tokens: Mutex::new(Tokens::default()),
            store,
            cleanup,
        })
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, Tokens> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The caller takes a lease granted to `token`; false if that token was given up.
    fn take(&self, token: Token) -> bool {
        let mut tokens = self.tokens();
        if tokens.given_up.contains(&token) {
            return false;
        }
        tokens.taken = Some(token);
        true
    }

    /// Releases `lease`, granted to an answer nobody read, unless the caller took its token
    /// through another attempt. The release is counted in the elector's cleanup.
    fn give_up(&self, lease: Lease) {
        {
            let mut tokens = self.tokens();
            if tokens.taken == Some(lease.token) {
                return;
            }
            if !tokens.given_up.contains(&lease.token) {
                tokens.given_up.push(lease.token);
            }
        }
        debug!(lock = %lease.lock, "releasing a lease granted after the caller stopped waiting");
        // It ends at most its granted length from now.
        let length = lease
            .expires_at
            .duration_since(lease.acquired_at)
            .unwrap_or_default();
        let ends = crate::limits::deadline_after(Instant::now(), length);
        let unwanted = Unwanted::Lease {
            lease,
            linger: Duration::ZERO,
        };
        release_in_background(&self.store, &self.cleanup, unwanted, ends);
    }
}

/// An attempt's answer on its way to the caller. A grant in it that the caller does not take is
/// given up when the answer is dropped: by the cleanup task of an attempt handed over, or by
/// [`read`](Self::read).
pub(crate) struct Answer {
    outcome: Option<StoreResult<Acquisition>>,
    grants: Arc<LateGrants>,
}

impl Answer {
    pub(crate) fn new(outcome: StoreResult<Acquisition>, grants: Arc<LateGrants>) -> Self {
        Self {
            outcome: Some(outcome),
            grants,
        }
    }

    /// The store's answer, or `None` for a grant to a token that was given up meanwhile (the
    /// caller must go on with a new token; this lease is released too).
    pub(crate) fn read(mut self) -> Option<StoreResult<Acquisition>> {
        match self.outcome.take()? {
            Ok(Acquisition::Elected(lease)) if !self.grants.take(lease.token) => {
                self.outcome = Some(Ok(Acquisition::Elected(lease)));
                None
            }
            outcome => Some(outcome),
        }
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(Ok(Acquisition::Elected(lease))) = self.outcome.take() {
            self.grants.give_up(lease);
        }
    }
}
