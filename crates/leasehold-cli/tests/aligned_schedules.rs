//! Period-aligned schedules on every real store: three replicas, each with its own store client
//! (as separate hosts would have), started 0, 450 and 900 ms apart, run an every-2 s job for
//! 20 s — once through the core `Schedule` and once through leasehold-axum's `LeaderJobs`, side
//! by side on two locks. Each must run 10 ± 1 times in all, never twice in one period, with no
//! period skipped between the first run and the last.
//!
//! This crate already depends on every store and on leasehold-axum, so one test reaches them
//! all. (The memory store's version runs on paused time in `leasehold/tests/aligned_schedule.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // test helpers

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{
    CancellationToken, ElectionOptions, Elector, Job, LeaderContext, Schedule, schedule::JobEvent,
    store::StoreRegistry,
};
use leasehold_axum::LeaderJobs;
use tokio::time::{Instant, sleep, sleep_until};

use common::{server, unique};

const PERIOD: Duration = Duration::from_secs(2);
const RUN_FOR: Duration = Duration::from_secs(20);
const STARTS_MS: [u64; 3] = [0, 450, 900];

fn registry() -> StoreRegistry {
    StoreRegistry::new()
        .with(leasehold_sql::SqlOpener::new())
        .with(leasehold_redis::RedisOpener::new())
        .with(leasehold_dynamodb::DynamoDbOpener::new())
        .with(leasehold_etcd::EtcdOpener::new())
}

/// What the replicas saw: the runs (node, period granted) and the ledger's refusals.
#[derive(Default)]
struct Seen {
    runs: Mutex<Vec<(String, i64)>>,
    refused: Mutex<u32>,
}

/// The job: records its node and period, then works for 100 ms.
fn job(lock: &str, node: &str, seen: &Arc<Seen>) -> Job {
    let (node, seen) = (node.to_owned(), Arc::clone(seen));
    Job::every(lock, PERIOD, move |ctx: LeaderContext| {
        let period = ctx.lease().period.expect("an aligned run claims a period");
        seen.runs.lock().unwrap().push((node.clone(), period));
        async {
            sleep(Duration::from_millis(100)).await;
            Ok::<_, String>(())
        }
    })
}

fn counting_refusals(seen: &Arc<Seen>) -> impl Fn(&str, &JobEvent) + Send + Sync + 'static {
    let seen = Arc::clone(seen);
    move |_, event| {
        if matches!(event, JobEvent::AlreadyRan(_)) {
            *seen.refused.lock().unwrap() += 1;
        }
    }
}

fn check(what: &str, seen: &Seen) {
    let runs = seen.runs.lock().unwrap().clone();
    assert!(
        (9..=11).contains(&runs.len()),
        "{what}: 10 ± 1 runs in 20 s of 2 s periods, got {}: {runs:?}",
        runs.len()
    );
    let mut periods: Vec<i64> = runs.iter().map(|(_, p)| *p).collect();
    periods.sort_unstable();
    for pair in periods.windows(2) {
        assert_ne!(pair[0], pair[1], "{what}: two runs in one period: {runs:?}");
        assert_eq!(
            pair[1],
            pair[0] + 1,
            "{what}: a period was skipped: {runs:?}"
        );
    }
    let refused = *seen.refused.lock().unwrap();
    assert!(
        refused > 0,
        "{what}: the later replicas' attempts were refused by the ledger"
    );
}

async fn three_replicas_run_each_period_once(url: &str) {
    let (schedule_lock, jobs_lock) = (unique("aligned-schedule"), unique("aligned-jobs"));
    let (by_schedule, by_jobs) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    let stop = CancellationToken::new();
    let t0 = Instant::now();
    let mut schedules = Vec::new();
    let mut job_sets = Vec::new();
    for (i, at) in STARTS_MS.into_iter().enumerate() {
        sleep_until(t0 + Duration::from_millis(at)).await;
        let node = format!("replica-{i}");
        let store = registry().open(url).await.expect("open the store");
        let options = ElectionOptions::builder()
            .node_id(&node)
            .lease(Duration::from_secs(10))
            .build()
            .unwrap();
        let elector = Elector::with_options(store, options);
        schedules.push(
            Schedule::new(elector.clone())
                .job(job(&schedule_lock, &node, &by_schedule))
                .observe(counting_refusals(&by_schedule))
                .start(stop.clone())
                .unwrap(),
        );
        // LeaderJobs installs its own observer (the job metrics); the ledger's refusals show in
        // the per-lock events instead.
        let mut events = elector.subscribe();
        let (refused, lock) = (Arc::clone(&by_jobs), jobs_lock.clone());
        tokio::spawn(async move {
            while let Ok(event) = events.recv().await {
                if matches!(&event, leasehold::Event::AlreadyRan { lock: l, .. } if l.to_string() == lock)
                {
                    *refused.refused.lock().unwrap() += 1;
                }
            }
        });
        job_sets.push(
            LeaderJobs::new(elector)
                .job(job(&jobs_lock, &node, &by_jobs))
                .start(stop.clone())
                .unwrap(),
        );
    }
    sleep_until(t0 + RUN_FOR).await;
    stop.cancel();
    for s in schedules {
        s.stopped().await;
    }
    for j in job_sets {
        j.stopped().await;
    }
    check("Schedule", &by_schedule);
    check("LeaderJobs", &by_jobs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_replicas_run_each_period_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("leases.db").display());
    three_replicas_run_each_period_once(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_replicas_run_each_period_once() {
    if let Some(url) = server("LEASEHOLD_TEST_POSTGRES_URL") {
        three_replicas_run_each_period_once(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_replicas_run_each_period_once() {
    if let Some(url) = server("LEASEHOLD_TEST_MYSQL_URL") {
        three_replicas_run_each_period_once(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_replicas_run_each_period_once() {
    if let Some(url) = server("LEASEHOLD_TEST_REDIS_URL") {
        three_replicas_run_each_period_once(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_replicas_run_each_period_once() {
    if let Some(endpoint) = server("LEASEHOLD_TEST_DYNAMODB_ENDPOINT") {
        let url = format!(
            "dynamodb://leasehold_cli_aligned?endpoint={endpoint}&region=us-east-1&create_table=true"
        );
        three_replicas_run_each_period_once(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_replicas_run_each_period_once() {
    if let Some(endpoints) = server("LEASEHOLD_TEST_ETCD_ENDPOINTS") {
        let url = format!("etcd://{endpoints}/leasehold-cli-aligned");
        three_replicas_run_each_period_once(&url).await;
    }
}
