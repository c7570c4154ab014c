//! Store passwords never reach leasehold's output, and an unreachable store fails fast with its
//! own exit code.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, code, finish, text};

const URL: &str = "postgres://u:hunter2@127.0.0.1:1/x";

#[test]
fn an_unreachable_store_fails_with_75_and_no_password() {
    let env = Env::new();
    let started = Instant::now();
    // Started together: each waits out the SQL store's connect timeout.
    let runs: Vec<_> = [
        &["run", "--store", URL, "--lock", "x", "--", "true"][..],
        &["status", "--store", URL, "x"],
        &["release", "--force", "--store", URL, "x"],
    ]
    .into_iter()
    .map(|args| {
        let child = env
            .cmd(args)
            .env("LEASEHOLD_LOG", "trace")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        (args, child)
    })
    .collect();
    for (args, child) in runs {
        let out = finish(child);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(code(&out.status), 75, "{args:?}: {stderr}");
        assert!(stderr.contains("store unavailable"), "{stderr}");
        assert!(stderr.contains("u:***@127.0.0.1:1"), "{stderr}");
        assert!(
            !stdout.contains("hunter2") && !stderr.contains("hunter2"),
            "{stdout}\n{stderr}"
        );
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_password_in_the_environment_is_not_shown_by_help_or_errors() {
    let env = Env::new();
    for args in [
        &["run", "--help"][..],
        &["--help"],
        &["run", "--lock", "x"],
        &["status", "bad name"],
        &["status", URL],
    ] {
        let out = env
            .cmd(args)
            .env("LEASEHOLD_STORE", URL)
            .output()
            .expect("run");
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(!all.contains("hunter2"), "{args:?}: {all}");
    }
    let out = env
        .cmd(&["status", "--json", "x"])
        .env("LEASEHOLD_STORE", "nosuch://u:hunter2@h/x")
        .output()
        .expect("run");
    assert_eq!(code(&out.status), 125);
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("hunter2") && stderr.contains("u:***@h"),
        "{stderr}"
    );
}
