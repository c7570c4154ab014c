//! SQLite leases against processes whose wall clock is off: a contender started under
//! `faketime -f +10s` must not take over a live lease, one under `faketime -f -30s` must see a
//! released lock as free, and a holder whose clock is behind must not be overtaken.
//!
//! The parent test re-runs this test binary as a child under `faketime` (Debian package
//! `faketime`; `scripts/test` installs it). Without it the tests are skipped, or fail under `CI`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // test helpers

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::store::AcquireRequest;
use leasehold::{
    LeaseStore, LockName,
    store::{Extension, Release, Token},
};
use leasehold_sql::{SqlOptions, SqlStore};

const LOCK: &str = "clock-step";

fn wall_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn request(owner: &str, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(
        LockName::new(LOCK).unwrap(),
        1,
        Arc::from(owner),
        Token::random(),
        ttl,
    )
}

/// The `faketime` program, or `None` to skip (a failure under `CI`).
fn faketime() -> Option<&'static str> {
    let found = Command::new("faketime")
        .args(["-f", "+0s", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("faketime");
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "faketime is not installed (apt-get install faketime); scripts/test installs it"
    );
    eprintln!("skipping: faketime is not installed (apt-get install faketime)");
    None
}

/// Runs the child test `mode` under `faketime -f offset` on `url`, and returns its stderr.
fn run_child(offset: &str, mode: &str, url: &str) -> String {
    let out = Command::new(faketime().unwrap())
        .args(["-f", offset])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "faked_clock_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LEASEHOLD_CHILD_DB", url)
        .env("LEASEHOLD_CHILD_MODE", mode)
        .env("LEASEHOLD_PARENT_WALL_MS", wall_ms().to_string())
        .output()
        .expect("run the child under faketime");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "the child ({mode}, clock {offset}) failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

#[tokio::test]
#[ignore = "run by the tests below under faketime, as a child process"]
async fn faked_clock_child() {
    let (Ok(url), Ok(mode), Ok(parent)) = (
        std::env::var("LEASEHOLD_CHILD_DB"),
        std::env::var("LEASEHOLD_CHILD_MODE"),
        std::env::var("LEASEHOLD_PARENT_WALL_MS"),
    ) else {
        return;
    };
    // The clock really is off, or the test proves nothing.
    let skew = wall_ms() - parent.parse::<i64>().unwrap();
    let store = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let lock = LockName::new(LOCK).unwrap();
    match mode.as_str() {
        "ahead" => {
            assert!((9_000..20_000).contains(&skew), "clock ahead by {skew} ms");
            let got = store
                .try_acquire(&request("ahead", Duration::from_secs(5)))
                .await
                .unwrap()
                .elected();
            assert!(
                got.is_none(),
                "a process 10 s ahead took over a live lease: {got:?}"
            );
            let state = store.state(&lock, 1).await.unwrap();
            assert_eq!(state.holders.len(), 1, "{state:?}");
            assert_eq!(state.holders[0].owner, "parent");
        }
        "behind" => {
            assert!(
                (-31_000..-25_000).contains(&skew),
                "clock behind by {skew} ms"
            );
            let state = store.state(&lock, 1).await.unwrap();
            assert!(
                state.holders.is_empty(),
                "a released lock looks held to a process 30 s behind: {state:?}"
            );
            let got = store
                .try_acquire(&request("behind", Duration::from_secs(20)))
                .await
                .unwrap()
                .elected();
            assert!(
                got.is_some(),
                "a process 30 s behind could not take a released lock"
            );
            // Exits holding the lease (20 s by the real clock).
        }
        other => panic!("unknown mode {other}"),
    }
}

/// A contender whose wall clock is 10 s ahead does not take over a lease with 8–9 s left; the
/// holder keeps it (extend and release succeed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contender_with_its_clock_ahead_does_not_take_over() {
    if faketime().is_none() {
        return;
    }
    let url = common::sqlite_url("clock-ahead");
    let store = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let store = Arc::new(store);
    let lease = store
        .try_acquire(&request("parent", Duration::from_secs(8)))
        .await
        .unwrap()
        .elected()
        .expect("a fresh lock is free");
    // Keep 8–9 s left however long the child takes to start: always less than its 10 s lead.
    let renewer = {
        let (store, lease) = (Arc::clone(&store), lease.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = store.extend(&lease, Duration::from_secs(9)).await;
            }
        })
    };
    let child = tokio::task::spawn_blocking(move || run_child("+10s", "ahead", &url));
    let outcome = child.await;
    renewer.abort();
    outcome.unwrap();
    assert!(
        matches!(
            store.extend(&lease, Duration::from_secs(8)).await.unwrap(),
            Extension::Extended { .. }
        ),
        "the holder lost its lease to a process with its clock ahead"
    );
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
}

/// A contender whose wall clock is 30 s behind sees a released lock as free and takes it; its
/// lease then holds against this process (whose clock is 30 s ahead of it) for its whole length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contender_with_its_clock_behind_sees_a_released_lock_as_free() {
    if faketime().is_none() {
        return;
    }
    let url = common::sqlite_url("clock-behind");
    let store = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let lease = store
        .try_acquire(&request("parent", Duration::from_secs(60)))
        .await
        .unwrap()
        .elected()
        .expect("a fresh lock is free");
    assert_eq!(
        store.release(&lease, Duration::ZERO).await.unwrap(),
        Release::Released
    );
    let child_url = url.clone();
    tokio::task::spawn_blocking(move || run_child("-30s", "behind", &child_url))
        .await
        .unwrap();
    let lock = LockName::new(LOCK).unwrap();
    let state = store.state(&lock, 1).await.unwrap();
    assert_eq!(
        state
            .holders
            .iter()
            .map(|h| h.owner.as_str())
            .collect::<Vec<_>>(),
        ["behind"],
        "the lease of a holder whose clock is behind looks over: {state:?}"
    );
    let got = store
        .try_acquire(&request("parent", Duration::from_secs(5)))
        .await
        .unwrap()
        .elected();
    assert!(
        got.is_none(),
        "took over a live lease whose holder's clock is behind: {got:?}"
    );
}

/// An SQLite file made before the boot-clock columns existed is upgraded on open, and its
/// leases carry on.
#[tokio::test]
async fn an_older_sqlite_table_gains_the_clock_columns() {
    let url = common::sqlite_url("upgrade");
    let old_ddl = "CREATE TABLE leasehold_leases (lock_name TEXT NOT NULL, slot INTEGER NOT NULL, \
                   owner VARCHAR(255) NOT NULL, token TEXT NULL, fence INTEGER NOT NULL, \
                   acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (lock_name, slot))";
    {
        use sqlx::Connection;
        use std::str::FromStr;
        let opts = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
            .unwrap()
            .create_if_missing(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::query(old_ddl).execute(&mut conn).await.unwrap();
        let held_until = wall_ms() + 60_000;
        sqlx::query("INSERT INTO leasehold_leases VALUES ('clock-step', 0, 'old', 'aa', 7, 0, ?1)")
            .bind(held_until)
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    // Without permission to change the schema, the store says what to add.
    let err = SqlStore::connect_with(&url, common::options().with_create_schema(false))
        .await
        .expect_err("the columns are missing");
    assert!(err.to_string().contains("ADD COLUMN boot_id"), "{err}");

    let store = SqlStore::connect_with(&url, common::options())
        .await
        .unwrap();
    let lock = LockName::new(LOCK).unwrap();
    let state = store.state(&lock, 1).await.unwrap();
    assert_eq!(state.holders.len(), 1, "the old row's lease still counts");
    assert!(
        store
            .try_acquire(&request("new", Duration::from_secs(5)))
            .await
            .unwrap()
            .elected()
            .is_none()
    );
    // Opening again (columns present) is a no-op.
    SqlStore::connect_with(&url, SqlOptions::default().with_create_schema(false))
        .await
        .unwrap();
}
