//! One acquisition's attempts, sent so that no lease is left behind: the acquisition loop's only
//! door into [`cleanup`](super).
//!
//! All attempts of one acquisition carry one token, so that a lease an earlier attempt got, but
//! whose answer was lost, is handed back to a later one. [`Attempts`] keeps what that takes: the
//! doubt raised by an attempt answered with a transient error ([`InDoubt`]), and the grants to
//! attempts the caller stopped waiting for ([`LateGrants`], through [`InFlight`]).

use std::future::Future;
use std::sync::Arc;

use tokio::time::{Instant, timeout};

use crate::cleanup::in_doubt::InDoubt;
use crate::cleanup::in_flight::InFlight;
use crate::cleanup::late_grants::{Answer, LateGrants};
use crate::elect::shared::ElectorShared;
use crate::error::{StoreError, StoreResult};
use crate::name::LockName;
use crate::options::ElectionOptions;
use crate::store::lease::{AcquireRequest, Acquisition, Holder, Lease, Token};
use crate::store::period::PeriodRecord;

/// What an attempt came to, when the store gave a definite answer.
pub(crate) enum Attempted {
    /// Granted; the lease counts from `counted_from`: the earliest unanswered attempt with the
    /// same token, if one may have been applied, else the attempt's own sending.
    Granted { lease: Lease, counted_from: Instant },
    /// Every slot is held by someone else: by this holder, if the store said.
    Taken(Option<Holder>),
    /// The period ledger refused the claim.
    AlreadyRan(PeriodRecord),
}

/// The attempts of one acquisition of one lock. Dropped while an attempt is in doubt (the
/// acquisition gave up, failed or was cancelled), it frees whatever lease that token holds.
pub(crate) struct Attempts<'a> {
    shared: &'a ElectorShared,
    doubt: InDoubt<'a>,
    /// Made when the first attempt is handed over to a cleanup task (see `late_grants`).
    grants: Option<Arc<LateGrants>>,
}

impl<'a> Attempts<'a> {
    /// No attempt yet, for an acquisition of `lock` by an elector with `options`.
    pub(crate) fn new(
        shared: &'a ElectorShared,
        options: &'a ElectionOptions,
        lock: &'a LockName,
    ) -> Self {
        Self {
            shared,
            doubt: InDoubt::new(&shared.store, &shared.cleanup, options, lock),
            grants: None,
        }
    }

    /// Sends `req`, built at `sent_at`. A transient error (also no answer within
    /// `req.timeout`) raises the doubt that the store applied the attempt all the same; a
    /// definite answer clears it. If the store granted a lease to a token that an answer nobody
    /// read gave up meanwhile, the attempt reads as held and `req` gets a new token.
    pub(crate) async fn send(
        &mut self,
        req: &mut AcquireRequest,
        sent_at: Instant,
    ) -> StoreResult<Attempted> {
        match self.answer(req).await {
            Ok(Acquisition::Elected(lease)) => {
                let counted_from = self.doubt.since().map_or(sent_at, |t| t.min(sent_at));
                self.doubt.clear();
                Ok(Attempted::Granted {
                    lease,
                    counted_from,
                })
            }
            Ok(Acquisition::Taken(holder)) => {
                self.doubt.clear();
                Ok(Attempted::Taken(holder))
            }
            Ok(Acquisition::AlreadyRan(record)) => {
                self.doubt.clear();
                Ok(Attempted::AlreadyRan(record))
            }
            Err(e) => {
                if e.is_transient() {
                    self.doubt.raise(req.token, sent_at);
                }
                Err(e)
            }
        }
    }

    /// When the earliest attempt in doubt was sent, if one is.
    pub(crate) fn in_doubt_since(&self) -> Option<Instant> {
        self.doubt.since()
    }

    /// Goes on with a new token: the lease the old one may hold is freed in the background.
    pub(crate) fn start_afresh(&mut self, req: &mut AcquireRequest) {
        self.doubt.settle();
        req.token = Token::random();
    }

    /// One attempt. On a store whose acquisition is not cancel-safe the attempt runs in this
    /// task but is handed over to a cleanup task if the caller stops waiting for it
    /// ([`InFlight`]), so that an answer arriving later is still seen: a lease it grants is
    /// released unless the caller took that token's lease through another attempt
    /// ([`LateGrants`], made when the first attempt of an acquisition is handed over).
    async fn answer(&mut self, req: &mut AcquireRequest) -> StoreResult<Acquisition> {
        let limit = req.timeout;
        let no_answer = move || {
            StoreError::transient(format!(
                "no answer from the store within the attempt timeout of {}",
                crate::limits::Human(limit)
            ))
        };
        let store = &self.shared.store;
        if store.acquire_is_cancel_safe() {
            return within(limit, store.try_acquire(req))
                .await
                .unwrap_or_else(|| Err(no_answer()));
        }
        let mut flight = InFlight::new(store, req, &self.shared.cleanup, self.grants.clone());
        let Some(Some(outcome)) = within(limit, flight.answer()).await else {
            flight.abandon(&mut self.grants);
            return Err(no_answer());
        };
        // With no attempt handed over before, no late answer can hold this token's lease.
        let Some(shared) = self.grants.as_ref() else {
            return outcome;
        };
        Answer::new(outcome, Arc::clone(shared))
            .read()
            .unwrap_or_else(|| {
                req.token = Token::random();
                Ok(Acquisition::Taken(None))
            })
    }
}

/// `fut`'s output if it comes within `limit`, else `None`. An answer that is ready at the first
/// poll (an in-process store) costs no timer.
async fn within<F: Future>(limit: std::time::Duration, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    if let std::task::Poll::Ready(out) = futures::poll!(fut.as_mut()) {
        return Some(out);
    }
    timeout(limit, fut).await.ok()
}
