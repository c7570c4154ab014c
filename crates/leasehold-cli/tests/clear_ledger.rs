//! `leasehold clear-ledger`: without --force it refuses and changes nothing; with --force it
//! deletes a lock's period ledger record, says what it deleted (as `status` shows it), and the
//! `--once-per` command runs again in the period that already ran. On SQLite always, and on
//! every other store whose server the tests are given (skipped locally when unset, a failure
//! under CI).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stderr)]

mod common;

use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Env, code, server, text, unique};

/// The period of the tests: an hour, offset so that it started half an hour ago, so that the
/// runs of one test all fall in one period (whatever the time of day).
fn period_flags() -> [String; 4] {
    const HOUR_MS: u128 = 3_600_000;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let offset = (now + HOUR_MS / 2) % HOUR_MS;
    [
        "--once-per".to_owned(),
        "1h".to_owned(),
        "--period-offset".to_owned(),
        format!("{offset}ms"),
    ]
}

/// One `leasehold run --once-per` of a command that appends a line to `runs`.
fn run_once(
    env: &Env,
    store: &str,
    lock: &str,
    period: &[String],
    runs: &std::path::Path,
) -> Output {
    let script = format!("echo \"$LEASEHOLD_PERIOD\" >> '{}'", runs.display());
    let mut args = vec![
        "run",
        "--store",
        store,
        "--lock",
        lock,
        "--node-id",
        "cron-host",
    ];
    args.extend(period.iter().map(String::as_str));
    args.extend(["--skipped-exit-code", "3", "--", "sh", "-c", &script]);
    env.output(&args)
}

/// The lines the command appended so far.
fn runs_so_far(runs: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `status --json LOCK`'s lock, from `store`.
fn status_json(env: &Env, store: &str, lock: &str) -> serde_json::Value {
    let out = env.output(&["status", "--json", "--store", store, lock]);
    assert_eq!(code(&out.status), 0, "status: {}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    status["locks"][0].clone()
}

/// The text `status LOCK` shows for the lock's ledger, after `period ledger: `.
fn status_ledger_text(env: &Env, store: &str, lock: &str) -> String {
    let out = env.output(&["status", "--store", store, lock]);
    assert_eq!(code(&out.status), 0, "status: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("period ledger: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no ledger line in {:?}", text(&out.stdout)))
}

/// A `--once-per` job runs, is skipped in the same period, `clear-ledger` without --force
/// refuses (the ledger is still there), with --force clears it, and the job runs again in the
/// same period (and is then skipped again).
fn clear_ledger_lets_the_job_run_again(store: &str, tag: &str) {
    let env = Env::new();
    let lock = unique(tag);
    let runs = env.path("runs");
    let period = period_flags();

    let first = run_once(&env, store, &lock, &period, &runs);
    assert_eq!(code(&first.status), 0, "first run: {}", text(&first.stderr));
    let skipped = run_once(&env, store, &lock, &period, &runs);
    assert_eq!(
        code(&skipped.status),
        3,
        "the second run of the period is skipped: {}",
        text(&skipped.stderr)
    );
    assert!(
        text(&skipped.stderr).contains("already ran at "),
        "{}",
        text(&skipped.stderr)
    );
    let ran = runs_so_far(&runs);
    assert_eq!(ran.len(), 1, "{ran:?}");

    let before = status_json(&env, store, &lock);
    let ledger = before["ledger"].clone();
    assert_eq!(ledger["state"], "ran", "{before}");
    assert_eq!(ledger["by"], "cron-host", "{before}");
    assert_eq!(ledger["period"].to_string(), ran[0], "{before}");
    let shown = status_ledger_text(&env, store, &lock);

    let refused = env.output(&["clear-ledger", "--store", store, &lock]);
    assert_eq!(
        code(&refused.status),
        125,
        "without --force it refuses as `release` does: {}",
        text(&refused.stderr)
    );
    let said = text(&refused.stderr);
    assert!(
        said.contains("without --force") && said.contains(&format!("clear-ledger --force {lock}")),
        "{said}"
    );
    assert!(
        text(&refused.stdout).is_empty(),
        "{}",
        text(&refused.stdout)
    );
    assert_eq!(
        status_json(&env, store, &lock)["ledger"],
        ledger,
        "a refused clear changes nothing"
    );

    let cleared = env.output(&["clear-ledger", "--force", "--store", store, &lock]);
    assert_eq!(code(&cleared.status), 0, "{}", text(&cleared.stderr));
    let said = text(&cleared.stdout);
    assert!(
        said.contains(&format!(
            "lock {lock}: cleared the period ledger record: {shown}"
        )),
        "the clear shows the record as status does ({shown:?}): {said}"
    );
    assert!(said.contains("runs its command again"), "{said}");
    assert!(
        status_json(&env, store, &lock)["ledger"].is_null(),
        "the ledger is gone"
    );

    let again = run_once(&env, store, &lock, &period, &runs);
    assert_eq!(
        code(&again.status),
        0,
        "after the clear the period runs again: {}",
        text(&again.stderr)
    );
    let ran = runs_so_far(&runs);
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(ran[0], ran[1], "the same period ran twice: {ran:?}");
    let skipped = run_once(&env, store, &lock, &period, &runs);
    assert_eq!(code(&skipped.status), 3, "{}", text(&skipped.stderr));
    assert_eq!(runs_so_far(&runs).len(), 2);

    let never = unique(&format!("{tag}-never"));
    let nothing = env.output(&["clear-ledger", "--force", "--store", store, &never]);
    assert_eq!(code(&nothing.status), 0, "{}", text(&nothing.stderr));
    assert!(
        text(&nothing.stdout).contains(&format!(
            "lock {never}: no period ledger record; nothing cleared"
        )),
        "{}",
        text(&nothing.stdout)
    );
}

#[test]
fn clear_ledger_on_sqlite() {
    let env = Env::new();
    clear_ledger_lets_the_job_run_again(env.store(), "clear-sqlite");
}

#[test]
fn clear_ledger_on_postgres() {
    let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    clear_ledger_lets_the_job_run_again(&url, "clear-pg");
}

#[test]
fn clear_ledger_on_mysql() {
    let Some(url) = server("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    clear_ledger_lets_the_job_run_again(&url, "clear-my");
}

#[test]
fn clear_ledger_on_redis() {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    clear_ledger_lets_the_job_run_again(&url, "clear-redis");
}

#[test]
fn clear_ledger_on_dynamodb() {
    let Some(endpoint) = server("LEASEHOLD_TEST_DYNAMODB_ENDPOINT") else {
        return;
    };
    let url = format!(
        "dynamodb://leasehold_cli_clear?endpoint={endpoint}&region=us-east-1&create_table=true"
    );
    clear_ledger_lets_the_job_run_again(&url, "clear-ddb");
}

#[test]
fn clear_ledger_on_etcd() {
    let Some(endpoints) = server("LEASEHOLD_TEST_ETCD_ENDPOINTS") else {
        return;
    };
    let url = format!("etcd://{endpoints}/leasehold-cli-clear");
    clear_ledger_lets_the_job_run_again(&url, "clear-etcd");
}

#[test]
fn clear_ledger_on_zookeeper() {
    let Some(url) = server("LEASEHOLD_TEST_ZOOKEEPER_URL") else {
        return;
    };
    let chroot = format!(
        "lhcli-{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    let url = format!("{}/{chroot}", url.trim_end_matches('/'));
    clear_ledger_lets_the_job_run_again(&url, "clear-zk");
}

#[test]
fn clear_ledger_on_nats() {
    let Some(url) = server("LEASEHOLD_TEST_NATS_URL") else {
        return;
    };
    let bucket = format!(
        "lhcli-{}",
        &leasehold::store::Token::random().to_hex()[..12]
    );
    let url = format!("{}/{bucket}", url.trim_end_matches('/'));
    clear_ledger_lets_the_job_run_again(&url, "clear-nats");
}

/// A lock that a run holds keeps its holder: the clear says so, and `status` still shows it.
#[test]
fn clear_ledger_leaves_a_running_holder_alone() {
    let env = Env::new();
    let store = env.store().to_owned();
    let lock = unique("clear-held");
    let started = env.path("started");
    let script = format!("echo $LEASEHOLD_FENCE > '{}'; sleep 3", started.display());
    let mut args = vec!["run", "--lock", lock.as_str(), "--lease", "30s"];
    let period = period_flags();
    args.extend(period.iter().map(String::as_str));
    args.extend(["--", "sh", "-c", &script]);
    let holder = env.spawn(&args);
    let fence = common::wait_for_file(&started);

    let cleared = env.output(&["clear-ledger", "--force", &lock]);
    assert_eq!(code(&cleared.status), 0, "{}", text(&cleared.stderr));
    let said = text(&cleared.stdout);
    assert!(
        said.contains(") ran: granted at ")
            && said.contains("still held by ")
            && said.contains(&format!("(fence {fence})")),
        "{said}"
    );
    let holders = env.holders(&lock);
    assert_eq!(holders.len(), 1, "the holder keeps its lease");
    assert_eq!(holders[0]["fence"].to_string(), fence);
    assert!(status_json(&env, &store, &lock)["ledger"].is_null());
    let out = common::finish(holder);
    assert_eq!(
        code(&out.status),
        0,
        "the holder finishes as usual: {}",
        text(&out.stderr)
    );
}
