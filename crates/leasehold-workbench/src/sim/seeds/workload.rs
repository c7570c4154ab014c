//! What a seed makes the electors do: which nodes, which locks, which tasks on them.
//!
//! The plan is drawn from the seed's stream 0 before anything runs; each task then draws its
//! action lengths and gaps from a stream of its own while it runs, so the plan and every task's
//! draws are independent of how the tasks interleave.

use std::time::Duration;

use serde::Serialize;

use crate::sim::seeds::rng::SimRng;

/// The period lengths a `run_once_per` task chooses from.
pub(crate) const PERIODS: [Duration; 4] = [
    Duration::from_secs(20),
    Duration::from_secs(30),
    Duration::from_secs(40),
    Duration::from_secs(60),
];

/// The waits a `run_if_leader` task chooses from (0 is the library's default).
pub(crate) const WAITS: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_secs(2),
    Duration::from_secs(20),
];

/// A seed's workload, as the trace shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// The node ids (`node-a`, …), one elector each.
    pub nodes: Vec<String>,
    /// The locks.
    pub locks: Vec<LockPlan>,
    /// The tasks: each runs one node's attempts on one lock, one after the other.
    pub tasks: Vec<TaskPlan>,
}

/// One lock and the kind of work done under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockPlan {
    /// The lock name.
    pub name: String,
    /// `max_leaders` of the electors using it (1 for `run_once_per`).
    pub max_leaders: u32,
    /// `run_if_leader` or `run_once_per`.
    pub kind: LockKind,
    /// The longest action a task on it runs.
    #[serde(serialize_with = "super::serialize_ms", rename = "longest_action_ms")]
    pub longest_action: Duration,
}

/// The call made under a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// [`Elector::run_if_leader`](leasehold::Elector::run_if_leader), again and again.
    RunIfLeader,
    /// [`Elector::run_once_per`](leasehold::Elector::run_once_per), in every period.
    RunOncePer,
}

/// One node's work on one lock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskPlan {
    /// The node (index into [`Workload::nodes`]).
    pub node: usize,
    /// The lock (index into [`Workload::locks`]).
    pub lock: usize,
    /// The elector's `wait` for this lock.
    #[serde(serialize_with = "super::serialize_ms", rename = "wait_ms")]
    pub wait: Duration,
    /// `run_once_per`: the period length it starts with.
    #[serde(serialize_with = "super::serialize_opt_ms", rename = "period_ms")]
    pub period: Option<Duration>,
    /// `run_once_per`: the period length it switches to (a new release), and when.
    pub switch: Option<PeriodSwitch>,
    /// `run_once_per`: how long after a period's start the task makes its attempt.
    #[serde(serialize_with = "super::serialize_ms", rename = "offset_ms")]
    pub offset: Duration,
}

/// A change of period length between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeriodSwitch {
    /// When the task starts claiming the new length.
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
    /// The new length.
    #[serde(serialize_with = "super::serialize_ms", rename = "to_ms")]
    pub to: Duration,
}

impl Workload {
    /// The workload of `seed`: 2–4 nodes, 1–2 locks, each used by at least two nodes, each lock
    /// `run_if_leader` (with `max_leaders` 1 or 2) or `run_once_per`. Switches happen before
    /// `attempts_until`.
    pub(crate) fn plan(seed: u64, lease: Duration, attempts_until: Duration) -> Self {
        let mut rng = SimRng::new(seed, 0);
        let n_nodes = usize::try_from(rng.between(2, 4)).unwrap_or(2);
        let nodes: Vec<String> = (0..n_nodes)
            .map(|i| {
                let letter = char::from(b'a' + u8::try_from(i).unwrap_or(0));
                format!("node-{letter}")
            })
            .collect();
        let n_locks = usize::try_from(rng.between(1, 2)).unwrap_or(1);
        let mut locks = Vec::new();
        let mut tasks = Vec::new();
        for l in 0..n_locks {
            let kind = if rng.chance(0.5) {
                LockKind::RunIfLeader
            } else {
                LockKind::RunOncePer
            };
            // Who uses it: at least two nodes, a random subset of them.
            let mut users: Vec<usize> = (0..n_nodes).filter(|_| rng.chance(0.7)).collect();
            let mut next = usize::try_from(rng.below(n_nodes as u64)).unwrap_or(0);
            while users.len() < 2 {
                if !users.contains(&next) {
                    users.push(next);
                }
                next = (next + 1) % n_nodes;
            }
            users.sort_unstable();
            let (max_leaders, longest_action) = match kind {
                LockKind::RunIfLeader => {
                    let max = if users.len() > 2 && rng.chance(0.4) {
                        2
                    } else {
                        1
                    };
                    (max, lease * 3)
                }
                LockKind::RunOncePer => (1, Duration::ZERO),
            };
            let name = match kind {
                LockKind::RunIfLeader => format!("leader-{l}"),
                LockKind::RunOncePer => format!("period-{l}"),
            };
            let first = tasks.len();
            for &node in &users {
                tasks.push(match kind {
                    LockKind::RunIfLeader => TaskPlan {
                        node,
                        lock: l,
                        wait: *rng.pick(&WAITS).unwrap_or(&Duration::ZERO),
                        period: None,
                        switch: None,
                        offset: Duration::ZERO,
                    },
                    LockKind::RunOncePer => once_per_task(&mut rng, node, l, attempts_until),
                });
            }
            // A periodic job's action is at most half its shortest period, so that a run that
            // starts late in a period leaves most of the next one to the next run.
            let longest_action = match kind {
                LockKind::RunIfLeader => longest_action,
                LockKind::RunOncePer => {
                    let shortest = tasks[first..]
                        .iter()
                        .flat_map(|t| t.period.into_iter().chain(t.switch.map(|s| s.to)))
                        .min()
                        .unwrap_or(PERIODS[0]);
                    shortest / 2
                }
            };
            locks.push(LockPlan {
                name,
                max_leaders,
                kind,
                longest_action,
            });
        }
        Self {
            nodes,
            locks,
            tasks,
        }
    }
}

fn once_per_task(rng: &mut SimRng, node: usize, lock: usize, attempts_until: Duration) -> TaskPlan {
    let period = *rng.pick(&PERIODS).unwrap_or(&PERIODS[0]);
    let switch = rng.chance(0.5).then(|| {
        let others: Vec<Duration> = PERIODS.iter().copied().filter(|&p| p != period).collect();
        PeriodSwitch {
            at: rng.millis(Duration::from_secs(10), attempts_until),
            to: *rng.pick(&others).unwrap_or(&period),
        }
    });
    TaskPlan {
        node,
        lock,
        wait: Duration::ZERO,
        period: Some(period),
        switch,
        offset: rng.millis(Duration::ZERO, period / 4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_stay_within_their_bounds_and_repeat() {
        let lease = Duration::from_secs(15);
        let until = Duration::from_secs(300);
        for seed in 0..500 {
            let w = Workload::plan(seed, lease, until);
            assert_eq!(w, Workload::plan(seed, lease, until));
            assert!((2..=4).contains(&w.nodes.len()));
            assert!((1..=2).contains(&w.locks.len()));
            for (l, lock) in w.locks.iter().enumerate() {
                let users = w.tasks.iter().filter(|t| t.lock == l).count();
                assert!(users >= 2, "seed {seed}: lock {l} has {users} users");
                assert!(lock.max_leaders >= 1 && lock.max_leaders <= 2);
                if lock.kind == LockKind::RunOncePer {
                    assert_eq!(lock.max_leaders, 1);
                    assert!(lock.longest_action >= Duration::from_secs(10));
                }
            }
            for t in &w.tasks {
                if let Some(s) = t.switch {
                    assert!(s.at < until && Some(s.to) != t.period);
                }
            }
        }
    }
}
