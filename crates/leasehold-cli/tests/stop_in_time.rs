//! A command slow to stop never runs beside the next holder: when renewals fail, `leasehold run`
//! sends SIGTERM once what is left of the lease is less than `--kill-grace`, and SIGKILL at the
//! lease's local deadline at the latest, so everything the command started is dead before the
//! store can grant the lock again. And `--kill-grace` must fit the lease (at most a third of it).
//!
//! End to end with the built binary: the first holder reaches Redis through the testkit's TCP
//! fault proxy, which is cut; a second `leasehold run --wait`, connected directly, takes the lock
//! once it has expired. Every process writes timestamps (`date +%s%N`) to files, which are
//! compared afterwards: no sleep-and-hope.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::path::Path;

use common::{Env, code, finish, server, shell_quote, text, unique, wait_for_file};
use leasehold_testkit::proxy::{FaultProxy, loopback_authority, via_proxy};

/// A loop appending a timestamp to `stamps` every 50 ms for 30 s, that notes SIGTERM in `term`
/// and keeps going (its `sleep` and `date` die of the signal, the shell does not).
fn stubborn_loop(stamps: &Path, term: &Path) -> String {
    let (stamps, term) = (
        shell_quote(&stamps.display().to_string()),
        shell_quote(&term.display().to_string()),
    );
    format!(
        "trap 'date +%s%N >> {term}' TERM; end=$(( $(date +%s) + 30 )); \
         while [ \"$(date +%s)\" -lt \"$end\" ]; do date +%s%N >> {stamps}; sleep 0.05; done"
    )
}

/// Nanosecond timestamps, one a line.
fn stamps(path: &Path) -> Vec<u128> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse().expect("a timestamp"))
        .collect()
}

/// The first holder runs `script` (which must write `first_stamps`) with `flags`, reaching
/// Redis through a fault proxy that is cut once the script has written; a second run connected
/// directly waits for the lock and writes its start time. Every timestamp of the first must be
/// before the second's start, and the first must exit 124.
async fn no_overlap_after_a_cut(flags: &[&str], script: impl Fn(&Env) -> String) {
    let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") else {
        return;
    };
    let (_, target) = loopback_authority(&url).expect("a loopback Redis");
    let proxy = FaultProxy::start(target).await.unwrap();
    let via = via_proxy(&url, proxy.addr()).unwrap();
    let env = Env::new();
    let lock = unique("stop-in-time");
    let first_stamps = env.path("first");
    let second_start = env.path("second");

    let script = script(&env);
    let mut args = vec!["run", "--store", &via, "--lock", &lock];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let first = env.spawn(&args);
    wait_for_file(&first_stamps);
    proxy.cut().await;

    let start = format!(
        "date +%s%N > {}",
        shell_quote(&second_start.display().to_string())
    );
    let second = env.spawn(&[
        "run", "--store", &url, "--lock", &lock, "--wait", "60s", "--", "sh", "-c", &start,
    ]);
    let (first, second) = tokio::task::spawn_blocking(move || (finish(first), finish(second)))
        .await
        .unwrap();
    let first_err = text(&first.stderr);
    assert_eq!(code(&second.status), 0, "{}", text(&second.stderr));
    assert_eq!(code(&first.status), 124, "first holder:\n{first_err}");

    let started: u128 = wait_for_file(&second_start).parse().unwrap();
    let written = stamps(&first_stamps);
    assert!(!written.is_empty());
    let late: Vec<u128> = written.iter().copied().filter(|t| *t >= started).collect();
    assert!(
        late.is_empty(),
        "the first holder's command wrote {} timestamps after the second holder started \
         (last {} ms after); first holder:\n{first_err}",
        late.len(),
        (late.last().copied().unwrap_or(started) - started) / 1_000_000
    );
    let term = stamps(&env.path("term"));
    assert!(
        !term.is_empty() && term.iter().all(|t| *t < started),
        "SIGTERM came before the new holder: {term:?}; first holder:\n{first_err}"
    );
}

/// Hole 1 with no flags besides --store and --lock: the default lease and the default grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_traps_sigterm_is_dead_before_the_next_holder_by_default() {
    no_overlap_after_a_cut(&[], |env| {
        stubborn_loop(&env.path("first"), &env.path("term"))
    })
    .await;
}

/// Hole 1 with a short lease: the default grace shrinks to a third of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_traps_sigterm_is_dead_before_the_next_holder_with_a_short_lease() {
    no_overlap_after_a_cut(&["--lease", "3s"], |env| {
        stubborn_loop(&env.path("first"), &env.path("term"))
    })
    .await;
}

/// Holes 1 and 2 together: the command exits at once, leaving a background loop that traps
/// SIGTERM; the lock is held for it, and when renewals fail it is stopped in time too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_work_is_stopped_in_time_when_renewals_fail() {
    no_overlap_after_a_cut(&["--lease", "3s"], |env| {
        format!(
            "( {} ) & exit 0",
            stubborn_loop(&env.path("first"), &env.path("term"))
        )
    })
    .await;
}

/// A `--kill-grace` longer than a third of the lease is refused before anything runs (exit 125,
/// one message naming both flags); one that fits runs.
#[test]
fn a_kill_grace_that_does_not_fit_the_lease_is_a_usage_error() {
    let env = Env::new();
    let ran = env.path("ran");
    let touch = format!("touch {}", shell_quote(&ran.display().to_string()));
    for flags in [
        &["--kill-grace", "10s", "--lease", "15s"][..],
        &["--kill-grace", "2s", "--lease", "3s"],
        &["--lease", "3s", "--kill-grace", "1001ms"],
        // The default lease is shorter than three times 10 s.
        &["--kill-grace", "10s"],
    ] {
        let mut args = vec!["run", "--lock", "grace"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", &touch]);
        let out = env.output(&args);
        let err = text(&out.stderr);
        assert_eq!(code(&out.status), 125, "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: one message: {err}");
        assert!(
            err.contains("--kill-grace") && err.contains("--lease") && err.contains("a third"),
            "{flags:?}: {err}"
        );
        assert!(!ran.exists(), "{flags:?}: the command ran");
    }
    let out = env.output(&[
        "run",
        "--lock",
        "grace",
        "--kill-grace",
        "5s",
        "--lease",
        "15s",
        "--",
        "sh",
        "-c",
        "exit 0",
    ]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let out = env.output(&[
        "run",
        "--lock",
        "grace",
        "--kill-grace",
        "1s",
        "--lease",
        "3s",
        "--",
        "sh",
        "-c",
        "exit 0",
    ]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
}
