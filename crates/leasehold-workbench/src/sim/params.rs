//! The parameters of a run, their limits and their validation.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::sim::error::SimError;
use crate::sim::scenario::Scenario;

/// Allowed action durations, in ticks.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::ACTION_TICKS, 1..=30);
/// ```
pub const ACTION_TICKS: RangeInclusive<u32> = 1..=30;
/// Allowed leases, in ticks (`min_lease` may be anything from 0 to the lease).
///
/// ```
/// assert_eq!(leasehold_workbench::sim::LEASE_TICKS, 2..=30);
/// ```
pub const LEASE_TICKS: RangeInclusive<u32> = 2..=30;
/// Allowed waits, in ticks.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::WAIT_TICKS, 0..=20);
/// ```
pub const WAIT_TICKS: RangeInclusive<u32> = 0..=20;
/// Allowed slot counts in the group scenario (every other scenario has exactly one slot).
///
/// ```
/// assert_eq!(leasehold_workbench::sim::GROUP_SLOTS, 1..=3);
/// ```
pub const GROUP_SLOTS: RangeInclusive<u32> = 1..=3;
/// Allowed period lengths in the `period` scenario, in ticks (no other scenario has a period).
///
/// The replicas' timers fire 3 and 5 ticks after node-a's, so from 6 ticks on every replica
/// tries within the period it is late for; up to 12, the 24 ticks shown hold at least two
/// periods.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::PERIOD_TICKS, 6..=12);
/// ```
pub const PERIOD_TICKS: RangeInclusive<u32> = 6..=12;
/// Allowed lengths of a store outage, in ticks (0 = the store never fails).
///
/// ```
/// assert_eq!(leasehold_workbench::sim::OUTAGE_TICKS, 0..=12);
/// ```
pub const OUTAGE_TICKS: RangeInclusive<u32> = 0..=12;

/// Allowed shard counts of the partition set in the `partition` scenario.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::SHARDS, 4..=16);
/// ```
pub const SHARDS: RangeInclusive<u32> = 4..=16;
/// Allowed node counts in the `partition` scenario: node-a … node-c, up to node-e (node-b
/// always leaves and node-c always crashes).
///
/// ```
/// assert_eq!(leasehold_workbench::sim::PARTITION_NODES, 3..=5);
/// ```
pub const PARTITION_NODES: RangeInclusive<u32> = 3..=5;
/// Allowed leases in the `partition` scenario, in ticks: every change (a join, the leave, the
/// crash) must settle within the [`PARTITION_STEP`](crate::sim::PARTITION_STEP) ticks before the
/// next one; a crash takes about a lease and a third to settle.
///
/// ```
/// assert_eq!(leasehold_workbench::sim::PARTITION_LEASE_TICKS, 3..=6);
/// ```
pub const PARTITION_LEASE_TICKS: RangeInclusive<u32> = 3..=6;

/// The parameters of a run. Durations are in ticks (see [`TICK`](crate::sim::TICK)).
///
/// ```
/// use leasehold_workbench::sim::Scenario;
///
/// let p = Scenario::Contention.preset();
/// assert_eq!((p.action, p.lease, p.wait, p.min_lease, p.auto_extend, p.slots), (8, 10, 2, 0, false, 1));
/// assert_eq!(p.period, None);
/// assert_eq!(Scenario::Period.preset().period, Some(8));
/// assert_eq!((p.fail_action, p.outage_from, p.outage_ticks), (None, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Params {
    /// How long each elected node's action runs (1–30).
    pub action: u32,
    /// The lease each acquisition asks for (2–30).
    pub lease: u32,
    /// How long a node keeps trying before it skips (0–20; 0 = one attempt).
    pub wait: u32,
    /// The minimum lease: the lock stays held at least this long after acquisition, also when
    /// the action ends earlier (0–lease).
    pub min_lease: u32,
    /// Whether the watchdog renews the lease (every lease/3) while the action runs.
    pub auto_extend: bool,
    /// How many nodes may hold the lock at once: 1, or 1–3 in the group scenario.
    pub slots: u32,
    /// The length of a period of the lock's ledger: set (6–12) in the `period` scenario, where
    /// every replica attempts once per period; `None` in every other scenario, and then absent
    /// from the JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<u32>,
    /// The candidate whose every action fails, by the letter of its node id (`'c'` for
    /// `node-c`): its action writes, works for `action` ticks and then returns an error instead
    /// of its last write, so the elector reports the run as failed
    /// ([`Outcome::ActionFailed`](leasehold::Outcome::ActionFailed); that node calls
    /// [`run`](leasehold::Elector::run) rather than `run_if_leader`). `None` in every preset, and
    /// then absent from the JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_action: Option<char>,
    /// The first tick of the store outage (see [`outage_ticks`](Self::outage_ticks)); 0 and
    /// absent from the JSON when there is none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_from: u32,
    /// How many ticks the store is unreachable, from [`outage_from`](Self::outage_from) on
    /// (0–12, 0 = never): every acquisition, extension and release the nodes send meanwhile is
    /// answered with a transient store error and not applied. 0 in every preset, and then absent
    /// from the JSON.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_ticks: u32,
    /// The partition set's shard count (4–16, preset 10): set in the `partition` scenario only,
    /// and then present in the JSON. In that scenario `action`, `wait` and `min_lease` are 0,
    /// `auto_extend` is true (shard leases are always renewed) and `slots` is 1, all unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// How many nodes join the partition set (3–5, preset 3): set in the `partition`
    /// scenario only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
}

/// Takes a reference, as `skip_serializing_if` passes it.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Values that replace a scenario's preset; `None` keeps the preset's value.
///
/// ```
/// use leasehold_workbench::sim::{Overrides, Scenario};
///
/// let o = Overrides { lease: Some(4), ..Overrides::default() };
/// let p = o.apply(Scenario::Contention)?;
/// assert_eq!((p.action, p.lease), (8, 4));
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Overrides {
    /// Replaces [`Params::action`].
    pub action: Option<u32>,
    /// Replaces [`Params::lease`].
    pub lease: Option<u32>,
    /// Replaces [`Params::wait`].
    pub wait: Option<u32>,
    /// Replaces [`Params::min_lease`].
    pub min_lease: Option<u32>,
    /// Replaces [`Params::auto_extend`].
    pub auto_extend: Option<bool>,
    /// Replaces [`Params::slots`].
    pub slots: Option<u32>,
    /// Replaces [`Params::period`] (the `period` scenario only).
    pub period: Option<u32>,
    /// Replaces [`Params::fail_action`] (a candidate's letter; see
    /// [`Scenario::candidate_letter`](crate::sim::Scenario::candidate_letter)).
    pub fail_action: Option<char>,
    /// Replaces [`Params::outage_from`].
    pub outage_from: Option<u32>,
    /// Replaces [`Params::outage_ticks`].
    pub outage_ticks: Option<u32>,
    /// Replaces [`Params::shards`] (the `partition` scenario only).
    pub shards: Option<u32>,
    /// Replaces [`Params::nodes`] (the `partition` scenario only).
    pub nodes: Option<u32>,
}

impl Overrides {
    /// The scenario's preset with these values applied, validated (see [`Params::validate`]).
    ///
    /// ```
    /// use leasehold_workbench::sim::{Overrides, Scenario, SimError};
    ///
    /// let o = Overrides { min_lease: Some(11), ..Overrides::default() };
    /// assert_eq!(o.apply(Scenario::Contention), Err(SimError::MinLeaseAboveLease { min_lease: 11, lease: 10 }));
    /// ```
    pub fn apply(&self, scenario: Scenario) -> Result<Params, SimError> {
        let preset = scenario.preset();
        let params = Params {
            action: self.action.unwrap_or(preset.action),
            lease: self.lease.unwrap_or(preset.lease),
            wait: self.wait.unwrap_or(preset.wait),
            min_lease: self.min_lease.unwrap_or(preset.min_lease),
            auto_extend: self.auto_extend.unwrap_or(preset.auto_extend),
            slots: self.slots.unwrap_or(preset.slots),
            period: self.period.or(preset.period),
            fail_action: self.fail_action.or(preset.fail_action),
            outage_from: self.outage_from.unwrap_or(preset.outage_from),
            outage_ticks: self.outage_ticks.unwrap_or(preset.outage_ticks),
            shards: self.shards.or(preset.shards),
            nodes: self.nodes.or(preset.nodes),
        };
        params.validate(scenario)?;
        Ok(params)
    }
}

impl Params {
    /// Checks every limit, in the order action, lease, wait, min_lease, slots, period,
    /// outage_ticks, the outage's place in the run, fail_action, and names the first parameter
    /// that is out of range.
    ///
    /// ```
    /// use leasehold_workbench::sim::{Scenario, SimError};
    ///
    /// let mut p = Scenario::Contention.preset();
    /// p.slots = 2;
    /// assert!(matches!(p.validate(Scenario::Contention), Err(SimError::SlotsOutsideGroup { .. })));
    /// assert!(p.validate(Scenario::Group).is_ok());
    ///
    /// let mut p = Scenario::Contention.preset();
    /// p.period = Some(8);
    /// assert!(matches!(p.validate(Scenario::Contention), Err(SimError::PeriodOutsidePeriodScenario { .. })));
    /// assert!(p.validate(Scenario::Period).is_ok());
    /// p.period = None;
    /// assert_eq!(p.validate(Scenario::Period), Err(SimError::MissingPeriod));
    ///
    /// // An outage must end by the run's last tick; a failing action needs a candidate.
    /// let mut p = Scenario::Contention.preset();
    /// (p.outage_from, p.outage_ticks) = (20, 3);
    /// assert!(p.validate(Scenario::Contention).is_ok());
    /// p.outage_ticks = 4;
    /// assert!(matches!(p.validate(Scenario::Contention), Err(SimError::OutageBeyondRun { max_tick: 22, .. })));
    /// let mut p = Scenario::Contention.preset();
    /// p.fail_action = Some('d');
    /// assert!(matches!(p.validate(Scenario::Contention), Err(SimError::UnknownCandidate { .. })));
    /// assert!(p.validate(Scenario::Group).is_ok());
    ///
    /// // Shards and nodes belong to the partition scenario; wait, action and the rest do not.
    /// let mut p = Scenario::Contention.preset();
    /// p.shards = Some(8);
    /// assert!(matches!(p.validate(Scenario::Contention), Err(SimError::DoesNotApply { parameter: "shards", .. })));
    /// let mut p = Scenario::Partition.preset();
    /// p.wait = 2;
    /// assert!(matches!(p.validate(Scenario::Partition), Err(SimError::DoesNotApply { parameter: "wait", .. })));
    /// p.wait = 0;
    /// p.shards = Some(17);
    /// assert!(matches!(p.validate(Scenario::Partition), Err(SimError::OutOfRange { parameter: "shards", .. })));
    /// ```
    pub fn validate(&self, scenario: Scenario) -> Result<(), SimError> {
        if scenario.is_partition() {
            return self.validate_partition();
        }
        for (parameter, given) in [("shards", self.shards), ("nodes", self.nodes)] {
            if given.is_some() {
                return Err(SimError::DoesNotApply {
                    parameter,
                    scenario: scenario.id(),
                });
            }
        }
        within("action", self.action, &ACTION_TICKS, "ticks")?;
        within("lease", self.lease, &LEASE_TICKS, "ticks")?;
        within("wait", self.wait, &WAIT_TICKS, "ticks")?;
        if self.min_lease > self.lease {
            return Err(SimError::MinLeaseAboveLease {
                min_lease: self.min_lease,
                lease: self.lease,
            });
        }
        if scenario.is_group() {
            within("slots", self.slots, &GROUP_SLOTS, "slots")?;
        } else if self.slots != 1 {
            return Err(SimError::SlotsOutsideGroup {
                scenario: scenario.id(),
                slots: self.slots,
            });
        }
        match (scenario.is_period(), self.period) {
            (true, Some(period)) => within("period", period, &PERIOD_TICKS, "ticks")?,
            (true, None) => return Err(SimError::MissingPeriod),
            (false, Some(period)) => {
                return Err(SimError::PeriodOutsidePeriodScenario {
                    scenario: scenario.id(),
                    period,
                });
            }
            (false, None) => {}
        }
        within("outage_ticks", self.outage_ticks, &OUTAGE_TICKS, "ticks")?;
        let last = scenario.max_tick();
        if self.outage_from > last || self.outage_from.saturating_add(self.outage_ticks) > last + 1
        {
            return Err(SimError::OutageBeyondRun {
                outage_from: self.outage_from,
                outage_ticks: self.outage_ticks,
                max_tick: last,
            });
        }
        if let Some(letter) = self.fail_action {
            scenario.candidate_letter(&letter.to_string())?;
        }
        Ok(())
    }

    /// The `partition` scenario's checks: the lease, the shard and node counts in range, and
    /// none of the single-lock parameters changed from the preset.
    fn validate_partition(&self) -> Result<(), SimError> {
        let scenario = Scenario::Partition;
        let preset = scenario.preset();
        within("lease", self.lease, &PARTITION_LEASE_TICKS, "ticks")?;
        let shards = self.shards.or(preset.shards).unwrap_or(0);
        within("shards", shards, &SHARDS, "shards")?;
        let nodes = self.nodes.or(preset.nodes).unwrap_or(0);
        within("nodes", nodes, &PARTITION_NODES, "nodes")?;
        let unused = [
            ("action", self.action != preset.action),
            ("wait", self.wait != preset.wait),
            ("min_lease", self.min_lease != preset.min_lease),
            ("auto_extend", self.auto_extend != preset.auto_extend),
            ("slots", self.slots != preset.slots),
            ("period", self.period.is_some()),
            ("fail_action", self.fail_action.is_some()),
            ("outage_from", self.outage_from != 0),
            ("outage_ticks", self.outage_ticks != 0),
        ];
        match unused.into_iter().find(|(_, changed)| *changed) {
            Some((parameter, _)) => Err(SimError::DoesNotApply {
                parameter,
                scenario: scenario.id(),
            }),
            None => Ok(()),
        }
    }
}

fn within(
    parameter: &'static str,
    value: u32,
    range: &RangeInclusive<u32>,
    unit: &'static str,
) -> Result<(), SimError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(SimError::OutOfRange {
            parameter,
            value,
            min: *range.start(),
            max: *range.end(),
            unit,
        })
    }
}
