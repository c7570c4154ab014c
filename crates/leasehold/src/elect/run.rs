//! Running work under a lease: claiming a lock (a bounded wait, a period claim, or `lead`'s
//! campaign, all through the acquisition loop), running an action under the lease, and
//! releasing it whatever happens.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use futures::future::OptionFuture;
use tokio::time::Instant;
use tracing::{Instrument, debug};

use crate::elect::elector::Elector;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::hold::cell::{LeaseCell, LeaseTerms};
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::metrics::LockMetrics;
use crate::name::{IntoLockName, LockName};
use crate::outcome::Outcome;
use crate::spans::{self, Outcome as SpanOutcome};
use crate::store::lease::Lease;
use crate::store::period::{Period, check_period_slots};

/// How long an acquisition keeps trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Patience {
    /// For the elector's `wait` (one attempt when it is zero), in the local line. A refusal
    /// throughout is `Outcome::Taken`; transient errors until the end are that error.
    Wait,
    /// Until elected: the stable leader's campaign. Transient errors are retried (a warning
    /// when they start, another when the store answers again). Once the earliest unanswered
    /// attempt is half a lease ago, the campaign goes on with a new token, so that a long outage
    /// does not end in a term lost the moment it begins.
    Campaign,
}

impl Elector {
    /// Validates a caller's name and maps it into the tenant namespace, if any.
    pub(crate) fn lock_name(&self, name: impl IntoLockName) -> Result<LockName> {
        let name = name.into_lock_name()?;
        Ok(match &self.tenant {
            Some(t) => t.scope(name.as_str())?,
            None => name,
        })
    }

    /// Waits up to `wait` for a lease. Contention is `Ok(None)`; a store error is `Err`, also when
    /// transient errors persist until the deadline.
    pub(crate) async fn acquire(&self, lock: &LockName) -> Result<Option<LeaderGuard>> {
        Ok(self.claim(lock, None).await?.elected())
    }

    /// Waits up to `wait` for a lease, claiming `period` in the lock's ledger if given. A refusal
    /// by the ledger ends the wait at once (waiting can never make it succeed).
    pub(crate) async fn claim(
        &self,
        lock: &LockName,
        period: Option<Period>,
    ) -> Result<Outcome<LeaderGuard>> {
        Ok(self
            .claim_unwatched(lock, period)
            .await?
            .map(LeaderGuard::watched))
    }

    /// [`claim`](Self::claim), with the watchdog of a guard without a period not started yet
    /// (see [`LeaderGuard::unwatched`]).
    async fn claim_unwatched(
        &self,
        lock: &LockName,
        period: Option<Period>,
    ) -> Result<Outcome<LeaderGuard>> {
        if period.is_some() {
            check_period_slots(self.slots)?;
        }
        let span = self.acquire_span(lock);
        let claimed = async {
            match self.acquire_loop(lock, period, Patience::Wait).await? {
                // A granted period claim is recorded as started before anything runs under it.
                Outcome::Elected(guard) if period.is_some() => Ok(crate::elect::start::start(
                    &self.shared.store,
                    guard.watched(),
                    self.options.attempt_timeout,
                )
                .await?
                .map_or(Outcome::Taken(None), Outcome::Elected)),
                other => Ok(other),
            }
        }
        .instrument(span.clone())
        .await;
        let outcome = match &claimed {
            Ok(Outcome::Elected(guard)) => {
                spans::record_lease(&span, guard.slot(), guard.fence());
                SpanOutcome::Acquired
            }
            Ok(Outcome::Taken(_)) => SpanOutcome::Contention,
            Ok(Outcome::AlreadyRan(_)) => SpanOutcome::AlreadyRan,
            Ok(Outcome::ActionFailed(never)) => match *never {},
            Err(_) => SpanOutcome::Error,
        };
        spans::record_outcome(&span, outcome);
        claimed
    }

    fn acquire_span(&self, lock: &LockName) -> tracing::Span {
        spans::acquire(
            lock,
            self.slots,
            &self.options.node_id,
            &self.shared.store_label,
        )
    }

    /// Contends for `lock` until elected, however long that takes: the stable leader's
    /// campaign ([`Elector::lead`](crate::Elector::lead)). Pauses follow the retry policy
    /// (growing to [`RetryPolicy::max`](crate::RetryPolicy::max)); the store's release signal,
    /// where it has one, wakes it at once. Transient store errors are retried (a warning when
    /// they start, another when the store answers again); a permanent one is returned.
    ///
    /// Like [`acquire`](Self::acquire), one token serves the attempts, so an attempt whose
    /// answer was lost but which the store applied is recognised by the next one. A lease got
    /// back that way counts from that earlier attempt; once that is half a lease ago, the
    /// campaign switches to a new token, so that a long outage does not end in a term lost the
    /// moment it begins.
    pub(crate) async fn contend(&self, lock: &LockName) -> Result<LeaderGuard> {
        let span = self.acquire_span(lock);
        let elected = async {
            loop {
                // A campaign ends elected or with an error; nothing else can come of it.
                if let Outcome::Elected(guard) =
                    self.acquire_loop(lock, None, Patience::Campaign).await?
                {
                    return Ok(guard.watched());
                }
            }
        }
        .instrument(span.clone())
        .await;
        match &elected {
            Ok(guard) => {
                spans::record_lease(&span, guard.slot(), guard.fence());
                spans::record_outcome(&span, SpanOutcome::Acquired);
            }
            Err(_) => spans::record_outcome(&span, SpanOutcome::Error),
        }
        elected
    }

    pub(crate) fn elected(
        &self,
        lease: Lease,
        metrics: Arc<LockMetrics>,
        start: Instant,
        sent_at: Instant,
    ) -> LeaderGuard {
        let opts = &*self.options;
        let acquired = Instant::now();
        metrics.acquired(acquired - start);
        debug!(lock = %lease.lock, slot = lease.slot, fence = lease.fence, "elected");
        self.shared.events.emit(|| Event::Elected {
            lock: lease.lock.clone(),
            slot: lease.slot,
            fence: lease.fence,
            owner: Arc::clone(&opts.node_id),
            expires_at: lease.expires_at,
        });
        let terms = LeaseTerms {
            may_hand_off: self.slots == 1 && opts.fair_turns,
            ttl: opts.lease,
            min_lease: opts.min_lease,
        };
        let cell = LeaseCell::new(
            Arc::clone(&self.shared),
            terms,
            metrics,
            lease,
            sent_at,
            acquired,
        );
        LeaderGuard::unwatched(cell, opts.auto_extend)
    }

    /// Acquires `name` for an action, claiming `period` in the ledger if given: the first half
    /// of [`run_claimed`](Self::run_claimed), also used by the blocking facade, which runs its
    /// closure outside the runtime.
    pub(crate) async fn begin_claim(
        &self,
        name: impl IntoLockName,
        period: Option<Period>,
    ) -> Result<Outcome<Running>> {
        let lock = self.lock_name(name)?;
        self.begin_scoped(lock, period).await
    }

    /// [`begin_claim`](Self::begin_claim) for a name already validated and scoped to the tenant.
    async fn begin_scoped(
        &self,
        lock: LockName,
        period: Option<Period>,
    ) -> Result<Outcome<Running>> {
        let claimed = self.claim(&lock, period).await?;
        Ok(claimed.map(|guard| Running::new(guard, lock)))
    }

    /// Runs `action` under a lease. `Ok(None)` on contention. Panics release the lease and then
    /// resume; dropping the returned future releases the lease too (through the guard's drop).
    pub(crate) async fn run_guarded<T, F, Fut>(
        &self,
        name: impl IntoLockName,
        action: F,
        failed: fn(&T) -> bool,
    ) -> Result<Option<T>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = T>,
    {
        Ok(self
            .run_claimed(name, None, action, failed)
            .await?
            .elected())
    }

    /// [`run_guarded`](Self::run_guarded) claiming `period` in the ledger.
    pub(crate) async fn run_claimed<T, F, Fut>(
        &self,
        name: impl IntoLockName,
        period: Option<Period>,
        action: F,
        failed: fn(&T) -> bool,
    ) -> Result<Outcome<T>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = T>,
    {
        let lock = self.lock_name(name)?;
        // Acquisition and release run in their own spans (`leasehold.acquire`,
        // `leasehold.release`); wrapping this whole, larger future would copy it once more per run.
        {
            let mut running = match self.claim_unwatched(&lock, period).await? {
                Outcome::Elected(guard) => Running::new(guard, lock),
                Outcome::Taken(holder) => return Ok(Outcome::Taken(holder)),
                Outcome::AlreadyRan(record) => return Ok(Outcome::AlreadyRan(record)),
                Outcome::ActionFailed(never) => match never {},
            };
            let ctx = running.context();
            let action =
                OptionFuture::from(Some(AssertUnwindSafe(action(ctx.clone())).catch_unwind()));
            tokio::pin!(action);
            let mut finished = {
                let lost = ctx.lost();
                tokio::pin!(lost);
                // The loss first: an action is never polled once its lease is past the local
                // deadline, not even once when the grant's answer itself came too late (found
                // by the protocol model, `leasehold-model`). The first step runs before the
                // watchdog starts; only an action that goes on needs it.
                let first = std::future::poll_fn(|cx| {
                    if lost.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Some(None));
                    }
                    Poll::Ready(match action.as_mut().poll(cx) {
                        Poll::Ready(r) => Some(r),
                        Poll::Pending => None,
                    })
                })
                .await;
                match first {
                    Some(decided) => decided,
                    None => {
                        running.guard.watch();
                        tokio::select! {
                            biased;
                            _ = &mut lost => None,
                            r = &mut action => r,
                        }
                    }
                }
            };
            if finished.is_none() && !self.options.cancel_on_lost {
                // Lost while running: the Lost event is out; let the action finish.
                finished = action.as_mut().await;
            }
            match finished {
                Some(outcome) => Ok(running
                    .finish(outcome, failed)
                    .await?
                    .map_or(Outcome::Taken(None), Outcome::Elected)),
                None => {
                    // Lost with cancel-on-lost: drop the action before releasing.
                    action.set(None.into());
                    Err(running.abandon().await)
                }
            }
        }
    }
}

/// An action in progress under a lease.
pub(crate) struct Running {
    guard: LeaderGuard,
    lock: LockName,
    started: Instant,
}

impl Running {
    /// `guard`'s lease on `lock`, from now.
    fn new(guard: LeaderGuard, lock: LockName) -> Self {
        Self {
            started: guard.acquired_at(),
            guard,
            lock,
        }
    }

    pub(crate) fn context(&self) -> LeaderContext {
        self.guard.context()
    }

    /// Records the action's end, releases, and returns its value or resumes its panic.
    pub(crate) async fn finish<T>(
        self,
        outcome: std::thread::Result<T>,
        failed: fn(&T) -> bool,
    ) -> Result<Option<T>> {
        let is_failure = outcome.as_ref().map_or(true, failed);
        self.guard
            .metrics()
            .action_finished(self.started.elapsed(), is_failure);
        let _ = self.guard.release().await;
        match outcome {
            Ok(v) => Ok(Some(v)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// The action was cancelled because the lease was lost: release and report it.
    pub(crate) async fn abandon(self) -> Error {
        let reason = self.guard.lost().await;
        self.guard
            .metrics()
            .action_finished(self.started.elapsed(), true);
        let _ = self.guard.release().await;
        Error::Lost {
            lock: self.lock.to_string(),
            reason,
        }
    }
}
