//! What `leasehold run` says on stderr while it waits, when it loses its lease, and when its
//! command is stopped by the terminal: end to end with the built binary and an SQLite store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::time::Duration;

use common::{
    BIN, Env, Stderr, code, exit_status, finish, shell_quote, signal, text, wait_for_file,
};

/// Starts a holder of `lock` recorded as `owner` whose command writes its fence to a file and
/// then sleeps for 30 s; returns it once it holds the lock, with the fence.
fn hold(env: &Env, lock: &str, owner: &str, extra: &[&str]) -> (std::process::Child, String) {
    let fence_file = env.path(&format!("{lock}.fence"));
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; exec sleep 30",
        fence_file.display()
    );
    let mut args = vec!["run", "--lock", lock, "--node-id", owner];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let holder = env.spawn(&args);
    let fence = wait_for_file(&fence_file);
    (holder, fence)
}

/// Item 1 of issue 19: `--wait` says at once that it is waiting, and again every
/// `--progress-every`, naming the holder, its fence and the wait left; `-q` silences it.
#[test]
fn waiting_is_reported_at_the_start_and_then_at_each_interval() {
    let env = Env::new();
    let (holder, fence) = hold(&env, "busy", "web-1:42", &[]);

    let out = env.output(&[
        "run",
        "--lock",
        "busy",
        "--wait",
        "4s",
        "--progress-every",
        "1s",
        "--skipped-exit-code",
        "3",
        "--",
        "true",
    ]);
    let err = text(&out.stderr);
    assert_eq!(code(&out.status), 3, "{err}");
    let waiting: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("leasehold: waiting for lock busy, "))
        .collect();
    assert!(waiting.len() >= 2, "a first line and a repeat: {err}");
    let holder_named = format!("held by web-1:42 (fence {fence}, expires in ");
    for line in &waiting {
        assert!(line.contains(&holder_named), "{line}");
        assert!(line.ends_with(" of the 4.0s wait left"), "{line}");
    }
    // The first comes at the start of the wait, before any time has gone.
    assert!(waiting[0].contains("; 4.0s of the") || waiting[0].contains("; 3.9s of the"));
    // The skip line still comes last, once.
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("after waiting 4.0s; skipped `true`"), "{err}");

    let quiet = env.output(&[
        "run",
        "-q",
        "--lock",
        "busy",
        "--wait",
        "1s",
        "--progress-every",
        "200ms",
        "--",
        "true",
    ]);
    assert_eq!(code(&quiet.status), 0);
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet.stderr));

    signal(holder.id(), "TERM");
    assert_eq!(code(&finish(holder).status), 143);
}

#[test]
fn progress_every_is_bounded() {
    let env = Env::new();
    for (every, needle) in [
        ("0s", "at least 100ms"),
        ("10ms", "at least 100ms"),
        ("36501d", "36500d"),
    ] {
        let out = env.output(&[
            "run",
            "--lock",
            "a",
            "--wait",
            "1s",
            "--progress-every",
            every,
            "--",
            "true",
        ]);
        assert_eq!(code(&out.status), 125, "{every}");
        let err = text(&out.stderr);
        assert!(
            err.contains("--progress-every") && err.contains(needle),
            "{err}"
        );
    }
}

/// Item 4: a lease broken by `release --force` is reported in one line, once, and the holder
/// exits 124. The library's own "lease lost" warning is not printed besides.
#[test]
fn a_lost_lease_is_reported_once_in_one_line() {
    let env = Env::new();
    let (holder, _) = hold(&env, "broken", "web-1:42", &["--lease", "2s"]);
    let released = env.output(&["release", "--force", "broken"]);
    assert_eq!(code(&released.status), 0, "{}", text(&released.stderr));

    let out = finish(holder);
    let err = text(&out.stderr);
    assert_eq!(code(&out.status), 124, "{err}");
    let lost: Vec<&str> = err.lines().filter(|l| l.contains("lost")).collect();
    assert_eq!(lost.len(), 1, "{err}");
    assert!(
        lost[0].starts_with(
            "leasehold: lease on lock broken lost (the store no longer holds it for this owner); \
             stopping `sh` (SIGTERM, SIGKILL after 666ms at most); exit code 124"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "nothing else is said: {err}");
}

/// Item 4, `--on-lost continue`: the same one line, once; the command's own code comes back.
#[test]
fn a_lost_lease_under_on_lost_continue_is_reported_once() {
    let env = Env::new();
    let done = env.path("done");
    let fence_file = env.path("fence");
    let script = format!(
        "echo $LEASEHOLD_FENCE > '{}'; while [ ! -e '{}' ]; do sleep 0.1; done; exit 6",
        fence_file.display(),
        done.display()
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "cont",
        "--lease",
        "1s",
        "--on-lost",
        "continue",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    wait_for_file(&fence_file);
    assert_eq!(code(&env.output(&["release", "--force", "cont"]).status), 0);
    // Past a renewal (lease/3), so the loss is noticed while the command runs.
    std::thread::sleep(Duration::from_secs(2));
    std::fs::write(&done, "").unwrap();
    let out = finish(holder);
    let err = text(&out.stderr);
    assert_eq!(code(&out.status), 6, "{err}");
    let lost: Vec<&str> = err.lines().filter(|l| l.contains("lost")).collect();
    assert_eq!(lost.len(), 1, "{err}");
    assert!(
        lost[0].starts_with("leasehold: lease on lock cont lost (")
            && lost[0].ends_with(
                "`sh` keeps running (--on-lost continue) and may overlap with another holder"
            ),
        "{err}"
    );
}

/// A loss found only by the final release (the lease was force-released while the command ran,
/// before any renewal could see it) is a run without exclusivity: exit 123, as for any loss
/// leasehold saw too late, and the command's own code under `--on-lost continue`.
#[test]
fn a_loss_found_only_by_the_release_exits_123() {
    for (on_lost, expected, says) in [
        ("kill", 123, "exit code 123"),
        ("continue", 6, "passing its status on (--on-lost continue)"),
    ] {
        let env = Env::new();
        let script = format!(
            "{} release --force late >/dev/null && exit 6",
            shell_quote(BIN)
        );
        let out = env.output(&[
            "run",
            "--lock",
            "late",
            "--lease",
            "1m",
            "--on-lost",
            on_lost,
            "--",
            "sh",
            "-c",
            &script,
        ]);
        let err = text(&out.stderr);
        assert_eq!(code(&out.status), expected, "{on_lost}: {err}");
        let lost: Vec<&str> = err.lines().filter(|l| l.contains("lost")).collect();
        assert_eq!(lost.len(), 1, "{on_lost}: {err}");
        assert!(
            lost[0].contains("it was no longer held when released")
                && lost[0].contains("may have overlapped with another holder")
                && lost[0].ends_with(says),
            "{on_lost}: {err}"
        );
    }
}

/// A command stopped for a loss may leave children behind in its process group; those that
/// ignore SIGTERM are killed once `--kill-grace` has passed, even though the command itself
/// has already exited.
#[test]
fn a_loss_stops_what_the_command_left_in_its_group() {
    let env = Env::new();
    let pid_file = env.path("pid");
    // A child that ignores SIGTERM; the shell itself ends on it.
    let script = format!(
        "(trap '' TERM; exec sleep 300) & echo $! > {}; wait",
        shell_quote(&pid_file.display().to_string())
    );
    let holder = env.spawn(&[
        "run",
        "--lock",
        "group",
        "--lease",
        "3s",
        "--kill-grace",
        "1s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let pid: u32 = wait_for_file(&pid_file).trim().parse().expect("a pid");
    assert_eq!(
        code(&env.output(&["release", "--force", "group"]).status),
        0
    );
    let out = finish(holder);
    let err = text(&out.stderr);
    assert_eq!(code(&out.status), 124, "{err}");
    assert!(err.contains("sent SIGKILL"), "{err}");
    // Gone (or a zombie waiting for init to reap it).
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
    assert!(
        stat.is_empty() || state == Some('Z'),
        "the leftover child still runs: {stat}"
    );
}

/// Item 5: a command outside the terminal's process group that gets SIGTTIN is stopped; the run
/// says so once, with what to do, and still ends cleanly (lease released) on SIGTERM.
#[test]
fn a_command_stopped_by_sigttin_gets_a_hint_and_the_run_still_ends() {
    let env = Env::new();
    let mut run = env.spawn(&[
        "run",
        "--lock",
        "ttin",
        "--",
        "sh",
        "-c",
        "kill -TTIN $$; echo resumed",
    ]);
    let stderr = Stderr::watch(&mut run);
    stderr.wait_for("is stopped (SIGTTIN)");
    assert_eq!(env.holders("ttin").len(), 1, "still held while stopped");
    signal(run.id(), "TERM");
    let status = exit_status(run);
    std::thread::sleep(Duration::from_millis(100)); // let the reader thread drain
    let err = stderr.text();
    // Forwarded SIGTERM (with SIGCONT): the command ends by it.
    assert_eq!(code(&status), 143, "{err}");
    assert_eq!(err.matches("is stopped (SIGTTIN)").count(), 1, "{err}");
    assert!(
        err.contains("`sh` is stopped (SIGTTIN): it read from the terminal")
            && err.contains("--foreground")
            && err.contains("redirect its stdin"),
        "{err}"
    );
    assert!(env.holders("ttin").is_empty(), "released");
}

/// Item 5 under a real pseudo-terminal: a command that reads the terminal from its own process
/// group is stopped by the kernel (SIGTTIN), and the hint says so once.
#[test]
fn a_command_reading_the_terminal_gets_the_hint_under_a_pty() {
    let env = Env::new();
    let pid_file = env.path("leasehold.pid");
    let script = format!(
        "echo $PPID > '{}'; read line; echo read \"$line\"",
        pid_file.display()
    );
    let mut run = env
        .cmd_in_terminal(&["run", "--lock", "tty", "--", "sh", "-c", &script])
        .spawn()
        .expect("script(1) from util-linux");
    let screen = Stderr::watch_stdout(&mut run);
    let leasehold: u32 = wait_for_file(&pid_file).parse().unwrap();
    screen.wait_for("is stopped (SIGTTIN): it read from the terminal");
    assert_eq!(env.holders("tty").len(), 1, "still held while stopped");
    signal(leasehold, "TERM");
    let status = exit_status(run);
    std::thread::sleep(Duration::from_millis(100)); // let the reader thread drain
    let shown = screen.text();
    assert_eq!(code(&status), 143, "{shown}");
    assert_eq!(shown.matches("is stopped (SIGTTIN)").count(), 1, "{shown}");
    assert!(env.holders("tty").is_empty(), "released");
}
