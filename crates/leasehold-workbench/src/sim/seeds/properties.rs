//! The safety and liveness properties, checked over a recorded [`History`].
//!
//! They are the protocol model's (`leasehold_model::properties`, stated in `docs/correctness.md`)
//! applied to what the real code did:
//!
//! | property | holds when |
//! |---|---|
//! | [`AT_MOST_N`](Property::AtMostN) | at every instant, per lock, at most `max_leaders` actions run (each from its start to its end, half-open) |
//! | [`FENCE_MONOTONIC`](Property::FenceMonotonic) | per lock and slot, the resource never accepted a lower fence after a higher one, and each grant to a new holder has a higher fence than every grant before it |
//! | [`NO_ACT_PAST_DEADLINE`](Property::NoActPastDeadline) | no write happens at or after its guard's `local_deadline()` (read at the write) |
//! | [`AT_MOST_ONCE`](Property::AtMostOnce) | no `run_once_per` action starts in a period in which a run was already granted: its period is the window *of its own length* containing its grant, and no action that started before it was granted at or after that window's start |
//! | [`AT_LEAST_ONCE`](Property::AtLeastOnce) | once no fault acts any more, every period in which some elector attempts, keeping its period length for the whole period, holds a run: a started action whose grant lies in the window (of the attempting elector's length) |
//!
//! **Periods under a length change.** Windows are aligned to the store clock's origin (the
//! epoch): a window of length `p` is `[k·p, (k+1)·p)`. A run's period is the window of the length
//! *its* elector claimed, and is judged by grant times of runs of any length, as the ledger
//! judges claims: a run granted at 8 s under 4-second periods, `[8, 12)`, makes a 6-second
//! claim at 10 s, window `[6, 12)`, a second run of that window. The other way round, a run
//! granted at 6 s under 6-second periods does not count for the 4-second window `[8, 12)`. An
//! elector that changes its length within a window no longer owes that window a try (the model
//! judges only windows that start after the latest change), so its attempts there are not
//! judged by `AT_LEAST_ONCE`.
//!
//! ```
//! use std::time::Duration;
//! use leasehold_workbench::sim::seeds::{ActionSpan, History, LockInfo, Property, check_all};
//!
//! let s = Duration::from_secs;
//! let action = |node, start, end| ActionSpan {
//!     node, lock: 0, slot: 0, fence: node as u64 + 1, start: s(start), end: Some(s(end)), period: None,
//! };
//! let history = History {
//!     nodes: vec!["node-a".into(), "node-b".into()],
//!     locks: vec![LockInfo { name: "job".into(), max_leaders: 1 }],
//!     actions: vec![action(0, 0, 10), action(1, 9, 12)],
//!     end: s(20),
//!     ..History::default()
//! };
//! let found = check_all(&history);
//! assert_eq!(found.len(), 1);
//! assert_eq!((found[0].property, found[0].at), (Property::AtMostN, s(9)));
//! assert_eq!(found[0].nodes, ["node-a", "node-b"]);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::sim::seeds::history::{ActionSpan, AttemptOutcome, History, window_start};

/// A named property ([`Property::name`] is the name used in reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Property {
    /// At most `max_leaders` actions run at once per lock.
    AtMostN,
    /// Fences only go up, in the resource and in the store's grants.
    FenceMonotonic,
    /// No write at or after the writer's local deadline.
    NoActPastDeadline,
    /// No period runs twice.
    AtMostOnce,
    /// After the faults, every attempted period runs.
    AtLeastOnce,
}

impl Property {
    /// Every property, in the order checks report them.
    pub const ALL: [Self; 5] = [
        Self::AtMostN,
        Self::FenceMonotonic,
        Self::NoActPastDeadline,
        Self::AtMostOnce,
        Self::AtLeastOnce,
    ];

    /// The name: `AT_MOST_N`, `FENCE_MONOTONIC`, `NO_ACT_PAST_DEADLINE`, `AT_MOST_ONCE` or
    /// `AT_LEAST_ONCE`.
    ///
    /// ```
    /// use leasehold_workbench::sim::seeds::Property;
    /// assert_eq!(Property::NoActPastDeadline.name(), "NO_ACT_PAST_DEADLINE");
    /// assert_eq!(Property::parse("at_most_once"), Some(Property::AtMostOnce));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::AtMostN => "AT_MOST_N",
            Self::FenceMonotonic => "FENCE_MONOTONIC",
            Self::NoActPastDeadline => "NO_ACT_PAST_DEADLINE",
            Self::AtMostOnce => "AT_MOST_ONCE",
            Self::AtLeastOnce => "AT_LEAST_ONCE",
        }
    }

    /// The property named `name` (any case).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// This property's violations in `history`, in the order they happened.
    pub fn check(self, history: &History) -> Vec<Violation> {
        let mut found = match self {
            Self::AtMostN => at_most_n(history),
            Self::FenceMonotonic => fence_monotonic(history),
            Self::NoActPastDeadline => no_act_past_deadline(history),
            Self::AtMostOnce => at_most_once(history),
            Self::AtLeastOnce => at_least_once(history),
        };
        found.sort_by_key(|v| v.at);
        found
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Property {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One violation: which property, when, on which lock, which nodes, and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The property broken.
    pub property: Property,
    /// When it was broken (virtual time since the start of the run).
    #[serde(serialize_with = "super::serialize_ms", rename = "at_ms")]
    pub at: Duration,
    /// The lock.
    pub lock: String,
    /// The nodes involved.
    pub nodes: Vec<String>,
    /// What happened, with the instants, slots and fences involved.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {} on `{}` ({}): {}",
            self.property,
            secs(self.at),
            self.lock,
            self.nodes.join(", "),
            self.detail
        )
    }
}

/// Every property's violations in `history`, property by property ([`Property::ALL`] order).
pub fn check_all(history: &History) -> Vec<Violation> {
    Property::ALL
        .into_iter()
        .flat_map(|p| p.check(history))
        .collect()
}

/// `d` as seconds with milliseconds (`12.345s`), finer only when it has more.
pub(crate) fn secs(d: Duration) -> String {
    if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}.{:03}s", d.as_secs(), d.subsec_millis())
    } else {
        format!("{}.{:09}s", d.as_secs(), d.subsec_nanos())
    }
}

fn node(h: &History, n: usize) -> String {
    h.nodes.get(n).cloned().unwrap_or_else(|| format!("#{n}"))
}

fn lock(h: &History, l: usize) -> String {
    h.locks
        .get(l)
        .map_or_else(|| format!("#{l}"), |l| l.name.clone())
}

fn describe(h: &History, a: &ActionSpan) -> String {
    let end = a.end.map_or_else(|| "the end".to_owned(), secs);
    format!(
        "{} (slot {}, fence {}) ran {}..{}",
        node(h, a.node),
        a.slot,
        a.fence,
        secs(a.start),
        end
    )
}

fn at_most_n(h: &History) -> Vec<Violation> {
    let mut found = Vec::new();
    for (l, info) in h.locks.iter().enumerate() {
        // (instant, 0 = end / 1 = start, action): ends first, so back-to-back actions do not
        // overlap.
        let mut marks: Vec<(Duration, u8, usize)> = Vec::new();
        for (i, a) in h.actions.iter().enumerate().filter(|(_, a)| a.lock == l) {
            marks.push((a.start, 1, i));
            marks.push((a.end_or(h.end), 0, i));
        }
        marks.sort_unstable();
        let mut running = BTreeSet::new();
        let max = usize::try_from(info.max_leaders).unwrap_or(usize::MAX);
        for (at, kind, i) in marks {
            if kind == 0 {
                running.remove(&i);
                continue;
            }
            running.insert(i);
            if running.len() > max {
                let involved: Vec<&ActionSpan> = running.iter().map(|&j| &h.actions[j]).collect();
                found.push(Violation {
                    property: Property::AtMostN,
                    at,
                    lock: info.name.clone(),
                    nodes: involved.iter().map(|a| node(h, a.node)).collect(),
                    detail: format!(
                        "{} actions run at once (max_leaders {}): {}",
                        running.len(),
                        info.max_leaders,
                        involved
                            .iter()
                            .map(|a| describe(h, a))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                });
            }
        }
    }
    found
}

fn fence_monotonic(h: &History) -> Vec<Violation> {
    let mut found = Vec::new();
    // The resource: accepted writes per (lock, slot).
    let mut highest: BTreeMap<(usize, u32), (u64, usize)> = BTreeMap::new();
    for w in h.writes.iter().filter(|w| w.accepted) {
        let key = (w.lock, w.slot);
        match highest.get(&key) {
            Some(&(top, by)) if w.fence < top => found.push(Violation {
                property: Property::FenceMonotonic,
                at: w.at,
                lock: lock(h, w.lock),
                nodes: vec![node(h, by), node(h, w.node)],
                detail: format!(
                    "the resource accepted fence {} from {} in slot {} after fence {} from {}",
                    w.fence,
                    node(h, w.node),
                    w.slot,
                    top,
                    node(h, by)
                ),
            }),
            _ => {
                highest.insert(key, (w.fence, w.node));
            }
        }
    }
    // The store: grants per (lock, slot), in the order it made them.
    let mut granted: BTreeMap<(usize, u32), (u64, u32, usize)> = BTreeMap::new();
    for g in &h.grants {
        let key = (g.lock, g.slot);
        match granted.get(&key) {
            Some(&(top, holder, _)) if g.fence > top || (g.fence == top && g.holder == holder) => {
                granted.insert(key, (g.fence, g.holder, g.node));
            }
            None => {
                granted.insert(key, (g.fence, g.holder, g.node));
            }
            Some(&(top, holder, by)) => found.push(Violation {
                property: Property::FenceMonotonic,
                at: g.at,
                lock: lock(h, g.lock),
                nodes: vec![node(h, by), node(h, g.node)],
                detail: format!(
                    "the store granted fence {} in slot {} to {} (holder {}) after fence {} to {} (holder {})",
                    g.fence,
                    g.slot,
                    node(h, g.node),
                    g.holder,
                    top,
                    node(h, by),
                    holder
                ),
            }),
        }
    }
    found
}

fn no_act_past_deadline(h: &History) -> Vec<Violation> {
    // The first late write of each lease, with how many more followed.
    let mut first: BTreeMap<(usize, usize, u32, u64), (usize, u32)> = BTreeMap::new();
    for (i, w) in h.writes.iter().enumerate() {
        if w.at >= w.deadline {
            first
                .entry((w.node, w.lock, w.slot, w.fence))
                .and_modify(|(_, more)| *more += 1)
                .or_insert((i, 0));
        }
    }
    first
        .into_values()
        .map(|(i, more)| {
            let w = &h.writes[i];
            Violation {
                property: Property::NoActPastDeadline,
                at: w.at,
                lock: lock(h, w.lock),
                nodes: vec![node(h, w.node)],
                detail: format!(
                    "{} wrote with fence {} (slot {}) at {}, {} after its local deadline of {} \
                     ({}; {} more late writes of this lease)",
                    node(h, w.node),
                    w.fence,
                    w.slot,
                    secs(w.at),
                    secs(w.at - w.deadline),
                    secs(w.deadline),
                    if w.accepted {
                        "accepted"
                    } else {
                        "rejected by the fence"
                    },
                    more
                ),
            }
        })
        .collect()
}

fn at_most_once(h: &History) -> Vec<Violation> {
    let mut found = Vec::new();
    for (i, r) in h.actions.iter().enumerate() {
        let Some(run) = r.period else { continue };
        let from = run.window_start();
        let earlier = h.actions[..i]
            .iter()
            .filter(|q| q.lock == r.lock)
            .filter_map(|q| Some((q, q.period?)))
            .find(|(_, qp)| qp.granted >= from);
        if let Some((q, qp)) = earlier {
            let hidden = hidden_by(h, r, qp.granted, run.granted);
            found.push(Violation {
                property: Property::AtMostOnce,
                at: r.start,
                lock: lock(h, r.lock),
                nodes: vec![node(h, q.node), node(h, r.node)],
                detail: format!(
                    "{} started a run of the {} period {}..{} (granted at {}), which already ran: \
                     {} started one granted at {} (under {} periods)",
                    node(h, r.node),
                    secs(run.length),
                    secs(from),
                    secs(from + run.length),
                    secs(run.granted),
                    node(h, q.node),
                    secs(qp.granted),
                    secs(qp.length)
                ) + &hidden.as_ref().map_or_else(String::new, |g| {
                    format!(
                        "; the ledger's latest claim then was {}'s, granted at {} (fence {}) and never started: the ledger lost the earlier run behind it",
                        node(h, g.node),
                        secs(g.at),
                        g.fence
                    )
                }),
            });
        }
    }
    found
}

/// The claim that hid the run granted at `first` from the ledger when `r` was granted at
/// `second`: the latest claim granted before `second`, if it came after `first` and its action
/// never started.
fn hidden_by<'h>(
    h: &'h History,
    r: &ActionSpan,
    first: Duration,
    second: Duration,
) -> Option<&'h crate::sim::seeds::history::GrantRecord> {
    let latest = h
        .grants
        .iter()
        .rev()
        .find(|g| g.lock == r.lock && g.claim && g.at < second)?;
    let started = h
        .actions
        .iter()
        .any(|a| a.lock == latest.lock && a.slot == latest.slot && a.fence == latest.fence);
    (latest.at > first && !started).then_some(latest)
}

fn at_least_once(h: &History) -> Vec<Violation> {
    // (lock, length, window start) -> the attempts made in it.
    let mut windows: BTreeMap<(usize, Duration, Duration), Vec<usize>> = BTreeMap::new();
    for (i, a) in h.attempts.iter().enumerate() {
        let Some(length) = a.period else { continue };
        let from = window_start(a.at, length);
        let until = from + length;
        let changed = h
            .period_changes
            .iter()
            .any(|c| c.node == a.node && c.lock == a.lock && c.at > from && c.at < until);
        if from >= h.liveness_from && until <= h.attempts_until && !changed {
            windows.entry((a.lock, length, from)).or_default().push(i);
        }
    }
    let mut found = Vec::new();
    for ((l, length, from), attempts) in windows {
        let until = from + length;
        let ran = h.actions.iter().any(|a| {
            a.lock == l
                && a.period
                    .is_some_and(|p| p.granted >= from && p.granted < until)
        });
        if ran {
            continue;
        }
        let mut nodes: Vec<String> = attempts
            .iter()
            .map(|&i| node(h, h.attempts[i].node))
            .collect();
        nodes.dedup();
        let tried = attempts
            .iter()
            .map(|&i| {
                let a = &h.attempts[i];
                let outcome = match &a.outcome {
                    AttemptOutcome::Ran => "ran".to_owned(),
                    AttemptOutcome::AlreadyRan => "already ran".to_owned(),
                    AttemptOutcome::Skipped => "skipped".to_owned(),
                    AttemptOutcome::Failed(e) => format!("failed: {e}"),
                    AttemptOutcome::Unfinished => "unfinished".to_owned(),
                };
                format!("{} at {}: {}", node(h, a.node), secs(a.at), outcome)
            })
            .collect::<Vec<_>>()
            .join("; ");
        found.push(Violation {
            property: Property::AtLeastOnce,
            at: until,
            lock: lock(h, l),
            nodes,
            detail: format!(
                "the {} period {}..{} had attempts but no run ({tried})",
                secs(length),
                secs(from),
                secs(until)
            ),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::seeds::history::{
        AttemptRecord, GrantRecord, LockInfo, PeriodChange, PeriodRun, WriteRecord,
    };

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn history(max_leaders: u32) -> History {
        History {
            nodes: vec!["node-a".into(), "node-b".into(), "node-c".into()],
            locks: vec![LockInfo {
                name: "job".into(),
                max_leaders,
            }],
            liveness_from: s(100),
            attempts_until: s(200),
            end: s(300),
            ..History::default()
        }
    }

    fn action(node: usize, fence: u64, start: Duration, end: Option<Duration>) -> ActionSpan {
        ActionSpan {
            node,
            lock: 0,
            slot: 0,
            fence,
            start,
            end,
            period: None,
        }
    }

    fn run(node: usize, granted: Duration, length: Duration) -> ActionSpan {
        ActionSpan {
            period: Some(PeriodRun { length, granted }),
            ..action(node, 1, granted, Some(granted + s(1)))
        }
    }

    fn names(found: &[Violation]) -> Vec<(&'static str, Duration)> {
        found.iter().map(|v| (v.property.name(), v.at)).collect()
    }

    #[test]
    fn back_to_back_actions_do_not_overlap_but_overlapping_ones_do() {
        let mut h = history(1);
        h.actions = vec![
            action(0, 1, s(0), Some(s(10))),
            action(1, 2, s(10), Some(s(20))),
        ];
        assert!(Property::AtMostN.check(&h).is_empty());
        h.actions.push(action(2, 3, ms(19_999), None));
        let found = Property::AtMostN.check(&h);
        assert_eq!(names(&found), [("AT_MOST_N", ms(19_999))]);
        assert_eq!(found[0].nodes, ["node-b", "node-c"]);
        assert!(
            found[0].detail.contains("ran 19.999s..the end"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn two_slots_allow_two_actions_and_not_three() {
        let mut h = history(2);
        h.actions = vec![
            action(0, 1, s(0), Some(s(10))),
            ActionSpan {
                slot: 1,
                ..action(1, 1, s(1), Some(s(10)))
            },
        ];
        assert!(Property::AtMostN.check(&h).is_empty());
        h.actions.push(action(2, 2, s(5), Some(s(6))));
        assert_eq!(names(&Property::AtMostN.check(&h)), [("AT_MOST_N", s(5))]);
    }

    fn write(at: Duration, node: usize, fence: u64, accepted: bool) -> WriteRecord {
        WriteRecord {
            at,
            node,
            lock: 0,
            slot: 0,
            fence,
            deadline: at + s(5),
            accepted,
        }
    }

    fn grant(at: Duration, node: usize, fence: u64, holder: u32) -> GrantRecord {
        GrantRecord {
            at,
            node,
            lock: 0,
            slot: 0,
            fence,
            holder,
            claim: false,
        }
    }

    #[test]
    fn a_lower_fence_accepted_after_a_higher_one_is_a_violation() {
        let mut h = history(1);
        h.writes = vec![
            write(s(1), 0, 1, true),
            write(s(2), 1, 2, true),
            write(s(3), 0, 1, false),
        ];
        assert!(
            Property::FenceMonotonic.check(&h).is_empty(),
            "rejected: fine"
        );
        h.writes.push(write(s(4), 0, 1, true));
        let found = Property::FenceMonotonic.check(&h);
        assert_eq!(names(&found), [("FENCE_MONOTONIC", s(4))]);
        assert_eq!(found[0].nodes, ["node-b", "node-a"]);
    }

    #[test]
    fn grants_to_new_holders_must_raise_the_fence() {
        let mut h = history(1);
        h.grants = vec![
            grant(s(1), 0, 1, 0),
            grant(s(2), 0, 1, 0), // a retried request recognised: the same lease
            grant(s(3), 1, 2, 1),
        ];
        assert!(Property::FenceMonotonic.check(&h).is_empty());
        h.grants.push(grant(s(4), 2, 2, 2));
        let found = Property::FenceMonotonic.check(&h);
        assert_eq!(names(&found), [("FENCE_MONOTONIC", s(4))]);
        h.grants.pop();
        h.grants.push(GrantRecord {
            slot: 1,
            ..grant(s(5), 2, 1, 2)
        });
        assert!(
            Property::FenceMonotonic.check(&h).is_empty(),
            "each slot has its own fences"
        );
    }

    #[test]
    fn a_write_at_the_deadline_is_past_it() {
        let mut h = history(1);
        let mut w = write(s(1), 0, 1, true);
        w.deadline = ms(1_001);
        h.writes.push(w.clone());
        assert!(Property::NoActPastDeadline.check(&h).is_empty());
        w.at = ms(1_001);
        h.writes.push(w.clone());
        w.at = ms(1_201);
        h.writes.push(w);
        let found = Property::NoActPastDeadline.check(&h);
        assert_eq!(
            names(&found),
            [("NO_ACT_PAST_DEADLINE", ms(1_001))],
            "one per lease"
        );
        assert!(
            found[0].detail.contains("1 more late writes"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn a_second_run_in_a_window_of_its_own_length_is_a_violation() {
        let mut h = history(1);
        // Two runs of 4 s periods in different windows: fine.
        h.actions = vec![run(0, s(8), s(4)), run(1, s(12), s(4))];
        assert!(Property::AtMostOnce.check(&h).is_empty());
        // A 6 s run granted at 13 s: its window [12, 18) holds the run granted at 12 s.
        h.actions.push(run(2, s(13), s(6)));
        let found = Property::AtMostOnce.check(&h);
        assert_eq!(names(&found), [("AT_MOST_ONCE", s(13))]);
        assert_eq!(found[0].nodes, ["node-b", "node-c"]);
    }

    #[test]
    fn a_run_of_a_longer_period_before_the_window_does_not_count() {
        let mut h = history(1);
        // 6 s periods: a run at 6 s ([6, 12)); then 4 s periods: [8, 12) has no run yet.
        h.actions = vec![run(0, s(6), s(6)), run(1, s(9), s(4))];
        assert!(Property::AtMostOnce.check(&h).is_empty());
        // ... but a 6 s run at 10 s is a second run of [6, 12).
        h.actions.push(run(2, s(10), s(6)));
        assert_eq!(
            names(&Property::AtMostOnce.check(&h)),
            [("AT_MOST_ONCE", s(10))]
        );
    }

    #[test]
    fn a_run_hidden_by_an_unstarted_claim_is_diagnosed() {
        let mut h = history(1);
        let claim = |at, node, fence| GrantRecord {
            claim: true,
            ..grant(at, node, fence, u32::try_from(fence).unwrap_or(0))
        };
        // node-a runs [90, 120) of 30 s at 91 s; node-b's 20 s claim at 103 s never starts;
        // node-b, now on 30 s, runs [90, 120) again at 105 s.
        let mut first = run(0, s(91), s(30));
        first.fence = 1;
        let mut second = run(1, s(105), s(30));
        second.fence = 3;
        h.actions = vec![first, second];
        h.grants = vec![claim(s(91), 0, 1), claim(s(103), 1, 2), claim(s(105), 1, 3)];
        let found = Property::AtMostOnce.check(&h);
        assert_eq!(names(&found), [("AT_MOST_ONCE", s(105))]);
        assert!(
            found[0]
                .detail
                .contains("granted at 103.000s (fence 2) and never started"),
            "{}",
            found[0].detail
        );
        // Had the claim at 103 s started, it would not have hidden anything: no such diagnosis.
        h.actions.insert(
            1,
            ActionSpan {
                fence: 2,
                ..run(1, s(103), s(20))
            },
        );
        let found = Property::AtMostOnce.check(&h);
        assert!(
            found.iter().all(|v| !v.detail.contains("never started")),
            "{found:?}"
        );
    }

    fn attempt(
        at: Duration,
        node: usize,
        period: Duration,
        outcome: AttemptOutcome,
    ) -> AttemptRecord {
        AttemptRecord {
            at,
            node,
            lock: 0,
            period: Some(period),
            outcome,
        }
    }

    #[test]
    fn an_attempted_period_without_a_run_is_a_violation_only_after_the_faults() {
        let mut h = history(1);
        let p = s(20);
        h.attempts = vec![
            // Before liveness_from: not judged.
            attempt(s(81), 0, p, AttemptOutcome::Skipped),
            // [100, 120): a run granted at 101 s.
            attempt(s(101), 0, p, AttemptOutcome::Ran),
            attempt(s(102), 1, p, AttemptOutcome::AlreadyRan),
            // [120, 140): only skips.
            attempt(s(121), 1, p, AttemptOutcome::Skipped),
            attempt(s(122), 1, p, AttemptOutcome::Failed("store down".into())),
            // [180, 200) ends at attempts_until: judged; [200, 220) is not.
            attempt(s(181), 0, p, AttemptOutcome::Ran),
            attempt(s(201), 0, p, AttemptOutcome::Skipped),
        ];
        h.actions = vec![run(0, s(101), p), run(0, s(181), p)];
        let found = Property::AtLeastOnce.check(&h);
        assert_eq!(names(&found), [("AT_LEAST_ONCE", s(140))]);
        assert_eq!(found[0].nodes, ["node-b"]);
        assert!(
            found[0].detail.contains("failed: store down"),
            "{}",
            found[0].detail
        );
        // node-b switching to another length at 125 s no longer owes [120, 140) a run.
        h.period_changes = vec![PeriodChange {
            node: 1,
            lock: 0,
            at: s(125),
        }];
        assert!(Property::AtLeastOnce.check(&h).is_empty());
        h.period_changes[0].at = s(120);
        assert_eq!(
            names(&Property::AtLeastOnce.check(&h)),
            [("AT_LEAST_ONCE", s(140))],
            "changed before the window"
        );
    }

    #[test]
    fn a_run_of_another_length_inside_the_window_counts() {
        let mut h = history(1);
        // node-b tries [120, 160) of 40 s; node-a's 20 s run at 121 s lies inside it.
        h.attempts = vec![attempt(s(122), 1, s(40), AttemptOutcome::AlreadyRan)];
        h.actions = vec![run(0, s(121), s(20))];
        assert!(Property::AtLeastOnce.check(&h).is_empty());
        h.actions = vec![run(0, s(119), s(20))];
        assert_eq!(
            names(&Property::AtLeastOnce.check(&h)),
            [("AT_LEAST_ONCE", s(160))]
        );
    }

    #[test]
    fn violations_read_well() {
        let v = Violation {
            property: Property::AtMostN,
            at: ms(1_500),
            lock: "job".into(),
            nodes: vec!["node-a".into(), "node-b".into()],
            detail: "two at once".into(),
        };
        assert_eq!(
            v.to_string(),
            "AT_MOST_N at 1.500s on `job` (node-a, node-b): two at once"
        );
        assert_eq!(secs(Duration::from_nanos(1_000_000_500)), "1.000000500s");
        let json = serde_json::to_string(&v).unwrap_or_default();
        assert!(
            json.contains(r#""property":"AT_MOST_N","at_ms":1500"#),
            "{json}"
        );
    }
}
