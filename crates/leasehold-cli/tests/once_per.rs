//! `leasehold run --once-per`: exactly one run per period across hosts whose crons fire apart.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stderr)]

mod common;

use std::process::Child;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Env, code, finish, server, text, unique};

/// The period of the tests.
const PERIOD_MS: u64 = 10_000;

/// Sleeps until the wall clock (the clock of every local test server, and SQLite's) is 300 ms
/// into a 10 s period, so that three starts 0.9 s apart all fall in one period.
fn align_to_period_start() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let into = u64::try_from(now % u128::from(PERIOD_MS)).unwrap();
    let wait = (PERIOD_MS + 300 - into) % PERIOD_MS;
    std::thread::sleep(Duration::from_millis(wait));
}

/// One host's cron firing: `leasehold run --once-per 10s` around a 0.2 s command that appends
/// its owner and period to `runs`.
fn host(env: &Env, store: &str, lock: &str, name: &str, runs: &std::path::Path) -> Child {
    let script = format!(
        "echo \"$LEASEHOLD_OWNER $LEASEHOLD_PERIOD\" >> '{}'; sleep 0.2",
        runs.display()
    );
    env.spawn(&[
        "run",
        "--store",
        store,
        "--lock",
        lock,
        "--once-per",
        "10s",
        "--node-id",
        name,
        "--skipped-exit-code",
        "3",
        "--",
        "sh",
        "-c",
        &script,
    ])
}

/// Three hosts start 0, 0.5 and 0.9 s apart in one period: exactly one runs; the other two exit
/// with the skipped code and one line naming the period, when and where it ran. Returns the
/// period id that ran.
fn three_hosts_one_period(env: &Env, store: &str, lock: &str) -> i64 {
    let runs = env.path(&format!("{lock}.runs"));
    let _ = std::fs::remove_file(&runs);
    align_to_period_start();
    let t0 = Instant::now();
    let mut children = Vec::new();
    for (i, at) in [0u64, 500, 900].into_iter().enumerate() {
        common::sleep_until(t0, Duration::from_millis(at));
        children.push((
            format!("host-{i}"),
            host(env, store, lock, &format!("host-{i}"), &runs),
        ));
    }
    let outputs: Vec<_> = children
        .into_iter()
        .map(|(name, child)| (name, finish(child)))
        .collect();
    let ran = std::fs::read_to_string(&runs).unwrap_or_default();
    let lines: Vec<&str> = ran.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "exactly one host runs the command per period, got {lines:?}; stderr: {:?}",
        outputs
            .iter()
            .map(|(_, o)| text(&o.stderr))
            .collect::<Vec<_>>()
    );
    let (winner, period) = lines[0].split_once(' ').expect("owner and period");
    let period: i64 = period
        .trim()
        .parse()
        .expect("LEASEHOLD_PERIOD is the period id");
    for (name, out) in &outputs {
        let stderr = text(&out.stderr);
        if name == winner {
            assert_eq!(code(&out.status), 0, "{stderr}");
            continue;
        }
        assert_eq!(
            code(&out.status),
            3,
            "a skipped host exits with --skipped-exit-code: {stderr}"
        );
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line when skipping, got {stderr:?}");
        let line = lines[0];
        for needle in [
            format!("lock {lock}: period {period} ("),
            "already ran at ".to_owned(),
            format!(" on {winner}; skipped `sh`"),
        ] {
            assert!(line.contains(&needle), "{line:?} lacks {needle:?}");
        }
    }
    period
}

/// On the default SQLite store: one run in a period, and the next period runs once more.
#[test]
fn once_per_runs_once_per_period_on_sqlite() {
    let env = Env::new();
    let store = env.store().to_owned();
    let lock = unique("once-sqlite");
    let first = three_hosts_one_period(&env, &store, &lock);
    let second = three_hosts_one_period(&env, &store, &lock);
    assert_eq!(second, first + 1, "the next period is granted once more");
}

#[test]
fn once_per_runs_once_per_period_on_postgres() {
    let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    three_hosts_one_period(&Env::new(), &url, &unique("once-pg"));
}

#[test]
fn once_per_runs_once_per_period_on_mysql() {
    let Some(url) = server("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    three_hosts_one_period(&Env::new(), &url, &unique("once-my"));
}

#[test]
fn once_per_runs_once_per_period_on_redis() {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    three_hosts_one_period(&Env::new(), &url, &unique("once-redis"));
}

#[test]
fn once_per_runs_once_per_period_on_dynamodb() {
    let Some(endpoint) = server("LEASEHOLD_TEST_DYNAMODB_ENDPOINT") else {
        return;
    };
    let url = format!(
        "dynamodb://leasehold_cli_once?endpoint={endpoint}&region=us-east-1&create_table=true"
    );
    three_hosts_one_period(&Env::new(), &url, &unique("once-ddb"));
}

#[test]
fn once_per_runs_once_per_period_on_etcd() {
    let Some(endpoints) = server("LEASEHOLD_TEST_ETCD_ENDPOINTS") else {
        return;
    };
    let url = format!("etcd://{endpoints}/leasehold-cli-once");
    three_hosts_one_period(&Env::new(), &url, &unique("once-etcd"));
}

/// Bad periods and combinations are usage errors naming the flag and what is allowed.
#[test]
fn bad_once_per_flags_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (vec!["--once-per", "0s"], "--once-per 0"),
        (vec!["--once-per", "1.5ms"], "whole number of milliseconds"),
        (
            vec!["--once-per", "10s", "--period-offset", "10s"],
            "must be below the period length",
        ),
        (vec!["--once-per", "10s", "--slots", "2"], "--slots 2"),
        (vec!["--period-offset", "1s"], "--once-per"),
    ] {
        let mut full = vec!["run", "--lock", "bad-period"];
        full.extend(args.iter().copied());
        full.extend(["--", "true"]);
        let out = env.output(&full);
        let stderr = text(&out.stderr);
        assert_eq!(code(&out.status), 125, "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} lacks {needle:?}"
        );
    }
}
