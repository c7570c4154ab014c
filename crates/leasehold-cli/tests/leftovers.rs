//! Background work does not outlive the lock: like flock(1), `leasehold run` keeps holding (and
//! renewing) the lease while anything the command started is still running, in its process
//! group or (on Linux) below it, even after a `setsid`; `--leftovers kill` stops the rest and
//! releases at once instead.
//!
//! End to end with the built binary and an SQLite store. Every process writes timestamps
//! (`date +%s%N`) to files, which are compared afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Env, code, finish, shell_quote, text, wait_for_file};

fn quoted(path: &Path) -> String {
    shell_quote(&path.display().to_string())
}

fn stamp(path: &Path) -> u128 {
    wait_for_file(path).parse().expect("a timestamp")
}

/// Runs `background` from a shell that exits 0 at once (after writing `sh-done`), then a second
/// `run --wait 30s` that writes its start time; returns the first's output and the second's
/// start.
fn first_then_second(env: &Env, flags: &[&str], background: &str) -> (std::process::Output, u128) {
    let script = format!(
        "{background}\ndate +%s%N > {}; exit 0",
        quoted(&env.path("sh-done"))
    );
    let mut args = vec!["run", "--lock", "bg"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let first = env.spawn(&args);
    wait_for_file(&env.path("sh-done"));
    let start = format!("date +%s%N > {}", quoted(&env.path("second")));
    let second = env.output(&[
        "run", "--lock", "bg", "--wait", "30s", "--", "sh", "-c", &start,
    ]);
    assert_eq!(code(&second.status), 0, "{}", text(&second.stderr));
    (finish(first), stamp(&env.path("second")))
}

/// The default (no flags at all): a background process keeps the lock until it ends; the run
/// says so once, and exits with the command's own status.
#[test]
fn background_work_keeps_the_lock_until_it_ends() {
    let env = Env::new();
    let end = env.path("end");
    let background = format!("(sleep 3; date +%s%N > {}) &", quoted(&end));
    let (first, started) = first_then_second(&env, &[], &background);
    let err = text(&first.stderr);
    assert_eq!(code(&first.status), 0, "{err}");
    let ended = stamp(&end);
    assert!(
        started > ended,
        "the second holder started {} ms before the background work ended: {err}",
        (ended - started) / 1_000_000
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("`sh` exited (exit code 0)")
            && err.contains("still running")
            && err.contains("holding lock bg")
            && err.contains("--leftovers kill"),
        "{err}"
    );
}

/// The same for a process that left the command's session (`setsid -f` forks, so the process is
/// re-parented when its parent exits): leasehold, a child subreaper, still sees it.
#[cfg(target_os = "linux")]
#[test]
fn a_setsid_background_process_keeps_the_lock_until_it_ends() {
    let env = Env::new();
    let end = env.path("end");
    let background = format!(
        "setsid -f sh -c {}",
        shell_quote(&format!("sleep 3; date +%s%N > {}", quoted(&end)))
    );
    let (first, started) = first_then_second(&env, &[], &background);
    let err = text(&first.stderr);
    assert_eq!(code(&first.status), 0, "{err}");
    let ended = stamp(&end);
    assert!(
        started > ended,
        "the second holder started {} ms before the background work ended: {err}",
        (ended - started) / 1_000_000
    );
}

/// With `--foreground` the command shares leasehold's process group: the descendants are what
/// is waited for.
#[cfg(target_os = "linux")]
#[test]
fn foreground_background_work_keeps_the_lock_until_it_ends() {
    let env = Env::new();
    let end = env.path("end");
    let background = format!("(sleep 3; date +%s%N > {}) &", quoted(&end));
    let (first, started) = first_then_second(&env, &["--foreground"], &background);
    let err = text(&first.stderr);
    assert_eq!(code(&first.status), 0, "{err}");
    let ended = stamp(&end);
    assert!(started > ended, "second before the end: {err}");
}

/// `--leftovers kill`: the background process (`launch` starts `sh INNER`, which writes its pid
/// and then sleeps 30 s) is killed and the lock released at once; when the second holder starts,
/// the process is gone.
fn leftovers_kill(launch: &str) {
    let env = Env::new();
    let pid_file = env.path("bg.pid");
    let end = env.path("end");
    let inner = env.path("inner.sh");
    std::fs::write(
        &inner,
        format!(
            "echo $$ > {}; sleep 30; date +%s%N > {}\n",
            quoted(&pid_file),
            quoted(&end)
        ),
    )
    .unwrap();
    let script = format!(
        "{}\nwhile [ ! -s {pids} ]; do sleep 0.01; done; exit 3",
        launch.replace("INNER", &quoted(&inner)),
        pids = quoted(&pid_file)
    );
    let first = env.spawn(&[
        "run",
        "--lock",
        "bg",
        "--leftovers",
        "kill",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let pid = wait_for_file(&pid_file);
    let since = Instant::now();
    let check = format!(
        "if kill -0 {pid} 2>/dev/null; then echo alive; else echo gone; fi > {}",
        quoted(&env.path("state"))
    );
    let second = env.output(&[
        "run", "--lock", "bg", "--wait", "30s", "--", "sh", "-c", &check,
    ]);
    let waited = since.elapsed();
    assert_eq!(code(&second.status), 0, "{}", text(&second.stderr));
    let first = finish(first);
    let err = text(&first.stderr);
    // The command's own status.
    assert_eq!(code(&first.status), 3, "{err}");
    assert_eq!(wait_for_file(&env.path("state")), "gone", "{err}");
    assert!(!end.exists(), "the background work finished: {err}");
    assert!(
        waited < Duration::from_secs(10),
        "the lock came free only after {waited:?}: {err}"
    );
    assert!(
        err.contains("still running") && err.contains("--leftovers kill"),
        "{err}"
    );
}

#[test]
fn leftovers_kill_stops_background_work_and_releases_at_once() {
    leftovers_kill("sh INNER &");
}

#[cfg(target_os = "linux")]
#[test]
fn leftovers_kill_stops_a_setsid_background_process() {
    leftovers_kill("setsid -f sh INNER");
}
