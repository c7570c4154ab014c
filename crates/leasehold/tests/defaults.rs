//! The promise with no option set: one holder at a time. `Elector::new` renews a lease while its
//! action runs, stops the action at the lease's local deadline if renewing fails (before the
//! store can grant the lock again), and a crashed holder is replaced within about one 15 s lease.
//! Paused tokio time on the memory store, behind the testkit's fault wrapper where renewals must
//! fail.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use leasehold::{
    CancellationToken, ElectionOptions, Elector, Error, LeaseStore, MemoryStore, TermEnd,
    options::DEFAULT_LEASE,
};
use leasehold_testkit::fault::{Fault, FaultyStore};
use tokio::sync::Mutex;
use tokio::time::{Instant, sleep};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn the_defaults_renew_and_stop_on_loss_with_a_15s_lease() {
    let o = ElectionOptions::default();
    assert!(o.auto_extend(), "renewal is on by default");
    assert!(o.cancel_on_lost(), "stopping on loss is on by default");
    assert_eq!(o.lease(), secs(15));
    assert_eq!(DEFAULT_LEASE, secs(15));
}

/// A job far longer than the default lease (and than the 60 s lease of earlier versions), on one
/// replica; the others' timers fire
/// every 10 s meanwhile. With the defaults they all skip: the job never runs twice at once.
#[tokio::test(start_paused = true)]
async fn a_job_longer_than_the_lease_never_runs_twice_with_default_options() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let job = {
        let (running, most, runs) = (running.clone(), most.clone(), runs.clone());
        move |elector: Elector| {
            let (running, most, runs) = (running.clone(), most.clone(), runs.clone());
            async move {
                elector
                    .run_if_leader("nightly", |_ctx| async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        sleep(secs(200)).await; // the long job: over 13 default leases
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
            }
        }
    };
    let first = tokio::spawn(job(Elector::new(Arc::clone(&store))));
    let mut others = Vec::new();
    for _ in 0..19 {
        sleep(secs(10)).await; // a replica whose timer fires later
        others.push(job(Elector::new(Arc::clone(&store))).await);
    }
    assert_eq!(
        first.await.unwrap().unwrap(),
        Some(()),
        "the first run completes"
    );
    for (n, other) in others.into_iter().enumerate() {
        assert_eq!(
            other.unwrap(),
            None,
            "replica {n} fired while the long job held its renewed lease: it must skip"
        );
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "never two runs at once");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// The holder is cut off from the store (renewals and its release fail): with the defaults its
/// action is dropped at the lease's local deadline, and the node that takes the lock once the
/// store expired it never runs beside it.
#[tokio::test(start_paused = true)]
async fn a_lease_that_cannot_be_renewed_stops_the_action_before_another_node_gets_it() {
    let memory: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let (faulty, faults) = FaultyStore::new(Arc::clone(&memory));
    let a = Elector::new(faulty);
    let last_alive = Arc::new(Mutex::new(None::<Instant>));
    let alive = last_alive.clone();
    let granted = Instant::now();
    let started = Arc::new(tokio::sync::Notify::new());
    let on_start = started.clone();
    let holder = tokio::spawn(async move {
        a.run_if_leader("reconcile", |_ctx| async move {
            on_start.notify_one();
            loop {
                *alive.lock().await = Some(Instant::now());
                sleep(Duration::from_millis(100)).await;
            }
        })
        .await
    });
    started.notified().await;
    // Cut off from the store: renewals and the release fail.
    faults.fail_all_ops(Fault::transient());
    // Another node tries every 500 ms until it gets the lock.
    let b = Elector::new(Arc::clone(&memory));
    let ran = Arc::new(AtomicBool::new(false));
    let b_started = loop {
        let flag = ran.clone();
        let got = b
            .run_if_leader("reconcile", |_ctx| async move {
                flag.store(true, Ordering::SeqCst);
                Instant::now()
            })
            .await
            .unwrap();
        if let Some(at) = got {
            break at;
        }
        sleep(Duration::from_millis(500)).await;
        assert!(
            granted.elapsed() < secs(60),
            "the lock was never free again"
        );
    };
    let outcome = holder.await.unwrap();
    assert!(
        matches!(outcome, Err(Error::Lost { .. })),
        "the unrenewable run ends as lost: {outcome:?}"
    );
    let last = last_alive.lock().await.expect("the action ran");
    assert!(
        last < b_started,
        "the first action was still running at {:?} when the next holder started at {:?}",
        last - granted,
        b_started - granted
    );
    assert!(
        b_started - granted >= DEFAULT_LEASE,
        "the store kept the lock for the whole lease"
    );
}

/// A stable leader that crashes (its store calls all fail from one moment: it can neither renew
/// nor release) is replaced by a follower within the default lease plus one poll.
#[tokio::test(start_paused = true)]
async fn a_crashed_leader_is_replaced_within_the_default_lease() {
    let memory: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    let (faulty, faults) = FaultyStore::new(Arc::clone(&memory));
    let stop = CancellationToken::new();
    let leader = Elector::new(faulty);
    let elected = Arc::new(tokio::sync::Notify::new());
    let leading = {
        let (stop, elected) = (stop.clone(), elected.clone());
        tokio::spawn(async move {
            leader
                .lead("controller", stop, move |ctx| {
                    let elected = elected.clone();
                    async move {
                        elected.notify_one();
                        ctx.lost().await;
                        TermEnd::Stop
                    }
                })
                .await
        })
    };
    elected.notified().await;
    let crashed = Instant::now();
    faults.fail_all_ops(Fault::transient());
    let follower = Elector::new(Arc::clone(&memory));
    let (stop_b, took_over) = (stop.clone(), Arc::new(Mutex::new(None)));
    let seen = took_over.clone();
    let following = tokio::spawn(async move {
        follower
            .lead("controller", stop_b, move |_ctx| {
                let seen = seen.clone();
                async move {
                    *seen.lock().await = Some(Instant::now());
                    TermEnd::Stop
                }
            })
            .await
    });
    following.await.unwrap().unwrap();
    let failover = took_over.lock().await.expect("the follower led") - crashed;
    assert!(
        failover <= DEFAULT_LEASE + secs(1),
        "failover took {failover:?}, more than the 15 s lease and a poll"
    );
    assert!(
        failover >= DEFAULT_LEASE - secs(5),
        "failover {failover:?} before the lease ended"
    );
    stop.cancel();
    let _ = leading.await;
}

/// The tasks alive on this runtime.
fn tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// `run_if_leader` starts the renewing watchdog only for an action that goes on after its first
/// step: an action done at once costs no task, one that awaits is renewed, and none is left
/// behind.
#[tokio::test(start_paused = true)]
async fn only_an_action_that_goes_on_starts_a_watchdog() {
    let elector = Elector::new(Arc::new(MemoryStore::new()));
    let before = tasks();
    let at_once = elector
        .run_if_leader("quick", |_ctx| async move { tasks() })
        .await
        .unwrap();
    assert_eq!(
        at_once,
        Some(before),
        "no task for an action done in one step"
    );
    let after_a_step = elector
        .run_if_leader("slow", |_ctx| async move {
            sleep(secs(1)).await;
            tasks()
        })
        .await
        .unwrap();
    assert_eq!(
        after_a_step,
        Some(before + 1),
        "the watchdog runs once the action awaits"
    );
    elector.settled().await;
    tokio::task::yield_now().await;
    assert_eq!(tasks(), before, "no task is left behind");
}

/// The watchdog started after a long first step counts its renewals from the grant: a first
/// step that blocks the thread for most of the lease (2.2 s of 3 s; the local deadline is at
/// 2.7 s) is renewed at once when it yields, and the action goes on past the lease. Counted from
/// its own start, the first renewal would have come at 3.2 s, after the deadline.
#[tokio::test]
async fn a_watchdog_started_after_a_long_first_step_renews_at_once() {
    let elector = Elector::with_options(
        Arc::new(MemoryStore::new()),
        ElectionOptions::builder().lease(secs(3)).build().unwrap(),
    );
    let ran = elector
        .run_if_leader("blocking-start", |ctx| async move {
            std::thread::sleep(Duration::from_millis(2_200));
            sleep(secs(2)).await;
            ctx.is_lost()
        })
        .await
        .expect("not lost: renewed when the first step ended");
    assert_eq!(ran, Some(false));
}
