//! The seven scenarios: who tries when, and their preset parameters.

use serde::{Deserialize, Serialize};

use crate::sim::error::SimError;
use crate::sim::params::Params;

/// The lock every scenario contends for.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
/// assert_eq!(sim::simulate("group", &Overrides::default())?.lock, sim::LOCK);
/// # Ok::<(), sim::SimError>(())
/// ```
pub const LOCK: &str = "invoice-close";

const THREE: &[&str] = &["node-a", "node-b", "node-c"];
const FOUR: &[&str] = &["node-a", "node-b", "node-c", "node-d"];
const FIVE: &[&str] = &["node-a", "node-b", "node-c", "node-d", "node-e"];

/// The partition set of the `partition` scenario.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
/// assert_eq!(sim::simulate("partition", &Overrides::default())?.lock, sim::PARTITION_SET);
/// # Ok::<(), sim::SimError>(())
/// ```
pub const PARTITION_SET: &str = "tenants";

/// In the `partition` scenario, ticks between one node's join and the next one's, and between
/// the last join, the leave and the crash.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::PARTITION_STEP, 6);
/// ```
pub const PARTITION_STEP: u32 = 6;

/// A scenario: a fixed cast of candidates, the tick at which each one tries (once, or once per
/// period in the `period` scenario), how many ticks the timeline covers, and preset [`Params`]
/// that the caller may override.
///
/// | id | candidates: attempt tick | action | lease | wait | auto_extend | slots | period | max_tick |
/// |---|---|---|---|---|---|---|---|---|
/// | `contention` | a 0, b 1, c 9 | 8 | 10 | 2 | off | 1 | – | 22 |
/// | `expiry` | a 0, b 6, c 10 | 12 | 6 | 2 | off | 1 | – | 24 |
/// | `extension` | a 0, b 1, c 10 | 12 | 6 | 2 | on | 1 | – | 26 |
/// | `group` | a 0, b 0, c 1, d 9 | 8 | 10 | 2 | off | 2 | – | 22 |
/// | `fencing` | a 0, b 1, c 9 | 10 | 4 | 4 | off | 1 | – | 22 |
/// | `period` | a 0, b 3, c 5, then every `period` | 2 | 6 | 2 | off | 1 | 8 | 23 |
/// | `partition` | joins a 0, b 6, c 12 (d 18, e 24); b leaves, then c crashes | – | 6 | – | – | – | – | 36 |
///
/// The `partition` scenario is of another kind: `nodes` (3–5, preset 3) members join the
/// [partition set](leasehold::partition::PartitionSet) [`PARTITION_SET`] of `shards` (4–16,
/// preset 10) shards one after another, every [`PARTITION_STEP`] ticks; [`PARTITION_STEP`] ticks
/// after the last join node-b leaves gracefully, and [`PARTITION_STEP`] ticks later node-c
/// crashes (its store calls stop reaching the store, its work stops). Its lease is 3–6 ticks
/// (preset 6); it has no action, wait, minimum lease, slots, period, failing action or outage
/// ([`Params::validate`] refuses them). Its last tick depends on the node count
/// ([`last_tick`](Scenario::last_tick)).
///
/// `min_lease` is 0 in every preset, no action fails
/// ([`fail_action`](Params::fail_action)) and the store never fails
/// ([`outage_ticks`](Params::outage_ticks)); the lessons set them. In `period` each candidate calls
/// [`run_once_per`](leasehold::Elector::run_once_per) with periods of `period` ticks (6–12,
/// [`PERIOD_TICKS`](crate::sim::PERIOD_TICKS)); tick 0 is the start of period 0, so period `k`
/// starts at tick `k × period`.
///
/// ```
/// use leasehold_workbench::sim::Scenario;
///
/// let s = Scenario::parse("group")?;
/// assert_eq!(s, Scenario::Group);
/// assert_eq!(s.candidates(), ["node-a", "node-b", "node-c", "node-d"]);
/// assert_eq!(s.attempt_ticks(), [0, 0, 1, 9]);
/// assert!(Scenario::parse("nope").is_err());
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// node-b waits while node-a holds the lock and skips; node-c comes after node-a released.
    Contention,
    /// node-a's action outlives its lease: node-b takes over, node-a goes stale, its late write
    /// and its release are rejected; then the same happens to node-b.
    Expiry,
    /// The watchdog renews node-a's lease through a long action; node-b skips; node-c is woken
    /// by node-a's release and runs next.
    Extension,
    /// An `Elector` with `max_leaders` N (default 2): at most N nodes run at once.
    Group,
    /// node-a's lease runs out mid-action; node-b takes over and writes with a higher fence, so
    /// node-a's final write is rejected by the resource.
    Fencing,
    /// Three replicas of a periodic job on skewed timers each try every period through
    /// [`run_once_per`](leasehold::Elector::run_once_per): the first to fire runs, and the
    /// period ledger answers the late ones "already ran" while the lock is free.
    Period,
    /// Nodes join a [partition set](leasehold::partition::PartitionSet) one after another and
    /// the shards spread over them; then one node leaves (its shards are handed over at once)
    /// and one crashes (its shards move only after its leases ended).
    Partition,
}

impl Scenario {
    /// Every scenario, in display order.
    pub const ALL: [Self; 7] = [
        Self::Contention,
        Self::Expiry,
        Self::Extension,
        Self::Group,
        Self::Fencing,
        Self::Period,
        Self::Partition,
    ];

    /// The scenario's id, as used in URLs and on the command line.
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Fencing.id(), "fencing");
    /// ```
    pub fn id(self) -> &'static str {
        match self {
            Self::Contention => "contention",
            Self::Expiry => "expiry",
            Self::Extension => "extension",
            Self::Group => "group",
            Self::Fencing => "fencing",
            Self::Period => "period",
            Self::Partition => "partition",
        }
    }

    /// The scenario with this id.
    ///
    /// ```
    /// use leasehold_workbench::sim::{Scenario, SimError};
    /// assert!(matches!(Scenario::parse("expiry"), Ok(Scenario::Expiry)));
    /// assert!(matches!(Scenario::parse("Expiry"), Err(SimError::UnknownScenario { .. })));
    /// ```
    pub fn parse(id: &str) -> Result<Self, SimError> {
        Self::ALL
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or_else(|| SimError::UnknownScenario {
                given: id.to_owned(),
                expected: Self::ALL.map(Self::id).join(", "),
            })
    }

    /// The preset parameters.
    ///
    /// ```
    /// use leasehold_workbench::sim::Scenario;
    /// assert!(Scenario::Extension.preset().auto_extend);
    /// assert_eq!(Scenario::Group.preset().slots, 2);
    /// assert_eq!(Scenario::Period.preset().period, Some(8));
    /// let shards = Scenario::Partition.preset();
    /// assert_eq!((shards.shards, shards.nodes, shards.lease), (Some(10), Some(3), 6));
    /// ```
    pub fn preset(self) -> Params {
        if self.is_partition() {
            return Params {
                action: 0,
                lease: 6,
                wait: 0,
                min_lease: 0,
                auto_extend: true,
                slots: 1,
                period: None,
                fail_action: None,
                outage_from: 0,
                outage_ticks: 0,
                shards: Some(10),
                nodes: Some(3),
            };
        }
        let (action, lease, wait, auto_extend, slots) = match self {
            Self::Contention => (8, 10, 2, false, 1),
            Self::Expiry => (12, 6, 2, false, 1),
            Self::Extension => (12, 6, 2, true, 1),
            Self::Group => (8, 10, 2, false, 2),
            Self::Fencing => (10, 4, 4, false, 1),
            Self::Period | Self::Partition => (2, 6, 2, false, 1),
        };
        Params {
            action,
            lease,
            wait,
            min_lease: 0,
            auto_extend,
            slots,
            period: self.is_period().then_some(8),
            fail_action: None,
            outage_from: 0,
            outage_ticks: 0,
            shards: None,
            nodes: None,
        }
    }

    /// The candidates' node ids, in display order (in `partition`, every node that may join;
    /// a run has the first [`nodes`](Params::nodes) of them).
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Expiry.candidates().len(), 3);
    /// assert_eq!(leasehold_workbench::sim::Scenario::Partition.candidates().len(), 5);
    /// ```
    pub fn candidates(self) -> &'static [&'static str] {
        match self {
            Self::Group => FOUR,
            Self::Partition => FIVE,
            _ => THREE,
        }
    }

    /// The letter of the candidate named by `given`, its node id (`node-c`) or the letter alone
    /// (`c`): how [`Params::fail_action`] names a candidate.
    ///
    /// ```
    /// use leasehold_workbench::sim::{Scenario, SimError};
    ///
    /// assert_eq!(Scenario::Contention.candidate_letter("node-c"), Ok('c'));
    /// assert_eq!(Scenario::Contention.candidate_letter("b"), Ok('b'));
    /// assert!(matches!(Scenario::Contention.candidate_letter("node-d"), Err(SimError::UnknownCandidate { .. })));
    /// assert_eq!(Scenario::Group.candidate_letter("d"), Ok('d'));
    /// ```
    pub fn candidate_letter(self, given: &str) -> Result<char, SimError> {
        let trimmed = given.trim();
        let letter = trimmed.strip_prefix("node-").unwrap_or(trimmed);
        self.candidates()
            .iter()
            .filter_map(|id| id.strip_prefix("node-"))
            .find(|l| *l == letter)
            .and_then(|l| l.chars().next())
            .ok_or_else(|| SimError::UnknownCandidate {
                scenario: self.id(),
                given: given.to_owned(),
                expected: self.candidates().join(", "),
            })
    }

    /// The tick at which each candidate (same order) makes its one attempt; in the `period`
    /// scenario, its first one (see [`attempts`](Self::attempts)).
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Contention.attempt_ticks(), [0, 1, 9]);
    /// ```
    pub fn attempt_ticks(self) -> &'static [u32] {
        match self {
            Self::Contention | Self::Fencing => &[0, 1, 9],
            Self::Expiry => &[0, 6, 10],
            Self::Extension => &[0, 1, 10],
            Self::Group => &[0, 0, 1, 9],
            Self::Period => &[0, 3, 5],
            Self::Partition => &[0, 6, 12, 18, 24],
        }
    }

    /// Every tick at which each candidate (same order) attempts, up to
    /// [`max_tick`](Self::max_tick): its [attempt tick](Self::attempt_ticks) alone, or, when
    /// `params` has a [`period`](Params::period), that tick and every `period` ticks after it
    /// (each replica's timer fires once per period, a fixed skew after node-a's).
    ///
    /// ```
    /// use leasehold_workbench::sim::Scenario;
    ///
    /// let p = Scenario::Period;
    /// assert_eq!(p.attempts(&p.preset()), [vec![0, 8, 16], vec![3, 11, 19], vec![5, 13, 21]]);
    /// let c = Scenario::Contention;
    /// assert_eq!(c.attempts(&c.preset()), [vec![0], vec![1], vec![9]]);
    /// ```
    pub fn attempts(self, params: &Params) -> Vec<Vec<u32>> {
        let every = params.period.and_then(|p| usize::try_from(p).ok());
        self.attempt_ticks()
            .iter()
            .map(|&first| match every {
                Some(every) if every > 0 => (first..=self.max_tick()).step_by(every).collect(),
                _ => vec![first],
            })
            .collect()
    }

    /// The last tick of the timeline with the preset parameters (fixed per scenario, whatever
    /// the parameters, except in `partition`: see [`last_tick`](Self::last_tick)).
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Contention.max_tick(), 22);
    /// assert_eq!(leasehold_workbench::sim::Scenario::Partition.max_tick(), 36);
    /// ```
    pub fn max_tick(self) -> u32 {
        match self {
            Self::Contention | Self::Group | Self::Fencing => 22,
            Self::Period => 23,
            Self::Expiry => 24,
            Self::Extension => 26,
            Self::Partition => self.last_tick(&self.preset()),
        }
    }

    /// The last tick of the timeline with `params`: [`max_tick`](Self::max_tick), except in
    /// `partition`, where the run goes on for 2 × [`PARTITION_STEP`] ticks after the crash
    /// (enough for the crashed node's leases to end and its shards to be taken over): the
    /// crash is at ([`nodes`](Params::nodes) + 1) × [`PARTITION_STEP`].
    ///
    /// ```
    /// use leasehold_workbench::sim::Scenario;
    /// let mut p = Scenario::Partition.preset();
    /// p.nodes = Some(5);
    /// assert_eq!(Scenario::Partition.last_tick(&p), 48);
    /// assert_eq!(Scenario::Group.last_tick(&Scenario::Group.preset()), 22);
    /// ```
    pub fn last_tick(self, params: &Params) -> u32 {
        if self.is_partition() {
            let nodes = params.nodes.unwrap_or(3);
            return nodes.saturating_add(3).saturating_mul(PARTITION_STEP);
        }
        self.max_tick()
    }

    /// True for the scenario whose elector has more than one slot (`max_leaders`).
    ///
    /// ```
    /// assert!(leasehold_workbench::sim::Scenario::Group.is_group());
    /// ```
    pub fn is_group(self) -> bool {
        self == Self::Group
    }

    /// True for the scenario whose candidates claim periods of the ledger
    /// ([`run_once_per`](leasehold::Elector::run_once_per)) and attempt once per period.
    ///
    /// ```
    /// assert!(leasehold_workbench::sim::Scenario::Period.is_period());
    /// ```
    pub fn is_period(self) -> bool {
        self == Self::Period
    }

    /// True for the scenario whose nodes join a partition set rather than contend for one lock.
    ///
    /// ```
    /// assert!(leasehold_workbench::sim::Scenario::Partition.is_partition());
    /// ```
    pub fn is_partition(self) -> bool {
        self == Self::Partition
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A scenario as `/api/scenarios` lists it: its id and preset.
///
/// ```
/// let list = leasehold_workbench::sim::scenarios();
/// assert_eq!(list[0].id, "contention");
/// assert_eq!(serde_json::to_value(&list[0])?["preset"]["lease"], 10);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// The scenario id.
    pub id: String,
    /// Its preset parameters.
    pub preset: Params,
}

/// Every scenario with its preset, in display order (what `GET /api/scenarios` returns).
///
/// ```
/// let ids: Vec<String> = leasehold_workbench::sim::scenarios().into_iter().map(|s| s.id).collect();
/// assert_eq!(ids, ["contention", "expiry", "extension", "group", "fencing", "period", "partition"]);
/// ```
pub fn scenarios() -> Vec<ScenarioInfo> {
    Scenario::ALL
        .iter()
        .map(|s| ScenarioInfo {
            id: s.id().to_owned(),
            preset: s.preset(),
        })
        .collect()
}
