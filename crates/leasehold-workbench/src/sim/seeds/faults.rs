//! The fault-injecting store: what the network and the host do to one elector's store calls.
//!
//! A [`FaultyStore`] sits between one elector and the store all electors share. It implements
//! [`LeaseStore`] by forwarding, and before it forwards a request it draws, from its own seeded
//! generator (a SplitMix64 stream of the run's seed), what happens to it:
//!
//! | fault | what the wrapper does |
//! |---|---|
//! | request delayed | the request reaches the store up to [`FaultRates::max_delay`] later |
//! | answer delayed | the answer reaches the elector up to `max_delay` later |
//! | request lost | the store never sees it; the elector gets a transient error (a timeout) up to `max_delay` later |
//! | answer lost | the store applies it; the elector gets a transient error instead of the answer |
//! | duplicated | the store applies it, then applies a copy up to `max_delay` later; the elector gets the first answer |
//! | paused | the answer arrives between `max_delay` and [`FaultRates::max_pause`] (2 leases by default) late: the elector's process stood still |
//!
//! A request in flight is out of the caller's hands: if the caller stops waiting (its attempt
//! timeout, a local deadline), a delayed request still reaches the store, as on a network. Faults
//! are drawn for requests sent before the *faults stop* instant only; requests sent after it go
//! straight through (what was already in flight still arrives late).
//!
//! **Clock drift.** Every tokio timer of the simulation reads one virtual clock, so an elector's
//! clock cannot run at its own rate. What a slow clock does to a lease can be moved to the store's
//! side instead: an elector whose clock runs `d` slower than the store's (`0 ≤ d`) sees a lease of
//! `ttl` of its own time end after `ttl × (1 − d)` of its own time, measured on the store's clock.
//! So the wrapper draws `d` per elector, within [`FaultRates::max_drift`] (5 % by default), and
//! passes `ttl × (1 − d)` to the store for every acquisition, renewal and minimum-lease release;
//! the elector counts its local deadline from the full `ttl`, less the core's margin of a tenth of
//! it. Safety needs the store's lease to outlast the local deadline: `ttl × (1 − d) > ttl × 0.9`,
//! that is `d` below the margin (10 %). The default bound keeps half of the margin for delays
//! between noticing the deadline and acting on it; a bound above 10 % shows what breaks.
//! Rates (the renewal cadence, retry pauses) are not slowed: only the lease length matters here.
//!
//! Reads (`state`, `holders`, the ledger record, listings) and everything a store only
//! describes about itself (`hands_off`, its clock) are forwarded unchanged; the wrapper says its
//! acquisition is not cancel-safe, since a delayed one yields. Release signals come from a
//! [`ReleaseHub`] when one is given (a seeded run gives one, see [its
//! documentation](ReleaseHub)), else from the inner store.
//!
//! It is not a [`StoreLayer`](leasehold::store::StoreLayer), whose hook only sees an answer
//! already bound to its arguments: it changes what it sends (the drifted lease) and sends a
//! request again from a task of its own (the duplicate), so it implements [`LeaseStore`]
//! itself. It keeps the contract's `extend_many` and `state_many`, which go through its own
//! `extend` and `state`: each lease renews on its own, faulted alone.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use leasehold::store::async_trait;
use leasehold::store::{
    AcquireRequest, Acquisition, ClockSource, HandOff, ListCursor, LockPage, PeriodStart,
    ReleaseSignal, ReleasedTo, StoreError, StoreResult,
};
use leasehold::{
    Holder, Lease, LeaseStore, LockName, PeriodRecord,
    store::{Extension, LockState, Release},
};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep};

use crate::sim::seeds::rng::SimRng;
use crate::sim::seeds::signals::ReleaseHub;

/// How often each fault happens (the probability per request, `0.0..=1.0`) and how large delays
/// and drift may be.
///
/// ```
/// use std::time::Duration;
/// use leasehold_workbench::sim::seeds::FaultRates;
///
/// let rates = FaultRates::default();
/// assert!(rates.max_drift < 0.1, "below the core's margin of a tenth of the lease");
/// assert_eq!(rates.max_pause, Duration::from_secs(30), "two default leases");
/// assert_eq!(FaultRates::none().lose_answer, 0.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultRates {
    /// A request reaches the store late.
    pub delay_request: f64,
    /// An answer reaches the elector late.
    pub delay_answer: f64,
    /// A request is lost before the store sees it.
    pub lose_request: f64,
    /// An answer is lost after the store applied the request.
    pub lose_answer: f64,
    /// A request is applied twice.
    pub duplicate: f64,
    /// The elector pauses before it reads an answer.
    pub pause: f64,
    /// The longest request or answer delay, duplicate's lag, and the time a lost message takes to
    /// be noticed (whole milliseconds are drawn).
    #[serde(rename = "max_delay_ms", serialize_with = "super::serialize_ms")]
    pub max_delay: Duration,
    /// The longest pause.
    #[serde(rename = "max_pause_ms", serialize_with = "super::serialize_ms")]
    pub max_pause: Duration,
    /// The largest clock drift of an elector, as a fraction of the lease (`0.05`: its clock runs
    /// up to 5 % slow). Keep it below 0.1, the core's safety margin.
    pub max_drift: f64,
}

impl Default for FaultRates {
    /// Every fault in a few percent of requests, delays up to 2 s, pauses up to two default
    /// leases (30 s), drift up to 5 %.
    fn default() -> Self {
        Self {
            delay_request: 0.08,
            delay_answer: 0.08,
            lose_request: 0.03,
            lose_answer: 0.03,
            duplicate: 0.03,
            pause: 0.01,
            max_delay: Duration::from_secs(2),
            max_pause: leasehold::options::DEFAULT_LEASE * 2,
            max_drift: 0.05,
        }
    }
}

impl FaultRates {
    /// No faults and no drift (the bounds stay as in [`Default`]).
    pub fn none() -> Self {
        Self {
            delay_request: 0.0,
            delay_answer: 0.0,
            lose_request: 0.0,
            lose_answer: 0.0,
            duplicate: 0.0,
            pause: 0.0,
            max_drift: 0.0,
            ..Self::default()
        }
    }

    /// How long after the faults stop a message sent before may still be on its way: a delayed
    /// request, its duplicate, and a paused answer.
    pub fn longest_tail(&self) -> Duration {
        self.max_delay * 2 + self.max_pause.max(self.max_delay)
    }
}

/// A kind of fault ([`FaultRecord::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The request reached the store late.
    DelayedRequest,
    /// The answer reached the elector late.
    DelayedAnswer,
    /// The request never reached the store.
    LostRequest,
    /// The store applied the request; its answer was lost.
    LostAnswer,
    /// The store applied the request twice.
    Duplicated,
    /// The elector paused before reading the answer.
    Paused,
}

impl FaultKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::DelayedRequest,
        Self::DelayedAnswer,
        Self::LostRequest,
        Self::LostAnswer,
        Self::Duplicated,
        Self::Paused,
    ];
}

/// One fault injected into one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultRecord {
    /// When the request was sent, in milliseconds of virtual time since the start of the run.
    pub at_ms: u64,
    /// The elector whose request it was (its node id).
    pub node: String,
    /// The store call: `try_acquire`, `extend`, `release` or `start_period`.
    pub call: &'static str,
    /// The lock.
    pub lock: String,
    /// What happened to it.
    pub kind: FaultKind,
    /// The delay, pause or lag involved, in milliseconds (0 where none applies).
    pub delay_ms: u64,
}

/// How many requests went through a wrapper and how many faults each kind hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FaultCounts {
    /// Requests forwarded (acquisitions, renewals, releases, period starts).
    pub requests: u64,
    /// Requests whose lease was shortened by the elector's drift.
    pub drifted: u64,
    /// Requests delayed on the way to the store.
    pub delayed_requests: u64,
    /// Answers delayed on the way back.
    pub delayed_answers: u64,
    /// Requests lost.
    pub lost_requests: u64,
    /// Answers lost.
    pub lost_answers: u64,
    /// Requests applied twice.
    pub duplicated: u64,
    /// Answers read after a pause.
    pub paused: u64,
}

impl FaultCounts {
    /// The sum of two counts.
    #[must_use]
    pub fn plus(self, o: Self) -> Self {
        Self {
            requests: self.requests + o.requests,
            drifted: self.drifted + o.drifted,
            delayed_requests: self.delayed_requests + o.delayed_requests,
            delayed_answers: self.delayed_answers + o.delayed_answers,
            lost_requests: self.lost_requests + o.lost_requests,
            lost_answers: self.lost_answers + o.lost_answers,
            duplicated: self.duplicated + o.duplicated,
            paused: self.paused + o.paused,
        }
    }

    /// How many faults of `kind` were injected.
    pub fn of(&self, kind: FaultKind) -> u64 {
        match kind {
            FaultKind::DelayedRequest => self.delayed_requests,
            FaultKind::DelayedAnswer => self.delayed_answers,
            FaultKind::LostRequest => self.lost_requests,
            FaultKind::LostAnswer => self.lost_answers,
            FaultKind::Duplicated => self.duplicated,
            FaultKind::Paused => self.paused,
        }
    }

    fn count(&mut self, kind: FaultKind) {
        let n = match kind {
            FaultKind::DelayedRequest => &mut self.delayed_requests,
            FaultKind::DelayedAnswer => &mut self.delayed_answers,
            FaultKind::LostRequest => &mut self.lost_requests,
            FaultKind::LostAnswer => &mut self.lost_answers,
            FaultKind::Duplicated => &mut self.duplicated,
            FaultKind::Paused => &mut self.paused,
        };
        *n += 1;
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, Default)]
struct Fate {
    /// How long the request travels (zero: it is applied in the caller's own poll).
    request_delay: Duration,
    /// The store never sees it.
    lose_request: bool,
    /// The answer is replaced by an error.
    lose_answer: bool,
    /// A copy is applied this long after the original.
    duplicate: Option<Duration>,
    /// How long the answer travels (a pause included).
    answer_delay: Duration,
    /// How long until a lost message is noticed.
    silence: Duration,
}

#[derive(Debug)]
struct Injector {
    rng: SimRng,
    counts: FaultCounts,
    log: Vec<FaultRecord>,
}

/// Where a wrapper stands in the run: the instant it counts from, when the faults stop, and its
/// node id.
#[derive(Debug, Clone)]
pub struct FaultSetup {
    /// What to draw faults from and how often.
    pub rates: FaultRates,
    /// The seed of the run.
    pub seed: u64,
    /// The stream of this wrapper within the seed (one per elector).
    pub stream: u64,
    /// The start of the run: fault records count their instants from it.
    pub origin: Instant,
    /// Requests sent at or after this instant are not faulted.
    pub stop_at: Instant,
    /// The elector's node id (for the records).
    pub node: String,
    /// Where the elector's release signals come from: a [`ReleaseHub`] and the elector's
    /// number in it; `None`: the inner store's signal, forwarded.
    pub signals: Option<(Arc<ReleaseHub>, usize)>,
}

/// A [`LeaseStore`] that forwards to another store, injecting faults and clock drift into the
/// requests of one elector (see the module `sim::seeds::faults`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() -> leasehold::Result<()> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use leasehold::{Elector, MemoryStore};
/// use leasehold_workbench::sim::seeds::{FaultRates, FaultSetup, FaultyStore};
/// use tokio::time::Instant;
///
/// let now = Instant::now();
/// let rates = FaultRates { lose_answer: 1.0, max_drift: 0.0, ..FaultRates::none() };
/// let setup = FaultSetup {
///     rates, seed: 1, stream: 0, origin: now,
///     stop_at: now + Duration::from_secs(60), node: "node-a".into(), signals: None,
/// };
/// let memory = Arc::new(MemoryStore::new());
/// let faulty = Arc::new(FaultyStore::new(memory.clone(), setup));
/// let elector = Elector::new(faulty.clone());
/// // Every answer is lost: the grant is applied, the elector sees an error and lets it go.
/// assert!(elector.run_if_leader("job", |_| async {}).await.is_err());
/// assert!(faulty.counts().lost_answers >= 1);
/// # Ok(()) }
/// ```
pub struct FaultyStore {
    inner: Arc<dyn LeaseStore>,
    rates: FaultRates,
    drift: f64,
    origin: Instant,
    stop_at: Instant,
    node: String,
    signals: Option<(Arc<ReleaseHub>, usize)>,
    injector: Mutex<Injector>,
}

impl std::fmt::Debug for FaultyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyStore")
            .field("inner", &self.inner.describe())
            .field("node", &self.node)
            .field("drift", &self.drift)
            .finish_non_exhaustive()
    }
}

/// One store call whose effect the wrapper may apply twice.
type Apply<T> = Arc<dyn Fn() -> futures::future::BoxFuture<'static, StoreResult<T>> + Send + Sync>;

impl FaultyStore {
    /// Wraps `inner` for the elector of `setup`. Its drift is drawn first from its stream: a
    /// quarter of the electors get the full [`FaultRates::max_drift`], the others a uniform
    /// fraction of it.
    pub fn new(inner: Arc<dyn LeaseStore>, setup: FaultSetup) -> Self {
        let mut rng = SimRng::new(setup.seed, setup.stream);
        let max = setup.rates.max_drift.max(0.0);
        let drift = if rng.chance(0.25) {
            max
        } else {
            rng.unit() * max
        };
        Self {
            inner,
            rates: setup.rates,
            drift,
            origin: setup.origin,
            stop_at: setup.stop_at,
            node: setup.node,
            signals: setup.signals,
            injector: Mutex::new(Injector {
                rng,
                counts: FaultCounts::default(),
                log: Vec::new(),
            }),
        }
    }

    /// This elector's clock drift: the fraction its leases are shortened by at the store.
    pub fn drift(&self) -> f64 {
        self.drift
    }

    /// The requests and faults so far.
    pub fn counts(&self) -> FaultCounts {
        self.injector().counts
    }

    /// Every fault injected so far, in the order the requests were sent.
    pub fn log(&self) -> Vec<FaultRecord> {
        self.injector().log.clone()
    }

    fn injector(&self) -> MutexGuard<'_, Injector> {
        self.injector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `ttl` as the store should count it for this elector (see the module documentation).
    fn drifted(&self, ttl: Duration) -> Duration {
        if self.drift <= 0.0 || ttl.is_zero() {
            return ttl;
        }
        ttl.mul_f64(1.0 - self.drift).max(Duration::from_millis(1))
    }

    /// Draws the fate of a request of `call` on `lock`, sent now, and records its faults.
    fn fate(&self, call: &'static str, lock: &LockName, drifts: bool) -> Fate {
        let now = Instant::now();
        let mut inj = self.injector();
        inj.counts.requests += 1;
        if drifts && self.drift > 0.0 {
            inj.counts.drifted += 1;
        }
        if now >= self.stop_at {
            return Fate::default();
        }
        let r = &self.rates;
        let delay = |rng: &mut SimRng| rng.millis(Duration::from_millis(1), r.max_delay);
        let mut fate = Fate::default();
        let mut faults: Vec<(FaultKind, Duration)> = Vec::new();
        if inj.rng.chance(r.delay_request) {
            fate.request_delay = delay(&mut inj.rng);
            faults.push((FaultKind::DelayedRequest, fate.request_delay));
        }
        let roll = inj.rng.unit();
        if roll < r.lose_request {
            fate.lose_request = true;
        } else if roll < r.lose_request + r.lose_answer {
            fate.lose_answer = true;
        } else if roll < r.lose_request + r.lose_answer + r.duplicate {
            let lag = delay(&mut inj.rng);
            fate.duplicate = Some(lag);
            faults.push((FaultKind::Duplicated, lag));
        }
        if fate.lose_request || fate.lose_answer {
            fate.silence = delay(&mut inj.rng);
            let kind = if fate.lose_request {
                FaultKind::LostRequest
            } else {
                FaultKind::LostAnswer
            };
            faults.push((kind, fate.silence));
        }
        if inj.rng.chance(r.pause) {
            fate.answer_delay = inj.rng.millis(r.max_delay, r.max_pause.max(r.max_delay));
            faults.push((FaultKind::Paused, fate.answer_delay));
        } else if inj.rng.chance(r.delay_answer) {
            fate.answer_delay = delay(&mut inj.rng);
            faults.push((FaultKind::DelayedAnswer, fate.answer_delay));
        }
        let at_ms = millis(now.saturating_duration_since(self.origin));
        for (kind, d) in faults {
            inj.counts.count(kind);
            inj.log.push(FaultRecord {
                at_ms,
                node: self.node.clone(),
                call,
                lock: lock.as_str().to_owned(),
                kind,
                delay_ms: millis(d),
            });
        }
        fate
    }

    /// Sends one request of `call` through the faults drawn for it.
    async fn send<T: Send + 'static>(
        &self,
        call: &'static str,
        lock: &LockName,
        drifts: bool,
        apply: Apply<T>,
    ) -> StoreResult<T> {
        let fate = self.fate(call, lock, drifts);
        let deliver = deliver(fate, apply);
        let answer = if fate.request_delay.is_zero() {
            deliver.await
        } else {
            // On its way: it arrives even if the caller stops waiting for it.
            let (tx, rx) = oneshot::channel();
            tokio::spawn(async move {
                let _ = tx.send(deliver.await);
            });
            rx.await.unwrap_or_else(|_| {
                Some(Err(StoreError::transient(
                    "simulated fault: the request's task ended without an answer",
                )))
            })
        };
        match answer {
            None => {
                sleep(fate.silence).await;
                Err(StoreError::transient(format!(
                    "simulated fault: the {call} request was lost"
                )))
            }
            Some(_) if fate.lose_answer => {
                sleep(fate.silence).await;
                Err(StoreError::transient(format!(
                    "simulated fault: the answer to {call} was lost"
                )))
            }
            Some(answer) => {
                if !fate.answer_delay.is_zero() {
                    sleep(fate.answer_delay).await;
                }
                answer
            }
        }
    }
}

/// The request's trip to the store: its delay, its application (or loss) and its duplicate.
/// `None` when the request was lost.
async fn deliver<T: Send + 'static>(fate: Fate, apply: Apply<T>) -> Option<StoreResult<T>> {
    if !fate.request_delay.is_zero() {
        sleep(fate.request_delay).await;
    }
    if fate.lose_request {
        return None;
    }
    let answer = apply().await;
    if let Some(lag) = fate.duplicate {
        tokio::spawn(async move {
            sleep(lag).await;
            let _ = apply().await;
        });
    }
    Some(answer)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait]
impl LeaseStore for FaultyStore {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let mut sent = req.clone();
        sent.ttl = self.drifted(req.ttl);
        let inner = Arc::clone(&self.inner);
        let sent = Arc::new(sent);
        let apply: Apply<Acquisition> = Arc::new(move || {
            let (inner, sent) = (Arc::clone(&inner), Arc::clone(&sent));
            Box::pin(async move { inner.try_acquire(&sent).await })
        });
        self.send("try_acquire", &req.lock, true, apply).await
    }

    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        let ttl = self.drifted(ttl);
        let inner = Arc::clone(&self.inner);
        let sent = Arc::new(lease.clone());
        let apply: Apply<Extension> = Arc::new(move || {
            let (inner, sent) = (Arc::clone(&inner), Arc::clone(&sent));
            Box::pin(async move { inner.extend(&sent, ttl).await })
        });
        self.send("extend", &lease.lock, true, apply).await
    }

    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        Ok(self
            .release_to(lease, linger, HandOff::Anyone)
            .await?
            .release)
    }

    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        let linger = self.drifted(linger);
        let inner = Arc::clone(&self.inner);
        let sent = Arc::new(lease.clone());
        let apply: Apply<ReleasedTo> = Arc::new(move || {
            let (inner, sent) = (Arc::clone(&inner), Arc::clone(&sent));
            Box::pin(async move { inner.release_to(&sent, linger, to).await })
        });
        self.send("release", &lease.lock, !linger.is_zero(), apply)
            .await
    }

    fn hands_off(&self) -> bool {
        self.inner.hands_off()
    }

    async fn start_period(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        let inner = Arc::clone(&self.inner);
        let sent = Arc::new(lease.clone());
        let apply: Apply<PeriodStart> = Arc::new(move || {
            let (inner, sent) = (Arc::clone(&inner), Arc::clone(&sent));
            Box::pin(async move { inner.start_period(&sent).await })
        });
        self.send("start_period", &lease.lock, false, apply).await
    }

    async fn period_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }

    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }

    async fn force_release(&self, lock: &LockName, slots: u32) -> StoreResult<Vec<Holder>> {
        self.inner.force_release(lock, slots).await
    }

    async fn holders(&self, lock: &LockName) -> StoreResult<Vec<Holder>> {
        self.inner.holders(lock).await
    }

    async fn list_locks(&self, after: Option<&ListCursor>) -> StoreResult<LockPage> {
        self.inner.list_locks(after).await
    }

    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        match &self.signals {
            Some((hub, elector)) => hub.subscribe(*elector, lock),
            None => self.inner.release_signal(lock),
        }
    }

    fn acquire_is_cancel_safe(&self) -> bool {
        false
    }

    fn is_process_local(&self) -> bool {
        self.inner.is_process_local()
    }

    fn clock_source(&self) -> ClockSource {
        self.inner.clock_source()
    }

    fn expiry_tolerance(&self) -> std::time::Duration {
        self.inner.expiry_tolerance()
    }

    fn describe(&self) -> String {
        format!("faulty({})", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use leasehold::{MemoryStore, store::Token};

    use super::*;

    fn setup(rates: FaultRates) -> FaultSetup {
        let now = Instant::now();
        FaultSetup {
            rates,
            seed: 9,
            stream: 1,
            origin: now,
            stop_at: now + Duration::from_secs(3600),
            node: "node-a".into(),
            signals: None,
        }
    }

    fn request(ttl: Duration) -> AcquireRequest {
        let lock = LockName::new("job").unwrap_or_else(|e| panic!("{e}"));
        AcquireRequest::new(lock, 1, "node-a", Token::random(), ttl)
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn drift_shortens_the_lease_the_store_counts() {
        let memory = Arc::new(MemoryStore::new());
        let rates = FaultRates {
            max_drift: 0.05,
            ..FaultRates::none()
        };
        let store = FaultyStore::new(memory, setup(rates));
        let d = store.drift();
        assert!((0.0..=0.05).contains(&d), "{d}");
        let Ok(Acquisition::Elected(lease)) =
            store.try_acquire(&request(Duration::from_secs(10))).await
        else {
            panic!("a free lock is granted");
        };
        let counted = lease
            .expires_at
            .duration_since(lease.acquired_at)
            .unwrap_or_default();
        assert_eq!(counted, Duration::from_secs(10).mul_f64(1.0 - d));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_lost_answer_is_applied_and_a_lost_request_is_not() {
        let memory = Arc::new(MemoryStore::new());
        let lost_answer = FaultyStore::new(
            memory.clone(),
            setup(FaultRates {
                lose_answer: 1.0,
                ..FaultRates::none()
            }),
        );
        let req = request(Duration::from_secs(10));
        assert!(lost_answer.try_acquire(&req).await.is_err());
        let held = memory.state(&req.lock, 1).await.map(|s| s.holders.len());
        assert_eq!(held.ok(), Some(1), "applied although the answer was lost");

        let other = MemoryStore::new();
        let lost_request = FaultyStore::new(
            Arc::new(other),
            setup(FaultRates {
                lose_request: 1.0,
                ..FaultRates::none()
            }),
        );
        assert!(lost_request.try_acquire(&req).await.is_err());
        let held = lost_request
            .state(&req.lock, 1)
            .await
            .map(|s| s.holders.len());
        assert_eq!(held.ok(), Some(0), "never applied");
        assert_eq!(lost_request.counts().lost_requests, 1);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_delayed_request_arrives_even_when_the_caller_gives_up() {
        let memory = Arc::new(MemoryStore::new());
        let rates = FaultRates {
            delay_request: 1.0,
            max_delay: Duration::from_millis(500),
            ..FaultRates::none()
        };
        let store = FaultyStore::new(memory.clone(), setup(rates));
        let req = request(Duration::from_secs(10));
        let gave_up = tokio::time::timeout(Duration::from_micros(1), store.try_acquire(&req)).await;
        assert!(gave_up.is_err(), "the caller stopped waiting");
        sleep(Duration::from_secs(1)).await;
        let held = memory.state(&req.lock, 1).await.map(|s| s.holders.len());
        assert_eq!(
            held.ok(),
            Some(1),
            "the request reached the store all the same"
        );
        assert_eq!(store.log().len(), 1);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_duplicate_is_applied_again_after_its_lag() {
        let memory = Arc::new(MemoryStore::new());
        let rates = FaultRates {
            duplicate: 1.0,
            max_delay: Duration::from_millis(300),
            ..FaultRates::none()
        };
        let store = FaultyStore::new(memory.clone(), setup(rates));
        let req = request(Duration::from_secs(10));
        let Ok(Acquisition::Elected(first)) = store.try_acquire(&req).await else {
            panic!("a free lock is granted");
        };
        // Released at once: the copy, arriving later, takes the lock again for the same token.
        assert_eq!(
            memory.release(&first, Duration::ZERO).await.ok(),
            Some(Release::Released)
        );
        sleep(Duration::from_millis(400)).await;
        let holders = memory
            .state(&req.lock, 1)
            .await
            .map(|s| s.holders)
            .unwrap_or_default();
        assert_eq!(holders.len(), 1, "the duplicate was applied");
        assert!(holders[0].fence > first.fence, "as a new grant");
        assert_eq!(store.counts().duplicated, 1);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_delayed_answer_and_a_pause_arrive_late() {
        for (rates, kind) in [
            (
                FaultRates {
                    delay_answer: 1.0,
                    ..FaultRates::none()
                },
                FaultKind::DelayedAnswer,
            ),
            (
                FaultRates {
                    pause: 1.0,
                    ..FaultRates::none()
                },
                FaultKind::Paused,
            ),
        ] {
            let store = FaultyStore::new(Arc::new(MemoryStore::new()), setup(rates));
            let sent = Instant::now();
            assert!(
                store
                    .try_acquire(&request(Duration::from_secs(10)))
                    .await
                    .is_ok()
            );
            let log = store.log();
            assert_eq!(log.len(), 1);
            assert_eq!(log[0].kind, kind);
            assert!(log[0].delay_ms > 0);
            assert_eq!(
                Instant::now() - sent,
                Duration::from_millis(log[0].delay_ms),
                "{kind:?}: the answer came exactly that late"
            );
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn no_faults_after_the_stop() {
        let memory = Arc::new(MemoryStore::new());
        let mut s = setup(FaultRates {
            lose_request: 1.0,
            ..FaultRates::none()
        });
        s.stop_at = Instant::now();
        let store = FaultyStore::new(memory, s);
        assert!(
            store
                .try_acquire(&request(Duration::from_secs(1)))
                .await
                .is_ok()
        );
        assert_eq!(store.counts().lost_requests, 0);
    }
}
