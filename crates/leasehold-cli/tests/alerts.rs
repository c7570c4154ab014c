//! The CLI's Prometheus outputs as a user reads them, checked like leasehold-axum's `/metrics`
//! (its `tests/support/prom.rs`: the `prometheus-parse` text-format parser, HELP and TYPE on
//! every family as leasehold's registry says), and the alerting rules of `docs/leasehold-cli.md`
//! parsed as PromQL and evaluated over them: `--metrics-file` of a node that ran the job and of
//! one that skipped it, and `serve`'s `/metrics` for a held and an unheld lock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;
#[path = "../../leasehold-axum/tests/support/prom.rs"]
mod prom;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Env, PATIENCE, code, finish, signal, text, wait_for_file};

fn page() -> String {
    let path = format!("{}/../../docs/leasehold-cli.md", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The rules of the page whose expressions mention `metric`.
fn rules_on(metric: &str) -> Vec<(String, String)> {
    prom::alerts(&page())
        .into_iter()
        .filter(|(_, expr)| expr.contains(metric))
        .collect()
}

/// node_exporter's textfile collector reads the file; Prometheus scrapes it.
fn read_file(env: &Env, name: &str) -> prom::Exposition {
    let content = std::fs::read_to_string(env.path(name)).expect("the metrics file");
    prom::check(&content)
}

#[test]
fn the_metrics_files_of_a_leader_and_a_follower_fire_the_documented_alerts_only_when_due() {
    let rules = rules_on("leasehold_job_");
    let names: BTreeSet<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "NightlyReportNotRun",
            "NightlyReportCronStopped",
            "NightlyReportFailed"
        ])
    );
    let env = Env::new();
    let lock = "nightly-report";
    let run = |file: &str, node: &str, cmd: &[&str]| {
        let path = env.path(file);
        let mut args = vec![
            "run",
            "--lock",
            lock,
            "--node-id",
            node,
            "--metrics-file",
            path.to_str().unwrap(),
            "--",
        ];
        args.extend_from_slice(cmd);
        env.output(&args)
    };

    // node-a runs the job; node-b's cron fires while node-a still holds the lock, and skips.
    let marker = env.path("started");
    let script = format!("echo started > {}; sleep 2", marker.display());
    let path_a = env.path("a.prom");
    let holder = env.spawn(&[
        "run",
        "--lock",
        lock,
        "--node-id",
        "node-a",
        "--metrics-file",
        path_a.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&marker);
    let skipped = run("b.prom", "node-b", &["true"]);
    assert_eq!(code(&skipped.status), 0, "{}", text(&skipped.stderr));
    let ran = finish(holder);
    assert_eq!(code(&ran.status), 0, "{}", text(&ran.stderr));

    let scrape = |db: &mut prom::Tsdb, at: f64| {
        let a = read_file(&env, "a.prom");
        let b = read_file(&env, "b.prom");
        db.ingest(at, &a, &[("instance", "node-a")]);
        db.ingest(at, &b, &[("instance", "node-b")]);
        (a, b)
    };
    let mut db = prom::Tsdb::new();
    let t = now();
    let (a, b) = scrape(&mut db, t);
    assert_eq!(a.value("leasehold_job_ran", &[("lock", lock)]), Some(1.0));
    assert_eq!(
        b.value("leasehold_job_skipped", &[("lock", lock)]),
        Some(1.0)
    );
    assert!(
        !b.families
            .contains_key("leasehold_job_last_success_timestamp_seconds"),
        "the follower never succeeded: no series"
    );
    assert_eq!(db.rules_firing(&rules, t), prom::pairs(&[]), "just ran");

    // A day and two hours later with nothing new (the files were not rewritten): the job did
    // not run and neither node's cron fired.
    let later = t + 26.0 * 3600.0;
    let mut stale = prom::Tsdb::new();
    scrape(&mut stale, later - 30.0);
    assert_eq!(
        stale.rules_firing(&rules, later),
        prom::pairs(&[
            ("NightlyReportNotRun", ""),
            ("NightlyReportCronStopped", "node-a"),
            ("NightlyReportCronStopped", "node-b"),
        ])
    );

    // node-b runs the job next and it fails: its rule fires for node-b only, and the job's last
    // success (node-a's) still counts for the fleet.
    let failed = run("b.prom", "node-b", &["false"]);
    assert_eq!(code(&failed.status), 1, "{}", text(&failed.stderr));
    let t = now();
    scrape(&mut db, t);
    assert_eq!(
        db.rules_firing(&rules, t),
        prom::pairs(&[("NightlyReportFailed", "node-b")])
    );
}

/// Reads the `listening on http://ADDR/` line and returns ADDR.
fn listening(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(PATIENCE).expect("a listening line");
    line.trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned()
}

/// `GET /metrics`, checked.
fn scrape(addr: &str) -> prom::Exposition {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(PATIENCE)).expect("timeout");
    write!(
        conn,
        "GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = String::new();
    conn.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    prom::check(body)
}

#[test]
fn serve_metrics_parse_and_its_alerts_tell_a_held_lock_from_an_unheld_one() {
    let rules = rules_on("leasehold_lock_");
    let names: BTreeSet<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["LeaseholdLockUnreadable", "LeaseholdLockUnheld"])
    );
    let env = Env::new();
    let marker = env.path("started");
    let script = format!("echo started > {} && sleep 60", marker.display());
    let holder = env.spawn(&[
        "run",
        "--lock",
        "api-writer",
        "--node-id",
        "worker-1",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&marker);
    let mut server = env.spawn(&[
        "serve",
        "--lock",
        "api-writer",
        "--lock",
        "idle",
        "--bind",
        "127.0.0.1:0",
    ]);
    let addr = listening(&mut server);
    let mut db = prom::Tsdb::new();
    let exp = scrape(&addr);
    db.ingest(1.0, &exp, &[("instance", "serve")]);
    assert_eq!(
        exp.value("leasehold_lock_holders", &[("lock", "api-writer")]),
        Some(1.0)
    );
    assert_eq!(
        exp.value("leasehold_lock_holders", &[("lock", "idle")]),
        Some(0.0)
    );
    for family in exp.families.keys() {
        assert!(family.starts_with("leasehold_lock_"), "{family}");
    }
    // The rule names api-writer: an idle lock nobody is meant to hold is no alert.
    assert_eq!(db.rules_firing(&rules, 1.0), prom::pairs(&[]), "held");
    // Every rule that names no lock, written for a lock of its own, tells idle from held.
    let unheld = "leasehold_lock_holders == 0";
    assert_eq!(
        db.firing(unheld, 1.0, "lock"),
        BTreeSet::from(["idle".to_owned()])
    );

    signal(holder.id(), "TERM");
    let _ = finish(holder);
    let start = std::time::Instant::now();
    let mut at = 1.0;
    loop {
        at += 1.0;
        let exp = scrape(&addr);
        db.ingest(at, &exp, &[("instance", "serve")]);
        if exp.value("leasehold_lock_holders", &[("lock", "api-writer")]) == Some(0.0) {
            break;
        }
        assert!(start.elapsed() < PATIENCE, "the release never showed");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        db.rules_firing(&rules, at),
        prom::pairs(&[("LeaseholdLockUnheld", "serve")]),
        "released"
    );
    signal(server.id(), "TERM");
    let out = finish(server);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
}
