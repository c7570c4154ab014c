//! `run --wait` covers a store that is briefly unreachable, and process-local stores are refused
//! (items 9 and 5 of issue 33): a transient failure to reach the store is retried within the
//! wait, a permanent one ends the run at once; `memory:` and in-memory SQLite, which no other
//! process can see, are refused by every command whose point is exclusion between processes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, code, command, finish, text};

/// A loopback port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A store URL of each networked kind pointing at a closed port.
fn unreachable_urls(port: u16) -> Vec<(&'static str, String)> {
    vec![
        (
            "postgres",
            format!("postgres://postgres@127.0.0.1:{port}/test"),
        ),
        ("mysql", format!("mysql://root@127.0.0.1:{port}/test")),
        ("redis", format!("redis://127.0.0.1:{port}")),
        ("etcd", format!("etcd://127.0.0.1:{port}")),
        ("zookeeper", format!("zk://127.0.0.1:{port}")),
        ("nats", format!("nats://127.0.0.1:{port}")),
        (
            "dynamodb",
            format!("dynamodb://leases?endpoint=http://127.0.0.1:{port}&region=us-east-1"),
        ),
    ]
}

/// A store that cannot be reached is tried again for the whole `--wait` (the wait is not cut
/// short by the first connect error), and the run then fails with 75, having said once that it
/// retries.
#[test]
fn every_store_is_retried_within_the_wait_when_unreachable() {
    let env = Env::new();
    let port = closed_port();
    for (kind, url) in unreachable_urls(port) {
        let started = Instant::now();
        let out = env.output(&[
            "run", "--store", &url, "--lock", "a", "--wait", "3s", "--", "true",
        ]);
        let took = started.elapsed();
        let err = text(&out.stderr);
        assert_eq!(code(&out.status), 75, "{kind}: {err}");
        assert!(
            took >= Duration::from_millis(2_900),
            "{kind}: gave up after {took:?}, inside a 3 s --wait: {err}"
        );
        assert!(took < Duration::from_secs(40), "{kind}: took {took:?}");
        assert_eq!(
            err.matches("retrying for up to").count(),
            1,
            "{kind}: the retry is said once: {err}"
        );
    }
}

/// Without `--wait`, one try: the run fails at once.
#[test]
fn without_a_wait_an_unreachable_store_fails_at_once() {
    let env = Env::new();
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let started = Instant::now();
    let out = env.output(&["run", "--store", &url, "--lock", "a", "--", "true"]);
    assert_eq!(code(&out.status), 75, "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// A Redis server that comes up two seconds after `leasehold run --wait 30s` started: the run
/// gets the lock and runs the command.
#[test]
fn a_store_that_comes_up_within_the_wait_runs_the_command() {
    let Ok(redis) = which("redis-server") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is needed under CI"
        );
        eprintln!("skipping: redis-server is not installed");
        return;
    };
    let env = Env::new();
    let port = closed_port();
    let url = format!("redis://127.0.0.1:{port}");
    let marker = env.path("ran");
    let script = format!("touch {}", marker.display());
    let run = env
        .cmd(&[
            "run", "--store", &url, "--lock", "a", "--wait", "30s", "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let mut server = command(redis)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--dir"])
        .arg(env.path(""))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = finish(run);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    assert!(marker.exists(), "the command ran once the store answered");
    assert!(text(&out.stderr).contains("retrying for up to"));
}

/// A permanent failure (a file the store cannot create) is not retried, whatever the wait.
#[test]
fn a_permanent_failure_is_not_retried() {
    let env = Env::new();
    let started = Instant::now();
    let out = env.output(&[
        "run",
        "--store",
        "sqlite:///nonexistent-dir-of-leasehold/x/leases.db",
        "--lock",
        "a",
        "--wait",
        "30s",
        "--",
        "true",
    ]);
    assert_ne!(code(&out.status), 0, "{}", text(&out.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a permanent error ends the run at once, took {:?}",
        started.elapsed()
    );
}

/// `memory:` and in-memory SQLite give each process its own store: `run`, `status`, `release`
/// and `serve` refuse them with 125 and say what to use; also when they come from
/// `LEASEHOLD_STORE`.
#[test]
fn process_local_stores_are_refused_where_exclusion_is_the_point() {
    let env = Env::new();
    let marker = env.path("ran");
    let touch = format!("touch {}", marker.display());
    for store in ["memory:", "sqlite::memory:", "sqlite://:memory:"] {
        for args in [
            vec![
                "run", "--store", store, "--lock", "a", "--", "sh", "-c", &touch,
            ],
            vec!["status", "--store", store, "a"],
            vec!["release", "--store", store, "--force", "a"],
            vec![
                "serve",
                "--store",
                store,
                "--lock",
                "a",
                "--bind",
                "127.0.0.1:0",
            ],
        ] {
            let out = env.output(&args);
            let err = text(&out.stderr);
            assert_eq!(code(&out.status), 125, "{args:?}: {err}");
            assert!(
                err.contains("inside this one process") && err.contains("SQLite file"),
                "{args:?}: {err}"
            );
        }
        // A stray LEASEHOLD_STORE does not turn the guard off either.
        let out = env
            .cmd(&["run", "--lock", "a", "--", "sh", "-c", &touch])
            .env("LEASEHOLD_STORE", store)
            .output()
            .unwrap();
        assert_eq!(code(&out.status), 125, "{}", text(&out.stderr));
    }
    assert!(!marker.exists(), "no command ran on a process-local store");
    // simulate keeps its own in-memory store.
    let out = env.output(&["simulate", "--help"]);
    assert_eq!(code(&out.status), 0);
}

fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}
