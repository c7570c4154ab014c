//! Why a simulation was refused or failed.

use crate::sim::params::PERIOD_TICKS;

/// Why [`simulate`](crate::sim::simulate) returned no timeline. Every message names the bad
/// parameter, what was given and what is allowed.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides, SimError};
///
/// let err = sim::simulate("contention", &Overrides { action: Some(0), ..Overrides::default() }).unwrap_err();
/// assert!(matches!(err, SimError::OutOfRange { parameter: "action", .. }));
/// assert_eq!(err.to_string(), "`action` must be between 1 and 30 ticks, got 0");
/// assert!(err.is_usage());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The scenario id is not one of [`Scenario::ALL`](crate::sim::Scenario::ALL).
    #[error("unknown scenario `{given}`; expected one of: {expected}")]
    UnknownScenario {
        /// What was asked for.
        given: String,
        /// The scenario ids, comma-separated.
        expected: String,
    },
    /// A parameter was outside its range.
    #[error("`{parameter}` must be between {min} and {max} {unit}, got {value}")]
    OutOfRange {
        /// The parameter's name (`action`, `lease`, `wait`, `slots`, `period`,
        /// `outage_ticks`, `shards` or `nodes`).
        parameter: &'static str,
        /// What was given.
        value: u32,
        /// The smallest allowed value.
        min: u32,
        /// The largest allowed value.
        max: u32,
        /// `ticks`, `slots`, `shards` or `nodes`.
        unit: &'static str,
    },
    /// `min_lease` was longer than the lease.
    #[error("`min_lease` must be between 0 and the lease ({lease} ticks), got {min_lease}")]
    MinLeaseAboveLease {
        /// What was given.
        min_lease: u32,
        /// The lease in effect.
        lease: u32,
    },
    /// More than one slot was asked for outside the group scenario.
    #[error(
        "`slots` must be 1 in the `{scenario}` scenario (only `group` takes 1 to 3 slots), got {slots}"
    )]
    SlotsOutsideGroup {
        /// The scenario.
        scenario: &'static str,
        /// What was given.
        slots: u32,
    },
    /// A period was given for a scenario other than `period`.
    #[error(
        "`period` applies only to the `period` scenario, not to `{scenario}`; got {period} ticks"
    )]
    PeriodOutsidePeriodScenario {
        /// The scenario.
        scenario: &'static str,
        /// What was given.
        period: u32,
    },
    /// The `period` scenario was run with [`Params::period`](crate::sim::Params::period) unset.
    #[error(
        "the `period` scenario needs a `period` between {} and {} ticks",
        PERIOD_TICKS.start(),
        PERIOD_TICKS.end()
    )]
    MissingPeriod,
    /// The store outage does not lie within the run: it must start by the last tick and end
    /// with it at the latest.
    #[error(
        "the store outage must lie within the run's ticks 0 to {max_tick}: `outage_from` {outage_from} with `outage_ticks` {outage_ticks} does not"
    )]
    OutageBeyondRun {
        /// The outage's first tick, as given.
        outage_from: u32,
        /// Its length, as given.
        outage_ticks: u32,
        /// The scenario's last tick.
        max_tick: u32,
    },
    /// `fail_action` named no candidate of the scenario.
    #[error(
        "`fail_action` must name a candidate of the `{scenario}` scenario (one of: {expected}), got `{given}`"
    )]
    UnknownCandidate {
        /// The scenario.
        scenario: &'static str,
        /// What was given.
        given: String,
        /// The scenario's node ids, comma-separated.
        expected: String,
    },
    /// A parameter was given to a scenario it does not apply to: `shards` and `nodes` outside
    /// `partition`, or a single-lock parameter (`action`, `wait`, `min_lease`, `auto_extend`,
    /// `slots`, `period`, `fail_action`, the outage) other than the preset in `partition`.
    #[error(
        "`{parameter}` does not apply to the `{scenario}` scenario (`shards` and `nodes` apply only to `partition`, which takes only `lease`, `shards` and `nodes`)"
    )]
    DoesNotApply {
        /// The parameter.
        parameter: &'static str,
        /// The scenario.
        scenario: &'static str,
    },
    /// The simulation itself failed (its runtime could not start, or the store answered with
    /// an error). Not the caller's fault; report it.
    #[error("the simulation failed: {0}")]
    Failed(String),
}

impl SimError {
    /// True when the input was at fault (HTTP 400, CLI exit 125); false for [`SimError::Failed`].
    ///
    /// ```
    /// use leasehold_workbench::sim::SimError;
    /// assert!(!SimError::Failed("no runtime".into()).is_usage());
    /// ```
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Failed(_))
    }
}
