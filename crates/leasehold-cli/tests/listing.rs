//! `leasehold status --all` and `leasehold status GROUP` without `--slots`, end to end on SQLite,
//! PostgreSQL and Redis (the servers' URLs from scripts/test; skipped when unset, a failure
//! under CI), with lock names holding `/` and `.`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stderr)]

mod common;

use std::collections::BTreeMap;
use std::process::Child;

use common::{Env, code, finish, server, signal, text, unique, wait_for_file};

/// A `leasehold run` holding `lock` (one of `slots`) until stopped; returns it and its fence.
fn hold(env: &Env, store: &str, lock: &str, slots: &str, node: &str) -> (Child, u64) {
    let file = env.path(&format!("{node}.fence"));
    let script = format!("echo $LEASEHOLD_FENCE > '{}'; sleep 60", file.display());
    let child = env.spawn(&[
        "run",
        "--store",
        store,
        "--lock",
        lock,
        "--slots",
        slots,
        "--node-id",
        node,
        "--lease",
        "60s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let fence = wait_for_file(&file).parse().expect("a fence");
    (child, fence)
}

/// Stops a holder with SIGTERM (it releases its lease) and waits for it.
fn stop(child: Child) {
    signal(child.id(), "TERM");
    let _ = finish(child);
}

/// `status --json ARGS` parsed, which must succeed.
fn json(env: &Env, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["status", "--json"];
    all.extend_from_slice(args);
    let out = env.output(&all);
    assert_eq!(code(&out.status), 0, "{all:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("status --json is JSON")
}

/// Every lock of `status --all` whose name starts with `tag`, following `--after` to the end:
/// name → `(slot, owner, fence)` of its holders.
fn listed(env: &Env, store: &str, tag: &str) -> BTreeMap<String, Vec<(u64, String, u64)>> {
    let mut found = BTreeMap::new();
    let mut after: Option<String> = None;
    for _ in 0..10_000 {
        let mut args = vec!["--store", store, "--all"];
        if let Some(cursor) = &after {
            args.extend(["--after", cursor.as_str()]);
        }
        let doc = json(env, &args);
        for lock in doc["locks"].as_array().expect("locks") {
            let name = lock["lock"].as_str().expect("name").to_owned();
            assert_eq!(lock["slots"], serde_json::Value::Null, "{lock}");
            if !name.starts_with(tag) {
                continue;
            }
            let mut holders: Vec<(u64, String, u64)> = lock["holders"]
                .as_array()
                .expect("holders")
                .iter()
                .map(|h| {
                    (
                        h["slot"].as_u64().expect("slot"),
                        h["owner"].as_str().expect("owner").to_owned(),
                        h["fence"].as_u64().expect("fence"),
                    )
                })
                .collect();
            holders.sort();
            found.insert(name, holders);
        }
        match (doc["complete"].as_bool(), doc["next"].as_str()) {
            (Some(true), None) => return found,
            (Some(false), Some(next)) => after = Some(next.to_owned()),
            other => panic!("a listing is complete or says where to continue: {other:?}"),
        }
    }
    panic!("status --all did not reach the end");
}

/// Two holders of a 2-slot group and two single locks, all named with `/` or `.`: `status
/// GROUP` shows both holders without `--slots`, `--slots` still counts free slots, and `status
/// --all` lists exactly the held locks with their holders — and none once they are released.
fn lists_locks_and_every_holder_of_a_group(env: &Env, store: &str, tag: &str) {
    let pool = format!("{tag}/pool");
    let daily = format!("{tag}/reports/daily");
    let billing = format!("{tag}.billing.nightly");
    let (p0, f0) = hold(env, store, &pool, "2", &format!("{tag}-p0"));
    let (p1, f1) = hold(env, store, &pool, "2", &format!("{tag}-p1"));
    let (d, fd) = hold(env, store, &daily, "1", &format!("{tag}-d"));
    let (b, fb) = hold(env, store, &billing, "1", &format!("{tag}-b"));

    let group = json(env, &["--store", store, &pool]);
    let lock = &group["locks"][0];
    assert_eq!(lock["lock"], pool.as_str());
    assert_eq!(
        lock["used"], 2,
        "every holder of the group without --slots: {lock}"
    );
    assert_eq!(lock["slots"], serde_json::Value::Null);
    assert_eq!(lock["available"], serde_json::Value::Null);
    let mut fences: Vec<u64> = lock["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .map(|h| h["fence"].as_u64().expect("fence"))
        .collect();
    fences.sort_unstable();
    let mut expected = vec![f0, f1];
    expected.sort_unstable();
    assert_eq!(fences, expected);
    let counted = json(env, &["--store", store, "--slots", "2", &pool]);
    assert_eq!(counted["locks"][0]["slots"], 2);
    assert_eq!(counted["locks"][0]["available"], 0);
    let plain = env.output(&["status", "--store", store, &pool]);
    assert!(
        text(&plain.stdout).starts_with(&format!("{pool}: held (2 holders)\n")),
        "{}",
        text(&plain.stdout)
    );
    assert!(
        group.get("complete").is_none(),
        "only --all says whether it is complete"
    );

    let found = listed(env, store, tag);
    let names: Vec<&str> = found.keys().map(String::as_str).collect();
    let mut want = vec![pool.as_str(), daily.as_str(), billing.as_str()];
    want.sort_unstable();
    assert_eq!(names, want, "status --all lists exactly the held locks");
    let owners = |lock: &str| -> Vec<(String, u64)> {
        found[lock]
            .iter()
            .map(|(_, o, f)| (o.clone(), *f))
            .collect()
    };
    assert_eq!(owners(&daily), [(format!("{tag}-d"), fd)]);
    assert_eq!(owners(&billing), [(format!("{tag}-b"), fb)]);
    let mut pool_fences: Vec<u64> = owners(&pool).iter().map(|(_, f)| *f).collect();
    pool_fences.sort_unstable();
    assert_eq!(pool_fences, expected);

    for child in [p0, p1, d, b] {
        stop(child);
    }
    assert!(
        listed(env, store, tag).is_empty(),
        "released locks are not listed"
    );
}

#[test]
fn status_all_and_groups_on_sqlite() {
    let env = Env::new();
    let store = env.store().to_owned();
    let tag = "job";
    let (held, _) = hold(&env, &store, "job/reports/daily", "1", "node-d");
    let out = env.output(&["status", "--all"]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.starts_with("job/reports/daily: held (1 holder)\n  slot 0  owner node-d  fence "),
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 2, "{shown}");
    stop(held);
    let out = env.output(&["status", "--all"]);
    assert_eq!(text(&out.stdout).trim_end(), "no lock has a holder");
    lists_locks_and_every_holder_of_a_group(&env, &store, tag);
}

#[test]
fn status_all_and_groups_on_postgres() {
    let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") else {
        return;
    };
    lists_locks_and_every_holder_of_a_group(&Env::new(), &url, &unique("lst-pg"));
}

#[test]
fn status_all_and_groups_on_redis() {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    let prefix = unique("lhcli");
    let store = format!("{url}?prefix={prefix}");
    lists_locks_and_every_holder_of_a_group(&Env::new(), &store, &unique("lst-redis"));
}

/// `status --all` shows the period ledger of each lock it lists, as `status LOCK` does.
#[test]
fn status_all_shows_each_listed_locks_ledger_on_sqlite() {
    let env = Env::new();
    let store = env.store().to_owned();
    let file = env.path("hourly.fence");
    let script = format!("echo $LEASEHOLD_FENCE > '{}'; sleep 60", file.display());
    let child = env.spawn(&[
        "run",
        "--store",
        &store,
        "--lock",
        "reports.hourly",
        "--once-per",
        "1h",
        "--node-id",
        "node-h",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&file);
    let report = json(&env, &["--store", &store, "--all"]);
    let lock = &report["locks"][0];
    assert_eq!(lock["lock"], "reports.hourly", "{report}");
    assert_eq!(lock["ledger"]["state"], "ran", "{report}");
    assert_eq!(lock["ledger"]["by"], "node-h", "{report}");
    assert_eq!(lock["ledger"]["length_ms"], 3_600_000, "{report}");
    let out = env.output(&["status", "--store", &store, "--all"]);
    assert!(
        text(&out.stdout).contains("period ledger: period "),
        "{}",
        text(&out.stdout)
    );
    stop(child);
}

#[test]
fn bad_listing_arguments_are_usage_errors() {
    let env = Env::new();
    for (args, needle) in [
        (&["status", "--all", "x"][..], "--all"),
        (&["status", "--all", "--slots", "2"][..], "--slots"),
        (&["status", "--after", "x", "y"][..], "--after"),
        (&["status", "--after", "x"][..], "--all"),
        (&["status", "--all", "--after", "two words"][..], "cursor"),
        (&["status"][..], "LOCK"),
        (&["status", "a//b"][..], "'/'"),
    ] {
        let out = env.output(args);
        assert_eq!(code(&out.status), 125, "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_cursor_of_another_store_is_refused_on_redis() {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    let env = Env::new();
    let out = env.output(&[
        "status",
        "--store",
        &url,
        "--all",
        "--after",
        "reports/daily",
    ]);
    assert_eq!(code(&out.status), 125, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not a list cursor of"),
        "{}",
        text(&out.stderr)
    );
}
