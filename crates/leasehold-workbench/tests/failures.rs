//! A failing action and a failing store (`fail_action`, `outage_from` / `outage_ticks`): what
//! the real elector reports for each, read from the simulation's events and frames, and how bad
//! values are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use leasehold_workbench::sim::{self, OUTAGE_TICKS, Overrides, Scenario, SimError, Timeline};

fn run(scenario: &str, overrides: Overrides) -> Timeline {
    sim::simulate(scenario, &overrides).expect("valid parameters")
}

/// `(tick, operation, outcome)` of every event of `node`.
fn rows(t: &Timeline, node: &str) -> Vec<(u32, String, String)> {
    t.events
        .iter()
        .filter(|e| e.candidate == node)
        .map(|e| (e.tick, e.operation.clone(), e.outcome.clone()))
        .collect()
}

fn row(tick: u32, operation: &str, outcome: &str) -> (u32, String, String) {
    (tick, operation.to_owned(), outcome.to_owned())
}

/// The status of `node` at the end of `tick`.
fn status(t: &Timeline, tick: u32, node: &str) -> String {
    let frame = &t.frames[tick as usize];
    let n = frame
        .nodes
        .iter()
        .find(|n| n.id == node)
        .expect("a candidate");
    n.status.clone()
}

fn outage(from: u32, ticks: u32) -> Overrides {
    Overrides {
        outage_from: Some(from),
        outage_ticks: Some(ticks),
        ..Overrides::default()
    }
}

#[test]
fn a_failing_action_is_reported_as_action_failed_and_its_lease_released() {
    let t = run(
        "contention",
        Overrides {
            fail_action: Some('c'),
            ..Overrides::default()
        },
    );
    assert_eq!(t.params.fail_action, Some('c'));
    // node-c works its 8 ticks, returns an error instead of its last write, and the elector
    // releases the lease before `run` returns Outcome::ActionFailed.
    assert_eq!(
        rows(&t, "node-c"),
        [
            row(9, "acquire", "elected"),
            row(9, "write", "accepted"),
            row(17, "release", "released"),
            row(17, "fail", "action_failed"),
        ]
    );
    let fail = t.events.iter().find(|e| e.operation == "fail").unwrap();
    assert_eq!((fail.token.as_deref(), fail.fence), (Some("c·2"), Some(2)));
    assert_eq!(status(&t, 16, "node-c"), "running");
    assert_eq!(status(&t, 17, "node-c"), "action_failed");
    assert_eq!(status(&t, t.max_tick, "node-c"), "action_failed");
    assert!(t.frames[17].holders.is_empty(), "the lease was released");
    // The others are as in the preset: node-a completes, node-b skips.
    assert_eq!(status(&t, t.max_tick, "node-a"), "completed");
    assert_eq!(status(&t, t.max_tick, "node-b"), "skipped");
    assert_eq!(
        t.events
            .iter()
            .filter(|e| e.outcome == "action_failed")
            .count(),
        1
    );
}

#[test]
fn a_failed_action_lets_a_waiting_node_in_at_once_and_keeps_the_min_lease() {
    let failing_a = |min_lease| Overrides {
        action: Some(4),
        wait: Some(4),
        min_lease: Some(min_lease),
        fail_action: Some('a'),
        ..Overrides::default()
    };
    let t = run("contention", failing_a(0));
    assert_eq!(
        rows(&t, "node-a"),
        [
            row(0, "acquire", "elected"),
            row(0, "write", "accepted"),
            row(4, "release", "released"),
            row(4, "fail", "action_failed"),
        ]
    );
    assert_eq!(rows(&t, "node-b")[1], row(4, "acquire", "elected"));
    // With a min lease the failed run's lock stays taken as a successful one's would.
    let held = run("contention", failing_a(6));
    assert_eq!(rows(&held, "node-a")[2], row(4, "release", "lingered"));
    assert!(rows(&held, "node-b").contains(&row(5, "skip", "skipped")));
}

#[test]
fn a_failing_action_in_the_period_scenario_still_uses_up_its_period() {
    let t = run(
        "period",
        Overrides {
            fail_action: Some('a'),
            ..Overrides::default()
        },
    );
    let fails: Vec<u32> = t
        .events
        .iter()
        .filter(|e| e.outcome == "action_failed")
        .map(|e| e.tick)
        .collect();
    assert_eq!(fails, [2, 10, 18]);
    assert!(
        t.events
            .iter()
            .filter(|e| e.candidate != "node-a")
            .all(|e| e.outcome == "already_ran"),
        "the ledger keeps a failed run's period as run"
    );
}

#[test]
fn a_store_error_is_never_reported_as_contention() {
    // Without the outage node-b finds node-a's lock taken and skips at tick 3.
    let plain = run("contention", Overrides::default());
    assert_eq!(
        rows(&plain, "node-b"),
        [
            row(1, "try_acquire", "contended"),
            row(3, "skip", "skipped")
        ]
    );
    // With the store down during ticks 1 to 3, every attempt of its wait fails: the run
    // returns the store's error, not a skip.
    let t = run("contention", outage(1, 3));
    assert_eq!((t.params.outage_from, t.params.outage_ticks), (1, 3));
    assert_eq!(
        rows(&t, "node-b"),
        [
            row(1, "try_acquire", "store_error"),
            row(3, "fail", "store_error")
        ]
    );
    assert!(
        !t.events.iter().any(
            |e| e.candidate == "node-b" && (e.outcome == "skipped" || e.outcome == "contended")
        )
    );
    assert_eq!(status(&t, 2, "node-b"), "waiting");
    assert_eq!(status(&t, 3, "node-b"), "store_error");
    assert_eq!(status(&t, t.max_tick, "node-b"), "store_error");
    // node-a was elected before the outage and runs on; node-c comes after it.
    assert_eq!(
        rows(&t, "node-a"),
        rows(&plain, "node-a"),
        "the holder does not need the store until its release"
    );
    assert_eq!(rows(&t, "node-c")[0], row(9, "acquire", "elected"));
}

#[test]
fn a_store_that_answers_again_within_the_wait_gives_contention_back() {
    let t = run(
        "contention",
        Overrides {
            wait: Some(4),
            ..outage(1, 3)
        },
    );
    assert_eq!(
        rows(&t, "node-b"),
        [
            row(1, "try_acquire", "store_error"),
            row(4, "try_acquire", "contended"),
            row(5, "skip", "skipped"),
        ]
    );
    assert_eq!(status(&t, 5, "node-b"), "skipped");
}

#[test]
fn a_release_the_store_cannot_take_leaves_the_lease_to_its_expiry() {
    let t = run(
        "contention",
        Overrides {
            action: Some(2),
            ..outage(2, 3)
        },
    );
    let a = rows(&t, "node-a");
    assert!(a.contains(&row(2, "release", "store_error")), "{a:?}");
    assert!(a.contains(&row(10, "expire", "expired")), "{a:?}");
    assert_eq!(rows(&t, "node-c")[1], row(10, "acquire", "elected"));
}

#[test]
fn an_extension_the_store_cannot_take_ends_in_a_lost_lease() {
    let t = run("extension", outage(3, 6));
    let a = rows(&t, "node-a");
    assert!(a.contains(&row(4, "extend", "store_error")), "{a:?}");
    assert!(a.contains(&row(7, "lost", "deadline_passed")), "{a:?}");
}

#[test]
fn failures_are_deterministic() {
    let o = Overrides {
        fail_action: Some('b'),
        wait: Some(9),
        ..outage(3, 2)
    };
    let first = serde_json::to_string(&run("contention", o)).unwrap();
    assert_eq!(first, serde_json::to_string(&run("contention", o)).unwrap());
    assert!(first.contains("\"fail_action\":\"b\""));
}

#[test]
fn presets_have_neither_a_failing_action_nor_an_outage_in_their_json() {
    for scenario in Scenario::ALL {
        let p = scenario.preset();
        assert_eq!((p.fail_action, p.outage_from, p.outage_ticks), (None, 0, 0));
        let json = serde_json::to_value(p).unwrap();
        for key in ["fail_action", "outage_from", "outage_ticks"] {
            assert!(json.get(key).is_none(), "{scenario}: {key}");
        }
    }
}

#[test]
fn bad_failure_parameters_are_refused_with_typed_errors() {
    let err = |scenario: &str, o: Overrides| sim::simulate(scenario, &o).unwrap_err();
    let too_long = OUTAGE_TICKS.end() + 1;
    assert_eq!(
        err("contention", outage(0, too_long)),
        SimError::OutOfRange {
            parameter: "outage_ticks",
            value: too_long,
            min: 0,
            max: 12,
            unit: "ticks"
        }
    );
    assert!(
        sim::simulate("contention", &outage(20, 3)).is_ok(),
        "ends at the last tick"
    );
    let beyond = err("contention", outage(20, 4));
    assert_eq!(
        beyond,
        SimError::OutageBeyondRun {
            outage_from: 20,
            outage_ticks: 4,
            max_tick: 22
        }
    );
    assert!(beyond.is_usage());
    assert!(beyond.to_string().contains("ticks 0 to 22"), "{beyond}");
    assert!(matches!(
        err("contention", outage(23, 0)),
        SimError::OutageBeyondRun { .. }
    ));
    let d = Overrides {
        fail_action: Some('d'),
        ..Overrides::default()
    };
    let unknown = err("contention", d);
    assert_eq!(
        unknown,
        SimError::UnknownCandidate {
            scenario: "contention",
            given: "d".into(),
            expected: "node-a, node-b, node-c".into()
        }
    );
    assert!(unknown.to_string().contains("node-a, node-b, node-c"));
    assert!(sim::simulate("group", &d).is_ok(), "the group has a node-d");
    assert_eq!(Scenario::Expiry.candidate_letter("node-b"), Ok('b'));
    assert!(Scenario::Expiry.candidate_letter("node-").is_err());
    assert!(Scenario::Expiry.candidate_letter("bb").is_err());
}
