//! `leasehold run` at the edges of its lease's life, end to end with the built binary: a grant
//! that arrives after a signal interrupted the wait, a lease that ran out while leasehold itself
//! was stopped, and a renewal that starts failing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // tests

mod common;

use std::time::{Duration, Instant};

use common::{Env, PATIENCE, Stderr, code, exit_status, signal, text, wait_for_file};
use sqlx::{Connection, Executor, Row};

fn postgres_url() -> Option<String> {
    const VAR: &str = "LEASEHOLD_TEST_POSTGRES_URL";
    match std::env::var(VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!("{VAR} is not set under CI"),
        _ => {
            eprintln!("skipping: {VAR} is not set (run scripts/test to start the servers)");
            None
        }
    }
}

fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{tag}-{}-{nanos}", std::process::id())
}

/// Issue #13 item 9. A SIGTERM arrives while the acquisition is in flight: PostgreSQL holds the
/// request on a row lock of the test's own transaction, so the request is applied only after
/// leasehold was told to stop. leasehold must not exit before the store answered, and must
/// release the lease it was granted: right after it exits, the lock is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_that_arrives_after_sigterm_is_released_before_exit() {
    let Some(url) = postgres_url() else { return };
    let env = Env::new();
    let lock = unique("late-grant");
    // A first run creates the lease row (rows are kept after release).
    let out = env.output(&["run", "--store", &url, "--lock", &lock, "--", "true"]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));

    let mut blocker = sqlx::PgConnection::connect(&url).await.unwrap();
    blocker.execute("BEGIN").await.unwrap();
    let blocker_pid: i32 = sqlx::query("SELECT pg_backend_pid()")
        .fetch_one(&mut blocker)
        .await
        .unwrap()
        .get(0);
    sqlx::query("SELECT 1 FROM leasehold_leases WHERE lock_name = $1 FOR UPDATE")
        .bind(&lock)
        .fetch_all(&mut blocker)
        .await
        .unwrap();

    let mut run = env.spawn(&[
        "run", "--store", &url, "--lock", &lock, "--lease", "60s", "--wait", "30s", "--", "true",
    ]);
    let stderr = Stderr::watch(&mut run);
    let mut probe = sqlx::PgConnection::connect(&url).await.unwrap();
    let start = Instant::now();
    loop {
        let waiting: i64 = sqlx::query(
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
        )
        .bind(blocker_pid)
        .fetch_one(&mut probe)
        .await
        .unwrap()
        .get(0);
        if waiting > 0 {
            break; // leasehold's acquisition waits on our row lock
        }
        assert!(
            start.elapsed() < PATIENCE,
            "leasehold never reached the row"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    signal(run.id(), "TERM");
    stderr.wait_for("got SIGTERM while waiting for lock");
    // Only now is the acquisition applied (and granted).
    blocker.execute("ROLLBACK").await.unwrap();
    let status = tokio::task::spawn_blocking(move || exit_status(run))
        .await
        .unwrap();
    assert_eq!(code(&status), 143, "stderr:\n{}", stderr.text());
    assert!(
        stderr.text().contains("command not run"),
        "{}",
        stderr.text()
    );

    // Right after the exit, and for a while after it, nobody holds the lock.
    let live = "SELECT count(*) FROM leasehold_leases WHERE lock_name = $1 AND token IS NOT NULL \
                AND expires_at > CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)";
    for _ in 0..10 {
        let held: i64 = sqlx::query(live)
            .bind(&lock)
            .fetch_one(&mut probe)
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            held,
            0,
            "the grant that arrived after SIGTERM is still held; stderr:\n{}",
            stderr.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Gap A. leasehold itself is stopped (SIGSTOP) for longer than the lease while its command
/// finishes; when it resumes, the command's code is not passed on as if all were well: exit 123
/// and a message that exclusivity was not guaranteed.
#[test]
fn a_lease_that_ran_out_while_leasehold_was_stopped_is_not_reported_as_success() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!("echo up > '{}'; sleep 1", started.display());
    let mut run = env.spawn(&[
        "run", "--lock", "stopped", "--lease", "1s", "--", "sh", "-c", &script,
    ]);
    let stderr = Stderr::watch(&mut run);
    wait_for_file(&started);
    signal(run.id(), "STOP");
    std::thread::sleep(Duration::from_secs(3)); // the command ends; the lease runs out
    signal(run.id(), "CONT");
    let status = exit_status(run);
    std::thread::sleep(Duration::from_millis(100)); // let the reader thread drain
    let err = stderr.text();
    assert_eq!(code(&status), 123, "stderr:\n{err}");
    assert!(err.contains("finished (exit code 0)"), "{err}");
    assert!(
        err.contains("noticed only after `sh` finished: was leasehold stopped or starved?"),
        "{err}"
    );
    // Reported once, in the one line every loss gets.
    assert_eq!(err.matches("lost").count(), 1, "{err}");
    assert!(
        err.starts_with("leasehold: lease on lock stopped lost ("),
        "{err}"
    );
    assert!(env.holders("stopped").is_empty());
}

/// Gap B. The store stops answering (another connection holds SQLite's write lock) while the
/// command runs: a "renewal is failing" line comes once, before the lease is reported lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_renewal_is_reported_once_before_the_loss() {
    let env = Env::new();
    let started = env.path("started");
    let script = format!("echo up > '{}'; sleep 30", started.display());
    let mut run = env.spawn(&[
        "run",
        "--lock",
        "outage",
        "--lease",
        "3s",
        "--kill-grace",
        "200ms",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stderr = Stderr::watch(&mut run);
    wait_for_file(&started);
    let mut blocker = sqlx::SqliteConnection::connect(env.store()).await.unwrap();
    blocker.execute("BEGIN IMMEDIATE").await.unwrap();
    stderr.wait_for("lease on lock outage lost");
    blocker.execute("ROLLBACK").await.unwrap();
    let status = tokio::task::spawn_blocking(move || exit_status(run))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await; // let the reader thread drain
    let err = stderr.text();
    assert_eq!(code(&status), 124, "stderr:\n{err}");
    let failing = "renewing the lease on lock outage is failing";
    assert_eq!(err.matches(failing).count(), 1, "{err}");
    let warned = err.find(failing).unwrap();
    let lost = err.find("lease on lock outage lost").expect("lost message");
    assert!(warned < lost, "{err}");
    // The library's own warnings about the lease are not repeated at the default verbosity.
    let lost_lines = err.lines().filter(|l| l.contains("lost")).count();
    assert_eq!(lost_lines, 1, "{err}");
}
