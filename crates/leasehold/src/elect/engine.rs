//! The election engine behind `Elector` (one holder or up to N): waiting, retries, running an
//! action under a lease, and releasing it whatever happens.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::OptionFuture;
use tokio::time::{Instant, sleep, sleep_until, timeout, timeout_at};
use tracing::{Instrument, debug};

use crate::cleanup::Cleanup;
use crate::elect::doubt::Doubt;
use crate::elect::flight::Flight;
use crate::elect::grants::{Answer, Grants};
use crate::error::{Error, Result, StoreError, StoreResult};
use crate::events::{Event, Events};
use crate::hold::cell::{CellOwner, LeaseCell};
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::hold::held::HeldLeases;
use crate::line::Lines;
use crate::metrics::{LockMetrics, MetricsCache};
use crate::name::{IntoLockName, LockName};
use crate::options::ElectionOptions;
use crate::spans::{self, Outcome};
use crate::store::contract::LeaseStore;
use crate::store::hand_off::WaiterId;
use crate::store::lease::Acquisition;
use crate::store::lease::{AcquireRequest, Lease, LockState, Token};
use crate::store::period::{Period, PeriodRecord, check_period_slots};
use crate::store::signal::{ReleaseSignal, SignalReach};
use crate::tenant::Tenant;

#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) store: Arc<dyn LeaseStore>,
    /// The store's description, read once: the `store` field of the spans.
    store_label: Arc<str>,
    pub(crate) options: Arc<ElectionOptions>,
    pub(crate) slots: u32,
    pub(crate) events: Events,
    pub(crate) tenant: Option<Arc<Tenant>>,
    metrics: Arc<MetricsCache>,
    /// This elector's tasks waiting per lock, in arrival order (shared by its clones).
    pub(crate) lines: Arc<Lines>,
    /// The cleanup tasks this elector and its clones started (shared by its clones).
    pub(crate) cleanup: Cleanup,
    /// The leases this elector and its clones hold now (shared by its clones).
    pub(crate) held: HeldLeases,
}

impl Engine {
    pub(crate) fn new(store: Arc<dyn LeaseStore>, options: ElectionOptions) -> Self {
        let lines = Arc::new(Lines::new(store.hands_off()));
        Self {
            store_label: store.describe().into(),
            store,
            slots: options.max_leaders,
            options: Arc::new(options),
            events: Events::default(),
            tenant: None,
            metrics: Arc::default(),
            lines,
            cleanup: Cleanup::default(),
            held: HeldLeases::default(),
        }
    }

    pub(crate) fn reconfigured(&self, options: ElectionOptions) -> Self {
        Self {
            slots: options.max_leaders,
            options: Arc::new(options),
            ..self.clone()
        }
    }

    pub(crate) fn for_tenant(&self, tenant: Tenant) -> Self {
        Self {
            tenant: Some(Arc::new(tenant)),
            ..self.clone()
        }
    }

    /// Validates a caller's name and maps it into the tenant namespace, if any.
    pub(crate) fn lock_name(&self, name: impl IntoLockName) -> Result<LockName> {
        let name = name.into_lock_name()?;
        Ok(match &self.tenant {
            Some(t) => t.scope(name.as_str())?,
            None => name,
        })
    }

    pub(crate) async fn state(&self, name: impl IntoLockName) -> Result<LockState> {
        let lock = self.lock_name(name)?;
        self.store
            .state(&lock, self.slots)
            .await
            .map_err(|e| Error::store(&lock, e))
    }

    pub(crate) async fn period_record(
        &self,
        name: impl IntoLockName,
    ) -> Result<Option<crate::PeriodRecord>> {
        let lock = self.lock_name(name)?;
        self.store
            .period_record(&lock)
            .await
            .map_err(|e| Error::store(&lock, e))
    }

    pub(crate) async fn clear_period_ledger(
        &self,
        name: impl IntoLockName,
    ) -> Result<Option<crate::PeriodRecord>> {
        let lock = self.lock_name(name)?;
        let cleared = self
            .store
            .clear_period_ledger(&lock)
            .await
            .map_err(|e| Error::store(&lock, e))?;
        if let Some(r) = &cleared {
            tracing::warn!(lock = %lock, period = r.period, by = %r.by, started = r.started, "period ledger cleared");
        }
        Ok(cleared)
    }

    pub(crate) async fn force_release(
        &self,
        name: impl IntoLockName,
    ) -> Result<Vec<crate::Holder>> {
        let lock = self.lock_name(name)?;
        let freed = self
            .store
            .force_release(&lock, self.slots)
            .await
            .map_err(|e| Error::store(&lock, e))?;
        for h in &freed {
            tracing::warn!(lock = %lock, slot = h.slot, owner = %h.owner, fence = h.fence, "lease force-released");
        }
        Ok(freed)
    }

    pub(crate) async fn try_acquire(&self, name: impl IntoLockName) -> Result<Option<LeaderGuard>> {
        let lock = self.lock_name(name)?;
        self.acquire(&lock).await
    }

    /// Waits up to `wait` for a lease. Contention is `Ok(None)`; a store error is `Err`, also when
    /// transient errors persist until the deadline.
    pub(crate) async fn acquire(&self, lock: &LockName) -> Result<Option<LeaderGuard>> {
        Ok(self.claim(lock, None).await?.elected())
    }

    /// Waits up to `wait` for a lease, claiming `period` in the lock's ledger if given. A refusal
    /// by the ledger ends the wait at once (waiting can never make it succeed).
    pub(crate) async fn claim(&self, lock: &LockName, period: Option<Period>) -> Result<Claimed> {
        if period.is_some() {
            check_period_slots(self.slots)?;
        }
        let span = self.acquire_span(lock);
        let claimed = async {
            match self.acquire_in_span(lock, period).await? {
                // A granted period claim is recorded as started before anything runs under it.
                Claimed::Elected(guard) if period.is_some() => Ok(crate::elect::start::start(
                    &self.store,
                    guard,
                    self.options.attempt_timeout,
                )
                .await?
                .map_or(Claimed::Held, Claimed::Elected)),
                other => Ok(other),
            }
        }
        .instrument(span.clone())
        .await;
        let outcome = match &claimed {
            Ok(Claimed::Elected(guard)) => {
                spans::record_lease(&span, guard.slot(), guard.fence());
                Outcome::Acquired
            }
            Ok(Claimed::Held) => Outcome::Contention,
            Ok(Claimed::AlreadyRan(_)) => Outcome::AlreadyRan,
            Err(_) => Outcome::Error,
        };
        spans::record_outcome(&span, outcome);
        claimed
    }

    fn acquire_span(&self, lock: &LockName) -> tracing::Span {
        spans::acquire(lock, self.slots, &self.options.node_id, &self.store_label)
    }

    async fn acquire_in_span(&self, lock: &LockName, period: Option<Period>) -> Result<Claimed> {
        let opts = &*self.options;
        let metrics = self.metrics.get(lock);
        metrics.attempt();
        let start = Instant::now();
        let deadline = crate::limits::deadline_after(start, opts.wait);
        let mut req = self.request(lock);
        req.period = period;
        let mut grants = None;
        let waits = !opts.wait.is_zero();
        let mut signal = if waits {
            self.store.release_signal(lock)
        } else {
            None
        };
        // Tasks of this elector already waiting for the lock go first (see `line`).
        let mut place =
            (waits && self.lines.is_busy(lock)).then(|| self.lines.join(lock, self.slots));
        // Rounds between processes (see `line`): only where waiters elsewhere are woken by a
        // release signal, and for single-holder locks.
        let everyone = reaches_every_client(signal.as_ref());
        let rounds = self.slots == 1 && everyone;
        let retry = opts.retry_for(everyone);
        let mut held_by_others = false;
        // An attempt that failed with a transient error may still have been applied; a later
        // attempt then gets that lease back (same token), whose expiry was set by the earlier one.
        // The local deadline is counted from the earliest such attempt. An acquisition that
        // ends in doubt lets go of that lease, if there is one.
        let mut doubt = Doubt::new(&self.store, &self.cleanup, &self.options, lock);
        let mut last_error = None;
        let mut attempt = 0u32;
        let mut sent_at = start;
        loop {
            if let Some(p) = place.as_ref().filter(|p| !p.is_active()) {
                if timeout_at(deadline, p.turn()).await.is_err() {
                    return self.give_up(lock, &metrics, last_error);
                }
                sent_at = Instant::now();
            }
            if let Some(until) = self.lines.yielding(lock) {
                // This elector's round is over: other processes' waiters go first.
                sleep_until(until.min(deadline)).await;
                sent_at = Instant::now();
            }
            if waits {
                req.waiter = self.waiter_for(lock);
            }
            last_error = match self.attempt(&mut req, &mut grants).await {
                Ok(Acquisition::Granted(lease)) => {
                    if rounds {
                        self.lines.won(lock, sent_at.elapsed(), held_by_others);
                    }
                    drop(place);
                    let counted_from = doubt.since().map_or(sent_at, |t| t.min(sent_at));
                    doubt.clear();
                    return Ok(Claimed::Elected(self.elected(
                        lease,
                        metrics,
                        start,
                        counted_from,
                    )));
                }
                Ok(Acquisition::AlreadyRan(record)) => {
                    drop(place);
                    doubt.clear();
                    metrics.already_ran();
                    debug!(lock = %lock, period = record.period, by = %record.by, "skipped, this period already ran");
                    self.events.emit(|| Event::AlreadyRan {
                        lock: lock.clone(),
                        record: record.clone(),
                    });
                    return Ok(Claimed::AlreadyRan(record));
                }
                Ok(_) => {
                    doubt.clear();
                    held_by_others = rounds && !self.lines.is_releasing() && !self.held.holds(lock);
                    None
                }
                Err(e) if e.is_transient() => {
                    debug!(lock = %lock, error = %e, "transient error while acquiring");
                    doubt.raise(req.token, sent_at);
                    Some(e)
                }
                Err(e) => {
                    metrics.not_acquired(true);
                    return Err(Error::store(lock, e));
                }
            };
            let now = Instant::now();
            if now >= deadline {
                return self.give_up(lock, &metrics, last_error);
            }
            let place = &*place.get_or_insert_with(|| self.lines.join(lock, self.slots));
            if !place.is_active() {
                continue; // others of this elector came first: wait for the turn
            }
            let pause = retry.pause(attempt).min(deadline - now);
            attempt = attempt.saturating_add(1);
            let store_signal = OptionFuture::from(signal.as_mut().map(ReleaseSignal::released));
            let by_signal = tokio::select! {
                biased;
                () = place.freed() => false,
                Some(()) = store_signal => true,
                () = sleep(pause) => false,
            };
            if let Some(delay) = by_signal.then(|| self.lines.signal_delay(lock)).flatten() {
                // Another process's release, while processes take turns in rounds: its next
                // task, woken in-process, goes first (see `line`).
                sleep_until((Instant::now() + delay).min(deadline)).await;
            }
            sent_at = Instant::now();
        }
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
        let elected = self.contend_in_span(lock).instrument(span.clone()).await;
        match &elected {
            Ok(guard) => {
                spans::record_lease(&span, guard.slot(), guard.fence());
                spans::record_outcome(&span, Outcome::Acquired);
            }
            Err(_) => spans::record_outcome(&span, Outcome::Error),
        }
        elected
    }

    async fn contend_in_span(&self, lock: &LockName) -> Result<LeaderGuard> {
        let opts = &*self.options;
        let metrics = self.metrics.get(lock);
        metrics.attempt();
        let start = Instant::now();
        let mut req = self.request(lock);
        let mut grants = None;
        let mut signal = self.store.release_signal(lock);
        let retry = opts.retry_for(reaches_every_client(signal.as_ref()));
        let mut doubt = Doubt::new(&self.store, &self.cleanup, &self.options, lock);
        let mut failing = false;
        let mut attempt = 0u32;
        loop {
            let sent_at = Instant::now();
            if doubt.since().is_some_and(|t| sent_at - t >= opts.lease / 2) {
                // A lease this token got back now would count from that first unanswered
                // attempt and be worth little or nothing: start afresh with a new token, and let
                // go of the lease the store granted the old one, if it did.
                doubt.settle();
                req.token = Token::random();
            }
            req.waiter = self.waiter_for(lock);
            match self.attempt(&mut req, &mut grants).await {
                Ok(Acquisition::Granted(lease)) => {
                    let counted_from = doubt.since().map_or(sent_at, |t| t.min(sent_at));
                    doubt.clear();
                    return Ok(self.elected(lease, metrics, start, counted_from));
                }
                Ok(_) => {
                    doubt.clear();
                    if std::mem::take(&mut failing) {
                        tracing::info!(lock = %lock, "the store answers again; contending");
                    }
                }
                Err(e) if e.is_transient() => {
                    doubt.raise(req.token, sent_at);
                    if !std::mem::replace(&mut failing, true) {
                        tracing::warn!(lock = %lock, error = %e,
                            "contending for leadership: the store failed; retrying");
                    }
                }
                Err(e) => {
                    metrics.not_acquired(true);
                    return Err(Error::store(lock, e));
                }
            }
            let pause = retry.pause(attempt);
            attempt = attempt.saturating_add(1);
            let store_signal = OptionFuture::from(signal.as_mut().map(ReleaseSignal::released));
            tokio::select! {
                () = sleep(pause) => {}
                Some(()) = store_signal => {}
            }
        }
    }

    /// The wait ran out: the last transient error if the last attempt failed with one, else a
    /// skip.
    fn give_up(
        &self,
        lock: &LockName,
        metrics: &LockMetrics,
        last_error: Option<StoreError>,
    ) -> Result<Claimed> {
        if let Some(e) = last_error {
            metrics.not_acquired(true);
            return Err(Error::store(lock, e));
        }
        metrics.not_acquired(false);
        debug!(lock = %lock, "skipped, lock held elsewhere");
        self.events.emit(|| Event::Skipped { lock: lock.clone() });
        Ok(Claimed::Held)
    }

    /// A request for `lock` with this elector's slots, node id, lease and attempt timeout, and a
    /// new token.
    fn request(&self, lock: &LockName) -> AcquireRequest {
        let opts = &*self.options;
        AcquireRequest::new(
            lock.clone(),
            self.slots,
            Arc::clone(&opts.node_id),
            Token::random(),
            opts.lease,
        )
        .with_timeout(opts.attempt_timeout)
    }

    /// The waiter an attempt of this elector on `lock` names to a store that
    /// [hands off](crate::LeaseStore::hands_off): none while a task of this elector holds the
    /// lock — its next turn comes in-process (see `line`), so the store need not record it as
    /// waiting (a write per refusal on a SQL store) nor look through it at the release.
    fn waiter_for(&self, lock: &LockName) -> Option<WaiterId> {
        (!self.held.holds(lock)).then(|| self.lines.waiter())
    }

    /// One attempt. On a store whose acquisition is not cancel-safe the attempt runs in this
    /// task but is handed over to a cleanup task if the caller stops waiting for it ([`Flight`]),
    /// so that an answer arriving later is still seen: a lease it grants is released unless the
    /// caller took that token's lease through another attempt ([`Grants`], made when the first
    /// attempt of an acquisition is handed over). Those tasks are counted in `cleanup`, so stop
    /// paths can wait for them (`Elector::settled`).
    ///
    /// An attempt without an answer within `req.timeout` is a transient error: the caller moves
    /// on (retrying within its wait, with the same token). If the store granted a lease to a
    /// token that an answer nobody read gave up meanwhile, the attempt reads as held and
    /// `req` gets a new token.
    async fn attempt(
        &self,
        req: &mut AcquireRequest,
        grants: &mut Option<Arc<Grants>>,
    ) -> StoreResult<Acquisition> {
        let limit = req.timeout;
        let no_answer = move || {
            StoreError::transient(format!(
                "no answer from the store within the attempt timeout of {}",
                crate::limits::Human(limit)
            ))
        };
        if self.store.acquire_is_cancel_safe() {
            return within(limit, self.store.try_acquire(req))
                .await
                .unwrap_or_else(|| Err(no_answer()));
        }
        let mut flight = Flight::new(&self.store, req, &self.cleanup, grants.clone());
        let Some(Some(outcome)) = within(limit, flight.answer()).await else {
            flight.abandon(grants);
            return Err(no_answer());
        };
        // With no attempt handed over before, no late answer can hold this token's lease.
        let Some(shared) = grants.as_ref() else {
            return outcome;
        };
        Answer::new(outcome, Arc::clone(shared))
            .read()
            .unwrap_or_else(|| {
                req.token = Token::random();
                Ok(Acquisition::Held)
            })
    }

    fn elected(
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
        self.events.emit(|| Event::Elected {
            lock: lease.lock.clone(),
            slot: lease.slot,
            fence: lease.fence,
            owner: Arc::clone(&opts.node_id),
            expires_at: lease.expires_at,
        });
        let owner = CellOwner {
            store: Arc::clone(&self.store),
            store_label: Arc::clone(&self.store_label),
            events: self.events.clone(),
            lines: Arc::clone(&self.lines),
            cleanup: self.cleanup.clone(),
            held: self.held.clone(),
            single: self.slots == 1,
            ttl: opts.lease,
            min_lease: opts.min_lease,
        };
        let cell = LeaseCell::new(owner, metrics, lease, sent_at, acquired);
        LeaderGuard::new(cell, opts.auto_extend)
    }

    /// Acquires `name` for an action: the first half of [`run_guarded`](Self::run_guarded), also
    /// used by the blocking facade, which runs its closure outside the runtime.
    pub(crate) async fn begin(&self, name: impl IntoLockName) -> Result<Option<Running>> {
        Ok(self.begin_claim(name, None).await?.elected())
    }

    /// [`begin`](Self::begin) claiming `period` in the ledger.
    pub(crate) async fn begin_claim(
        &self,
        name: impl IntoLockName,
        period: Option<Period>,
    ) -> Result<Claimed<Running>> {
        let lock = self.lock_name(name)?;
        self.begin_scoped(lock, period).await
    }

    /// [`begin_claim`](Self::begin_claim) for a name already validated and scoped to the tenant.
    async fn begin_scoped(
        &self,
        lock: LockName,
        period: Option<Period>,
    ) -> Result<Claimed<Running>> {
        Ok(self.claim(&lock, period).await?.map(|guard| Running {
            started: guard.acquired_at(),
            guard,
            lock,
        }))
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
    ) -> Result<Claimed<T>>
    where
        F: FnOnce(LeaderContext) -> Fut,
        Fut: Future<Output = T>,
    {
        let lock = self.lock_name(name)?;
        // Acquisition and release run in their own spans (`leasehold.acquire`,
        // `leasehold.release`); wrapping this whole, larger future would copy it once more per run.
        {
            let running = match self.begin_scoped(lock, period).await? {
                Claimed::Elected(running) => running,
                Claimed::Held => return Ok(Claimed::Held),
                Claimed::AlreadyRan(record) => return Ok(Claimed::AlreadyRan(record)),
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
                // by the protocol model, `leasehold-model`).
                tokio::select! {
                    biased;
                    _ = &mut lost => None,
                    r = &mut action => r,
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
                    .map_or(Claimed::Held, Claimed::Elected)),
                None => {
                    // Lost with cancel-on-lost: drop the action before releasing.
                    action.set(None.into());
                    Err(running.abandon().await)
                }
            }
        }
    }
}

/// What an election claiming an optional period came to.
pub(crate) enum Claimed<G = LeaderGuard> {
    /// Elected (the guard, the running action, or its value).
    Elected(G),
    /// Held elsewhere for the whole wait.
    Held,
    /// Refused by the period ledger.
    AlreadyRan(PeriodRecord),
}

impl<G> Claimed<G> {
    pub(crate) fn elected(self) -> Option<G> {
        match self {
            Self::Elected(g) => Some(g),
            _ => None,
        }
    }

    pub(crate) fn map<H>(self, f: impl FnOnce(G) -> H) -> Claimed<H> {
        match self {
            Self::Elected(g) => Claimed::Elected(f(g)),
            Self::Held => Claimed::Held,
            Self::AlreadyRan(r) => Claimed::AlreadyRan(r),
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

/// True if `signal` wakes waiters in every process (see [`SignalReach`]).
fn reaches_every_client(signal: Option<&ReleaseSignal>) -> bool {
    signal.is_some_and(|s| s.reach() == SignalReach::EveryClient)
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
