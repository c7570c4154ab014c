//! Two OS processes contending on one SQLite file never overlap, and fences only grow.
//!
//! The parent test re-runs this test binary twice as children (`child_contender`), each doing
//! rounds of `run_if_leader` on the same lock and appending `enter`/`exit` lines to a shared log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector};
use leasehold_sql::SqlStore;

const ROUNDS: usize = 30;

#[tokio::test]
#[ignore = "run by two_processes_never_overlap as a child process"]
async fn child_contender() {
    let (Ok(url), Ok(log)) = (
        std::env::var("LEASEHOLD_CHILD_DB"),
        std::env::var("LEASEHOLD_CHILD_LOG"),
    ) else {
        return;
    };
    let store = Arc::new(
        SqlStore::connect_with(&url, common::options())
            .await
            .expect("open the shared file"),
    );
    let opts = ElectionOptions::builder()
        .wait(Duration::from_secs(10))
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    let elector = Elector::with_options(store, opts);
    let pid = std::process::id();
    let mut won = 0;
    for round in 0..ROUNDS {
        let log = log.clone();
        let ran = elector
            .run_if_leader("two-processes", |ctx| async move {
                let line = |what: &str| {
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .create(true)
                        .open(&log)
                        .unwrap();
                    writeln!(f, "{what} {pid} {}", ctx.fence()).unwrap();
                };
                line("enter");
                tokio::time::sleep(Duration::from_millis((round % 4) as u64 * 3)).await;
                line("exit");
            })
            .await
            .unwrap();
        won += usize::from(ran.is_some());
        tokio::task::yield_now().await;
    }
    assert_eq!(
        won, ROUNDS,
        "with a 10 s wait every round is eventually elected"
    );
}

#[test]
fn two_processes_never_overlap() {
    let url = common::sqlite_url("processes");
    let log = std::env::temp_dir().join(format!(
        "leasehold-two-processes-{}.log",
        leasehold::store::Token::random().to_hex()
    ));
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child_contender",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("LEASEHOLD_CHILD_DB", &url)
                .env("LEASEHOLD_CHILD_LOG", &log)
                .spawn()
                .expect("spawn a child process")
        })
        .collect();
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "child failed");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<(&str, u32, u64)> = text
        .lines()
        .map(|l| {
            let mut p = l.split(' ');
            (
                p.next().unwrap(),
                p.next().unwrap().parse().unwrap(),
                p.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines.len(),
        2 * 2 * ROUNDS,
        "every round entered and exited"
    );
    let mut last_fence = 0;
    for pair in lines.chunks(2) {
        let [(enter, p1, f1), (exit, p2, f2)] = pair else {
            unreachable!()
        };
        assert_eq!(
            (*enter, *exit),
            ("enter", "exit"),
            "two holders overlapped: {pair:?}"
        );
        assert_eq!((p1, f1), (p2, f2), "interleaved holders: {pair:?}");
        assert!(*f1 > last_fence, "fence {f1} after {last_fence}");
        last_fence = *f1;
    }
    for pid in pids {
        assert!(
            lines.iter().any(|(_, p, _)| *p == pid),
            "process {pid} never won"
        );
    }
    let _ = std::fs::remove_file(log);
}

#[tokio::test]
#[ignore = "run by processes_opening_a_new_file_at_once_all_succeed as a child process"]
async fn child_opener() {
    let Ok(url) = std::env::var("LEASEHOLD_CHILD_DB") else {
        return;
    };
    SqlStore::connect_with(&url, common::options())
        .await
        .expect("open the new file");
}

/// Processes opening one new SQLite file at the same moment (cron jobs on one host starting in
/// the same second) must all open it: none may fail with "database is locked".
#[test]
fn processes_opening_a_new_file_at_once_all_succeed() {
    let exe = std::env::current_exe().unwrap();
    for round in 0..4 {
        let url = common::sqlite_url("opening");
        // This process keeps writing to the file while the others open it.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store = runtime
            .block_on(SqlStore::connect_with(&url, common::options()))
            .unwrap();
        let elector = Elector::new(Arc::new(store));
        let writer = runtime.spawn(async move {
            loop {
                let _ = elector.run_if_leader("busy", |_| async {}).await;
            }
        });
        let children: Vec<_> = (0..6)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "child_opener", "--ignored", "--test-threads=1"])
                    .env("LEASEHOLD_CHILD_DB", &url)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn a child process")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: a child could not open the file: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        writer.abort();
    }
}
