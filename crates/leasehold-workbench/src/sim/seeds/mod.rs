//! Seeded simulations of the real electors under injected faults, checked against the protocol's
//! properties (issue 34, part 2).
//!
//! [`run_seed`] runs one seed: a fresh current-thread tokio runtime on paused time, one
//! [`MemoryStore`](leasehold::MemoryStore) (its clock reading [`STORE_ORIGIN`](crate::sim::STORE_ORIGIN)
//! at the start), and 2–4 nodes, each one real [`Elector`](leasehold::Elector) whose store calls go
//! through its own [`FaultyStore`]. The seed chooses everything else (see [`Workload`]): 1–2 locks,
//! each used by at least two nodes, with either
//!
//! * `run_if_leader` again and again, `max_leaders` 1 or 2, a wait of 0, 2 s or 20 s, action
//!   lengths from 200 ms to three leases (a third of them longer than the lease, so the watchdog
//!   must renew), or
//! * `run_once_per` in every period, with period lengths of 20 to 60 s, half of the nodes switching
//!   to another length at a random instant (a rolling deploy), actions up to half the shortest
//!   period.
//!
//! The electors run the library's **default options** ([`SeedConfig::default`]); the workload sets
//! only the node id, the wait of `run_if_leader` tasks (`run_once_per` keeps the default wait of
//! zero, and its task tries again every second within the period while the lock is held or the
//! call failed, as a scheduler would), `max_leaders`, and a retry policy equal to the default
//! one without its jitter, because jitter draws from an OS-seeded generator and would make runs
//! irreproducible. [`SeedConfig::before_issue_33`] turns renewal and cancel-on-lost off, as the
//! library's defaults were before issue 33.
//!
//! Each action is like real work: it writes to its lock's fenced resource with `ctx.fence()` when
//! it starts and every 200 ms, never looking at its lease, and records its start and its end (a
//! drop guard records the end at the instant the core drops a cancelled action). The run records
//! a [`History`] and checks the five [`Property`]s over it; it also keeps one workbench
//! [`Timeline`] per lock, which [`SeedTimeline`] gathers with the workload, the faults and the
//! violations: what a failing seed prints.
//!
//! **Determinism.** The seed drives everything: the workload, each wrapper's faults and drift,
//! each task's action lengths and gaps (each from its own SplitMix64 stream); nothing
//! reads the wall clock in a way that changes what happens, and no map's iteration order reaches
//! the outcome. The core's own random draws (tokens, waiter ids) are compared, never ordered, and
//! the timeline shows tokens as labels. Release signals come from a [`ReleaseHub`] that wakes
//! the electors in a seeded order (the store's own signal wakes them in an order tokio draws).
//! One source of chance is out of the simulation's reach: tokio's `select!` polls its branches
//! in an order drawn from the runtime's generator, which only a `tokio_unstable` build can seed;
//! it matters only when two branches of one `select!` in the core are ready at the same virtual
//! instant (those a seeded run reaches do the same whichever wins), and the determinism test
//! checks that the seeds it runs replay byte for byte. See `docs/seeds.md`.
//!
//! ```
//! use leasehold_workbench::sim::seeds::{self, SeedConfig};
//!
//! let report = seeds::run_seed(7, &SeedConfig::default())?;
//! assert!(report.violations.is_empty(), "{:?}", report.violations);
//! assert_eq!(report.timeline.locks.len(), report.timeline.workload.locks.len());
//! let again = seeds::run_seed(7, &SeedConfig::default())?;
//! assert_eq!(report.to_json(), again.to_json(), "a seed replays exactly");
//! # Ok::<(), leasehold_workbench::sim::SimError>(())
//! ```

mod drive;
mod faults;
mod history;
mod properties;
mod rng;
mod signals;
mod workload;

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use serde::Serialize;

pub use faults::{FaultCounts, FaultKind, FaultRates, FaultRecord, FaultSetup, FaultyStore};
pub use history::{
    ActionSpan, AttemptOutcome, AttemptRecord, GrantRecord, History, LockInfo, PeriodChange,
    PeriodRun, WriteRecord, window_start,
};
pub use properties::{Property, Violation, check_all};
pub use signals::ReleaseHub;
pub use workload::{LockKind, LockPlan, PeriodSwitch, TaskPlan, Workload};

use crate::sim::error::SimError;
use crate::sim::timeline::Timeline;

/// What a seeded run simulates besides its workload: the options the electors run, the faults,
/// and how long.
///
/// ```
/// use std::time::Duration;
/// use leasehold_workbench::sim::seeds::SeedConfig;
///
/// let c = SeedConfig::default();
/// assert_eq!((c.auto_extend, c.cancel_on_lost), (None, None), "the library's defaults");
/// assert!(c.faults_stop < c.liveness_from() && c.liveness_from() < c.attempts_until());
/// let old = SeedConfig::before_issue_33();
/// assert_eq!((old.auto_extend, old.cancel_on_lost), (Some(false), Some(false)));
/// assert_eq!(old.flag(), Some("--before-issue-33"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeedConfig {
    /// `default` or `before_issue_33` (what a replay command names).
    pub name: String,
    /// `auto_extend` of every elector; `None`: the library's default (on).
    pub auto_extend: Option<bool>,
    /// `cancel_on_lost` of every elector; `None`: the library's default (on).
    pub cancel_on_lost: Option<bool>,
    /// The faults and the drift bound.
    pub faults: FaultRates,
    /// How long the run lasts (virtual time; whole seconds, one timeline frame each).
    #[serde(serialize_with = "serialize_ms", rename = "horizon_ms")]
    pub horizon: Duration,
    /// Requests sent from this instant on are not faulted.
    #[serde(serialize_with = "serialize_ms", rename = "faults_stop_ms")]
    pub faults_stop: Duration,
}

impl Default for SeedConfig {
    /// The library's default options, [`FaultRates::default`], 330 s of virtual time with faults
    /// for the first 120 s.
    fn default() -> Self {
        Self {
            name: "default".to_owned(),
            auto_extend: None,
            cancel_on_lost: None,
            faults: FaultRates::default(),
            horizon: Duration::from_secs(330),
            faults_stop: Duration::from_secs(120),
        }
    }
}

impl SeedConfig {
    /// The defaults before issue 33: no renewal, and an action whose lease is lost keeps
    /// running.
    pub fn before_issue_33() -> Self {
        Self {
            name: "before_issue_33".to_owned(),
            auto_extend: Some(false),
            cancel_on_lost: Some(false),
            ..Self::default()
        }
    }

    /// The flag of the `seeds` example that selects this config (`None` for the default).
    pub fn flag(&self) -> Option<&'static str> {
        (self.name == "before_issue_33").then_some("--before-issue-33")
    }

    /// From when no fault acts any more: the faults stop, what they left in flight arrives
    /// ([`FaultRates::longest_tail`]), a lease it granted runs out, plus a second.
    pub fn liveness_from(&self) -> Duration {
        self.faults_stop
            + self.faults.longest_tail()
            + leasehold::options::DEFAULT_LEASE
            + Duration::from_secs(1)
    }

    /// When the workloads stop starting attempts: 20 s before the end, so that the last ones
    /// end within the run.
    pub fn attempts_until(&self) -> Duration {
        self.horizon.saturating_sub(Duration::from_secs(20))
    }

    /// The command that replays `seed` with this config (the `seeds` example's flags cover
    /// the two named configs and the drift bound; other changes are made in code).
    ///
    /// ```
    /// use leasehold_workbench::sim::seeds::SeedConfig;
    ///
    /// let mut c = SeedConfig::before_issue_33();
    /// c.faults.max_drift = 0.2;
    /// assert_eq!(
    ///     c.replay_command(7),
    ///     "cargo run --release -p leasehold-workbench --example seeds -- --seed 7 --before-issue-33 --max-drift 0.2 --json"
    /// );
    /// ```
    pub fn replay_command(&self, seed: u64) -> String {
        let mut flags = self.flag().map(|f| format!(" {f}")).unwrap_or_default();
        let drift = self.faults.max_drift;
        if drift != FaultRates::default().max_drift {
            flags.push_str(&format!(" --max-drift {drift}"));
        }
        format!(
            "cargo run --release -p leasehold-workbench --example seeds -- --seed {seed}{flags} --json"
        )
    }
}

/// What one seed did and whether it kept the properties.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Every property violation found (empty: the seed kept them all).
    pub violations: Vec<Violation>,
    /// The requests and faults of all wrappers.
    pub faults: FaultCounts,
    /// The recorded history the properties were checked on.
    pub history: History,
    /// The trace: what `--seed N --json` prints.
    pub timeline: SeedTimeline,
}

impl SeedReport {
    /// The trace as pretty JSON (the same for every run of the same seed and config).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.timeline)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// A seed's trace: the workload, the faults, the violations, and one workbench [`Timeline`] per
/// lock.
///
/// Each lock's timeline is the workbench's format with `scenario` `seed`: its candidates are the
/// nodes using the lock; its frames (one per second) show the store's holders, the fenced
/// resource and the ledger of that lock; its events carry their exact instant
/// ([`TimelineEvent::at_ms`](crate::sim::TimelineEvent::at_ms)). An action's writes appear as its
/// first and last, and every one the resource rejected or made at or after the local deadline
/// (the resource counts them all). `params` summarise the lock's workload in ticks: `action` is
/// the longest action, `wait` and `period` the first task's. A `skip` event also stands for an
/// attempt that failed before its action ran; [`attempts`](Self::attempts) says which.
#[derive(Debug, Clone, Serialize)]
pub struct SeedTimeline {
    /// The seed.
    pub seed: u64,
    /// The config it ran with.
    pub config: SeedConfig,
    /// What the seed chose.
    pub workload: Workload,
    /// Each node's clock drift (the fraction its leases are shortened at the store).
    pub drift: Vec<f64>,
    /// The requests and faults of all wrappers.
    pub fault_counts: FaultCounts,
    /// The violations found.
    pub violations: Vec<Violation>,
    /// Every attempt, with how it ended.
    pub attempts: Vec<AttemptRecord>,
    /// Every fault injected, by the instant its request was sent.
    pub faults: Vec<FaultRecord>,
    /// One timeline per lock, in [`Workload::locks`] order.
    pub locks: Vec<Timeline>,
}

/// Runs seed `seed` with `config` and checks the properties.
///
/// Blocking: it drives its own runtime (from async code, call it from `spawn_blocking`; called
/// on a runtime thread anyway, it runs on a helper thread).
///
/// # Errors
///
/// [`SimError::Failed`] when the runtime cannot start or the simulation itself fails (never
/// for a property violation: those are in the report).
pub fn run_seed(seed: u64, config: &SeedConfig) -> Result<SeedReport, SimError> {
    drive::run(seed, config)
}

/// How a property fared over a search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Seeds with at least one violation of it.
    pub seeds: u64,
    /// Its violations, over all seeds.
    pub violations: u64,
}

/// What a [`search`] found.
#[derive(Debug, Clone)]
pub struct SearchSummary {
    /// The seeds run.
    pub seeds_run: u64,
    /// Per property name, in [`Property::ALL`] order: how often it was broken.
    pub by_property: BTreeMap<Property, Tally>,
    /// The seeds with a violation, in order.
    pub failing_seeds: Vec<u64>,
    /// The report of the first failing seed.
    pub first_failure: Option<SeedReport>,
    /// The requests and faults of all seeds.
    pub faults: FaultCounts,
}

impl SearchSummary {
    /// True when no seed broke a property.
    pub fn is_clean(&self) -> bool {
        self.failing_seeds.is_empty()
    }

    /// Adds one seed's report.
    pub fn add(&mut self, report: SeedReport) {
        self.seeds_run += 1;
        self.faults = self.faults.plus(report.faults);
        if report.violations.is_empty() {
            return;
        }
        for p in Property::ALL {
            let of_p = || report.violations.iter().filter(|v| v.property == p);
            let n = of_p().count() as u64;
            if n > 0 {
                let t = self.by_property.entry(p).or_default();
                t.seeds += 1;
                t.violations += n;
            }
        }
        self.failing_seeds.push(report.seed);
        self.first_failure.get_or_insert(report);
    }
}

impl Default for SearchSummary {
    fn default() -> Self {
        Self {
            seeds_run: 0,
            by_property: Property::ALL
                .into_iter()
                .map(|p| (p, Tally::default()))
                .collect(),
            failing_seeds: Vec::new(),
            first_failure: None,
            faults: FaultCounts::default(),
        }
    }
}

/// Runs every seed of `seeds` with `config`, one after the other.
///
/// ```
/// use leasehold_workbench::sim::seeds::{self, SeedConfig};
///
/// let found = seeds::search(0..3, &SeedConfig::default())?;
/// assert_eq!(found.seeds_run, 3);
/// assert!(found.is_clean(), "{:?}", found.failing_seeds);
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
///
/// # Errors
///
/// The first [`SimError`] of [`run_seed`].
pub fn search(seeds: Range<u64>, config: &SeedConfig) -> Result<SearchSummary, SimError> {
    let mut summary = SearchSummary::default();
    for seed in seeds {
        summary.add(run_seed(seed, config)?);
    }
    Ok(summary)
}

/// The manual page `docs/seeds.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/seeds.md")]
pub struct SeedsDoctests;

/// Serializes a duration as whole milliseconds.
pub(crate) fn serialize_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Serializes an optional duration as whole milliseconds (or `null`).
pub(crate) fn serialize_opt_ms<S: serde::Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => serialize_ms(d, s),
        None => s.serialize_none(),
    }
}
