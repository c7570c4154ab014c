//! The checker: what a verify history must never show.
//!
//! * a write the register accepted although a higher fence had been accepted before it (a stale
//!   holder's write landed after its successor's: a lost update);
//! * one fence granted twice;
//! * two contenders believing they hold the lock at the same instant (a grant arriving while an
//!   earlier holder's lease is still valid by that holder's own deadline and not yet released);
//! * a fence lower than or equal to one granted before the request was even sent.
//!
//! Each rule errs on the safe side for the store: it uses the times a contender observed (a grant
//! is timed when its answer arrived, a belief ends when the release was asked for), so a correct
//! store can never be accused.

use std::collections::HashMap;

use serde::Serialize;

use super::history::Op;

/// What the history shows.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Findings {
    pub(crate) runs: u64,
    pub(crate) skips: u64,
    pub(crate) store_errors: u64,
    pub(crate) pauses: u64,
    pub(crate) writes_accepted: u64,
    pub(crate) stale_writes_rejected: u64,
    pub(crate) stale_writes_accepted: u64,
    pub(crate) proxy_cuts: u64,
    /// Every violation, described.
    pub(crate) violations: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct Grant {
    contender: usize,
    asked: f64,
    at: f64,
    fence: u64,
    /// When the holder stopped believing it held the lock.
    end: f64,
}

/// Checks a history.
pub(crate) fn check(ops: &[Op]) -> Findings {
    let mut f = Findings::default();
    let mut released: HashMap<(usize, u64), f64> = HashMap::new();
    for op in ops {
        match op {
            Op::Skipped { .. } => f.skips += 1,
            Op::StoreError { .. } => f.store_errors += 1,
            Op::Paused { .. } => f.pauses += 1,
            Op::ProxyCut { .. } => f.proxy_cuts += 1,
            Op::Released {
                contender,
                at_ms,
                fence,
                ..
            } => {
                released.insert((*contender, *fence), *at_ms);
            }
            Op::Write {
                contender,
                at_ms,
                fence,
                highest_before,
                accepted,
                ..
            } => {
                let stale = highest_before.is_some_and(|h| h > *fence);
                match (accepted, stale) {
                    (true, true) => {
                        f.stale_writes_accepted += 1;
                        f.violations.push(format!(
                            "stale write accepted: contender {contender} wrote with fence {fence} at \
                             {at_ms:.0} ms, after fence {} had been accepted",
                            highest_before.unwrap_or_default()
                        ));
                    }
                    (true, false) => f.writes_accepted += 1,
                    (false, _) => f.stale_writes_rejected += 1,
                }
            }
            Op::Granted { .. } => f.runs += 1,
        }
    }
    let mut grants: Vec<Grant> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Granted {
                contender,
                asked_ms,
                at_ms,
                fence,
                valid_until_ms,
            } => Some(Grant {
                contender: *contender,
                asked: *asked_ms,
                at: *at_ms,
                fence: *fence,
                end: released
                    .get(&(*contender, *fence))
                    .map_or(*valid_until_ms, |r| r.min(*valid_until_ms)),
            }),
            _ => None,
        })
        .collect();
    grants.sort_by(|a, b| a.at.total_cmp(&b.at));
    duplicate_fences(&grants, &mut f.violations);
    overlaps(&grants, &mut f.violations);
    regressions(&grants, &mut f.violations);
    f
}

fn duplicate_fences(grants: &[Grant], out: &mut Vec<String>) {
    let mut first: HashMap<u64, &Grant> = HashMap::new();
    for g in grants {
        if let Some(a) = first.insert(g.fence, g) {
            out.push(format!(
                "fence {} granted twice: to contender {} at {:.0} ms and to contender {} at {:.0} ms",
                g.fence, a.contender, a.at, g.contender, g.at
            ));
        }
    }
}

fn overlaps(grants: &[Grant], out: &mut Vec<String>) {
    // The earlier grant whose belief lasts longest, so far.
    let mut longest: Option<&Grant> = None;
    for g in grants {
        if let Some(a) = longest
            && a.end > g.at
        {
            out.push(format!(
                "two holders at once: contender {} (fence {}) was granted the lock at {:.0} ms while \
                 contender {} (fence {}) still held a valid lease (until {:.0} ms)",
                g.contender, g.fence, g.at, a.contender, a.fence, a.end
            ));
        }
        if longest.is_none_or(|a| g.end > a.end) {
            longest = Some(g);
        }
    }
}

fn regressions(grants: &[Grant], out: &mut Vec<String>) {
    // grants are sorted by arrival; prefix[i] = the grant with the highest fence among grants[..=i].
    let mut prefix: Vec<&Grant> = Vec::with_capacity(grants.len());
    for g in grants {
        let best = match prefix.last() {
            Some(p) if p.fence >= g.fence => *p,
            _ => g,
        };
        prefix.push(best);
    }
    for g in grants {
        // Grants that had arrived before this one was asked for.
        let before = grants.partition_point(|a| a.at < g.asked);
        if let Some(a) = before.checked_sub(1).map(|i| prefix[i])
            && a.fence >= g.fence
        {
            out.push(format!(
                "fence went backwards: contender {} asked at {:.0} ms and was granted fence {}, but \
                 fence {} had been granted to contender {} before (at {:.0} ms)",
                g.contender, g.asked, g.fence, a.fence, a.contender, a.at
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(contender: usize, asked: f64, at: f64, fence: u64, until: f64) -> Op {
        Op::Granted {
            contender,
            asked_ms: asked,
            at_ms: at,
            fence,
            valid_until_ms: until,
        }
    }

    fn released(contender: usize, at: f64, fence: u64) -> Op {
        Op::Released {
            contender,
            at_ms: at,
            fence,
            outcome: "released".into(),
        }
    }

    fn write(contender: usize, fence: u64, highest: Option<u64>, accepted: bool) -> Op {
        Op::Write {
            contender,
            at_ms: 0.0,
            fence,
            value: 0,
            highest_before: highest,
            accepted,
        }
    }

    #[test]
    fn a_clean_history_has_no_violation() {
        let ops = [
            grant(0, 0.0, 1.0, 1, 100.0),
            write(0, 1, None, true),
            released(0, 10.0, 1),
            grant(1, 5.0, 11.0, 2, 111.0),
            write(1, 2, Some(1), true),
            write(0, 1, Some(2), false),
        ];
        let f = check(&ops);
        assert!(f.violations.is_empty(), "{:?}", f.violations);
        assert_eq!(
            (f.runs, f.writes_accepted, f.stale_writes_rejected),
            (2, 2, 1)
        );
    }

    #[test]
    fn each_kind_of_violation_is_found() {
        let stale = check(&[write(0, 1, Some(2), true)]);
        assert_eq!(stale.stale_writes_accepted, 1);
        assert!(stale.violations[0].starts_with("stale write accepted"));

        let twice = check(&[grant(0, 0.0, 1.0, 7, 5.0), grant(1, 6.0, 7.0, 7, 9.0)]);
        assert!(
            twice
                .violations
                .iter()
                .any(|v| v.starts_with("fence 7 granted twice")),
            "{:?}",
            twice.violations
        );

        let overlap = check(&[grant(0, 0.0, 1.0, 1, 100.0), grant(1, 2.0, 3.0, 2, 50.0)]);
        assert!(
            overlap
                .violations
                .iter()
                .any(|v| v.starts_with("two holders at once")),
            "{:?}",
            overlap.violations
        );

        let backwards = check(&[grant(0, 0.0, 1.0, 5, 2.0), grant(1, 3.0, 4.0, 4, 6.0)]);
        assert!(
            backwards
                .violations
                .iter()
                .any(|v| v.starts_with("fence went backwards")),
            "{:?}",
            backwards.violations
        );
    }

    #[test]
    fn a_release_ends_the_belief_and_concurrent_asks_are_not_regressions() {
        // Contender 1 asked before contender 0's grant arrived: its lower fence is no regression;
        // contender 0 had released before contender 1's grant arrived: no overlap.
        let ops = [
            grant(0, 0.0, 2.0, 2, 100.0),
            released(0, 2.5, 2),
            grant(1, 1.0, 3.0, 1, 50.0),
        ];
        assert!(check(&ops).violations.is_empty());
    }
}
