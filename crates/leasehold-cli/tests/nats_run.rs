//! `leasehold run --store nats://…` end to end against a real nats-server
//! (`LEASEHOLD_TEST_NATS_URL`, set by scripts/test; skipped locally when unset, a failure under
//! CI): two runs of one lock started together take turns, each with its own, higher fence.

#![allow(clippy::expect_used, clippy::print_stderr)]

mod common;

use common::{Env, code, finish, server, text};

#[test]
fn two_concurrent_runs_on_nats_take_turns() {
    let Some(url) = server("LEASEHOLD_TEST_NATS_URL") else {
        return;
    };
    let bucket = format!(
        "lhcli-{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    let store = format!("{}/{bucket}", url.trim_end_matches('/'));
    let env = Env::new();
    let log = env.path("log");
    let script = format!(
        "echo \"start $LEASEHOLD_FENCE\" >> '{0}'; sleep 1; echo \"end $LEASEHOLD_FENCE\" >> '{0}'",
        log.display()
    );
    let args = [
        "run", "--store", &store, "--lock", "x", "--wait", "30s", "--", "sh", "-c", &script,
    ];
    let first = env.spawn(&args);
    let second = env.spawn(&args);
    for out in [finish(first), finish(second)] {
        assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    }
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("both runs wrote")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let fence = |line: &str| -> u64 {
        line.split_once(' ')
            .and_then(|(_, f)| f.parse().ok())
            .expect("a fence")
    };
    // One run at a time: each start is followed by its own end.
    assert!(
        lines[0].starts_with("start") && lines[1].starts_with("end"),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("start") && lines[3].starts_with("end"),
        "{lines:?}"
    );
    assert_eq!(fence(&lines[0]), fence(&lines[1]));
    assert_eq!(fence(&lines[2]), fence(&lines[3]));
    assert!(fence(&lines[2]) > fence(&lines[0]), "{lines:?}");
}
