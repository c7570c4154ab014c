//! Job schedule, failures and per-job metrics on paused tokio time (no sockets).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use leasehold::{CancellationToken, ElectionOptions, Elector, Job, LeaderContext, MemoryStore};
use leasehold_axum::{LeaderJobs, job_metrics};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tokio::time::{Instant, sleep};

fn elector(store: &Arc<MemoryStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .lease(Duration::from_secs(30))
        .build()
        .unwrap();
    Elector::with_options(store.clone(), opts)
}

type Sample = (String, Vec<(String, String)>, DebugValue);

type Action = Box<dyn Fn(LeaderContext) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A job every second with fixed delay, so that its attempts fall at 0, 1, 2 and 3 s whatever the
/// wall clock's phase (`period_metrics_name_the_period_and_already_ran` covers aligned jobs).
fn every_second(name: &str, action: Action) -> Job {
    Job::every(name, Duration::from_secs(1), action).fixed_delay()
}

fn snapshot_of(snapshotter: &metrics_util::debugging::Snapshotter) -> Vec<Sample> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let labels = key
                .key()
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            (key.key().name().to_string(), labels, value)
        })
        .collect()
}

/// Sum of counter values (or histogram sample counts) named `name` with label `key=value`.
fn total(snapshot: &[Sample], name: &str, label: Option<(&str, &str)>) -> u64 {
    snapshot
        .iter()
        .filter(|(n, labels, _)| {
            n == name && label.is_none_or(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, _, v)| match v {
            DebugValue::Counter(c) => *c,
            DebugValue::Histogram(h) => h.len() as u64,
            DebugValue::Gauge(_) => 0,
        })
        .sum()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_failing_job_keeps_its_schedule_and_everything_is_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);

    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let holder = elector(&store, "other")
        .try_acquire("other-job")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let shutdown = CancellationToken::new();
    let jobs = LeaderJobs::new(elector(&store, "a"))
        .grace_period(Duration::from_secs(2))
        .job(every_second(
            "failing",
            Box::new(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { Err::<(), _>("disk full".to_owned()) })
            }),
        ))
        .job(every_second(
            "other-job",
            Box::new(|_| Box::pin(async { Ok(()) })),
        ))
        .job(every_second(
            "slow",
            Box::new(|_| {
                Box::pin(async {
                    sleep(Duration::from_secs(3600)).await;
                    Ok(())
                })
            }),
        ))
        .start(shutdown.clone())
        .unwrap();
    sleep(Duration::from_millis(3500)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "runs at 0, 1, 2, 3 s despite failing"
    );

    let start = Instant::now();
    shutdown.cancel();
    jobs.stopped().await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "the slow action got its grace period"
    );
    holder.release().await.unwrap();

    let snapshot = snapshot_of(&snapshotter);
    let job = |j| Some(("job", j));
    assert_eq!(total(&snapshot, job_metrics::ATTEMPTS, job("failing")), 4);
    assert_eq!(total(&snapshot, job_metrics::RUNS, job("failing")), 4);
    assert_eq!(total(&snapshot, job_metrics::FAILURES, job("failing")), 4);
    assert_eq!(
        total(&snapshot, job_metrics::FAILURES, Some(("reason", "error"))),
        4
    );
    assert_eq!(total(&snapshot, job_metrics::DURATION, job("failing")), 4);
    assert_eq!(total(&snapshot, job_metrics::ATTEMPTS, job("other-job")), 4);
    assert_eq!(
        total(
            &snapshot,
            job_metrics::SKIPS,
            Some(("reason", "contention"))
        ),
        4
    );
    assert_eq!(total(&snapshot, job_metrics::RUNS, job("other-job")), 0);
    assert_eq!(total(&snapshot, job_metrics::RUNS, job("slow")), 1);
    assert_eq!(
        total(
            &snapshot,
            job_metrics::FAILURES,
            Some(("reason", "cancelled"))
        ),
        1
    );
    assert_eq!(
        total(
            &snapshot,
            job_metrics::SHUTDOWNS,
            Some(("outcome", "clean"))
        ),
        2
    );
    assert_eq!(
        total(
            &snapshot,
            job_metrics::SHUTDOWNS,
            Some(("outcome", "cancelled"))
        ),
        1
    );
    assert_eq!(total(&snapshot, job_metrics::SHUTDOWN_SECONDS, None), 3);
    for (name, labels, _) in &snapshot {
        if name.starts_with("leasehold_job_") {
            assert!(
                labels
                    .iter()
                    .all(|(k, _)| ["job", "reason", "outcome"].contains(&k.as_str()))
            );
        }
    }
    let state = elector(&store, "b").state("slow").await.unwrap();
    assert!(state.is_free(), "the cancelled action's lease was released");
}

/// Two instances run an hourly job (period-aligned, the default): one runs the hour and sets the
/// period gauge; the other's attempt is counted as skipped because the period already ran.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn period_metrics_name_the_period_and_already_ran() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);

    let store = Arc::new(MemoryStore::new());
    let shutdown = CancellationToken::new();
    let ran = Arc::new(std::sync::Mutex::new(None));
    let start = |node| {
        let ran = ran.clone();
        LeaderJobs::new(elector(&store, node))
            .every("hourly", Duration::from_secs(3600), move |ctx| {
                *ran.lock().unwrap() = ctx.lease().period;
                async { Ok::<_, String>(()) }
            })
            .start(shutdown.clone())
            .unwrap()
    };
    let a = start("a");
    sleep(Duration::from_millis(100)).await;
    let b = start("b");
    sleep(Duration::from_millis(100)).await;
    shutdown.cancel();
    a.stopped().await;
    b.stopped().await;

    let snapshot = snapshot_of(&snapshotter);
    let job = Some(("job", "hourly"));
    assert_eq!(total(&snapshot, job_metrics::ATTEMPTS, job), 2);
    assert_eq!(total(&snapshot, job_metrics::RUNS, job), 1);
    assert_eq!(
        total(
            &snapshot,
            job_metrics::SKIPS,
            Some(("reason", "already_ran"))
        ),
        1
    );
    let period = ran.lock().unwrap().expect("the run had a period");
    let gauge = snapshot
        .iter()
        .find_map(|(n, _, v)| match v {
            DebugValue::Gauge(g) if n == job_metrics::PERIOD => Some(g.into_inner()),
            _ => None,
        })
        .expect("the period gauge is set");
    #[allow(clippy::cast_precision_loss)]
    let expected = period as f64;
    assert!((gauge - expected).abs() < 0.5, "{gauge} != {period}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn invalid_jobs_fail_at_startup() {
    let store = Arc::new(MemoryStore::new());
    let zero = LeaderJobs::new(elector(&store, "a"))
        .every("zero", Duration::ZERO, |_| async { Ok::<_, String>(()) })
        .start(CancellationToken::new());
    assert!(matches!(
        zero,
        Err(leasehold_axum::Error::Leasehold(leasehold::Error::Options(
            _
        )))
    ));
    let bad = LeaderJobs::new(elector(&store, "a"))
        .every("bad name", Duration::from_secs(1), |_| async {
            Ok::<_, String>(())
        })
        .start(CancellationToken::new());
    assert!(matches!(
        bad,
        Err(leasehold_axum::Error::Leasehold(leasehold::Error::Name(_)))
    ));
}
