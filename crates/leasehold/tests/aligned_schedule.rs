//! Period-aligned jobs (the default) on paused tokio time and the memory store: attempts at
//! period starts, at most one run per period across nodes, the missed-period policy, events
//! that carry the period, and the options' validation.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasehold::{
    CancellationToken, ElectionOptions, Elector, Job, MemoryStore, Schedule,
    error::OptionsError,
    schedule::{JobEvent, MissedPeriods, ScheduleHandle},
};
use tokio::time::{Instant, sleep};

const PERIOD: Duration = Duration::from_secs(2);

fn elector(store: &Arc<MemoryStore>, node: &str) -> Elector {
    let opts = ElectionOptions::builder()
        .node_id(node)
        .lease(Duration::from_secs(30));
    Elector::with_options(store.clone(), opts.build().unwrap())
}

/// How far into a period of `PERIOD` the clocks (the memory store's and the schedule's, both
/// anchored to the wall clock now) are: the first period start comes `PERIOD - phase` from now.
fn phase() -> u128 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    now.as_millis() % PERIOD.as_millis()
}

/// One run: the node, the virtual time (ms since the test began) and the period granted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    node: String,
    at: u128,
    period: i64,
}

type Runs = Arc<Mutex<Vec<Run>>>;

/// A job that records its runs and then works for `work`.
fn job(runs: &Runs, node: &str, start: Instant, work: Duration) -> Job {
    job_every(PERIOD, runs, node, start, work)
}

fn job_every(period: Duration, runs: &Runs, node: &str, start: Instant, work: Duration) -> Job {
    let (runs, node) = (runs.clone(), node.to_owned());
    Job::every("report", period, move |ctx| {
        let (runs, node) = (runs.clone(), node.clone());
        async move {
            let period = ctx.lease().period.expect("an aligned run claims a period");
            runs.lock().unwrap().push(Run {
                node,
                at: start.elapsed().as_millis(),
                period,
            });
            sleep(work).await;
            Ok::<_, String>(())
        }
    })
}

fn start(
    store: &Arc<MemoryStore>,
    node: &str,
    job: Job,
    events: Option<&Events>,
) -> ScheduleHandle {
    let mut schedule = Schedule::new(elector(store, node)).job(job);
    if let Some(events) = events {
        let events = events.clone();
        schedule = schedule.observe(move |_, e| events.lock().unwrap().push(e.clone()));
    }
    schedule.start(CancellationToken::new()).unwrap()
}

type Events = Arc<Mutex<Vec<JobEvent>>>;

fn assert_near(actual: u128, expected: u128, what: &str) {
    assert!(
        // Attempts are made 2 ms after a period's start; allow for whole-millisecond rounding.
        actual.abs_diff(expected + 2) <= 3,
        "{what}: at {actual} ms, expected about {expected} ms"
    );
}

#[tokio::test(start_paused = true)]
async fn attempts_land_on_period_starts_after_a_first_run_at_once() {
    let store = Arc::new(MemoryStore::new());
    let (t0, phase) = (Instant::now(), phase());
    let runs = Runs::default();
    let handle = start(
        &store,
        "a",
        // Instant work, so that no run lasts into the next period (which `RunOnce` would
        // catch up at once instead of at its start).
        job(&runs, "a", t0, Duration::ZERO).jitter(Duration::ZERO),
        None,
    );
    sleep(Duration::from_millis(7_000)).await;
    handle.shutdown().await;
    let runs = runs.lock().unwrap().clone();
    assert!(runs.len() >= 4, "{runs:?}");
    assert!(
        runs[0].at <= 1,
        "the current period runs at once (RunOnce): {runs:?}"
    );
    let period = PERIOD.as_millis();
    for (i, run) in runs.iter().enumerate().skip(1) {
        let i = u128::try_from(i).unwrap();
        assert_near(run.at, i * period - phase, "a later run starts its period");
    }
    for pair in runs.windows(2) {
        assert_eq!(pair[1].period, pair[0].period + 1, "{runs:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn skip_waits_for_the_next_period_start() {
    let store = Arc::new(MemoryStore::new());
    let (t0, phase) = (Instant::now(), phase());
    let runs = Runs::default();
    let job = job(&runs, "a", t0, Duration::ZERO)
        .jitter(Duration::ZERO)
        .missed(MissedPeriods::Skip);
    let handle = start(&store, "a", job, None);
    sleep(Duration::from_millis(4_500)).await;
    handle.shutdown().await;
    let runs = runs.lock().unwrap().clone();
    assert_near(
        runs[0].at,
        PERIOD.as_millis() - phase,
        "first run at the next start",
    );
}

/// Three replicas started 0, 300 and 900 ms apart (their timers and start-up delays differ),
/// running an every-2 s job for 20 s: one run per period, 10 ± 1 in all, and the late replicas'
/// attempts are refused by the ledger.
#[tokio::test(start_paused = true)]
async fn three_replicas_on_skewed_timers_run_each_period_once() {
    let store = Arc::new(MemoryStore::new());
    let t0 = Instant::now();
    let runs = Runs::default();
    let events = Events::default();
    let mut handles = Vec::new();
    for (node, delay) in [("a", 0), ("b", 300), ("c", 900)] {
        let job = job(&runs, node, t0, Duration::from_millis(100))
            .initial_delay(Duration::from_millis(delay));
        handles.push(start(&store, node, job, Some(&events)));
    }
    sleep(Duration::from_secs(20)).await;
    for h in handles {
        h.shutdown().await;
    }
    let runs = runs.lock().unwrap().clone();
    assert!((9..=11).contains(&runs.len()), "10 ± 1 runs: {runs:?}");
    let mut periods: Vec<i64> = runs.iter().map(|r| r.period).collect();
    periods.dedup();
    assert_eq!(
        periods.len(),
        runs.len(),
        "two runs in one period: {runs:?}"
    );
    let refused = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, JobEvent::AlreadyRan(_)))
        .count();
    assert!(
        refused >= runs.len(),
        "the late replicas were refused: {refused}"
    );
}

/// A run that outlasts its period: `RunOnce` attempts the current period as soon as it ends;
/// `Skip` waits for the next start.
#[tokio::test(start_paused = true)]
async fn an_overrun_catches_up_once_or_skips() {
    for policy in [MissedPeriods::RunOnce, MissedPeriods::Skip] {
        let store = Arc::new(MemoryStore::new());
        let (t0, phase) = (Instant::now(), phase());
        let runs = Runs::default();
        let job = job(&runs, "a", t0, Duration::from_millis(5_000))
            .jitter(Duration::ZERO)
            .missed(policy);
        let handle = start(&store, "a", job, None);
        sleep(Duration::from_millis(7_000 + 2_000)).await;
        handle.shutdown().await;
        let runs = runs.lock().unwrap().clone();
        let period = PERIOD.as_millis();
        match policy {
            MissedPeriods::RunOnce => {
                assert!(runs[0].at <= 1, "first run at once: {runs:?}");
                assert!(
                    runs[1].at.abs_diff(5_000) <= 1,
                    "caught up as the run ended: {runs:?}"
                );
                let passed = i64::try_from((phase + 5_000) / period).unwrap();
                assert_eq!(runs[1].period, runs[0].period + passed, "{runs:?}");
            }
            _ => {
                // First run at the next start, the second at the first start after it ended.
                let first = period - phase;
                assert_near(runs[0].at, first, "first run at the next start");
                assert_near(
                    runs[1].at,
                    first + 3 * period,
                    "next start after the overrun",
                );
                assert_eq!(runs[1].period, runs[0].period + 3, "{runs:?}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn events_carry_the_period() {
    let store = Arc::new(MemoryStore::new());
    let t0 = Instant::now();
    let runs = Runs::default();
    let events = Events::default();
    // An hour-long period, so that no period starts during the test.
    let hourly = |node| job_every(Duration::from_secs(3600), &runs, node, t0, Duration::ZERO);
    let a = start(&store, "a", hourly("a"), Some(&events));
    sleep(Duration::from_millis(10)).await;
    let late = Events::default();
    let b = start(&store, "b", hourly("b"), Some(&late));
    sleep(Duration::from_millis(10)).await;
    a.shutdown().await;
    b.shutdown().await;
    let ran = runs.lock().unwrap()[0].period;
    let events = events.lock().unwrap().clone();
    assert!(
        matches!(events[0], JobEvent::Attempt { period: Some(p) } if p == ran),
        "{events:?}"
    );
    assert_eq!(events[1], JobEvent::Elected { period: Some(ran) });
    assert!(matches!(events[2], JobEvent::Finished { period: Some(p), .. } if p == ran));
    let late = late.lock().unwrap().clone();
    let Some(JobEvent::AlreadyRan(record)) = late.get(1) else {
        panic!("the late node is refused by the ledger: {late:?}");
    };
    assert_eq!((record.period, record.by.as_str()), (ran, "a"));
}

#[tokio::test(start_paused = true)]
async fn aligned_options_are_checked_at_start() {
    let e = elector(&Arc::new(MemoryStore::new()), "a");
    let noop = |period| Job::every("x", period, |_| async { Ok::<_, String>(()) });
    let start = |job: Job| {
        Schedule::new(e.clone())
            .job(job)
            .start(CancellationToken::new())
    };
    let err = start(noop(PERIOD).jitter(Duration::from_millis(1_001))).unwrap_err();
    assert!(
        matches!(
            err,
            leasehold::Error::Options(OptionsError::JitterTooLarge { .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("more than half the period"),
        "{err}"
    );
    let err = start(noop(PERIOD).fixed_delay().offset(Duration::from_secs(1))).unwrap_err();
    assert!(
        err.to_string()
            .contains("`offset` applies to period-aligned jobs only"),
        "{err}"
    );
    let err = start(noop(PERIOD).offset(PERIOD)).unwrap_err();
    assert!(matches!(err, leasehold::Error::Period(_)), "{err}");
    let err = start(noop(Duration::from_micros(1_500))).unwrap_err();
    assert!(
        err.to_string().contains("whole number of milliseconds"),
        "{err}"
    );
    assert!(start(noop(PERIOD).jitter(PERIOD / 2)).is_ok());
}
