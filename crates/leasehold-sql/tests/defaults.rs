//! The default options keep the promise on real databases: two replicas, each with its own store
//! client, started together with `Elector::new` + `run_if_leader` around a 2 s job → one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use leasehold::{Elector, LeaseStore};
use leasehold_sql::SqlStore;

/// The job every replica guards: it runs for 2 s.
const JOB: Duration = Duration::from_secs(2);

async fn replica(url: &str) -> Elector {
    let store = SqlStore::connect_with(url, common::options())
        .await
        .expect("connect");
    Elector::new(Arc::new(store) as Arc<dyn LeaseStore>)
}

/// Runs the 2 s job under `elector`: whether it ran, and how long the call took.
async fn guarded_job(elector: &Elector, lock: &str, runs: &AtomicU32) -> (bool, Duration) {
    let start = Instant::now();
    let ran = elector
        .run_if_leader(lock, |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(JOB).await;
        })
        .await
        .expect("no store error")
        .is_some();
    (ran, start.elapsed())
}

async fn two_replicas_run_the_job_once(url: &str) {
    let (a, b) = (replica(url).await, replica(url).await);
    let lock = format!("defaults-{}", leasehold::store::Token::random().to_hex());
    let runs = AtomicU32::new(0);
    let ((ran_a, took_a), (ran_b, took_b)) =
        tokio::join!(guarded_job(&a, &lock, &runs), guarded_job(&b, &lock, &runs));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{url}: exactly one run");
    assert!(
        ran_a != ran_b,
        "{url}: one replica ran it, the other skipped"
    );
    let skipped_after = if ran_a { took_b } else { took_a };
    // Generous: a real database answers one attempt far sooner than the job's 2 s.
    assert!(
        skipped_after < Duration::from_millis(1_500),
        "{url}: the other replica skipped without waiting for the run, after {skipped_after:?}"
    );
    assert!(a.state(&lock).await.unwrap().is_free(), "{url}: released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_replicas_started_together_run_a_2s_job_once() {
    two_replicas_run_the_job_once(&common::sqlite_url("defaults")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_replicas_started_together_run_a_2s_job_once() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        two_replicas_run_the_job_once(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_two_replicas_started_together_run_a_2s_job_once() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        two_replicas_run_the_job_once(&url).await;
    }
}
