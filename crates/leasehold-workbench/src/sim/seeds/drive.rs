//! Runs one seed: the store, the fault wrappers, the electors and their workloads on a paused
//! current-thread runtime, recording the history and one timeline per lock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use leasehold::store::{AcquireRequest, Acquisition, StoreResult};
use leasehold::{
    ElectionOptions, Elector, Event, LeaderContext, Lease, LeaseStore, LockName, MemoryStore,
    Outcome, Period, RetryPolicy,
    store::{Extension, ObservedStore, Release, StoreObserver},
};
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep, sleep_until};

use crate::sim::clock::{Clock, STORE_ORIGIN, TICK};
use crate::sim::error::SimError;
use crate::sim::journal::Journal;
use crate::sim::params::Params;
use crate::sim::recorder::Recorder;
use crate::sim::seeds::faults::{FaultSetup, FaultyStore};
use crate::sim::seeds::history::{
    ActionSpan, AttemptOutcome, AttemptRecord, GrantRecord, History, LockInfo, PeriodChange,
    PeriodRun, WriteRecord, window_start,
};
use crate::sim::seeds::properties::check_all;
use crate::sim::seeds::rng::SimRng;
use crate::sim::seeds::signals::ReleaseHub;
use crate::sim::seeds::workload::{LockKind, LockPlan, TaskPlan, Workload};
use crate::sim::seeds::{SeedConfig, SeedReport, SeedTimeline};
use crate::sim::timeline::Timeline;

/// How often an action writes to the fenced resource.
const STEP: Duration = Duration::from_millis(200);
/// How long a `run_once_per` task waits before trying a period again (skipped or failed).
const RETRY_IN_PERIOD: Duration = Duration::from_secs(1);
/// The longest pause between two `run_if_leader` attempts of one task.
const MAX_GAP: Duration = Duration::from_secs(5);
/// The retry policy every elector gets: the library's default pauses (25 ms doubling to 250 ms)
/// without jitter, which would draw from an OS-seeded generator.
fn retry() -> Result<RetryPolicy, SimError> {
    RetryPolicy::new(Duration::from_millis(25), Duration::from_millis(250), 0.0).map_err(failed)
}

fn failed(e: impl std::fmt::Display) -> SimError {
    SimError::Failed(e.to_string())
}

/// Runs `seed` on this thread (a helper thread when called inside a runtime), with the core's
/// logs silenced.
pub(crate) fn run(seed: u64, config: &SeedConfig) -> Result<SeedReport, SimError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|s| {
            s.spawn(|| run(seed, config))
                .join()
                .unwrap_or_else(|_| Err(SimError::Failed("the simulation thread panicked".into())))
        });
    }
    let quiet = tracing::subscriber::NoSubscriber::default();
    tracing::subscriber::with_default(quiet, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .map_err(|e| SimError::Failed(format!("cannot start the simulation runtime: {e}")))?;
        let report = runtime.block_on(drive(seed, config));
        // Dropping the runtime drops the tasks still running; the history is closed already.
        drop(runtime);
        report
    })
}

/// The history as it is being recorded.
#[derive(Debug)]
struct Log {
    t0: Instant,
    /// Set at the end of the run: what is dropped with the runtime records nothing.
    closed: bool,
    history: History,
    lock_names: Vec<LockName>,
    /// Tokens numbered in the order they were first granted.
    tokens: BTreeMap<u128, u32>,
}

/// The shared recording of one run. Cheap to clone.
#[derive(Debug, Clone)]
struct Recording(Arc<Mutex<Log>>);

impl Recording {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(log: &Log) -> Duration {
        Instant::now().saturating_duration_since(log.t0)
    }

    fn lock_of(&self, name: &LockName) -> Option<usize> {
        self.log().lock_names.iter().position(|l| l == name)
    }

    fn granted(&self, lease: &Lease) {
        let mut log = self.log();
        if log.closed {
            return;
        }
        let Some(lock) = log.lock_names.iter().position(|l| *l == lease.lock) else {
            return;
        };
        let Some(node) = log.history.nodes.iter().position(|n| *n == lease.owner) else {
            return;
        };
        let next = u32::try_from(log.tokens.len()).unwrap_or(u32::MAX);
        let holder = *log.tokens.entry(lease.token.as_u128()).or_insert(next);
        let at = Self::now(&log);
        log.history.grants.push(GrantRecord {
            at,
            node,
            lock,
            slot: lease.slot,
            fence: lease.fence,
            holder,
            claim: lease.period.is_some(),
        });
    }

    fn attempt(&self, node: usize, lock: usize, period: Option<Duration>) -> usize {
        let mut log = self.log();
        let at = Self::now(&log);
        log.history.attempts.push(AttemptRecord {
            at,
            node,
            lock,
            period,
            outcome: AttemptOutcome::Unfinished,
        });
        log.history.attempts.len() - 1
    }

    fn attempt_ended(&self, id: usize, outcome: AttemptOutcome) {
        let mut log = self.log();
        if log.closed {
            return;
        }
        if let Some(a) = log.history.attempts.get_mut(id) {
            a.outcome = outcome;
        }
    }

    fn action_started(&self, span: ActionSpan) -> usize {
        let mut log = self.log();
        let start = Self::now(&log);
        log.history.actions.push(ActionSpan { start, ..span });
        log.history.actions.len() - 1
    }

    fn action_ended(&self, id: usize) {
        let mut log = self.log();
        if log.closed {
            return;
        }
        let at = Self::now(&log);
        if let Some(a) = log.history.actions.get_mut(id) {
            a.end = Some(at);
        }
    }

    fn wrote(&self, mut write: WriteRecord, deadline: Instant) {
        let mut log = self.log();
        write.at = Self::now(&log);
        write.deadline = deadline.saturating_duration_since(log.t0);
        log.history.writes.push(write);
    }

    /// Ends the recording at `end` and returns the history.
    fn close(&self, end: Duration) -> History {
        let mut log = self.log();
        log.closed = true;
        log.history.end = end;
        log.history.clone()
    }
}

/// Ends an action's span when dropped: when it returns, and when the core drops its future.
struct ActionEnd {
    recording: Recording,
    id: usize,
}

impl Drop for ActionEnd {
    fn drop(&mut self) {
        self.recording.action_ended(self.id);
    }
}

/// Passes the store's answers to the journal of their lock, and grants to the history.
struct Router {
    locks: Vec<(LockName, Journal)>,
    recording: Recording,
    /// Woken when the store frees a lock (where the memory store sends its own signal).
    signals: Arc<ReleaseHub>,
}

impl Router {
    fn journal(&self, lock: &LockName) -> Option<&Journal> {
        self.locks.iter().find(|(l, _)| l == lock).map(|(_, j)| j)
    }
}

impl StoreObserver for Router {
    fn acquired(&self, req: &AcquireRequest, answer: &StoreResult<Acquisition>) {
        if let Some(j) = self.journal(&req.lock) {
            j.acquired(req, answer);
        }
        if let Ok(Acquisition::Elected(lease)) = answer {
            self.recording.granted(lease);
        }
    }

    fn extended(&self, lease: &Lease, ttl: Duration, answer: &StoreResult<Extension>) {
        if let Some(j) = self.journal(&lease.lock) {
            j.extended(lease, ttl, answer);
        }
    }

    fn released(&self, lease: &Lease, linger: Duration, answer: &StoreResult<Release>) {
        if let Some(j) = self.journal(&lease.lock) {
            j.released(lease, linger, answer);
        }
        if matches!(answer, Ok(Release::Released)) && linger.is_zero() {
            self.signals.notify(&lease.lock);
        }
    }
}

/// One lock of the run: its name, plan, journal and the nodes using it (in journal order).
#[derive(Clone)]
struct LockRun {
    name: LockName,
    plan: LockPlan,
    journal: Journal,
    users: Vec<usize>,
}

impl LockRun {
    fn index_of(&self, node: usize) -> usize {
        self.users.iter().position(|&n| n == node).unwrap_or(0)
    }
}

/// What a task's actions write with.
#[derive(Clone)]
struct Writer {
    recording: Recording,
    journal: Journal,
    node: usize,
    /// The node's index in the lock's journal.
    k: usize,
    lock: usize,
}

/// The options of an elector: the library's defaults with the node id, the retry policy without
/// jitter, the task's wait and the lock's `max_leaders`, and the config's `auto_extend` and
/// `cancel_on_lost` where it sets them.
fn options(
    config: &SeedConfig,
    node_id: &str,
    max_leaders: u32,
    wait: Duration,
) -> Result<ElectionOptions, SimError> {
    let mut b = ElectionOptions::builder()
        .node_id(node_id)
        .retry(retry()?)
        .max_leaders(max_leaders)
        .wait(wait);
    if let Some(on) = config.auto_extend {
        b = b.auto_extend(on);
    }
    if let Some(on) = config.cancel_on_lost {
        b = b.cancel_on_lost(on);
    }
    b.build().map_err(failed)
}

async fn drive(seed: u64, config: &SeedConfig) -> Result<SeedReport, SimError> {
    let t0 = Instant::now();
    let clock = Clock::new(t0);
    let lease = leasehold::options::DEFAULT_LEASE;
    let workload = Workload::plan(seed, lease, config.attempts_until());
    let horizon_ticks = u32::try_from(config.horizon.as_secs())
        .unwrap_or(u32::MAX)
        .max(1);

    let memory = Arc::new(MemoryStore::with_clock_origin(STORE_ORIGIN));
    let mut locks = Vec::new();
    for (l, plan) in workload.locks.iter().enumerate() {
        let users: Vec<usize> = workload
            .tasks
            .iter()
            .filter(|t| t.lock == l)
            .map(|t| t.node)
            .collect();
        let names: Vec<String> = users.iter().map(|&n| workload.nodes[n].clone()).collect();
        locks.push(LockRun {
            name: LockName::new(plan.name.clone()).map_err(failed)?,
            plan: plan.clone(),
            journal: Journal::new(&names),
            users,
        });
    }
    let recording = Recording(Arc::new(Mutex::new(Log {
        t0,
        closed: false,
        history: History {
            nodes: workload.nodes.clone(),
            locks: workload
                .locks
                .iter()
                .map(|l| LockInfo {
                    name: l.name.clone(),
                    max_leaders: l.max_leaders,
                })
                .collect(),
            period_changes: workload
                .tasks
                .iter()
                .filter_map(|t| {
                    Some(PeriodChange {
                        node: t.node,
                        lock: t.lock,
                        at: t.switch?.at,
                    })
                })
                .collect(),
            liveness_from: config.liveness_from(),
            attempts_until: config.attempts_until(),
            ..History::default()
        },
        lock_names: locks.iter().map(|l| l.name.clone()).collect(),
        tokens: BTreeMap::new(),
    })));
    let signals = Arc::new(ReleaseHub::new(workload.nodes.len(), seed));
    let router = Router {
        signals: Arc::clone(&signals),
        locks: locks
            .iter()
            .map(|l| (l.name.clone(), l.journal.clone()))
            .collect(),
        recording: recording.clone(),
    };
    let observed: Arc<dyn LeaseStore> = Arc::new(ObservedStore::new(memory.clone(), router));

    let mut wrappers = Vec::new();
    let mut electors = Vec::new();
    for (node, id) in workload.nodes.iter().enumerate() {
        let setup = FaultSetup {
            rates: config.faults.clone(),
            seed,
            stream: 1 + node as u64,
            origin: t0,
            stop_at: t0 + config.faults_stop,
            node: id.clone(),
            signals: Some((Arc::clone(&signals), node)),
        };
        let faulty = Arc::new(FaultyStore::new(Arc::clone(&observed), setup));
        let elector =
            Elector::with_options(faulty.clone(), options(config, id, 1, Duration::ZERO)?);
        tokio::spawn(listen(
            elector.subscribe(),
            node,
            locks.clone(),
            recording.clone(),
        ));
        wrappers.push(faulty);
        electors.push(elector);
    }
    for (i, task) in workload.tasks.iter().enumerate() {
        let lock = &locks[task.lock];
        let elector = electors[task.node].reconfigured(options(
            config,
            &workload.nodes[task.node],
            lock.plan.max_leaders,
            task.wait,
        )?);
        let ctx = Task {
            elector,
            lock: lock.clone(),
            plan: task.clone(),
            writer: Writer {
                recording: recording.clone(),
                journal: lock.journal.clone(),
                node: task.node,
                k: lock.index_of(task.node),
                lock: task.lock,
            },
            rng: SimRng::new(seed, 100 + i as u64),
            t0,
            until: t0 + config.attempts_until(),
        };
        match lock.plan.kind {
            LockKind::RunIfLeader => tokio::spawn(ctx.run_if_leader()),
            LockKind::RunOncePer => tokio::spawn(ctx.run_once_per()),
        };
    }

    let mut recorders: Vec<Recorder> = locks
        .iter()
        .map(|l| {
            let names = l.users.iter().map(|&n| workload.nodes[n].clone()).collect();
            Recorder::new(clock, l.journal.clone(), names).with_instants()
        })
        .collect();
    for tick in 0..horizon_ticks {
        // Paused time moves on only when every task is idle: everything due by the end of
        // the tick has happened when this sleep ends.
        sleep_until(clock.end_of(tick)).await;
        for (l, recorder) in locks.iter().zip(&mut recorders) {
            let state = memory
                .state(&l.name, l.plan.max_leaders)
                .await
                .map_err(failed)?;
            recorder.close_tick(tick, &state);
        }
    }
    let history = recording.close(Instant::now().saturating_duration_since(t0));

    let violations = check_all(&history);
    let faults = wrappers
        .iter()
        .fold(Default::default(), |n: super::FaultCounts, w| {
            n.plus(w.counts())
        });
    let mut fault_log: Vec<_> = wrappers.iter().flat_map(|w| w.log()).collect();
    // Stable: requests sent at the same instant keep their node order.
    fault_log.sort_by_key(|f| f.at_ms);
    let timelines = locks
        .iter()
        .zip(recorders)
        .enumerate()
        .map(|(i, (l, r))| timeline(i, l, &workload, config, r, horizon_ticks))
        .collect();
    let drift = wrappers.iter().map(|w| w.drift()).collect();
    Ok(SeedReport {
        seed,
        violations: violations.clone(),
        faults,
        history: history.clone(),
        timeline: SeedTimeline {
            seed,
            config: config.clone(),
            workload,
            drift,
            fault_counts: faults,
            violations,
            attempts: history.attempts,
            faults: fault_log,
            locks: timelines,
        },
    })
}

/// The workbench timeline of one lock (see [`SeedTimeline::locks`] for how its fields read).
fn timeline(
    index: usize,
    lock: &LockRun,
    workload: &Workload,
    config: &SeedConfig,
    recorder: Recorder,
    ticks: u32,
) -> Timeline {
    let task = workload.tasks.iter().find(|t| t.lock == index);
    let in_ticks =
        |d: Duration| u32::try_from(d.as_secs().div_ceil(TICK.as_secs())).unwrap_or(u32::MAX);
    Timeline {
        scenario: "seed".to_owned(),
        params: Params {
            action: in_ticks(lock.plan.longest_action),
            lease: in_ticks(leasehold::options::DEFAULT_LEASE),
            wait: task.map_or(0, |t| in_ticks(t.wait)),
            min_lease: 0,
            auto_extend: config.auto_extend.unwrap_or(true),
            slots: lock.plan.max_leaders,
            period: task.and_then(|t| t.period).map(in_ticks),
            fail_action: None,
            outage_from: 0,
            outage_ticks: 0,
            shards: None,
            nodes: None,
        },
        lock: lock.name.as_str().to_owned(),
        candidates: lock
            .users
            .iter()
            .map(|&n| workload.nodes[n].clone())
            .collect(),
        max_tick: ticks.saturating_sub(1),
        frames: recorder.frames,
        events: recorder.events,
        partition: None,
    }
}

/// Journals the `Lost` events of node `node`'s elector in the journal of their lock.
async fn listen(
    mut events: broadcast::Receiver<Event>,
    node: usize,
    locks: Vec<LockRun>,
    recording: Recording,
) {
    loop {
        match events.recv().await {
            Ok(Event::Lost {
                lock,
                slot,
                fence,
                reason,
                ..
            }) => {
                if let Some(l) = recording.lock_of(&lock).and_then(|l| locks.get(l)) {
                    l.journal.lost(l.index_of(node), slot, fence, reason);
                }
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// One node's work on one lock.
struct Task {
    elector: Elector,
    lock: LockRun,
    plan: TaskPlan,
    writer: Writer,
    rng: SimRng,
    t0: Instant,
    /// No attempt starts at or after this instant.
    until: Instant,
}

impl Task {
    /// An action length: mostly short, a third of them longer than a lease (up to the lock's
    /// longest), so that the watchdog must renew.
    fn action_length(&mut self) -> Duration {
        let longest = self.lock.plan.longest_action;
        let lease = leasehold::options::DEFAULT_LEASE;
        let short = lease.min(longest);
        if longest > lease && self.rng.chance(1.0 / 3.0) {
            self.rng.millis(lease, longest)
        } else {
            self.rng.millis(Duration::from_millis(200), short)
        }
    }

    /// `run_if_leader` after a random gap, again and again.
    async fn run_if_leader(mut self) {
        loop {
            let gap = self.rng.millis(Duration::ZERO, MAX_GAP);
            sleep(gap).await;
            if Instant::now() >= self.until {
                return;
            }
            let length = self.action_length();
            let w = self.writer.clone();
            let attempt = w.recording.attempt(w.node, w.lock, None);
            w.journal.attempting(w.k);
            let started = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&started);
            let writer = w.clone();
            let ran = self
                .elector
                .run_if_leader(self.lock.name.clone(), move |ctx| {
                    act(ctx, writer, length, None, flag)
                })
                .await;
            let outcome = match ran {
                Ok(Some(())) => AttemptOutcome::Ran,
                Ok(None) => AttemptOutcome::Skipped,
                Err(e) => AttemptOutcome::Failed(e.to_string()),
            };
            self.ended(attempt, outcome, started.load(Ordering::Relaxed));
        }
    }

    /// `run_once_per` in every period of the task's length (a new one from its switch on): at
    /// the period's start plus the task's offset, again every second while the lock is held or
    /// the call fails, until the period ran here or the ledger says it ran.
    async fn run_once_per(mut self) {
        let Some(first) = self.plan.period else {
            return;
        };
        sleep(self.plan.offset).await;
        let mut done: Option<(Duration, Duration)> = None;
        loop {
            let now = Instant::now();
            if now >= self.until {
                return;
            }
            let since = now.saturating_duration_since(self.t0);
            let switch = self.plan.switch;
            let length = match switch {
                Some(s) if since >= s.at => s.to,
                _ => first,
            };
            let from = window_start(since, length);
            if done == Some((length, from)) {
                let mut next = from + length + self.plan.offset;
                if let Some(s) = switch.filter(|s| s.at > since && s.at < next) {
                    next = s.at;
                }
                sleep_until(self.t0 + next).await;
                continue;
            }
            let Ok(period) = Period::every(length) else {
                return;
            };
            let action = self.action_length();
            let w = self.writer.clone();
            let attempt = w.recording.attempt(w.node, w.lock, Some(length));
            w.journal.attempting(w.k);
            let started = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&started);
            let writer = w.clone();
            let ran = self
                .elector
                .run_once_per(self.lock.name.clone(), period, move |ctx| async move {
                    act(ctx, writer, action, Some(length), flag).await;
                    Ok::<(), std::convert::Infallible>(())
                })
                .await;
            let outcome = match ran {
                Ok(Outcome::Elected(()) | Outcome::ActionFailed(_)) => AttemptOutcome::Ran,
                Ok(Outcome::AlreadyRan(_)) => AttemptOutcome::AlreadyRan,
                Ok(_) => AttemptOutcome::Skipped,
                Err(e) => AttemptOutcome::Failed(e.to_string()),
            };
            let retry = matches!(outcome, AttemptOutcome::Skipped | AttemptOutcome::Failed(_));
            self.ended(attempt, outcome, started.load(Ordering::Relaxed));
            if retry {
                sleep(RETRY_IN_PERIOD).await;
            } else {
                done = Some((length, from));
            }
        }
    }

    /// Records how an attempt ended, and tells the journal: `finished` if its action ran
    /// (whether it returned or was dropped), else `skipped` (a failed acquisition included; the
    /// seed trace's attempts say which).
    fn ended(&self, attempt: usize, outcome: AttemptOutcome, started: bool) {
        let w = &self.writer;
        if matches!(outcome, AttemptOutcome::AlreadyRan) {
            // The journal has the store's refusal already.
        } else if started {
            w.journal.finished(w.k);
        } else {
            w.journal.skipped(w.k);
        }
        w.recording.attempt_ended(attempt, outcome);
    }
}

/// The protected action, like real work: it writes to the fenced resource with its fence when
/// it starts and every [`STEP`] until it has run `length`, and never looks at its lease (the
/// core stops it, or not). It records its start, its end (also when its future is dropped) and
/// every write with the lease's local deadline read at the write.
async fn act(
    ctx: LeaderContext,
    w: Writer,
    length: Duration,
    period: Option<Duration>,
    started: Arc<AtomicBool>,
) {
    started.store(true, Ordering::Relaxed);
    let (slot, fence) = (ctx.slot(), ctx.fence());
    let run = period.map(|length| PeriodRun {
        length,
        granted: ctx
            .lease()
            .acquired_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default(),
    });
    let id = w.recording.action_started(ActionSpan {
        node: w.node,
        lock: w.lock,
        slot,
        fence,
        start: Duration::ZERO,
        end: None,
        period: run,
    });
    let _end = ActionEnd {
        recording: w.recording.clone(),
        id,
    };
    let end = Instant::now() + length;
    let mut first = true;
    loop {
        let now = Instant::now();
        let deadline = ctx.local_deadline();
        let last = now >= end;
        let note = first || last || now >= deadline;
        let accepted = w.journal.write_noted(w.k, slot, fence, note);
        w.recording.wrote(
            WriteRecord {
                at: Duration::ZERO,
                node: w.node,
                lock: w.lock,
                slot,
                fence,
                deadline: Duration::ZERO,
                accepted,
            },
            deadline,
        );
        if last {
            return;
        }
        first = false;
        sleep_until((now + STEP).min(end)).await;
    }
}
