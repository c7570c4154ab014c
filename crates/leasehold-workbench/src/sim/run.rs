//! Runs a scenario: the electors, the store and the clock on a paused current-thread runtime.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, Elector, Event, LeaderContext, MemoryStore, Outcome, Period, RetryPolicy,
    store::{LockState, ObservedStore},
};
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep, sleep_until};

use crate::sim::clock::{Clock, RETRY, STORE_ORIGIN, TICK};
use crate::sim::error::SimError;
use crate::sim::journal::Journal;
use crate::sim::outage::OutageStore;
use crate::sim::params::Params;
use crate::sim::recorder::Recorder;
use crate::sim::scenario::{LOCK, Scenario};
use crate::sim::timeline::Timeline;

/// Runs `scenario` with validated `params` on its own paused runtime (on a helper thread when
/// called from inside a tokio runtime, which cannot block on another one).
pub(crate) fn run(scenario: Scenario, params: Params) -> Result<Timeline, SimError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return run_here(scenario, params);
    }
    std::thread::scope(|s| {
        s.spawn(|| run_here(scenario, params))
            .join()
            .unwrap_or_else(|_| Err(SimError::Failed("the simulation thread panicked".into())))
    })
}

/// Runs on this thread. The core's own logs are silenced meanwhile: the leases are simulated,
/// and a `lease lost` warning from a simulation must not reach an operator's log.
fn run_here(scenario: Scenario, params: Params) -> Result<Timeline, SimError> {
    let quiet = tracing::subscriber::NoSubscriber::default();
    tracing::subscriber::with_default(quiet, || run_quietly(scenario, params))
}

fn run_quietly(scenario: Scenario, params: Params) -> Result<Timeline, SimError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| SimError::Failed(format!("cannot start the simulation runtime: {e}")))?;
    if scenario.is_partition() {
        return runtime.block_on(crate::sim::partition::drive(params));
    }
    runtime.block_on(drive(scenario, params))
}

/// One candidate's elector (with `slots` holders in the group scenario), the period of the
/// ledger it claims in the period scenario, and whether its action fails.
#[derive(Clone)]
struct NodeElector {
    elector: Elector,
    period: Option<Period>,
    fails: bool,
}

/// The error a failing action returns ([`Params::fail_action`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ActionError;

impl std::fmt::Display for ActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the simulated action failed")
    }
}

impl std::error::Error for ActionError {}

/// How one run ended.
enum RunEnd {
    /// The action ran (and the lease was released).
    Finished,
    /// The lock stayed taken for the whole wait.
    Skipped,
    /// The period ledger refused the claim (the journal has the store's answer).
    AlreadyRan,
    /// The action ran and returned an error (the lease was released).
    ActionFailed,
}

impl NodeElector {
    fn new(
        store: &Arc<ObservedStore<Journal>>,
        scenario: Scenario,
        params: &Params,
        node_id: &str,
    ) -> Result<Self, SimError> {
        let retry = RetryPolicy::new(RETRY, RETRY, 0.0).map_err(failed)?;
        let store: Arc<dyn leasehold::LeaseStore> = store.clone();
        let slots = if scenario.is_group() { params.slots } else { 1 };
        let options = ElectionOptions::builder()
            .max_leaders(slots)
            .wait(TICK * params.wait)
            .lease(TICK * params.lease)
            .min_lease(TICK * params.min_lease)
            .auto_extend(params.auto_extend)
            // The lessons show what an action that outlives its lease does (the stale holder,
            // the fence that stops it), so a lost action keeps running, as in the original
            // library; the library's default would drop it.
            .cancel_on_lost(false)
            .retry(retry)
            .node_id(node_id)
            .build()
            .map_err(failed)?;
        let period = match params.period.filter(|_| scenario.is_period()) {
            Some(ticks) => Some(Period::every(TICK * ticks).map_err(failed)?),
            None => None,
        };
        let fails = params.fail_action.is_some_and(|letter| {
            node_id
                .strip_prefix("node-")
                .is_some_and(|l| l.len() == letter.len_utf8() && l.starts_with(letter))
        });
        Ok(Self {
            elector: Elector::with_options(store, options),
            period,
            fails,
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.elector.subscribe()
    }

    async fn state(&self) -> leasehold::Result<LockState> {
        self.elector.state(LOCK).await
    }

    /// One run: the action writes to the resource, works for `action`, writes again (or, if
    /// this node's action fails, returns an error instead). A node whose action cannot fail calls
    /// `run_if_leader`; one whose action fails calls `run`, which reports the failure; in the
    /// period scenario every node calls `run_once_per`.
    async fn run(
        &self,
        node: usize,
        action: Duration,
        journal: &Journal,
    ) -> leasehold::Result<RunEnd> {
        let fails = self.fails;
        let work = |ctx: LeaderContext| work(ctx, node, action, journal.clone(), fails);
        if let Some(period) = self.period {
            return Ok(match self.elector.run_once_per(LOCK, period, work).await? {
                Outcome::Taken(_) => RunEnd::Skipped,
                Outcome::AlreadyRan(_) => RunEnd::AlreadyRan,
                Outcome::ActionFailed(ActionError) => RunEnd::ActionFailed,
                _ => RunEnd::Finished,
            });
        }
        if fails {
            return Ok(match self.elector.run(LOCK, work).await? {
                Outcome::Elected(()) => RunEnd::Finished,
                Outcome::Taken(_) | Outcome::AlreadyRan(_) => RunEnd::Skipped,
                Outcome::ActionFailed(ActionError) => RunEnd::ActionFailed,
            });
        }
        Ok(match self.elector.run_if_leader(LOCK, work).await? {
            Some(Ok(())) => RunEnd::Finished,
            Some(Err(ActionError)) => RunEnd::ActionFailed,
            None => RunEnd::Skipped,
        })
    }
}

fn failed(e: impl std::fmt::Display) -> SimError {
    SimError::Failed(e.to_string())
}

/// The protected action: a write when it starts, `action` of work, a write when it ends — or,
/// if it `fails`, an error where that last write would be. The lease is not checked in between
/// (like real work, it does not stop when the lease is lost); the fence is what protects the
/// resource.
async fn work(
    ctx: LeaderContext,
    node: usize,
    action: Duration,
    journal: Journal,
    fails: bool,
) -> Result<(), ActionError> {
    journal.write(node, ctx.slot(), ctx.fence());
    sleep(action).await;
    if fails {
        return Err(ActionError);
    }
    journal.write(node, ctx.slot(), ctx.fence());
    Ok(())
}

/// Journals the `Lost` events of candidate `node`'s elector.
async fn listen(mut events: broadcast::Receiver<Event>, node: usize, journal: Journal) {
    loop {
        match events.recv().await {
            Ok(Event::Lost {
                slot,
                fence,
                reason,
                ..
            }) => journal.lost(node, slot, fence, reason),
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Candidate `node` waits for each of its attempts in turn (one after the other: an attempt
/// whose time came during the previous run starts when that run ends), runs, and journals how
/// each run ended. A store error is an ending of its own when the run has a store outage
/// (`outage`); otherwise, like any other error, it makes the simulation fail.
async fn attempt(
    elector: NodeElector,
    node: usize,
    at: Vec<Instant>,
    action: Duration,
    journal: Journal,
    outage: bool,
) {
    for at in at {
        sleep_until(at).await;
        journal.attempting(node);
        match elector.run(node, action, &journal).await {
            Ok(RunEnd::Finished) => journal.finished(node),
            Ok(RunEnd::Skipped) => journal.skipped(node),
            // The store's refusal is journalled as it answered, with its ledger record.
            Ok(RunEnd::AlreadyRan) => {}
            Ok(RunEnd::ActionFailed) => journal.run_failed(node, false),
            Err(leasehold::Error::Store { .. }) if outage => journal.run_failed(node, true),
            Err(e) => journal.failed(e.to_string()),
        }
    }
}

async fn drive(scenario: Scenario, params: Params) -> Result<Timeline, SimError> {
    let clock = Clock::new(Instant::now());
    let names: Vec<String> = scenario
        .candidates()
        .iter()
        .map(|&n| n.to_owned())
        .collect();
    let journal = Journal::new(&names);
    let memory: Arc<dyn leasehold::LeaseStore> =
        Arc::new(MemoryStore::with_clock_origin(STORE_ORIGIN));
    let outage = params.outage_ticks > 0;
    let inner: Arc<dyn leasehold::LeaseStore> = if outage {
        Arc::new(OutageStore::new(
            memory,
            clock,
            params.outage_from,
            params.outage_ticks,
        ))
    } else {
        memory
    };
    let store = Arc::new(ObservedStore::new(inner, journal.clone()));

    let mut electors = Vec::with_capacity(names.len());
    for (node, (name, ticks)) in names.iter().zip(scenario.attempts(&params)).enumerate() {
        let elector = NodeElector::new(&store, scenario, &params, name)?;
        tokio::spawn(listen(elector.subscribe(), node, journal.clone()));
        let at = ticks.iter().map(|&t| clock.attempt_at(t, node)).collect();
        tokio::spawn(attempt(
            elector.clone(),
            node,
            at,
            TICK * params.action,
            journal.clone(),
            outage,
        ));
        electors.push(elector);
    }
    let observer = electors
        .first()
        .ok_or_else(|| SimError::Failed("the scenario has no candidates".into()))?;

    let mut recorder = Recorder::new(clock, journal.clone(), names.clone());
    for tick in 0..=scenario.max_tick() {
        // Paused time advances only when every task is idle, so by the time this sleep ends
        // everything due up to the end of the tick has happened.
        sleep_until(clock.end_of(tick)).await;
        let state = observer.state().await.map_err(failed)?;
        recorder.close_tick(tick, &state);
        if let Some(failure) = journal.failure() {
            return Err(SimError::Failed(failure));
        }
    }
    Ok(Timeline {
        scenario: scenario.id().to_owned(),
        params,
        lock: LOCK.to_owned(),
        candidates: names,
        max_tick: scenario.max_tick(),
        frames: recorder.frames,
        events: recorder.events,
        partition: None,
    })
}
