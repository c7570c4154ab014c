//! Leader-only periodic jobs on paused tokio time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::{
    CancellationToken, ElectionOptions, Elector, Job, MemoryStore, Schedule,
    schedule::{JobEvent, JobOutcome},
};
use tokio::time::{Instant, sleep};

const PERIOD: Duration = Duration::from_secs(1);

fn elector(store: &Arc<MemoryStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .wait(Duration::ZERO)
        .lease(Duration::from_secs(30));
    Elector::with_options(store.clone(), opts.build().unwrap())
}

/// Records the virtual time (ms since `start`) of each run.
fn recorder(
    start: Instant,
) -> (
    Arc<Mutex<Vec<u128>>>,
    impl Fn() + Clone + Send + Sync + 'static,
) {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let r = runs.clone();
    (runs, move || {
        r.lock().unwrap().push(start.elapsed().as_millis())
    })
}

fn times(runs: &Arc<Mutex<Vec<u128>>>) -> Vec<u128> {
    runs.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn fixed_delay_with_an_immediate_first_run() {
    let store = Arc::new(MemoryStore::new());
    let (runs, record) = recorder(Instant::now());
    let stop = CancellationToken::new();
    let job = Job::every("tick", PERIOD, move |_| {
        let record = record.clone();
        async move {
            record();
            sleep(Duration::from_millis(100)).await;
            Ok::<_, String>(())
        }
    });
    let handle = Schedule::new(elector(&store, "a"))
        .job(job.fixed_delay())
        .start(stop.clone())
        .unwrap();
    sleep(Duration::from_millis(3500)).await;
    handle.shutdown().await;
    // Fixed delay: each run starts one period after the previous one ended.
    assert_eq!(times(&runs), [0, 1100, 2200, 3300]);
}

#[tokio::test(start_paused = true)]
async fn fixed_delay_first_run_after_an_initial_delay() {
    let store = Arc::new(MemoryStore::new());
    let start = Instant::now();
    let (late, record_late) = recorder(start);
    let (delayed, record_delayed) = recorder(start);
    let job = |name: &str, record: Box<dyn Fn() + Send + Sync>| {
        let record = Arc::new(record);
        Job::every(name.to_string(), PERIOD, move |_| {
            let record = record.clone();
            async move {
                record();
                Ok::<_, String>(())
            }
        })
    };
    let handle = Schedule::new(elector(&store, "a"))
        .job(
            job("late", Box::new(record_late))
                .fixed_delay()
                .initial_delay(PERIOD),
        )
        .job(
            job("delayed", Box::new(record_delayed))
                .fixed_delay()
                .initial_delay(Duration::from_millis(250)),
        )
        .start(CancellationToken::new())
        .unwrap();
    sleep(Duration::from_millis(2500)).await;
    handle.shutdown().await;
    assert_eq!(times(&late), [1000, 2000]);
    assert_eq!(times(&delayed), [250, 1250, 2250]);
}

#[tokio::test(start_paused = true)]
async fn contention_skips_and_errors_do_not_stop_the_schedule() {
    let store = Arc::new(MemoryStore::new());
    let holder = elector(&store, "other")
        .try_acquire("tick")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let (runs, record) = recorder(Instant::now());
    let job = Job::every("tick", PERIOD, move |_| {
        let record = record.clone();
        async move {
            record();
            Err::<(), _>("disk full")
        }
    });
    let handle = Schedule::new(elector(&store, "a"))
        .job(job.fixed_delay())
        .start(CancellationToken::new())
        .unwrap();
    sleep(Duration::from_millis(2500)).await;
    assert!(
        times(&runs).is_empty(),
        "skipped while another node holds the lock"
    );
    holder.release().await.unwrap();
    sleep(Duration::from_secs(3)).await;
    handle.shutdown().await;
    assert_eq!(
        times(&runs),
        [3000, 4000, 5000],
        "failing job keeps its schedule"
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_waits_for_the_running_action_and_releases() {
    let store = Arc::new(MemoryStore::new());
    let finished = Arc::new(Mutex::new(None));
    let f = finished.clone();
    let start = Instant::now();
    let stop = CancellationToken::new();
    let handle = Schedule::new(elector(&store, "a"))
        .every("tick", PERIOD, move |_| {
            let f = f.clone();
            async move {
                sleep(Duration::from_secs(2)).await;
                *f.lock().unwrap() = Some(start.elapsed());
                Ok::<_, String>(())
            }
        })
        .start(stop.clone())
        .unwrap();
    sleep(Duration::from_millis(100)).await;
    stop.cancel();
    handle.stopped().await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "stopped once the action finished"
    );
    assert_eq!(*finished.lock().unwrap(), Some(Duration::from_secs(2)));
    assert!(
        elector(&store, "b").state("tick").await.unwrap().is_free(),
        "lease released"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tick_never_waits_for_the_lock() {
    let store = Arc::new(MemoryStore::new());
    let holder = elector(&store, "other")
        .try_acquire("tick")
        .await
        .unwrap()
        .elected()
        .unwrap();
    // Even with a long wait configured, a tick that finds the lock held skips at once, so the job
    // does not run again right after the holder's run ends.
    let waiting = Elector::with_options(
        store.clone(),
        ElectionOptions::builder()
            .wait(Duration::from_secs(60))
            .build()
            .unwrap(),
    );
    let (runs, record) = recorder(Instant::now());
    let job = Job::every("tick", Duration::from_secs(10), move |_| {
        let record = record.clone();
        async move {
            record();
            Ok::<_, String>(())
        }
    });
    let handle = Schedule::new(waiting)
        .job(job.fixed_delay())
        .start(CancellationToken::new())
        .unwrap();
    sleep(Duration::from_millis(100)).await;
    holder.release().await.unwrap();
    sleep(Duration::from_secs(5)).await;
    assert!(
        times(&runs).is_empty(),
        "the tick at 0 skipped instead of waiting"
    );
    let start = Instant::now();
    handle.shutdown().await;
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "nothing in flight to wait for"
    );
}

/// Two nodes whose timers are half a period out of phase run a 10 ms job.
async fn two_nodes(aligned: bool) -> Vec<u128> {
    let store = Arc::new(MemoryStore::new());
    let (runs, record) = recorder(Instant::now());
    let stop = CancellationToken::new();
    let mut handles = Vec::new();
    for (node, offset) in [("a", 0), ("b", 500)] {
        let record = record.clone();
        let mut job = Job::every("report", PERIOD, move |_| {
            let record = record.clone();
            async move {
                record();
                sleep(Duration::from_millis(10)).await;
                Ok::<_, String>(())
            }
        })
        .initial_delay(Duration::from_millis(offset));
        if !aligned {
            job = job.fixed_delay();
        }
        handles.push(
            Schedule::new(elector(&store, node))
                .job(job)
                .start(stop.clone())
                .unwrap(),
        );
    }
    sleep(Duration::from_millis(9_990)).await;
    stop.cancel();
    for h in handles {
        h.stopped().await;
    }
    times(&runs)
}

#[tokio::test(start_paused = true)]
async fn at_most_once_per_period_across_out_of_phase_nodes() {
    let plain = two_nodes(false).await;
    assert!(
        plain.len() >= 18,
        "with fixed delay both nodes run: {plain:?}"
    );
    // Period-aligned (the default): one run per period, 10 s of 1 s periods (the first run at
    // once, in the period the test started in). `aligned_schedule.rs` checks the period ids.
    let once = two_nodes(true).await;
    assert!((10..=11).contains(&once.len()), "{once:?}");
}

#[tokio::test(start_paused = true)]
async fn invalid_jobs_are_rejected_at_start() {
    let e = elector(&Arc::new(MemoryStore::new()), "a");
    let zero =
        Schedule::new(e.clone()).every("x", Duration::ZERO, |_| async { Ok::<_, String>(()) });
    assert!(matches!(
        zero.start(CancellationToken::new()),
        Err(leasehold::Error::Options(_))
    ));
    let bad = Schedule::new(e).every("bad name", PERIOD, |_| async { Ok::<_, String>(()) });
    assert!(matches!(
        bad.start(CancellationToken::new()),
        Err(leasehold::Error::Name(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn grace_period_cancels_a_long_action_and_releases_its_lease() {
    let store = Arc::new(MemoryStore::new());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let stop = CancellationToken::new();
    let handle = Schedule::new(elector(&store, "a"))
        .grace_period(Duration::from_secs(2))
        .observe(move |job, event| seen.lock().unwrap().push((job.to_string(), event.clone())))
        .every("long", PERIOD, |_| async {
            sleep(Duration::from_secs(3600)).await;
            Ok::<_, String>(())
        })
        .start(stop.clone())
        .unwrap();
    sleep(Duration::from_millis(100)).await;
    assert!(!elector(&store, "b").state("long").await.unwrap().is_free());
    let start = Instant::now();
    handle.shutdown().await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "stopped at the end of the grace period"
    );
    assert!(elector(&store, "b").state("long").await.unwrap().is_free());
    let events: Vec<JobEvent> = events
        .lock()
        .unwrap()
        .iter()
        .map(|(j, e)| {
            assert_eq!(j, "long");
            e.clone()
        })
        .collect();
    let Some(JobEvent::Elected { period }) = events.get(1).cloned() else {
        panic!("elected second: {events:?}");
    };
    assert!(period.is_some(), "an aligned job runs for a period");
    assert_eq!(
        events,
        [
            JobEvent::Attempt { period },
            JobEvent::Elected { period },
            JobEvent::Finished {
                took: Duration::from_millis(2100),
                outcome: JobOutcome::Cancelled,
                period,
            },
            JobEvent::Stopped {
                took: Duration::from_secs(2),
                cancelled_action: true
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_action_that_ends_within_the_grace_period_finishes_normally() {
    let store = Arc::new(MemoryStore::new());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let handle = Schedule::new(elector(&store, "a"))
        .grace_period(Duration::from_secs(5))
        .observe(move |_, event| seen.lock().unwrap().push(event.clone()))
        .every("short", PERIOD, |_| async {
            sleep(Duration::from_millis(300)).await;
            Err::<(), _>("boom")
        })
        .start(CancellationToken::new())
        .unwrap();
    sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    handle.shutdown().await;
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert_eq!(
        events.lock().unwrap().last().cloned(),
        Some(JobEvent::Stopped {
            took: Duration::from_millis(200),
            cancelled_action: false
        })
    );
    assert!(events.lock().unwrap().iter().any(|e| matches!(
        e,
        JobEvent::Finished {
            took,
            outcome: JobOutcome::Failed,
            period: Some(_),
        } if *took == Duration::from_millis(300)
    )));
}

/// A run whose lease is lost is not a success: `Lost`, whether the action was dropped
/// (`cancel_on_lost`) or ran to its end without exclusivity.
#[tokio::test(start_paused = true)]
async fn a_run_that_loses_its_lease_reports_lost() {
    for cancel in [true, false] {
        let store = Arc::new(MemoryStore::new());
        let opts = ElectionOptions::builder()
            .node_id("a")
            .wait(Duration::ZERO)
            .lease(Duration::from_secs(1))
            .auto_extend(false)
            .cancel_on_lost(cancel)
            .build()
            .unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let ended = Arc::new(Mutex::new(false));
        let finished = ended.clone();
        let stop = CancellationToken::new();
        let handle = Schedule::new(Elector::with_options(store.clone(), opts))
            .observe(move |_, event| seen.lock().unwrap().push(event.clone()))
            .job(
                Job::every("overrun", Duration::from_secs(3600), move |_| {
                    let finished = finished.clone();
                    async move {
                        sleep(Duration::from_secs(3)).await;
                        *finished.lock().unwrap() = true;
                        Ok::<_, String>(())
                    }
                })
                .fixed_delay(),
            )
            .start(stop.clone())
            .unwrap();
        sleep(Duration::from_secs(5)).await;
        let outcomes: Vec<JobOutcome> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                JobEvent::Finished { outcome, took, .. } => {
                    if cancel {
                        assert!(
                            *took < Duration::from_secs(1),
                            "dropped at the loss: {took:?}"
                        );
                    }
                    Some(*outcome)
                }
                _ => None,
            })
            .collect();
        assert_eq!(outcomes, [JobOutcome::Lost], "cancel_on_lost {cancel}");
        assert_eq!(*ended.lock().unwrap(), !cancel, "cancel_on_lost {cancel}");
        assert!(
            elector(&store, "b")
                .state("overrun")
                .await
                .unwrap()
                .is_free()
        );
        handle.shutdown().await;
    }
}
