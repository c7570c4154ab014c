//! The simulation engine: pinned event sequences of every preset, the safety properties the
//! pictures rely on, determinism and parameter validation.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use leasehold_workbench::sim::{self, Overrides, Params, Scenario, SimError, Status, Timeline};

fn run(scenario: &str, overrides: Overrides) -> Timeline {
    sim::simulate(scenario, &overrides).expect("valid parameters")
}

fn preset(scenario: &str) -> Timeline {
    run(scenario, Overrides::default())
}

/// Compares a timeline's events with a literal table (one row per line, columns as in `TimelineEvent::cells`).
#[track_caller]
fn assert_events(t: &Timeline, table: &str) {
    let expected: Vec<Vec<String>> = table
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tick"))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    let actual: Vec<Vec<String>> = t.events.iter().map(|e| e.cells().to_vec()).collect();
    let show = |rows: &[Vec<String>]| {
        rows.iter()
            .map(|r| r.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        show(&actual),
        show(&expected),
        "events of {} ({:?})",
        t.scenario,
        t.params
    );
}

fn statuses(t: &Timeline, tick: usize) -> Vec<&str> {
    t.frames[tick]
        .nodes
        .iter()
        .map(|n| n.status.as_str())
        .collect()
}

#[test]
fn contention_preset() {
    let t = preset("contention");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     10  elected
        0    node-a    write       a·1   1     -   accepted
        1    node-b    try_acquire -     -     9   contended
        3    node-b    skip        -     -     7   skipped
        8    node-a    write       a·1   1     -   accepted
        8    node-a    release     a·1   1     0   released
        9    node-c    acquire     c·2   2     10  elected
        9    node-c    write       c·2   2     -   accepted
        17   node-c    write       c·2   2     -   accepted
        17   node-c    release     c·2   2     0   released
        ",
    );
    assert_eq!(statuses(&t, 1), ["running", "waiting", "idle"]);
    assert_eq!(statuses(&t, 3), ["running", "skipped", "idle"]);
    assert_eq!(statuses(&t, 8), ["completed", "skipped", "idle"]);
    assert!(t.frames[8].holders.is_empty(), "free between a and c");
    assert_eq!(statuses(&t, 22), ["completed", "skipped", "completed"]);
    let ttl: Vec<u32> = (0..8).map(|i| t.frames[i].holders[0].ttl).collect();
    assert_eq!(ttl, [10, 9, 8, 7, 6, 5, 4, 3]);
}

#[test]
fn expiry_preset() {
    let t = preset("expiry");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     6   elected
        0    node-a    write       a·1   1     -   accepted
        5    node-a    lost        a·1   1     1   deadline_passed
        6    node-a    expire      a·1   1     0   expired
        6    node-b    acquire     b·2   2     6   elected
        6    node-b    write       b·2   2     -   accepted
        10   node-c    try_acquire -     -     2   contended
        11   node-b    lost        b·2   2     1   deadline_passed
        12   node-a    write       a·1   1     -   rejected_fence
        12   node-a    release     a·1   1     -   rejected_stale
        12   node-b    expire      b·2   2     0   expired
        12   node-c    acquire     c·3   3     6   elected
        12   node-c    write       c·3   3     -   accepted
        17   node-c    lost        c·3   3     1   deadline_passed
        18   node-b    write       b·2   2     -   rejected_fence
        18   node-b    release     b·2   2     -   rejected_stale
        18   node-c    expire      c·3   3     0   expired
        24   node-c    write       c·3   3     -   accepted
        24   node-c    release     c·3   3     -   rejected_stale
        ",
    );
    // The core reports the loss a tick before the store lets the lease go.
    assert_eq!(statuses(&t, 5), ["stale", "idle", "idle"]);
    assert_eq!(t.frames[5].holders[0].owner, "node-a");
    // node-a works on, stale, while node-b holds the lock.
    assert_eq!(statuses(&t, 7), ["stale", "running", "idle"]);
    assert_eq!(t.frames[7].holders[0].token, "b·2");
    // Each one's action has ended by the last tick: none is still running without a lease.
    assert_eq!(statuses(&t, 11), ["stale", "stale", "waiting"]);
    assert_eq!(statuses(&t, 12), ["finished_stale", "stale", "running"]);
    assert_eq!(
        statuses(&t, 24),
        ["finished_stale", "finished_stale", "finished_stale"]
    );
}

#[test]
fn extension_preset() {
    let t = preset("extension");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     6   elected
        0    node-a    write       a·1   1     -   accepted
        1    node-b    try_acquire -     -     5   contended
        2    node-a    extend      a·1   1     6   extended
        3    node-b    skip        -     -     5   skipped
        4    node-a    extend      a·1   1     6   extended
        6    node-a    extend      a·1   1     6   extended
        8    node-a    extend      a·1   1     6   extended
        10   node-a    extend      a·1   1     6   extended
        10   node-c    try_acquire -     -     6   contended
        12   node-a    write       a·1   1     -   accepted
        12   node-a    extend      a·1   1     6   extended
        12   node-a    release     a·1   1     0   released
        12   node-c    acquire     c·2   2     6   elected
        12   node-c    write       c·2   2     -   accepted
        14   node-c    extend      c·2   2     6   extended
        16   node-c    extend      c·2   2     6   extended
        18   node-c    extend      c·2   2     6   extended
        20   node-c    extend      c·2   2     6   extended
        22   node-c    extend      c·2   2     6   extended
        24   node-c    write       c·2   2     -   accepted
        24   node-c    extend      c·2   2     6   extended
        24   node-c    release     c·2   2     0   released
        ",
    );
    assert!(
        t.frames
            .iter()
            .all(|f| f.nodes.iter().all(|n| n.status != "stale"))
    );
}

#[test]
fn group_preset() {
    let t = preset("group");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     10  elected
        0    node-a    write       a·1   1     -   accepted
        0    node-b    acquire     b·2   1     10  elected
        0    node-b    write       b·2   1     -   accepted
        1    node-c    try_acquire -     -     9   contended
        3    node-c    skip        -     -     7   skipped
        8    node-a    write       a·1   1     -   accepted
        8    node-a    release     a·1   1     0   released
        8    node-b    write       b·2   1     -   accepted
        8    node-b    release     b·2   1     0   released
        9    node-d    acquire     d·3   2     10  elected
        9    node-d    write       d·3   2     -   accepted
        17   node-d    write       d·3   2     -   accepted
        17   node-d    release     d·3   2     0   released
        ",
    );
    let slots: Vec<u32> = t.frames[0].holders.iter().map(|h| h.slot).collect();
    assert_eq!(slots, [0, 1]);
    assert_eq!(
        t.frames[9].holders[0].slot, 0,
        "d takes the lowest free slot"
    );
}

#[test]
fn group_with_one_and_three_slots() {
    let one = run(
        "group",
        Overrides {
            slots: Some(1),
            ..Overrides::default()
        },
    );
    let outcomes: Vec<(&str, &str)> = one
        .events
        .iter()
        .filter(|e| e.operation == "acquire" || e.operation == "skip")
        .map(|e| (e.candidate.as_str(), e.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("node-a", "elected"),
            ("node-b", "skipped"),
            ("node-c", "skipped"),
            ("node-d", "elected")
        ]
    );
    let three = run(
        "group",
        Overrides {
            slots: Some(3),
            ..Overrides::default()
        },
    );
    assert_eq!(
        statuses(&three, 1),
        ["running", "running", "running", "idle"]
    );
    assert_eq!(three.frames[1].holders.len(), 3);
}

#[test]
fn fencing_preset() {
    let t = preset("fencing");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     4   elected
        0    node-a    write       a·1   1     -   accepted
        1    node-b    try_acquire -     -     3   contended
        3    node-a    lost        a·1   1     1   deadline_passed
        4    node-a    expire      a·1   1     0   expired
        4    node-b    acquire     b·2   2     4   elected
        4    node-b    write       b·2   2     -   accepted
        7    node-b    lost        b·2   2     1   deadline_passed
        8    node-b    expire      b·2   2     0   expired
        9    node-c    acquire     c·3   3     4   elected
        9    node-c    write       c·3   3     -   accepted
        10   node-a    write       a·1   1     -   rejected_fence
        10   node-a    release     a·1   1     -   rejected_stale
        12   node-c    lost        c·3   3     1   deadline_passed
        13   node-c    expire      c·3   3     0   expired
        14   node-b    write       b·2   2     -   rejected_fence
        14   node-b    release     b·2   2     -   rejected_stale
        19   node-c    write       c·3   3     -   accepted
        19   node-c    release     c·3   3     -   rejected_stale
        ",
    );
    let highest = |r: &sim::Resource| {
        r.slots
            .iter()
            .map(|s| (s.slot, s.highest_fence))
            .collect::<Vec<_>>()
    };
    let before = &t.frames[9].resource;
    assert_eq!(highest(before), [(0, 3)]);
    assert_eq!((before.writes, before.rejected), (3, 0));
    let after = &t.frames[10].resource;
    assert_eq!(highest(after), [(0, 3)]);
    assert_eq!(
        (after.last_writer.as_deref(), after.writes, after.rejected),
        (Some("node-c"), 3, 1),
        "node-a's stale write changed nothing"
    );
}

#[test]
fn period_preset() {
    let t = preset("period");
    assert_events(
        &t,
        "
        tick candidate operation   token fence ttl outcome
        0    node-a    acquire     a·1   1     6   elected(period=0)
        0    node-a    write       a·1   1     -   accepted
        2    node-a    write       a·1   1     -   accepted
        2    node-a    release     a·1   1     0   released
        3    node-b    try_acquire -     -     -   already_ran(period=0,by=node-a,tick=0)
        5    node-c    try_acquire -     -     -   already_ran(period=0,by=node-a,tick=0)
        8    node-a    acquire     a·2   2     6   elected(period=1)
        8    node-a    write       a·2   2     -   accepted
        10   node-a    write       a·2   2     -   accepted
        10   node-a    release     a·2   2     0   released
        11   node-b    try_acquire -     -     -   already_ran(period=1,by=node-a,tick=8)
        13   node-c    try_acquire -     -     -   already_ran(period=1,by=node-a,tick=8)
        16   node-a    acquire     a·3   3     6   elected(period=2)
        16   node-a    write       a·3   3     -   accepted
        18   node-a    write       a·3   3     -   accepted
        18   node-a    release     a·3   3     0   released
        19   node-b    try_acquire -     -     -   already_ran(period=2,by=node-a,tick=16)
        21   node-c    try_acquire -     -     -   already_ran(period=2,by=node-a,tick=16)
        ",
    );
    assert_eq!(statuses(&t, 1), ["running", "idle", "idle"]);
    assert_eq!(statuses(&t, 3), ["completed", "already_ran", "idle"]);
    assert_eq!(statuses(&t, 5), ["completed", "already_ran", "already_ran"]);
    assert_eq!(statuses(&t, 8), ["running", "already_ran", "already_ran"]);
    // The ledger keeps the latest period run across the release.
    let ledger = |tick: usize| {
        t.frames[tick]
            .ledger
            .as_ref()
            .map(|l| (l.period, l.by.as_str(), l.tick))
    };
    assert_eq!(ledger(0), Some((0, "node-a", 0)));
    assert_eq!(ledger(7), Some((0, "node-a", 0)));
    assert_eq!(ledger(23), Some((2, "node-a", 16)));
}

/// The period of the ledger that contains tick `tick` (the store's clock starts at the epoch).
fn period_of(tick: u32, period: u32) -> i64 {
    i64::from(tick / period)
}

#[test]
fn once_per_period_one_run_each_and_the_late_replicas_already_ran() {
    for period in [6, 8, 10, 12] {
        let t = run(
            "period",
            Overrides {
                period: Some(period),
                ..Overrides::default()
            },
        );
        let elected: Vec<_> = t.events.iter().filter(|e| e.outcome == "elected").collect();
        let periods = t.max_tick / period + 1;
        assert_eq!(
            elected.len() as u32,
            periods,
            "period {period}: one run per period"
        );
        for (k, e) in elected.iter().enumerate() {
            // node-a's timer fires first in every period.
            assert_eq!(e.candidate, "node-a");
            assert_eq!(e.tick, k as u32 * period);
            let l = e.ledger.as_ref().expect("a grant records its period");
            assert_eq!(
                (l.period, l.by.as_str(), l.tick),
                (k as i64, "node-a", e.tick)
            );
        }
        let attempts: Vec<_> = t
            .events
            .iter()
            .filter(|e| e.operation == "try_acquire")
            .collect();
        assert!(!attempts.is_empty());
        for e in &attempts {
            assert_eq!(e.outcome, "already_ran", "period {period}: {e:?}");
            assert_ne!(e.candidate, "node-a");
            assert_eq!(e.ttl, None, "no lease caused it");
            let l = e.ledger.as_ref().expect("the refusing record");
            let runner = elected
                .iter()
                .find(|r| r.ledger.as_ref().map(|x| x.period) == Some(l.period))
                .expect("the refused period ran");
            assert_eq!(l.period, period_of(e.tick, period));
            assert_eq!((l.by.as_str(), l.tick), ("node-a", runner.tick));
            // The lock is free when the ledger refuses: the refusal is not contention.
            assert!(
                t.frames[e.tick as usize].holders.is_empty(),
                "period {period}: the lock is free at tick {}",
                e.tick
            );
            assert_eq!(
                t.frames[e.tick as usize]
                    .nodes
                    .iter()
                    .find(|n| n.id == e.candidate)
                    .map(|n| n.status.as_str()),
                Some("already_ran")
            );
        }
        // Both late replicas are refused once in every period they try in.
        for late in ["node-b", "node-c"] {
            let refused: Vec<i64> = attempts
                .iter()
                .filter(|e| e.candidate == late)
                .filter_map(|e| e.ledger.as_ref().map(|l| l.period))
                .collect();
            let expected: Vec<i64> = (0..i64::from(periods)).take(refused.len()).collect();
            assert_eq!(refused, expected, "period {period}: {late}");
            assert!(refused.len() as u32 >= periods - 1);
        }
        assert!(
            t.events
                .iter()
                .all(|e| e.outcome != "contended" && e.outcome != "skipped")
        );
        assert!(
            t.frames
                .iter()
                .all(|f| f.nodes.iter().filter(|n| n.status == "running").count() <= 1)
        );
    }
}

#[test]
fn the_period_scenario_is_deterministic() {
    let first = serde_json::to_string(&preset("period")).unwrap();
    for _ in 0..3 {
        assert_eq!(serde_json::to_string(&preset("period")).unwrap(), first);
    }
}

#[test]
fn a_claim_the_lock_keeps_out_is_contention_until_the_period_has_run() {
    // A 10-tick action with a 30-tick lease: node-a holds the lock into period 1.
    let t = run(
        "period",
        Overrides {
            action: Some(10),
            lease: Some(30),
            ..Overrides::default()
        },
    );
    let rows: Vec<(u32, &str, &str)> = t
        .events
        .iter()
        .filter(|e| e.operation == "try_acquire" || e.operation == "skip" || e.outcome == "elected")
        .map(|e| (e.tick, e.candidate.as_str(), e.outcome.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            (0, "node-a", "elected"),
            (3, "node-b", "already_ran"),
            (5, "node-c", "already_ran"),
            // node-a's period-1 timer fired while it was still running: it claims at tick 10.
            (10, "node-a", "elected"),
            (11, "node-b", "already_ran"),
            (13, "node-c", "already_ran"),
            // Period 2 has not run and node-a holds the lock: real contention, so node-b waits.
            (19, "node-b", "contended"),
            // node-a's release at tick 20 keeps the lock for node-b, which was waiting (the
            // store hands off): node-a's own late period-2 claim right after it is contention,
            // node-b's wake-up retry wins period 2, and node-a's retry and node-c then meet
            // the ledger.
            (20, "node-a", "contended"),
            (20, "node-b", "elected"),
            (20, "node-a", "already_ran"),
            (21, "node-c", "already_ran"),
        ]
    );
}

#[test]
fn a_stale_write_is_rejected_while_the_successor_holds_the_lock() {
    let t = preset("fencing");
    let rejected = t
        .events
        .iter()
        .find(|e| e.outcome == "rejected_fence")
        .expect("a rejected write");
    assert_eq!(
        (rejected.candidate.as_str(), rejected.fence),
        ("node-a", Some(1))
    );
    // node-a ran without a lease up to this final write; the frame closes after its action ended.
    assert_eq!(
        t.frames[rejected.tick as usize - 1].nodes[0].status,
        "stale"
    );
    let frame = &t.frames[rejected.tick as usize];
    assert_eq!(frame.nodes[0].status, "finished_stale");
    // Fences are compared within the writer's slot only.
    let slot = rejected.slot.expect("a write names its slot");
    assert!(
        frame
            .holders
            .iter()
            .any(|h| h.slot == slot && Some(h.fence) > rejected.fence),
        "a successor holds the slot"
    );
    let domain = frame.resource.slots.iter().find(|s| s.slot == slot);
    assert!(domain.is_some_and(|s| Some(s.highest_fence) > rejected.fence));
}

/// The token label of the lease a node shows in frame `tick`.
fn token_of(t: &Timeline, tick: usize, node: usize) -> Option<&str> {
    t.frames[tick].nodes[node].token.as_deref()
}

/// The tick of the action's final write with lease `token` (every action writes when it starts
/// and when it ends), if it has happened within the run.
fn final_write(t: &Timeline, token: &str) -> Option<u32> {
    t.events
        .iter()
        .filter(|e| e.operation == "write" && e.token.as_deref() == Some(token))
        .map(|e| e.tick)
        .nth(1)
}

#[test]
fn a_stale_holder_is_stale_only_until_its_action_ends() {
    let t = preset("fencing");
    assert_eq!(statuses(&t, 9), ["stale", "stale", "running"]);
    // node-a's action ends at tick 10 (its final write is rejected): no longer "still running".
    assert_eq!(statuses(&t, 10), ["finished_stale", "stale", "running"]);
    assert_eq!(
        statuses(&t, 14),
        ["finished_stale", "finished_stale", "stale"]
    );
    assert_eq!(
        statuses(&t, 22),
        ["finished_stale", "finished_stale", "finished_stale"]
    );
    assert_eq!(token_of(&t, 22, 0), Some("a·1"), "the card keeps its lease");

    // Everywhere: `stale` exactly while the action runs after the lease was lost, then
    // `finished_stale` once its final write happened.
    for (scenario, o) in grid() {
        let t = run(scenario.id(), o);
        for f in &t.frames {
            for (i, n) in f.nodes.iter().enumerate() {
                let ends = || token_of(&t, f.tick as usize, i).and_then(|tk| final_write(&t, tk));
                match n.status.as_str() {
                    "stale" => assert!(
                        ends().is_none_or(|end| end > f.tick),
                        "{scenario} {:?} tick {}: {} is stale after its action ended",
                        t.params,
                        f.tick,
                        n.id
                    ),
                    "finished_stale" => assert!(
                        ends().is_some_and(|end| end <= f.tick),
                        "{scenario} {:?} tick {}: {} finished before its action ended",
                        t.params,
                        f.tick,
                        n.id
                    ),
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn fences_are_compared_within_a_slot_only() {
    // Two slots, leases shorter than the action: slot 0 passes a -> c -> d while slot 1 keeps
    // node-b's fence 1. node-b's final write (fence 1, slot 1) comes after node-c wrote fence 2
    // in slot 0, and it is accepted: fences of different slots are never compared.
    let t = run(
        "group",
        Overrides {
            lease: Some(4),
            wait: Some(6),
            ..Overrides::default()
        },
    );
    let json = serde_json::to_value(&t).unwrap();
    let write_at_8 = |node: &str| {
        json["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["tick"] == 8 && e["candidate"] == node && e["operation"] == "write")
            .map(|e| (e["slot"].clone(), e["fence"].clone(), e["outcome"].clone()))
    };
    let j = |slot: u32, fence: u64, outcome: &str| {
        Some((
            serde_json::json!(slot),
            serde_json::json!(fence),
            serde_json::json!(outcome),
        ))
    };
    assert_eq!(write_at_8("node-a"), j(0, 1, "rejected_fence"));
    assert_eq!(write_at_8("node-b"), j(1, 1, "accepted"));
    assert_eq!(
        json["frames"][8]["resource"]["slots"],
        serde_json::json!([
            {"slot": 0, "highest_fence": 2, "last_writer": "node-c", "writes": 2, "rejected": 1},
            {"slot": 1, "highest_fence": 1, "last_writer": "node-b", "writes": 2, "rejected": 0},
        ])
    );

    // Everywhere: a write is accepted exactly when its fence is at least the highest accepted
    // in its own slot, and each frame's resource shows that per slot.
    for (scenario, o) in grid() {
        let t = run(scenario.id(), o);
        let json = serde_json::to_value(&t).unwrap();
        let mut highest = std::collections::BTreeMap::<u64, u64>::new();
        let events = json["events"].as_array().unwrap();
        for f in json["frames"].as_array().unwrap() {
            for e in events.iter().filter(|e| e["tick"] == f["tick"]) {
                if e["operation"] != "write" {
                    continue;
                }
                let slot = e["slot"].as_u64().expect("a write names its slot");
                let fence = e["fence"].as_u64().expect("a write has a fence");
                let admitted = highest.get(&slot).is_none_or(|&h| fence >= h);
                assert_eq!(
                    e["outcome"] == "accepted",
                    admitted,
                    "{scenario} {:?}: {e}",
                    t.params
                );
                if admitted {
                    highest.insert(slot, fence);
                }
            }
            let shown: Vec<(u64, u64)> = f["resource"]["slots"]
                .as_array()
                .expect("the resource lists its slots")
                .iter()
                .map(|s| {
                    (
                        s["slot"].as_u64().unwrap(),
                        s["highest_fence"].as_u64().unwrap(),
                    )
                })
                .collect();
            let expected: Vec<(u64, u64)> = highest.iter().map(|(s, h)| (*s, *h)).collect();
            assert_eq!(
                shown, expected,
                "{scenario} {:?} tick {}",
                t.params, f["tick"]
            );
        }
    }
}

#[test]
fn min_lease_changes_who_gets_the_lock_and_when() {
    let acquired_by_c = |o: Overrides| {
        run("contention", o)
            .events
            .iter()
            .find(|e| {
                e.candidate == "node-c" && (e.operation == "acquire" || e.operation == "skip")
            })
            .map(|e| (e.tick, e.outcome.clone()))
    };
    let base = Overrides::default();
    assert_eq!(acquired_by_c(base), Some((9, "elected".to_owned())));
    let held = Overrides {
        min_lease: Some(10),
        ..base
    };
    assert_eq!(
        acquired_by_c(held),
        Some((10, "elected".to_owned())),
        "c waits for a's minimum lease"
    );
    let impatient = Overrides {
        wait: Some(0),
        ..base
    };
    assert_eq!(acquired_by_c(impatient), Some((9, "elected".to_owned())));
    let held_impatient = Overrides {
        min_lease: Some(10),
        wait: Some(0),
        ..base
    };
    assert_eq!(
        acquired_by_c(held_impatient),
        Some((9, "skipped".to_owned())),
        "the lingering lease makes c skip"
    );

    let t = run("contention", held);
    let release = t
        .events
        .iter()
        .find(|e| e.operation == "release")
        .expect("a release");
    assert_eq!(
        (release.tick, release.outcome.as_str(), release.ttl),
        (8, "lingered", Some(2))
    );
    assert_eq!(statuses(&t, 8), ["completed", "skipped", "idle"]);
    assert_eq!(
        t.frames[8].holders[0].owner, "node-a",
        "the record outlives the action"
    );
}

/// A grid of parameters around every preset.
fn grid() -> Vec<(Scenario, Overrides)> {
    let mut out = Vec::new();
    for scenario in Scenario::ALL {
        // The partition scenario takes none of these parameters (tests/partition.rs runs it).
        if scenario.is_partition() {
            continue;
        }
        let slots: &[u32] = if scenario.is_group() {
            &[1, 2, 3]
        } else {
            &[1]
        };
        let periods: &[Option<u32>] = if scenario.is_period() {
            &[Some(6), Some(12)]
        } else {
            &[None]
        };
        for &action in &[1, 8, 30] {
            for &lease in &[2, 6, 30] {
                for &wait in &[0, 3] {
                    for min_lease in [0, lease] {
                        for auto_extend in [false, true] {
                            for &s in slots {
                                for &period in periods {
                                    out.push((
                                        scenario,
                                        Overrides {
                                            action: Some(action),
                                            lease: Some(lease),
                                            wait: Some(wait),
                                            min_lease: Some(min_lease),
                                            auto_extend: Some(auto_extend),
                                            slots: Some(s),
                                            period,
                                            ..Overrides::default()
                                        },
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn never_more_runners_than_slots_and_every_runner_holds_a_live_lease() {
    for (scenario, o) in grid() {
        let t = run(scenario.id(), o);
        let slots = t.params.slots as usize;
        for f in &t.frames {
            let running: Vec<_> = f.nodes.iter().filter(|n| n.status == "running").collect();
            assert!(
                running.len() <= slots,
                "{scenario} {:?} tick {}: {} running",
                t.params,
                f.tick,
                running.len()
            );
            assert!(f.holders.len() <= slots);
            for n in &running {
                assert!(
                    f.holders.iter().any(|h| Some(h.fence) == n.fence
                        && Some(h.slot) == n.slot
                        && h.owner == n.id),
                    "{scenario} {:?} tick {}: {} runs without a live lease",
                    t.params,
                    f.tick,
                    n.id
                );
            }
            for h in &f.holders {
                assert!(h.ttl >= 1 && h.ttl == h.expires_tick - f.tick);
                assert!(h.acquired_tick <= f.tick);
            }
        }
    }
}

#[test]
fn frames_cover_every_tick_and_events_are_in_order() {
    for (scenario, o) in grid() {
        let t = run(scenario.id(), o);
        assert_eq!(t.max_tick, scenario.max_tick());
        assert!(t.max_tick >= 22);
        assert_eq!(t.frames.len(), t.max_tick as usize + 1);
        assert!(
            t.frames
                .iter()
                .enumerate()
                .all(|(i, f)| f.tick as usize == i)
        );
        assert!(t.events.windows(2).all(|w| w[0].tick <= w[1].tick));
        assert!(t.events.iter().all(|e| e.tick <= t.max_tick));
        for f in &t.frames {
            let ids: Vec<&str> = f.nodes.iter().map(|n| n.id.as_str()).collect();
            assert_eq!(ids, t.candidates);
            assert!(
                f.nodes
                    .iter()
                    .all(|n| Status::ALL.iter().any(|s| s.as_str() == n.status))
            );
        }
    }
}

#[test]
fn the_same_input_gives_byte_identical_json() {
    for (scenario, o) in grid().into_iter().step_by(7) {
        let first = serde_json::to_string(&run(scenario.id(), o)).unwrap();
        let second = serde_json::to_string(&run(scenario.id(), o)).unwrap();
        assert_eq!(first, second, "{scenario} {o:?}");
    }
}

#[test]
fn the_json_round_trips_and_uses_the_contract_names() {
    let t = preset("expiry");
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["lock"], "invoice-close");
    assert_eq!(json["params"]["min_lease"], 0);
    assert_eq!(json["params"]["auto_extend"], false);
    assert_eq!(json["frames"][0]["nodes"][0]["status"], "running");
    assert_eq!(json["frames"][0]["holders"][0]["expires_tick"], 6);
    assert_eq!(
        json["frames"][0]["resource"]["slots"][0]["highest_fence"],
        1
    );
    assert_eq!(json["events"][0]["slot"], 0);
    assert_eq!(json["events"][0]["operation"], "acquire");
    let back: Timeline = serde_json::from_value(json).unwrap();
    assert_eq!(back, t);
}

#[test]
fn scenarios_list_their_presets_in_display_order() {
    let list = sim::scenarios();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "contention",
            "expiry",
            "extension",
            "group",
            "fencing",
            "period",
            "partition"
        ]
    );
    for info in &list {
        let s = Scenario::parse(&info.id).unwrap();
        assert_eq!(info.preset, s.preset());
        assert_eq!(preset(&info.id).params, s.preset());
    }
}

#[test]
fn bad_parameters_give_typed_errors_naming_the_parameter() {
    let bad = |scenario: &str, o: Overrides| sim::simulate(scenario, &o).unwrap_err();
    let d = Overrides::default();
    let out_of_range = |e: SimError| match e {
        SimError::OutOfRange {
            parameter,
            min,
            max,
            value,
            ..
        } => (parameter, min, max, value),
        other => panic!("not OutOfRange: {other}"),
    };
    assert_eq!(
        out_of_range(bad(
            "contention",
            Overrides {
                action: Some(0),
                ..d
            }
        )),
        ("action", 1, 30, 0)
    );
    assert_eq!(
        out_of_range(bad(
            "contention",
            Overrides {
                action: Some(31),
                ..d
            }
        )),
        ("action", 1, 30, 31)
    );
    assert_eq!(
        out_of_range(bad(
            "expiry",
            Overrides {
                lease: Some(1),
                ..d
            }
        )),
        ("lease", 2, 30, 1)
    );
    assert_eq!(
        out_of_range(bad(
            "fencing",
            Overrides {
                wait: Some(21),
                ..d
            }
        )),
        ("wait", 0, 20, 21)
    );
    assert_eq!(
        out_of_range(bad(
            "group",
            Overrides {
                slots: Some(4),
                ..d
            }
        )),
        ("slots", 1, 3, 4)
    );
    assert_eq!(
        out_of_range(bad(
            "group",
            Overrides {
                slots: Some(0),
                ..d
            }
        )),
        ("slots", 1, 3, 0)
    );
    assert_eq!(
        bad(
            "extension",
            Overrides {
                lease: Some(4),
                min_lease: Some(5),
                ..d
            }
        ),
        SimError::MinLeaseAboveLease {
            min_lease: 5,
            lease: 4
        }
    );
    let e = bad(
        "contention",
        Overrides {
            slots: Some(2),
            ..d
        },
    );
    assert!(matches!(
        e,
        SimError::SlotsOutsideGroup {
            scenario: "contention",
            slots: 2
        }
    ));
    let e = bad("Contention", d);
    assert!(matches!(&e, SimError::UnknownScenario { given, .. } if given == "Contention"));
    assert!(
        e.to_string()
            .contains("contention, expiry, extension, group, fencing, period")
    );
    assert_eq!(
        out_of_range(bad(
            "period",
            Overrides {
                period: Some(5),
                ..d
            }
        )),
        ("period", 6, 12, 5)
    );
    assert_eq!(
        out_of_range(bad(
            "period",
            Overrides {
                period: Some(13),
                ..d
            }
        )),
        ("period", 6, 12, 13)
    );
    let e = bad(
        "contention",
        Overrides {
            period: Some(8),
            ..d
        },
    );
    assert_eq!(
        e,
        SimError::PeriodOutsidePeriodScenario {
            scenario: "contention",
            period: 8
        }
    );
    assert_eq!(
        e.to_string(),
        "`period` applies only to the `period` scenario, not to `contention`; got 8 ticks"
    );
    let e = bad(
        "period",
        Overrides {
            slots: Some(2),
            ..d
        },
    );
    assert!(matches!(
        e,
        SimError::SlotsOutsideGroup {
            scenario: "period",
            slots: 2
        }
    ));
    assert!(e.is_usage());
    // The limits themselves are accepted.
    for o in [
        Overrides {
            action: Some(1),
            lease: Some(2),
            wait: Some(0),
            min_lease: Some(2),
            ..d
        },
        Overrides {
            action: Some(30),
            lease: Some(30),
            wait: Some(20),
            min_lease: Some(0),
            ..d
        },
    ] {
        let t = run("contention", o);
        let expected: Params = o.apply(Scenario::Contention).unwrap();
        assert_eq!(t.params, expected);
    }
}

#[tokio::test]
async fn simulate_also_works_when_called_on_a_runtime_thread() {
    let t = sim::simulate("contention", &Overrides::default()).unwrap();
    assert_eq!(t.events.len(), 10);
}
