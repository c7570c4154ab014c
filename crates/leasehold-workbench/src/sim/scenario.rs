//! The five scenarios: who tries when, and their preset parameters.

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

/// A scenario: a fixed cast of candidates, the tick at which each one tries once, how many
/// ticks the timeline covers, and preset [`Params`] that the caller may override.
///
/// | id | candidates: attempt tick | action | lease | wait | auto_extend | slots | max_tick |
/// |---|---|---|---|---|---|---|---|
/// | `contention` | a 0, b 1, c 9 | 8 | 10 | 2 | off | 1 | 22 |
/// | `expiry` | a 0, b 6, c 10 | 12 | 6 | 2 | off | 1 | 24 |
/// | `extension` | a 0, b 1, c 10 | 12 | 6 | 2 | on | 1 | 26 |
/// | `group` | a 0, b 0, c 1, d 9 | 8 | 10 | 2 | off | 2 | 22 |
/// | `fencing` | a 0, b 1, c 9 | 10 | 4 | 4 | off | 1 | 22 |
///
/// `min_lease` is 0 in every preset.
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
    /// A `GroupElector` with N slots (default 2): at most N nodes run at once.
    Group,
    /// node-a's lease runs out mid-action; node-b takes over and writes with a higher fence, so
    /// node-a's final write is rejected by the resource.
    Fencing,
}

impl Scenario {
    /// Every scenario, in display order.
    pub const ALL: [Self; 5] = [
        Self::Contention,
        Self::Expiry,
        Self::Extension,
        Self::Group,
        Self::Fencing,
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
    /// ```
    pub fn preset(self) -> Params {
        let (action, lease, wait, auto_extend, slots) = match self {
            Self::Contention => (8, 10, 2, false, 1),
            Self::Expiry => (12, 6, 2, false, 1),
            Self::Extension => (12, 6, 2, true, 1),
            Self::Group => (8, 10, 2, false, 2),
            Self::Fencing => (10, 4, 4, false, 1),
        };
        Params {
            action,
            lease,
            wait,
            min_lease: 0,
            auto_extend,
            slots,
        }
    }

    /// The candidates' node ids, in display order.
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Expiry.candidates().len(), 3);
    /// ```
    pub fn candidates(self) -> &'static [&'static str] {
        match self {
            Self::Group => FOUR,
            _ => THREE,
        }
    }

    /// The tick at which each candidate (same order) makes its one attempt.
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
        }
    }

    /// The last tick of the timeline (fixed per scenario, whatever the parameters).
    ///
    /// ```
    /// assert_eq!(leasehold_workbench::sim::Scenario::Contention.max_tick(), 22);
    /// ```
    pub fn max_tick(self) -> u32 {
        match self {
            Self::Contention | Self::Group | Self::Fencing => 22,
            Self::Expiry => 24,
            Self::Extension => 26,
        }
    }

    /// True for the scenario that runs a `GroupElector`.
    ///
    /// ```
    /// assert!(leasehold_workbench::sim::Scenario::Group.is_group());
    /// ```
    pub fn is_group(self) -> bool {
        self == Self::Group
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
/// assert_eq!(ids, ["contention", "expiry", "extension", "group", "fencing"]);
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
