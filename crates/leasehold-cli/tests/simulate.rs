//! `leasehold simulate` end to end, with the built binary.

mod common;

use common::{Env, code, text};
use leasehold_workbench::sim::{self, Overrides};

#[test]
fn prints_an_aligned_table_and_a_summary() {
    let env = Env::new();
    let out = env.output(&["simulate", "--scenario", "contention"]);
    assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "nothing on stderr");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "TICK",
            "CANDIDATE",
            "OPERATION",
            "TOKEN",
            "FENCE",
            "TTL",
            "OUTCOME"
        ]
    );
    // Columns are aligned: every column starts at the same character in every row.
    let start = |line: &str, col: usize| {
        let mut starts = Vec::new();
        let mut prev_space = true;
        for (i, ch) in line.chars().enumerate() {
            if ch != ' ' && prev_space {
                starts.push(i);
            }
            prev_space = ch == ' ';
        }
        starts[col]
    };
    let rows = &lines[1..lines.len() - 1];
    assert_eq!(rows.len(), 10);
    for col in 0..7 {
        assert!(
            rows.iter().all(|r| start(r, col) == start(lines[0], col)),
            "column {col} misaligned:\n{stdout}"
        );
    }
    assert_eq!(
        rows[2].split_whitespace().collect::<Vec<_>>(),
        ["1", "node-b", "try_acquire", "-", "-", "9", "contended"]
    );
    let summary = lines[lines.len() - 1];
    assert!(
        summary.starts_with("contention: action 8 lease 10 wait 2"),
        "{summary}"
    );
    assert!(
        summary.contains("node-a completed, node-b skipped, node-c completed"),
        "{summary}"
    );
}

#[test]
fn json_is_the_timeline_the_library_computes() {
    let env = Env::new();
    let out = env.output(&[
        "simulate",
        "--scenario",
        "group",
        "--slots",
        "3",
        "--auto-extend",
        "true",
        "--json",
    ]);
    assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    let printed: sim::Timeline = serde_json::from_slice(&out.stdout).expect("a timeline");
    let expected = sim::simulate(
        "group",
        &Overrides {
            slots: Some(3),
            auto_extend: Some(true),
            ..Overrides::default()
        },
    )
    .expect("valid");
    assert_eq!(printed, expected);
    assert_eq!(printed.params.slots, 3);
}

#[test]
fn options_override_the_preset() {
    let env = Env::new();
    let out = env.output(&[
        "simulate",
        "--scenario",
        "contention",
        "--min-lease",
        "10",
        "--wait",
        "0",
    ]);
    assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["9", "node-c", "skip", "-", "-", "1", "skipped"]),
        "{stdout}"
    );
}

#[test]
fn the_period_scenario_shows_ledger_refusals_as_already_ran() {
    let env = Env::new();
    let out = env.output(&["simulate", "--scenario", "period", "--period", "6"]);
    assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec![
            "9",
            "node-b",
            "try_acquire",
            "-",
            "-",
            "-",
            "already_ran(period=1,by=node-a,tick=6)"
        ]),
        "{stdout}"
    );
    assert!(!stdout.contains("contended"), "{stdout}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with(
            "period: action 2 lease 6 wait 2 min_lease 0 auto_extend false slots 1 period 6;"
        ),
        "{summary}"
    );
}

#[test]
fn bad_input_exits_125_with_the_reason() {
    let env = Env::new();
    for (args, needle) in [
        (&["--scenario", "nope"][..], "unknown scenario `nope`"),
        (
            &["--scenario", "expiry", "--action", "0"],
            "`action` must be between 1 and 30 ticks, got 0",
        ),
        (
            &["--scenario", "expiry", "--min-lease", "7"],
            "`min_lease` must be between 0 and the lease (6 ticks), got 7",
        ),
        (
            &["--scenario", "fencing", "--slots", "2"],
            "`slots` must be 1 in the `fencing` scenario",
        ),
        (
            &["--scenario", "group", "--slots", "4"],
            "`slots` must be between 1 and 3 slots, got 4",
        ),
        (
            &["--scenario", "period", "--period", "13"],
            "`period` must be between 6 and 12 ticks, got 13",
        ),
        (
            &["--scenario", "fencing", "--period", "8"],
            "`period` applies only to the `period` scenario, not to `fencing`",
        ),
        (
            &["--scenario", "partition", "--shards", "17"],
            "`shards` must be between 4 and 16 shards, got 17",
        ),
        (
            &["--scenario", "partition", "--wait", "2"],
            "`wait` does not apply to the `partition` scenario",
        ),
        (
            &["--scenario", "group", "--nodes", "4"],
            "`nodes` does not apply to the `group` scenario",
        ),
        (
            &["--scenario", "group", "--wait", "soon"],
            "invalid value 'soon'",
        ),
        (
            &["--scenario", "group", "--auto-extend", "maybe"],
            "invalid value 'maybe'",
        ),
    ] {
        let mut full = vec!["simulate"];
        full.extend_from_slice(args);
        let out = env.output(&full);
        assert_eq!(code(&out.status), 125, "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn a_failing_action_and_a_store_outage_are_errors_not_skips() {
    let env = Env::new();
    let rows = |args: &[&str]| -> Vec<Vec<String>> {
        let out = env.output(args);
        assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let failed = rows(&[
        "simulate",
        "--scenario",
        "contention",
        "--fail-action",
        "node-c",
    ]);
    assert!(
        failed.contains(
            &["17", "node-c", "fail", "c·2", "2", "-", "action_failed"]
                .map(String::from)
                .to_vec()
        ),
        "{failed:?}"
    );
    let down = rows(&[
        "simulate",
        "--scenario",
        "contention",
        "--outage-from",
        "1",
        "--outage-ticks",
        "3",
    ]);
    assert!(
        down.contains(
            &["3", "node-b", "fail", "-", "-", "-", "store_error"]
                .map(String::from)
                .to_vec()
        ),
        "{down:?}"
    );
    assert!(
        !down
            .iter()
            .any(|r| r.get(1).is_some_and(|c| c == "node-b")
                && r.get(2).is_some_and(|o| o == "skip"))
    );
    for (args, needle) in [
        (&["--fail-action", "node-d"][..], "node-a, node-b, node-c"),
        (
            &["--outage-from", "21", "--outage-ticks", "3"][..],
            "ticks 0 to 22",
        ),
    ] {
        let mut all = vec!["simulate", "--scenario", "contention"];
        all.extend_from_slice(args);
        let out = env.output(&all);
        assert_eq!(code(&out.status), 125, "{args:?}");
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn the_partition_scenario_prints_who_owns_each_shard_per_tick_and_its_checks() {
    let env = Env::new();
    let out = env.output(&[
        "simulate",
        "--scenario",
        "partition",
        "--shards",
        "8",
        "--nodes",
        "4",
        "--lease",
        "4",
    ]);
    assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let direct = sim::simulate(
        "partition",
        &Overrides {
            shards: Some(8),
            nodes: Some(4),
            lease: Some(4),
            ..Overrides::default()
        },
    )
    .unwrap();
    // The table names the shard of every lease row.
    assert!(
        stdout.contains("elected(shard=0)") && stdout.contains("expired(shard="),
        "{stdout}"
    );
    // Then the chart, as the library draws it, then the summary.
    let chart = direct.shard_chart().unwrap();
    assert!(stdout.contains(&chart), "{stdout}");
    let lanes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("shard ")).collect();
    assert_eq!(lanes.len(), 8);
    for lane in &lanes {
        // Every shard starts with node-a (alone at tick 0) and ends with a survivor.
        let ticks = lane.split_whitespace().nth(2).unwrap();
        assert_eq!(ticks.len() as u32, direct.max_tick + 1, "{lane}");
        assert!(ticks.starts_with('a'), "{lane}");
        assert!(ticks.ends_with('a') || ticks.ends_with('d'), "{lane}");
    }
    let summary = stdout.lines().last().unwrap();
    assert!(
        summary.starts_with("partition: shards 8 nodes 4 lease 4;"),
        "{summary}"
    );
    assert!(
        summary.contains("node-b left (0 shards), node-c crashed (0 shards)"),
        "{summary}"
    );
    assert!(
        summary.contains("0 overlaps, fences rise on every shard"),
        "{summary}"
    );
}
