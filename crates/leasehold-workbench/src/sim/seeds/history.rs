//! What a seeded run recorded, as plain data: the input of the property checks.
//!
//! Every instant is virtual time since the start of the run. The store's clock reads
//! [`STORE_ORIGIN`](crate::sim::STORE_ORIGIN) (the Unix epoch) at that start, so store times
//! (a grant's `acquired_at`, the period windows) are the same numbers. The histories are built by
//! the run as things happen; the tests of the checker build small ones by hand.

use std::time::Duration;

use serde::Serialize;

/// Everything the checks look at.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct History {
    /// The node ids; `node` fields index this.
    pub nodes: Vec<String>,
    /// The locks; `lock` fields index this.
    pub locks: Vec<LockInfo>,
    /// Every action that started, in the order they started.
    pub actions: Vec<ActionSpan>,
    /// Every write an action offered the fenced resource, in order.
    pub writes: Vec<WriteRecord>,
    /// Every grant the store made (including a retried request recognised by its token), in the
    /// order the store made them.
    pub grants: Vec<GrantRecord>,
    /// Every attempt a workload made, in order.
    pub attempts: Vec<AttemptRecord>,
    /// When a node's `run_once_per` task changed its period length (a new release).
    pub period_changes: Vec<PeriodChange>,
    /// From this instant on, no fault acts any more: faults stopped, and everything they left in
    /// flight or held has run out. `AT_LEAST_ONCE` looks at periods that start at or after it.
    #[serde(serialize_with = "super::serialize_ms", rename = "liveness_from_ms")]
    pub liveness_from: Duration,
    /// Workloads start no attempt at or after this instant; `AT_LEAST_ONCE` looks at periods
    /// that end by then.
    #[serde(serialize_with = "super::serialize_ms", rename = "attempts_until_ms")]
    pub attempts_until: Duration,
    /// The end of the run: an action still running then counts as running until it.
    #[serde(serialize_with = "super::serialize_ms", rename = "end_ms")]
    pub end: Duration,
}

/// A lock and how many holders it allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockInfo {
    /// The lock name.
    pub name: String,
    /// `max_leaders` of every elector that uses it.
    pub max_leaders: u32,
}

/// One action, from its first poll to its end (it returned, or its future was dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionSpan {
    /// The node that ran it.
    pub node: usize,
    /// The lock it ran under.
    pub lock: usize,
    /// Its lease's slot.
    pub slot: u32,
    /// Its lease's fence.
    pub fence: u64,
    /// When it started.
    #[serde(serialize_with = "super::serialize_ms", rename = "start_ms")]
    pub start: Duration,
    /// When it ended; `None` if it was still running at the end of the run.
    #[serde(serialize_with = "super::serialize_opt_ms", rename = "end_ms")]
    pub end: Option<Duration>,
    /// For a `run_once_per` action: the period length it claimed and when its lease was granted.
    pub period: Option<PeriodRun>,
}

impl ActionSpan {
    /// When it ended, or `end` (the end of the run) if it was still running.
    pub fn end_or(&self, end: Duration) -> Duration {
        self.end.unwrap_or(end)
    }
}

/// The period claim an action ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeriodRun {
    /// The period length its elector claimed.
    #[serde(serialize_with = "super::serialize_ms", rename = "length_ms")]
    pub length: Duration,
    /// When the store granted the claim (store clock, which is virtual time here).
    #[serde(serialize_with = "super::serialize_ms", rename = "granted_ms")]
    pub granted: Duration,
}

impl PeriodRun {
    /// The start of the window of its own length that contains its grant.
    pub fn window_start(&self) -> Duration {
        window_start(self.granted, self.length)
    }
}

/// The start of the window of `length` that contains `at` (windows start at multiples of
/// `length` from the store clock's origin).
pub fn window_start(at: Duration, length: Duration) -> Duration {
    let len = length.as_nanos().max(1);
    let start = at.as_nanos() - at.as_nanos() % len;
    Duration::from_nanos(u64::try_from(start).unwrap_or(u64::MAX))
}

/// One write offered to the fenced resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteRecord {
    /// When.
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
    /// The writing node.
    pub node: usize,
    /// The lock whose resource it wrote to.
    pub lock: usize,
    /// The writer's slot.
    pub slot: u32,
    /// The writer's fence.
    pub fence: u64,
    /// The writer's `local_deadline()`, read at the write.
    #[serde(serialize_with = "super::serialize_ms", rename = "deadline_ms")]
    pub deadline: Duration,
    /// Whether the resource accepted it.
    pub accepted: bool,
}

/// One grant by the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantRecord {
    /// When.
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
    /// The node it was granted to.
    pub node: usize,
    /// The lock.
    pub lock: usize,
    /// The slot.
    pub slot: u32,
    /// The fence.
    pub fence: u64,
    /// Which holder (token) it was granted to: tokens numbered from 0 in the order they were
    /// first granted a lease.
    pub holder: u32,
    /// True for a `run_once_per` claim (the grant wrote the lock's ledger record).
    pub claim: bool,
}

/// One attempt of a workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptRecord {
    /// When it was made.
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
    /// The node.
    pub node: usize,
    /// The lock.
    pub lock: usize,
    /// The period length claimed (`run_once_per`), or `None` (`run_if_leader`).
    #[serde(serialize_with = "super::serialize_opt_ms", rename = "period_ms")]
    pub period: Option<Duration>,
    /// How it ended.
    pub outcome: AttemptOutcome,
}

/// A node's `run_once_per` task on a lock claims another period length from `at` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeriodChange {
    /// The node.
    pub node: usize,
    /// The lock.
    pub lock: usize,
    /// When it starts claiming the new length.
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The action ran to its end.
    Ran,
    /// The ledger said the period had run.
    AlreadyRan,
    /// The lock stayed held for the whole wait.
    Skipped,
    /// The call failed: a store error, or the lease lost (the action, if it started, was
    /// dropped). The message is the error's.
    Failed(String),
    /// The run ended with the attempt still going.
    Unfinished,
}
