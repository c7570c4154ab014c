//! Lease timelines computed by the real electors on virtual time.
//!
//! [`simulate`] runs one [`Scenario`]: a fresh current-thread tokio runtime with paused time, one
//! [`MemoryStore`](leasehold::MemoryStore) whose clock reads [`STORE_ORIGIN`] at tick 0, and one
//! [`Elector`](leasehold::Elector) per candidate (with `max_leaders` slots in the group scenario),
//! each with its own `node_id`. Nothing about leases is modelled here: the core decides who is elected, when
//! the watchdog renews, when a lease is reported lost and what a release does; the store decides
//! expiry and fences. The simulation only schedules the attempts and records what happened.
//!
//! * **Time.** One tick is [`TICK`] (1 s) of virtual time. Tick `k` covers the virtual interval
//!   `(k s, k+1 s]` after the start; frame `k` is the state at its end. Each candidate calls
//!   `run_if_leader` once, at its scenario's attempt tick plus `(i+1)` ms for the `i`-th candidate
//!   (so attempts due in the same tick run in candidate order). In the `period` scenario it calls
//!   [`run_once_per`](leasehold::Elector::run_once_per) instead, at its first attempt tick and
//!   every `period` ticks after it (late if its previous run is still going); since the store's
//!   clock starts at the Unix epoch, period `k` of the ledger starts exactly at tick
//!   `k × period`. Waiting candidates retry every
//!   50 ms of virtual time (no jitter) and are woken at once by a release (the store's release
//!   signal); an expiry is noticed at the next retry. The action writes to a fenced resource,
//!   sleeps `action` ticks and writes again; then the core releases the lease (or shortens it to
//!   the minimum lease).
//! * **Failures.** The node named by [`Params::fail_action`] calls
//!   [`run`](leasehold::Elector::run) instead, with an action that returns an error where the
//!   others make their last write: the elector releases the lease as after a success and reports
//!   [`Outcome::ActionFailed`](leasehold::Outcome::ActionFailed), journalled as `fail` /
//!   `action_failed`. During the [store outage](Params::outage_ticks) every write a node sends to
//!   the store is answered with a transient error; the elector retries within the wait, and a
//!   run whose last attempt failed returns `Err` (a store error), journalled as `fail` /
//!   `store_error` — never as a skip.
//! * **Recording.** A pass-through wrapper around the store journals the store's answers
//!   (grants, contended first attempts, claims the period ledger refused, renewals, releases —
//!   including refused ones); each
//!   elector's event stream ([`subscribe`](leasehold::Elector::subscribe)) gives `lost`; the run
//!   outcomes give `skip` and the end of each run; store-side expiries are added at the instant
//!   the lease ended. At every tick boundary the driver reads the lock's
//!   [`state`](leasehold::Elector::state) for the frame.
//! * **Partition.** The `partition` scenario runs
//!   [`PartitionSet`](leasehold::partition::PartitionSet) members instead of single
//!   acquisitions: nodes join one after another, one leaves, one crashes; its frames show every
//!   shard ([`Frame::shards`]) and the timeline checks every shard's tenures
//!   ([`Timeline::partition`]). See [`Scenario::Partition`].
//! * **Order.** Events are ordered by virtual instant; within one instant an expiry comes first,
//!   then everything else in the order it happened. The runtime has one thread and no source of
//!   randomness reaches the outcome (tokens are shown as labels such as `a·1`), so the same
//!   input always gives the same, byte-identical JSON.
//!
//! ```
//! use leasehold_workbench::sim::{self, Overrides};
//!
//! let t = sim::simulate("expiry", &Overrides::default())?;
//! let rows: Vec<_> = t.events.iter()
//!     .filter(|e| e.candidate == "node-a")
//!     .map(|e| (e.tick, e.operation.as_str(), e.outcome.as_str()))
//!     .collect();
//! assert_eq!(rows, [
//!     (0, "acquire", "elected"),
//!     (0, "write", "accepted"),
//!     (5, "lost", "deadline_passed"),
//!     (6, "expire", "expired"),
//!     (12, "write", "rejected_fence"),
//!     (12, "release", "rejected_stale"),
//! ]);
//! # Ok::<(), sim::SimError>(())
//! ```

mod clock;
mod error;
mod journal;
mod outage;
mod params;
mod partition;
mod recorder;
mod resource;
mod run;
mod scenario;
pub mod seeds;
mod timeline;

pub use clock::{STORE_ORIGIN, TICK};
pub use error::SimError;
pub use params::{
    ACTION_TICKS, GROUP_SLOTS, LEASE_TICKS, OUTAGE_TICKS, Overrides, PARTITION_LEASE_TICKS,
    PARTITION_NODES, PERIOD_TICKS, Params, SHARDS, WAIT_TICKS,
};
pub use scenario::{LOCK, PARTITION_SET, PARTITION_STEP, Scenario, ScenarioInfo, scenarios};
pub use timeline::{
    Frame, Holder, LedgerEntry, NodeState, Operation, Outcome, PartitionCheck, Resource,
    ShardState, ShardTenure, SlotResource, Status, Timeline, TimelineEvent,
};

/// Runs scenario `scenario` (an id such as `"contention"`) with its preset parameters, replaced
/// by any given in `overrides`, and returns the timeline.
///
/// Blocking (it drives its own runtime for a few milliseconds); from async code, call it from
/// `spawn_blocking`. Called on a runtime thread anyway, it runs on a helper thread instead of
/// panicking. Unknown scenarios and out-of-range parameters give a [`SimError`] that names the
/// parameter and its allowed range.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// // With a minimum lease as long as the lease, node-a's lock outlasts its action, and node-c,
/// // which tries at tick 9, must wait for it to expire at tick 10.
/// let held = Overrides { min_lease: Some(10), ..Overrides::default() };
/// let t = sim::simulate("contention", &held)?;
/// let c = t.events.iter().find(|e| e.candidate == "node-c" && e.operation == "acquire");
/// assert_eq!(c.map(|e| e.tick), Some(10));
///
/// assert!(sim::simulate("contention", &Overrides { wait: Some(21), ..Overrides::default() }).is_err());
/// # Ok::<(), sim::SimError>(())
/// ```
pub fn simulate(scenario: &str, overrides: &Overrides) -> Result<Timeline, SimError> {
    let scenario = Scenario::parse(scenario)?;
    let params = overrides.apply(scenario)?;
    run::run(scenario, params)
}
