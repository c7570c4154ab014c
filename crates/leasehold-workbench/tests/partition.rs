//! The `partition` scenario: joins spread and balance the shards, a leave hands them over
//! before the leaver's leases would have expired, a crash moves them only after its leases
//! expired, fences rise per shard, and no two owners of a shard ever overlap.

#![allow(clippy::expect_used)] // test helpers

use std::collections::BTreeMap;

use leasehold_workbench::sim::{
    self, Overrides, PARTITION_STEP, ShardTenure, SimError, Timeline, TimelineEvent,
};

fn run(overrides: Overrides) -> Timeline {
    sim::simulate("partition", &overrides).unwrap_or_else(|e| panic!("partition: {e}"))
}

fn owners_at(t: &Timeline, tick: u32) -> Vec<Option<String>> {
    t.frames[tick as usize]
        .shards
        .as_ref()
        .map(|s| s.iter().map(|s| s.owner.clone()).collect())
        .unwrap_or_default()
}

/// The shards each node owns at the end of `tick` (nodes that own none are absent).
fn counts_at(t: &Timeline, tick: u32) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for owner in owners_at(t, tick).into_iter().flatten() {
        *counts.entry(owner).or_insert(0) += 1;
    }
    counts
}

fn event_ms(t: &Timeline, node: &str, operation: &str) -> u64 {
    let e: Option<&TimelineEvent> = t
        .events
        .iter()
        .find(|e| e.candidate == node && e.operation == operation);
    // A join, leave or crash happens 1 to 5 ms after its tick starts (the node's offset).
    e.map(|e| u64::from(e.tick) * 1000)
        .unwrap_or_else(|| panic!("no {operation} of {node}"))
}

fn tenures(t: &Timeline) -> &[ShardTenure] {
    &t.partition.as_ref().expect("the partition checks").tenures
}

/// The next tenure of the same shard after `of`.
fn successor<'a>(t: &'a Timeline, of: &ShardTenure) -> Option<&'a ShardTenure> {
    tenures(t)
        .iter()
        .find(|n| n.shard == of.shard && n.fence > of.fence)
}

fn assert_scenario_holds(t: &Timeline) {
    let p = t.params;
    let shards = p.shards.expect("shards") as usize;
    let nodes = p.nodes.expect("nodes") as usize;
    let lease_ms = u64::from(p.lease) * 1000;
    let check = t.partition.as_ref().expect("the partition checks");
    let ctx = format!("{:?}", p);

    // After each join has settled (just before the next change), every shard has exactly one
    // owner and the members are within one shard of each other.
    for joined in 1..=nodes {
        let tick = PARTITION_STEP * u32::try_from(joined).expect("few nodes") - 1;
        let owners = owners_at(t, tick);
        assert_eq!(owners.len(), shards, "{ctx}");
        assert!(
            owners.iter().all(Option::is_some),
            "tick {tick}: {owners:?} ({ctx})"
        );
        let counts = counts_at(t, tick);
        assert_eq!(counts.len(), joined, "tick {tick}: {counts:?} ({ctx})");
        let (min, max) = (
            counts.values().min().copied().unwrap_or(0),
            counts.values().max().copied().unwrap_or(0),
        );
        assert!(max - min <= 1, "tick {tick}: unbalanced {counts:?} ({ctx})");
        assert_eq!(counts.values().sum::<usize>(), shards);
    }

    // The leave: node-b's shards are granted to others before its leases would have expired.
    let left_ms = event_ms(t, "node-b", "leave");
    let handed: Vec<&ShardTenure> = tenures(t)
        .iter()
        .filter(|x| x.owner == "node-b" && x.until_ms.is_some_and(|u| u >= left_ms))
        .collect();
    assert!(
        !handed.is_empty(),
        "node-b owned shards when it left ({ctx})"
    );
    for x in &handed {
        assert_eq!(x.ended.as_deref(), Some("released"), "{x:?} ({ctx})");
        let next = successor(t, x).unwrap_or_else(|| panic!("{x:?} was taken over ({ctx})"));
        assert_ne!(next.owner, "node-b");
        assert!(
            next.from_ms < x.deadline_ms,
            "{next:?} granted before {x:?}'s lease would have expired ({ctx})"
        );
        assert!(next.from_ms < left_ms + lease_ms, "{next:?} ({ctx})");
        // Its release woke the member the shard went to: taken in a few round trips, not at
        // that member's next period (a third of the lease, a second at least).
        let released_ms = x.until_ms.unwrap_or(left_ms);
        assert!(
            next.from_ms <= released_ms + 100,
            "{next:?} taken {} ms after {x:?} was released ({ctx})",
            next.from_ms.saturating_sub(released_ms)
        );
    }

    // The crash: none of node-c's shards is granted again before its lease ended in the store,
    // and every one is granted again within about a lease after that.
    let crashed_ms = event_ms(t, "node-c", "crash");
    let orphaned: Vec<&ShardTenure> = tenures(t)
        .iter()
        .filter(|x| x.owner == "node-c" && x.until_ms.is_none_or(|u| u > crashed_ms))
        .collect();
    assert!(
        !orphaned.is_empty(),
        "node-c owned shards when it crashed ({ctx})"
    );
    for x in &orphaned {
        assert_eq!(x.ended.as_deref(), Some("expired"), "{x:?} ({ctx})");
        let expired = x.until_ms.unwrap_or(u64::MAX);
        assert!(expired > crashed_ms, "{x:?} was live at the crash ({ctx})");
        assert_eq!(
            expired, x.deadline_ms,
            "{x:?} ended at its deadline ({ctx})"
        );
        let next = successor(t, x).unwrap_or_else(|| panic!("{x:?} was taken over ({ctx})"));
        assert!(
            next.from_ms >= expired,
            "{next:?} after {x:?} expired ({ctx})"
        );
        assert!(
            next.from_ms <= expired + lease_ms,
            "{next:?} within a lease of {x:?}'s expiry ({ctx})"
        );
    }
    // At the end, the survivors own every shard, balanced.
    let end = counts_at(t, t.max_tick);
    assert_eq!(end.values().sum::<usize>(), shards, "{end:?} ({ctx})");
    assert!(
        !end.contains_key("node-b") && !end.contains_key("node-c"),
        "{end:?}"
    );
    let (min, max) = (
        end.values().min().copied().unwrap_or(0),
        end.values().max().copied().unwrap_or(0),
    );
    assert!(max - min <= 1, "{end:?} ({ctx})");

    // Fences strictly increase per shard, and no two tenures of a shard overlapped.
    for shard in 0..shards {
        let fences: Vec<u64> = tenures(t)
            .iter()
            .filter(|x| x.shard as usize == shard)
            .map(|x| x.fence)
            .collect();
        assert!(
            fences.windows(2).all(|w| w[0] < w[1]),
            "shard {shard}: {fences:?}"
        );
        let spans: Vec<(u64, Option<u64>)> = tenures(t)
            .iter()
            .filter(|x| x.shard as usize == shard)
            .map(|x| (x.from_ms, x.until_ms))
            .collect();
        for w in spans.windows(2) {
            assert!(
                w[0].1.is_some_and(|end| end <= w[1].0),
                "shard {shard}: {spans:?}"
            );
        }
    }
    assert!(check.fences_rise, "{ctx}");
    assert_eq!(check.overlaps, 0, "{ctx}");
    let last = t.frames.last().expect("frames");
    assert_eq!(last.resource.rejected, 0, "{ctx}");
}

#[test]
fn joins_balance_a_leave_hands_over_at_once_a_crash_waits_for_the_leases() {
    let t = run(Overrides::default());
    assert_eq!(
        (t.params.shards, t.params.nodes, t.params.lease),
        (Some(10), Some(3), 6)
    );
    assert_eq!(t.candidates, ["node-a", "node-b", "node-c"]);
    assert_eq!(t.max_tick, 36);
    assert_eq!(t.frames.len(), 37);
    assert_scenario_holds(&t);
    // The three joins, the leave and the crash are rows of their own.
    let changes: Vec<(u32, &str, &str)> = t
        .events
        .iter()
        .filter(|e| ["join", "leave", "crash"].contains(&e.operation.as_str()))
        .map(|e| (e.tick, e.candidate.as_str(), e.operation.as_str()))
        .collect();
    assert_eq!(
        changes,
        [
            (0, "node-a", "join"),
            (6, "node-b", "join"),
            (12, "node-c", "join"),
            (18, "node-b", "leave"),
            (24, "node-c", "crash"),
        ]
    );
    // Node statuses follow.
    let status = |tick: usize, i: usize| t.frames[tick].nodes[i].status.clone();
    assert_eq!(status(0, 1), "idle");
    assert_eq!(status(7, 1), "member");
    assert_eq!(status(18, 1), "left");
    assert_eq!(status(24, 2), "crashed");
    // The crashed node's leases expire in the store: expire rows, with the shard named.
    assert!(
        t.events
            .iter()
            .any(|e| e.candidate == "node-c" && e.operation == "expire" && e.shard.is_some())
    );
}

#[test]
fn holds_for_every_shard_count_node_count_and_lease_sampled() {
    for (shards, nodes, lease) in [(4, 3, 3), (8, 4, 4), (12, 5, 6), (16, 3, 5), (9, 5, 3)] {
        let t = run(Overrides {
            shards: Some(shards),
            nodes: Some(nodes),
            lease: Some(lease),
            ..Overrides::default()
        });
        assert_eq!(t.candidates.len(), nodes as usize);
        assert_scenario_holds(&t);
    }
}

#[test]
fn the_same_input_gives_the_same_timeline() {
    let a = serde_json::to_string(&run(Overrides::default())).expect("json");
    let b = serde_json::to_string(&run(Overrides::default())).expect("json");
    assert_eq!(a, b);
}

#[test]
fn bad_parameters_are_refused_with_the_parameter_named() {
    let refused = |o: Overrides| sim::simulate("partition", &o).expect_err("refused");
    let e = refused(Overrides {
        shards: Some(17),
        ..Overrides::default()
    });
    assert!(matches!(
        e,
        SimError::OutOfRange {
            parameter: "shards",
            min: 4,
            max: 16,
            ..
        }
    ));
    let e = refused(Overrides {
        nodes: Some(2),
        ..Overrides::default()
    });
    assert_eq!(
        e.to_string(),
        "`nodes` must be between 3 and 5 nodes, got 2"
    );
    let e = refused(Overrides {
        lease: Some(10),
        ..Overrides::default()
    });
    assert!(matches!(
        e,
        SimError::OutOfRange {
            parameter: "lease",
            min: 3,
            max: 6,
            ..
        }
    ));
    let e = refused(Overrides {
        wait: Some(2),
        ..Overrides::default()
    });
    assert!(matches!(
        e,
        SimError::DoesNotApply {
            parameter: "wait",
            scenario: "partition"
        }
    ));
    let e = refused(Overrides {
        outage_ticks: Some(2),
        ..Overrides::default()
    });
    assert!(matches!(
        e,
        SimError::DoesNotApply {
            parameter: "outage_ticks",
            ..
        }
    ));
    let e = sim::simulate(
        "group",
        &Overrides {
            nodes: Some(4),
            ..Overrides::default()
        },
    )
    .expect_err("nodes only in partition");
    assert!(matches!(
        e,
        SimError::DoesNotApply {
            parameter: "nodes",
            scenario: "group"
        }
    ));
    assert!(e.is_usage());
}
