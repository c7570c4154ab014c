//! `leasehold run` end to end, with the built binary and a temporary SQLite store.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::{Env, code, finish, sleep_until, text, wait_for_file};

#[test]
fn two_runs_started_together_run_the_command_once() {
    let env = Env::new();
    let ran = env.path("ran");
    let script = format!("echo ran >> '{}'; sleep 2", ran.display());
    let args = ["run", "--lock", "together", "--", "sh", "-c", &script];
    let a = env.spawn(&args);
    let b = env.spawn(&args);
    let outs = [finish(a), finish(b)];

    let lines = std::fs::read_to_string(&ran).expect("the command ran");
    assert_eq!(lines.lines().count(), 1, "ran more than once: {lines:?}");
    for out in &outs {
        assert_eq!(code(&out.status), 0, "stderr: {}", text(&out.stderr));
    }
    let stderrs: Vec<String> = outs.iter().map(|o| text(&o.stderr)).collect();
    let skipped: Vec<&String> = stderrs.iter().filter(|s| !s.is_empty()).collect();
    assert_eq!(skipped.len(), 1, "exactly one should skip: {stderrs:?}");
    assert_eq!(skipped[0].lines().count(), 1, "one line: {:?}", skipped[0]);
    assert!(
        skipped[0].contains("together") && skipped[0].contains("skipped"),
        "{:?}",
        skipped[0]
    );
}

#[test]
fn auto_extension_keeps_the_lock_for_the_whole_command() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!("touch '{}'; sleep 7", started.display());
    let holder = env.spawn(&[
        "run", "--lock", "long", "--lease", "2s", "--", "sh", "-c", &script,
    ]);
    wait_for_file_exists(&started);
    let t0 = Instant::now();
    for at in [1, 3, 5] {
        sleep_until(t0, Duration::from_secs(at));
        let out = env.output(&[
            "run",
            "--lock",
            "long",
            "--skipped-exit-code",
            "3",
            "--",
            "true",
        ]);
        assert_eq!(
            code(&out.status),
            3,
            "contender at {at}s was not skipped: {}",
            text(&out.stderr)
        );
    }
    let out = finish(holder);
    assert_eq!(code(&out.status), 0, "holder: {}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "holder: {}", text(&out.stderr));
}

#[test]
fn a_killed_holder_is_taken_over_after_expiry_with_a_higher_fence() {
    let env = Env::new();
    let (pid_file, fence_file) = (env.path("pid"), env.path("fence1"));
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; echo $$ > '{}'; exec sleep 30",
        fence_file.display(),
        pid_file.display()
    );
    let mut holder = env.spawn(&[
        "run", "--lock", "crash", "--lease", "2s", "--", "sh", "-c", &script,
    ]);
    let fence1: u64 = wait_for_file(&fence_file).parse().expect("fence");
    let command_pid: u32 = wait_for_file(&pid_file).parse().expect("pid");

    holder.kill().expect("SIGKILL leasehold");
    let killed_at = Instant::now();
    let _ = holder.wait();
    common::signal(command_pid, "KILL");

    let out = env.output(&[
        "run",
        "--lock",
        "crash",
        "--wait",
        "10s",
        "--",
        "sh",
        "-c",
        "echo $LEASEHOLD_FENCE",
    ]);
    let waited = killed_at.elapsed();
    assert_eq!(code(&out.status), 0, "successor: {}", text(&out.stderr));
    let fence2: u64 = text(&out.stdout).trim().parse().expect("fence printed");
    assert!(fence2 > fence1, "fence {fence2} after {fence1}");
    // The lease was last renewed at most lease/3 before the kill: it cannot end sooner than ~1.3 s.
    assert!(
        waited >= Duration::from_millis(1200),
        "took over after {waited:?}, before the lease could have expired"
    );
}

#[test]
fn exit_codes_pass_through_and_ours_are_distinct() {
    let env = Env::new();
    let run = |cmd: &[&str]| {
        let mut args = vec!["run", "--lock", "codes", "--"];
        args.extend_from_slice(cmd);
        env.output(&args)
    };
    assert_eq!(code(&run(&["sh", "-c", "exit 7"]).status), 7);
    assert_eq!(code(&run(&["true"]).status), 0);
    assert_eq!(code(&run(&["sh", "-c", "kill -9 $$"]).status), 137);

    let missing = run(&["leasehold-test-no-such-command"]);
    assert_eq!(code(&missing.status), 127);
    assert!(text(&missing.stderr).contains("cannot run `leasehold-test-no-such-command`"));

    let not_exec = env.path("not-executable");
    std::fs::write(&not_exec, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(&not_exec, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert_eq!(code(&run(&[not_exec.to_str().expect("utf-8")]).status), 126);

    // The lock was released after each of those: a new run gets it.
    assert!(env.holders("codes").is_empty());

    for bad in [
        &["run", "--lock", "bad name", "--", "true"][..],
        &["run", "--lock", "x", "--wait", "5 parsecs", "--", "true"],
        &[
            "run",
            "--lock",
            "x",
            "--lease",
            "1s",
            "--min-lease",
            "2s",
            "--",
            "true",
        ],
        &["run", "--lock", "x", "--lease", "50ms", "--", "true"],
        &["run", "--lock", "x"],
        &["frobnicate"],
    ] {
        let out = env.output(bad);
        assert_eq!(code(&out.status), 125, "{bad:?}: {}", text(&out.stderr));
    }
    assert_eq!(code(&env.output(&["--help"]).status), 0);
}

#[test]
fn contention_exits_with_the_skipped_code() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!("touch '{}'; sleep 3", started.display());
    let holder = env.spawn(&["run", "--lock", "busy", "--", "sh", "-c", &script]);
    wait_for_file_exists(&started);
    let out = env.output(&[
        "run",
        "--lock",
        "busy",
        "--skipped-exit-code",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(code(&out.status), 3);
    let quiet = env.output(&["run", "-q", "--lock", "busy", "--", "true"]);
    assert_eq!(code(&quiet.status), 0);
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet.stderr));
    assert_eq!(code(&finish(holder).status), 0);
}

#[test]
fn min_lease_holds_the_lock_after_a_short_command() {
    let env = Env::new();
    let first = env.output(&["run", "--lock", "hourly", "--min-lease", "5s", "--", "true"]);
    assert_eq!(code(&first.status), 0, "{}", text(&first.stderr));
    let second = env.output(&[
        "run",
        "--lock",
        "hourly",
        "--skipped-exit-code",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(
        code(&second.status),
        3,
        "ran twice within the minimum lease"
    );
}

#[test]
fn slots_allow_that_many_concurrent_runs() {
    let env = Env::new();
    let s0 = env.path("s0");
    let s1 = env.path("s1");
    let script = |f: &std::path::Path| format!("echo $LEASEHOLD_SLOT > '{}'; sleep 3", f.display());
    let (c0, c1) = (script(&s0), script(&s1));
    let a = env.spawn(&[
        "run", "--lock", "pool", "--slots", "2", "--", "sh", "-c", &c0,
    ]);
    wait_for_file(&s0);
    let b = env.spawn(&[
        "run", "--lock", "pool", "--slots", "2", "--", "sh", "-c", &c1,
    ]);
    wait_for_file(&s1);
    let mut slots = [wait_for_file(&s0), wait_for_file(&s1)];
    slots.sort();
    assert_eq!(slots, ["0", "1"]);
    let third = env.output(&[
        "run",
        "--lock",
        "pool",
        "--slots",
        "2",
        "--skipped-exit-code",
        "3",
        "--",
        "true",
    ]);
    assert_eq!(code(&third.status), 3);
    let status = env.output(&["status", "--json", "--slots", "2", "pool"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(json["locks"][0]["used"], 2);
    assert_eq!(json["locks"][0]["available"], 0);
    assert_eq!(code(&finish(a).status), 0);
    assert_eq!(code(&finish(b).status), 0);
}

#[test]
fn sigterm_is_forwarded_and_the_lease_released() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!(
        "trap 'echo got-term; exit 5' TERM; touch '{}'; sleep 30 & wait",
        started.display()
    );
    let holder = env.spawn(&["run", "--lock", "term", "--", "sh", "-c", &script]);
    wait_for_file_exists(&started);
    assert_eq!(env.holders("term").len(), 1);
    common::signal(holder.id(), "TERM");
    let out = finish(holder);
    assert_eq!(code(&out.status), 5, "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "got-term");
    assert!(env.holders("term").is_empty(), "lease not released");

    // A command that does not handle it dies of it: 128 + 15.
    let pid_file = env.path("pid");
    let script = format!("echo $$ > '{}'; exec sleep 30", pid_file.display());
    let holder = env.spawn(&["run", "--lock", "term", "--", "sh", "-c", &script]);
    wait_for_file(&pid_file);
    common::signal(holder.id(), "TERM");
    assert_eq!(code(&finish(holder).status), 143);
    assert!(env.holders("term").is_empty(), "lease not released");
}

#[test]
fn the_default_store_lives_in_the_state_directory() {
    let env = Env::new();
    let out = env
        .cmd(&["run", "--lock", "default-store", "--", "true"])
        .env_remove("LEASEHOLD_STORE")
        .output()
        .expect("run");
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    assert!(env.path("state/leasehold/leases.db").exists());
}

fn wait_for_file_exists(path: &std::path::Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < common::PATIENCE,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}
