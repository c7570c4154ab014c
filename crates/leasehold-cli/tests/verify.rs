//! `leasehold verify` against every local store: it passes on each (with fences checked), fails
//! with a readable report on a deliberately unsafe setup (the fence check switched off, pauses far
//! longer than the lease), writes its history as JSON lines, survives proxy cuts, and refuses bad
//! flags.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use common::{Env, code, server, text};

/// A short run: 4 s, lease 300 ms (etcd's shortest lease is 1 s), 30% of holders frozen unless
/// the extra flags say otherwise (an extra `--duration` replaces the 4 s).
fn short_run(lease: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["verify", "--lease", lease];
    if !extra.contains(&"--duration") {
        args.extend(["--duration", "4s"]);
    }
    if !extra.contains(&"--pause-percent") {
        args.extend(["--pause-percent", "30"]);
    }
    args.into_iter().map(str::to_owned).collect()
}

fn verify(env: &Env, store: &str, extra: &[&str], lease: &str) -> std::process::Output {
    let mut args = short_run(lease, extra);
    args.extend(["--store".to_owned(), store.to_owned()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.output(&args)
}

/// Passes, with something run, some holders frozen, and the stale writes refused.
fn passes(store: &str, lease: &str, extra: &[&str]) {
    let env = Env::new();
    let out = verify(&env, store, extra, lease);
    let report = text(&out.stdout);
    assert_eq!(code(&out.status), 0, "{report}\n{}", text(&out.stderr));
    assert!(
        report.contains("PASS: no violation, no leaked lock"),
        "{report}"
    );
    let count = |row: &str| -> u64 {
        let line = report
            .lines()
            .find(|l| l.trim_start().starts_with(row))
            .unwrap();
        line[row.len() + 2..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(count("runs") > 3, "{report}");
    assert!(count("pauses") > 0, "{report}");
    assert_eq!(count("violations"), 0, "{report}");
}

#[test]
fn verify_passes_on_sqlite_and_fails_without_the_fence_check() {
    let env = Env::new();
    passes(env.store(), "300ms", &[]);
    let out = verify(
        &env,
        env.store(),
        &["--no-fence-check", "--pause-percent", "60"],
        "200ms",
    );
    let report = text(&out.stdout);
    assert_eq!(code(&out.status), 1, "{report}");
    assert!(report.contains("FAIL:"), "{report}");
    assert!(
        report.contains("stale write accepted: contender"),
        "{report}"
    );
    assert!(report.contains("--no-fence-check was given"), "{report}");
}

#[test]
fn verify_passes_on_postgres_with_and_without_proxy_cuts() {
    let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    passes(&url, "300ms", &[]);
    // The test server trusts every local connection, so a password changes nothing but must never
    // appear in the report or the history.
    let with_password = url.replacen("postgres@", "postgres:Verify-S3cret%3Bpw@", 1);
    assert_ne!(
        with_password, url,
        "the test URL names the postgres user: {url}"
    );
    let env = Env::new();
    let path = env.path("h.jsonl");
    let json = ["--proxy-cuts", "--json", path.to_str().unwrap()];
    let out = verify(&env, &with_password, &json, "300ms");
    let history = std::fs::read_to_string(&path).unwrap_or_default();
    let all = format!("{}{}{history}", text(&out.stdout), text(&out.stderr));
    assert_eq!(code(&out.status), 0, "{all}");
    assert!(text(&out.stdout).contains("PASS"), "{all}");
    assert!(
        history.contains("\"proxy_cut\""),
        "the proxy cut connections: {history}"
    );
    for secret in ["Verify-S3cret;pw", "Verify-S3cret%3Bpw", "S3cret"] {
        assert!(!all.contains(secret), "{secret} printed: {all}");
    }
}

#[test]
fn verify_passes_on_mysql() {
    let Some(url) = server("LEASEHOLD_TEST_MYSQL_URL") else {
        return;
    };
    passes(&url, "300ms", &[]);
}

#[test]
fn verify_passes_on_redis_with_and_without_proxy_cuts() {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    passes(&url, "300ms", &[]);
    passes(&url, "300ms", &["--proxy-cuts"]);
}

#[test]
fn verify_passes_on_dynamodb() {
    let Some(endpoint) = server("LEASEHOLD_TEST_DYNAMODB_ENDPOINT") else {
        return;
    };
    // A 100 ms clock-skew tolerance allows leases above 200 ms (every client runs on this machine).
    let url = format!(
        "dynamodb://leasehold_cli_verify?endpoint={endpoint}&region=us-east-1&create_table=true&skew=100ms"
    );
    passes(&url, "300ms", &[]);
}

#[test]
fn verify_passes_on_etcd() {
    let Some(endpoints) = server("LEASEHOLD_TEST_ETCD_ENDPOINTS") else {
        return;
    };
    // etcd grants a lease no shorter than its minimum TTL (whole seconds, 2 s with the default
    // election timeout): a frozen holder keeps the lock that long, and 4 s with two or three
    // freezes saw only three runs (CI). Twelve seconds leaves room for several.
    passes(
        &format!("etcd://{endpoints}/leasehold-cli-verify"),
        "1s",
        &["--duration", "12s"],
    );
}

/// `--json PATH`: one operation per line, every line JSON, the last the summary that agrees
/// with the exit code; `--json -` moves the summary text to stderr.
#[test]
fn the_history_is_one_json_operation_per_line() {
    let env = Env::new();
    let path = env.path("history.jsonl");
    let out = verify(
        &env,
        env.store(),
        &["--json", path.to_str().unwrap()],
        "300ms",
    );
    assert_eq!(code(&out.status), 0, "{}", text(&out.stdout));
    let history = std::fs::read_to_string(&path).unwrap();
    let ops: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).expect(l))
        .collect();
    let kinds = |k: &str| ops.iter().filter(|o| o["op"] == k).count();
    assert!(
        kinds("granted") > 3 && kinds("write") > 3 && kinds("released") > 3,
        "{history}"
    );
    let summary = ops.last().unwrap();
    assert_eq!(summary["op"], "summary");
    assert_eq!(summary["passed"], true);
    assert_eq!(summary["runs"].as_u64().unwrap() as usize, kinds("granted"));
    assert_eq!(summary["violations"].as_array().unwrap().len(), 0);

    let out = verify(
        &env,
        env.store(),
        &["--json", "-", "--no-fence-check", "--pause-percent", "60"],
        "200ms",
    );
    assert_eq!(code(&out.status), 1);
    let last = text(&out.stdout).lines().last().unwrap().to_owned();
    let summary: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(summary["passed"], false);
    assert!(
        text(&out.stderr).contains("FAIL:"),
        "the summary text goes to stderr"
    );
}

/// A store that lives in one process only cannot be verified for exclusion between processes:
/// refused with a usage error that says what to use (item 5 of issue 33).
#[test]
fn process_local_stores_are_refused() {
    let env = Env::new();
    for store in ["memory:", "sqlite::memory:"] {
        let out = verify(&env, store, &[], "300ms");
        assert_eq!(code(&out.status), 125, "{store}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.contains("inside this one process") && err.contains("SQLite file"),
            "{store}: {err}"
        );
    }
}

#[test]
fn bad_verify_flags_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (vec!["verify", "--contenders", "1"], "from 2 to 64"),
        (vec!["verify", "--contenders", "65"], "from 2 to 64"),
        (vec!["verify", "--pause-percent", "101"], "101"),
        (vec!["verify", "--duration", "25h"], "from 1ms to 24h"),
        (vec!["verify", "--duration", "0s"], "from 1ms to 24h"),
        // A bad --json path fails before the run, not after it.
        (
            vec![
                "verify",
                "--store",
                env.store(),
                "--duration",
                "1h",
                "--json",
                "/no/such/dir/h.jsonl",
            ],
            "--json: cannot create /no/such/dir/h.jsonl",
        ),
        (vec!["verify", "--lock", "bad name"], "lock name"),
        (
            vec![
                "verify",
                "--store",
                env.store(),
                "--proxy-cuts",
                "--duration",
                "1s",
            ],
            "--proxy-cuts needs a store server",
        ),
    ] {
        let out = env.output(&args);
        assert_eq!(
            code(&out.status),
            125,
            "{args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A lease far longer than the run does not stretch it: contenders stop at `--duration`.
#[test]
fn a_long_lease_does_not_outlast_the_run() {
    let env = Env::new();
    let started = std::time::Instant::now();
    let out = env.output(&[
        "verify",
        "--store",
        env.store(),
        "--duration",
        "1s",
        "--lease",
        "1d",
        "--pause-percent",
        "0",
    ]);
    let took = started.elapsed();
    assert_eq!(
        code(&out.status),
        0,
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        took < std::time::Duration::from_secs(20),
        "verify ran for {took:?}"
    );
}
