//! The defaults keep the promise "run it on exactly one node, skip it everywhere else": replicas
//! that set no option and start together around a job run it once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, MemoryStore, blocking};
use tokio::time::{Instant, sleep};

/// The job every replica guards: it runs for 2 s.
const JOB: Duration = Duration::from_secs(2);

/// A replica: an elector with every default, only its own node id (as on its own host).
fn replica(store: &Arc<dyn LeaseStore>, node: &str) -> Elector {
    let options = ElectionOptions::builder().node_id(node).build().unwrap();
    Elector::with_options(Arc::clone(store), options)
}

/// Runs the 2 s job under `elector`, counting the runs; answers whether this replica ran it and
/// how long its call took.
async fn guarded_job(elector: &Elector, runs: &AtomicU32) -> (bool, Duration) {
    let start = Instant::now();
    let ran = elector
        .run_if_leader("nightly-report", |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            sleep(JOB).await;
        })
        .await
        .unwrap()
        .is_some();
    (ran, start.elapsed())
}

#[test]
fn the_default_wait_is_zero_everywhere() {
    assert_eq!(ElectionOptions::default().wait(), Duration::ZERO);
    assert_eq!(
        ElectionOptions::builder().build().unwrap().wait(),
        Duration::ZERO
    );
    assert_eq!(
        ElectionOptions::default().max_leaders(),
        1,
        "one leader unless asked"
    );
}

/// The Done-when line of issue #12: `Elector::new` + `run_if_leader` around a 2 s job on two
/// replicas started together → exactly 1 run. (With the original library's 5 s wait the second
/// replica waited for the first to finish and ran the job again.)
#[tokio::test(start_paused = true)]
async fn two_replicas_started_together_with_elector_new_run_a_2s_job_once() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let a = Elector::new(Arc::clone(&store));
    let b = Elector::new(Arc::clone(&store));
    let runs = AtomicU32::new(0);
    let ((ran_a, took_a), (ran_b, took_b)) =
        tokio::join!(guarded_job(&a, &runs), guarded_job(&b, &runs));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "exactly one run");
    assert!(ran_a != ran_b, "one replica ran it, the other skipped");
    let skipped_after = if ran_a { took_b } else { took_a };
    assert!(
        skipped_after < Duration::from_millis(100),
        "the other replica skipped at once, after {skipped_after:?}"
    );
    // Nothing is left behind for the next scheduled run.
    assert!(a.state("nightly-report").await.unwrap().is_free());
}

/// The same with each replica's own node id, and the second replica starting anywhere during the
/// first one's run (replicas "started together" are never exactly simultaneous).
#[tokio::test(start_paused = true)]
async fn a_replica_starting_during_the_run_skips_it() {
    for offset_ms in [0, 1, 100, 1_000, 1_990] {
        let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
        let a = replica(&store, "replica-a");
        let b = replica(&store, "replica-b");
        let runs = AtomicU32::new(0);
        let late = async {
            sleep(Duration::from_millis(offset_ms)).await;
            guarded_job(&b, &runs).await
        };
        let ((ran_a, _), (ran_b, took_b)) = tokio::join!(guarded_job(&a, &runs), late);
        assert_eq!(runs.load(Ordering::SeqCst), 1, "offset {offset_ms} ms");
        assert!(ran_a && !ran_b, "offset {offset_ms} ms: a ran, b skipped");
        assert!(
            took_b < Duration::from_millis(100),
            "offset {offset_ms} ms: b skipped at once, after {took_b:?}"
        );
    }
}

/// Waiting stays available, chosen explicitly: with a wait every caller runs, one at a time.
#[tokio::test(start_paused = true)]
async fn an_explicit_wait_runs_every_caller_one_after_the_other() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let waiting = |node: &str| {
        let options = ElectionOptions::builder()
            .node_id(node)
            .wait(Duration::from_secs(5))
            .build()
            .unwrap();
        Elector::with_options(Arc::clone(&store), options)
    };
    let (a, b) = (waiting("replica-a"), waiting("replica-b"));
    let runs = AtomicU32::new(0);
    let ((ran_a, _), (ran_b, _)) = tokio::join!(guarded_job(&a, &runs), guarded_job(&b, &runs));
    assert!(ran_a && ran_b);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "mutual exclusion: both ran");
}

/// The blocking facade has the same default: two threads started together run a 2 s job once.
#[test]
fn two_blocking_replicas_started_together_run_a_2s_job_once() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicU32::new(0));
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let elector = blocking::Elector::new(Arc::clone(&store)).unwrap();
            let (runs, barrier) = (Arc::clone(&runs), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                elector
                    .run_if_leader("nightly-report", |_| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(JOB);
                    })
                    .unwrap()
                    .is_some()
            })
        })
        .collect();
    let ran: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "exactly one run: {ran:?}");
    assert_eq!(ran.iter().filter(|r| **r).count(), 1);
}
