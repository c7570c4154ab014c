//! The harness these tests share leaves nothing behind: a `leasehold run` started by a test
//! that ends without stopping it (a failed assertion, a forgotten child) is stopped with its
//! command and gives its lock up.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Env, PATIENCE, Stderr, code, exit_status, wait_for_file};

/// True while `pid` runs (a zombie has ended).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn wait_until_gone(pid: &str, what: &str) {
    let start = Instant::now();
    while running(pid) {
        assert!(start.elapsed() < PATIENCE, "{what} (pid {pid}) still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_left_behind_by_its_test_is_stopped_with_its_command() {
    let env = Env::new();
    let pid_file = env.path("command.pid");
    let script = format!("echo $$ > '{}'; exec sleep 600", pid_file.display());
    // A test thread that starts `leasehold run` and ends without stopping it, as a panicking
    // test does.
    let (run, log) = {
        let env = &env;
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut run = env.spawn(&["run", "--lock", "left", "--", "sh", "-c", &script]);
                let log = Stderr::watch(&mut run);
                wait_for_file(Path::new(&pid_file));
                (run, log)
            })
            .join()
            .unwrap()
        })
    };
    let command = wait_for_file(&pid_file);
    let status = exit_status(run);
    assert_ne!(code(&status), 0, "stopped, not finished: {}", log.text());
    wait_until_gone(&command, "the command of a run whose test ended");
    assert!(
        env.holders("left").is_empty(),
        "the lock was given up: {:?}",
        env.holders("left")
    );
}
