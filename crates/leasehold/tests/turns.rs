//! The local line: one elector's tasks contending for one lock take turns, so a task that
//! releases and asks again cannot starve the others (paused tokio time, memory store).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::store::{
    AcquireRequest, Acquisition, HandOff, ReleaseSignal, ReleasedTo, StoreResult, WaiterId,
    async_trait,
};
use leasehold::{
    ElectionOptions, ElectionOptionsBuilder, Elector, Lease, LeaseStore, LockName, MemoryStore,
    store::{Extension, LockState, Release},
};
use leasehold_testkit::fault::{FaultyStore, Op};
use tokio::time::{Instant, sleep};

const SECTION: Duration = Duration::from_millis(10);

/// `tasks` tasks, each running `rounds` sections of `SECTION` back to back on one lock through one
/// elector whose wait covers a full round of the others plus slack, but not starvation.
/// Returns (runs per task, skips per task, the order in which sections ran).
async fn contend(
    elector: Elector,
    tasks: usize,
    rounds: usize,
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (elector, order) = (elector.clone(), Arc::clone(&order));
        handles.push(tokio::spawn(async move {
            let (mut ran, mut skipped) = (0, 0);
            while ran + skipped < rounds {
                let order = Arc::clone(&order);
                let done = elector
                    .run_if_leader("turns", |_| async move {
                        order.lock().unwrap().push(t);
                        sleep(SECTION).await;
                    })
                    .await
                    .unwrap();
                match done {
                    Some(()) => ran += 1,
                    None => skipped += 1,
                }
            }
            (ran, skipped)
        }));
    }
    let mut runs = Vec::new();
    let mut skips = Vec::new();
    for h in handles {
        let (r, s) = h.await.unwrap();
        runs.push(r);
        skips.push(s);
    }
    let order = order.lock().unwrap().clone();
    (runs, skips, order)
}

fn waiting_elector(tasks: usize) -> Elector {
    let wait = SECTION * (tasks as u32) + SECTION / 2;
    let options = ElectionOptions::builder()
        .wait(wait)
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    Elector::with_options(Arc::new(MemoryStore::new()), options)
}

#[tokio::test(start_paused = true)]
async fn a_releasing_task_asking_again_goes_behind_the_waiting_ones() {
    let tasks = 4;
    let (runs, skips, order) = contend(waiting_elector(tasks), tasks, 10).await;
    assert_eq!(
        skips,
        vec![0; tasks],
        "nobody skipped inside its wait budget"
    );
    assert_eq!(runs, vec![10; tasks]);
    // After the first round, turns go round-robin: no task runs twice while another waits.
    for window in order.windows(tasks).skip(tasks) {
        let mut seen = window.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(
            seen.len(),
            tasks,
            "a task ran twice in a row of {tasks}: {order:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_local_release_hands_over_without_waiting_for_a_retry_timer() {
    // No store release signal reaches a waiter within a section: the memory store has one, so the
    // hand-off time bounds both; what this pins is that 8 × 10 rounds take no more than the
    // sections themselves (no retry pauses of 25 ms or more between turns).
    let tasks = 8;
    let start = Instant::now();
    let (runs, _, _) = contend(waiting_elector(tasks), tasks, 10).await;
    assert_eq!(runs.iter().sum::<usize>(), tasks * 10);
    assert_eq!(start.elapsed(), SECTION * (tasks as u32) * 10);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_whose_budget_runs_out_in_line_is_skipped_and_leaves_the_line() {
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(1))
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    let elector = Elector::with_options(Arc::new(MemoryStore::new()), options.clone());
    let impatient = elector.reconfigured(
        options
            .to_builder()
            .wait(Duration::from_millis(50))
            .build()
            .unwrap(),
    );
    let holder = elector
        .try_acquire("turns")
        .await
        .unwrap()
        .elected()
        .unwrap();
    // First in line: a patient waiter; second: an impatient one, which never gets a turn.
    let patient = tokio::spawn({
        let e = elector.clone();
        async move {
            e.run_if_leader("turns", |ctx| async move { ctx.fence() })
                .await
        }
    });
    sleep(Duration::from_millis(1)).await;
    let skipped = impatient
        .run_if_leader("turns", |_| async {})
        .await
        .unwrap();
    assert_eq!(skipped, None);
    holder.release().await.unwrap();
    assert_eq!(patient.await.unwrap().unwrap(), Some(2));
    // The line is empty again: the next call goes straight to the store.
    assert_eq!(
        impatient
            .run_if_leader("turns", |ctx| async move { ctx.fence() })
            .await
            .unwrap(),
        Some(3)
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_gives_up_its_place() {
    let elector = waiting_elector(2);
    let holder = elector
        .try_acquire("turns")
        .await
        .unwrap()
        .elected()
        .unwrap();
    let first = tokio::spawn({
        let e = elector.clone();
        async move { e.run_if_leader("turns", |_| async {}).await }
    });
    sleep(Duration::from_millis(1)).await;
    let second = tokio::spawn({
        let e = elector.clone();
        async move {
            e.run_if_leader("turns", |ctx| async move { ctx.fence() })
                .await
        }
    });
    sleep(Duration::from_millis(1)).await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    holder.release().await.unwrap();
    assert_eq!(second.await.unwrap().unwrap(), Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_group_lets_as_many_tasks_try_as_it_has_slots() {
    let options = ElectionOptions::builder()
        .max_leaders(2)
        .wait(SECTION * 4)
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    let group = Elector::with_options(Arc::new(MemoryStore::new()), options);
    let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, most at once)
    let mut handles = Vec::new();
    for _ in 0..6 {
        let (group, running) = (group.clone(), Arc::clone(&running));
        handles.push(tokio::spawn(async move {
            group
                .run_if_leader("pool", |_| async move {
                    {
                        let mut r = running.lock().unwrap();
                        r.0 += 1;
                        r.1 = r.1.max(r.0);
                    }
                    sleep(SECTION).await;
                    running.lock().unwrap().0 -= 1;
                })
                .await
                .unwrap()
        }));
    }
    for h in handles {
        assert_eq!(h.await.unwrap(), Some(()), "every task ran within its wait");
    }
    assert_eq!(
        running.lock().unwrap().1,
        2,
        "two slots were used at once, never more"
    );
}

/// An elector that waits up to 5 s, on `store`.
fn patient(store: Arc<dyn LeaseStore>) -> Elector {
    patient_with(store, ElectionOptions::builder())
}

/// An elector with `options` that waits up to 5 s, on `store`.
fn patient_with(store: Arc<dyn LeaseStore>, options: ElectionOptionsBuilder) -> Elector {
    let options = options
        .wait(Duration::from_secs(5))
        .lease(Duration::from_secs(5))
        .build()
        .unwrap();
    Elector::with_options(store, options)
}

#[tokio::test(start_paused = true)]
async fn after_its_round_an_elector_lets_another_processes_waiter_go_first() {
    // Two electors on one store stand for two processes.
    let store = Arc::new(MemoryStore::new());
    let (a, b) = (patient(store.clone()), patient(store.clone()));
    let held_by_b = b.try_acquire("shared").await.unwrap().elected().unwrap();
    // A's task finds the lock held by the other process, waits, and wins it on B's release:
    // A's round (one turn: nobody else of A is in line) starts.
    let a1 = tokio::spawn({
        let a = a.clone();
        async move { a.try_acquire("shared").await.unwrap().elected().unwrap() }
    });
    sleep(Duration::from_millis(5)).await;
    held_by_b.release().await.unwrap();
    let held_by_a = a1.await.unwrap();
    // B's task now waits for A; it holds the lock for 5 ms when it gets it.
    let b1 = tokio::spawn({
        let b = b.clone();
        async move {
            let guard = b.try_acquire("shared").await.unwrap().elected().unwrap();
            let at = Instant::now();
            sleep(Duration::from_millis(5)).await;
            guard.release().await.unwrap();
            at
        }
    });
    sleep(Duration::from_millis(5)).await;
    held_by_a.release().await.unwrap();
    // A asks again at once, without yielding to the runtime first: without rounds its attempt
    // would land before B's woken waiter runs. With them, A's round is over and B goes first.
    let a2 = a.try_acquire("shared").await.unwrap().elected().unwrap();
    let a_at = Instant::now();
    a2.release().await.unwrap();
    let b_at = b1.await.unwrap();
    assert!(b_at < a_at, "B's waiter took the lock before A's new task");
}

/// Sections of 1 ms run by each of `tasks` tasks of `elector` on one lock until `end`.
async fn sections_until(elector: Elector, tasks: usize, end: Instant) -> Vec<usize> {
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let elector = elector.clone();
        handles.push(tokio::spawn(async move {
            let mut ran = 0;
            while Instant::now() < end {
                let done = elector
                    .run_if_leader("shared", |_| async move {
                        sleep(Duration::from_millis(1)).await
                    })
                    .await
                    .unwrap();
                ran += usize::from(done.is_some());
            }
            ran
        }));
    }
    let mut runs = Vec::new();
    for h in handles {
        runs.push(h.await.unwrap());
    }
    runs
}

#[tokio::test(start_paused = true)]
async fn a_process_too_slow_for_the_first_head_start_still_gets_its_turns() {
    // A (two tasks) is next to the store; B (one task) reaches it 5 ms late, later than the
    // 2 ms head start A's first round gives. Before, A then won again unopposed and kept the
    // lock by in-process hand-offs for as long as B could not slip in, which on this store is
    // never: B ran once in 3 s, A's tasks 1,490 times each. Now each unopposed win is a new
    // round with twice the head start, until B gets in.
    let store = Arc::new(MemoryStore::new());
    let a = patient(store.clone());
    let (distant, faults) = FaultyStore::new(store.clone());
    faults.delay_request(Op::TryAcquire, Duration::from_millis(5));
    let b = patient(distant);
    // Rounds start when a process wins the lock from another: B holds it first.
    let first = b.try_acquire("shared").await.unwrap().elected().unwrap();
    let end = Instant::now() + Duration::from_secs(3);
    let (a_runs, b_runs, ()) = tokio::join!(
        sections_until(a, 2, end),
        sections_until(b, 1, end),
        async move {
            sleep(Duration::from_millis(20)).await;
            first.release().await.unwrap();
        }
    );
    let runs: Vec<usize> = a_runs.into_iter().chain(b_runs).collect();
    let (min, max) = (*runs.iter().min().unwrap(), *runs.iter().max().unwrap());
    assert!(min >= 50, "every task ran often: {runs:?}");
    // A round whose last release finds B in the store's line keeps the lock for B; one that
    // finds nobody there yet (B's next attempt is still on its way) yields a head start, which
    // grows until B's attempt arrives within it. Before hand-off, every round yielded: 139,
    // 139 and 96 sections; now 498, 498 and 496.
    assert!(
        max <= min * 3 / 2,
        "each task's share is within 1.5× of every other's: {runs:?}"
    );
    let total: usize = runs.iter().sum();
    assert!(total >= 1_200, "the lock is seldom idle: {runs:?}");
}

#[tokio::test(start_paused = true)]
async fn processes_take_turns_by_hand_off_without_leaving_the_lock_idle() {
    // Three electors on one store stand for three processes with 4, 4 and 1 tasks. Each round's
    // last release keeps the lock for the process that has waited longest, so turns go round
    // without a head start during which nobody holds the lock. Before (head starts on this
    // store too), the lone task got a third of everyone else's turns (345, 344, 351 … and 109);
    // now 333 or 334 each, 2,998 sections in all.
    let store = Arc::new(MemoryStore::new());
    let (a, b, c) = (
        patient(store.clone()),
        patient(store.clone()),
        patient(store.clone()),
    );
    // Rounds start when a process wins the lock from another: C holds it first.
    let first = c.try_acquire("shared").await.unwrap().elected().unwrap();
    let end = Instant::now() + Duration::from_secs(3);
    let (a_runs, b_runs, c_runs, ()) = tokio::join!(
        sections_until(a, 4, end),
        sections_until(b, 4, end),
        sections_until(c, 1, end),
        async move {
            sleep(Duration::from_millis(10)).await;
            first.release().await.unwrap();
        }
    );
    let runs: Vec<usize> = a_runs.into_iter().chain(b_runs).chain(c_runs).collect();
    let (min, max) = (*runs.iter().min().unwrap(), *runs.iter().max().unwrap());
    assert!(
        max <= min * 3 / 2,
        "each task's share is within 1.5× of every other's: {runs:?}"
    );
    // 1 ms sections for 3 s: about 3,000 at most, hand-offs taking no virtual time; 95 % of
    // that is the bound.
    let total: usize = runs.iter().sum();
    assert!(
        total >= 2_840,
        "the lock is hardly ever idle: {total} sections in 3 s ({runs:?})"
    );
}

/// One acquisition attempt seen by [`Recording`]: who asked, who held the lock just before,
/// the waiter the attempt named, and whether it was granted.
#[derive(Debug, Clone)]
struct Seen {
    owner: String,
    holder: Option<String>,
    waiter: Option<WaiterId>,
    granted: bool,
}

/// A memory store that records every acquisition attempt.
struct Recording {
    inner: MemoryStore,
    attempts: Mutex<Vec<Seen>>,
}

#[async_trait]
impl LeaseStore for Recording {
    async fn try_acquire(&self, req: &AcquireRequest) -> StoreResult<Acquisition> {
        let before = self.inner.state(&req.lock, 1).await?;
        let holder = before.holder().map(|h| h.owner.to_string());
        let answer = self.inner.try_acquire(req).await?;
        self.attempts.lock().unwrap().push(Seen {
            owner: req.owner.to_string(),
            holder,
            waiter: req.waiter,
            granted: answer.is_elected(),
        });
        Ok(answer)
    }
    async fn extend(&self, lease: &Lease, ttl: Duration) -> StoreResult<Extension> {
        self.inner.extend(lease, ttl).await
    }
    async fn release(&self, lease: &Lease, linger: Duration) -> StoreResult<Release> {
        self.inner.release(lease, linger).await
    }
    async fn release_to(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        self.inner.release_to(lease, linger, to).await
    }
    fn hands_off(&self) -> bool {
        self.inner.hands_off()
    }
    async fn start_period(
        &self,
        lease: &Lease,
    ) -> leasehold::store::StoreResult<leasehold::store::PeriodStart> {
        self.inner.start_period(lease).await
    }
    async fn period_record(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.period_record(lock).await
    }
    async fn clear_period_ledger(
        &self,
        lock: &LockName,
    ) -> leasehold::store::StoreResult<Option<leasehold::PeriodRecord>> {
        self.inner.clear_period_ledger(lock).await
    }
    async fn state(&self, lock: &LockName, slots: u32) -> StoreResult<LockState> {
        self.inner.state(lock, slots).await
    }
    fn release_signal(&self, lock: &LockName) -> Option<ReleaseSignal> {
        self.inner.release_signal(lock)
    }
    fn describe(&self) -> String {
        "recording(memory)".to_owned()
    }
}

#[tokio::test(start_paused = true)]
async fn an_elector_waiting_behind_its_own_task_is_not_recorded_as_a_waiter() {
    let store = Arc::new(Recording {
        inner: MemoryStore::new(),
        attempts: Mutex::default(),
    });
    let with_line = |node: &str| ElectionOptions::builder().node_id(node).hand_off(true);
    let elector = patient_with(store.clone(), with_line("a"));
    let other = patient_with(store.clone(), with_line("b"));
    let holding = {
        let elector = elector.clone();
        tokio::spawn(async move {
            elector
                .run_if_leader("own", |_| sleep(Duration::from_millis(400)))
                .await
        })
    };
    sleep(Duration::from_millis(10)).await;
    // A second task of the same elector, and a task of another elector, wait meanwhile.
    let second = {
        let elector = elector.clone();
        tokio::spawn(async move { elector.run_if_leader("own", |_| async {}).await })
    };
    let elsewhere = tokio::spawn(async move { other.run_if_leader("own", |_| async {}).await });
    assert!(holding.await.unwrap().unwrap().is_some());
    assert!(second.await.unwrap().unwrap().is_some());
    assert!(elsewhere.await.unwrap().unwrap().is_some());
    let attempts = store.attempts.lock().unwrap().clone();
    let behind_own: Vec<&Seen> = attempts
        .iter()
        .filter(|s| !s.granted && s.holder.as_deref() == Some(s.owner.as_str()))
        .collect();
    assert!(
        !behind_own.is_empty(),
        "the second task was refused while its sibling held: {attempts:?}"
    );
    assert!(
        behind_own.iter().all(|s| s.waiter.is_none()),
        "a refusal behind the elector's own task named it as a waiter: {attempts:?}"
    );
    assert!(
        attempts
            .iter()
            .filter(|s| s.owner == "b" && !s.granted)
            .all(|s| s.waiter.is_some()),
        "the other elector, waiting behind a, names itself: {attempts:?}"
    );
}

/// With default options, an elector on a store over a network (one that is not process-local)
/// names no waiter: a follower's refused attempts write nothing to the store's line.
#[tokio::test(start_paused = true)]
async fn by_default_waiters_on_a_network_store_are_not_recorded() {
    let store = Arc::new(Recording {
        inner: MemoryStore::new(),
        attempts: Mutex::default(),
    });
    assert!(store.hands_off() && !store.is_process_local());
    let (a, b) = (patient(store.clone()), patient(store.clone()));
    let held = a.try_acquire("line").await.unwrap().elected().unwrap();
    let waiting = tokio::spawn(async move { b.run_if_leader("line", |_| async {}).await });
    sleep(Duration::from_millis(500)).await;
    held.release().await.unwrap();
    assert!(waiting.await.unwrap().unwrap().is_some());
    let attempts = store.attempts.lock().unwrap().clone();
    assert!(
        attempts.iter().any(|s| !s.granted),
        "the follower was refused while waiting: {attempts:?}"
    );
    assert!(
        attempts.iter().all(|s| s.waiter.is_none()),
        "no attempt names a waiter by default: {attempts:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_fair_turns_an_elector_takes_no_rounds_and_names_no_waiter() {
    let store = Arc::new(Recording {
        inner: MemoryStore::new(),
        attempts: Mutex::default(),
    });
    let unfair = |node: &str| {
        patient_with(
            store.clone(),
            ElectionOptions::builder().node_id(node).fair_turns(false),
        )
    };
    let (a, b) = (unfair("a"), unfair("b"));
    // The scenario of `after_its_round_an_elector_lets_another_processes_waiter_go_first`:
    // A wins the lock from B, B's task waits for A, A releases and asks again at once.
    let held_by_b = b.try_acquire("shared").await.unwrap().elected().unwrap();
    let a1 = tokio::spawn({
        let a = a.clone();
        async move { a.try_acquire("shared").await.unwrap().elected().unwrap() }
    });
    sleep(Duration::from_millis(5)).await;
    held_by_b.release().await.unwrap();
    let held_by_a = a1.await.unwrap();
    let b1 = tokio::spawn({
        let b = b.clone();
        async move {
            let guard = b.try_acquire("shared").await.unwrap().elected().unwrap();
            let at = Instant::now();
            guard.release().await.unwrap();
            at
        }
    });
    sleep(Duration::from_millis(5)).await;
    held_by_a.release().await.unwrap();
    // No round, so no yield: A's new attempt lands before B's woken waiter runs.
    let a2 = a.try_acquire("shared").await.unwrap().elected().unwrap();
    let a_at = Instant::now();
    sleep(Duration::from_millis(5)).await;
    a2.release().await.unwrap();
    let b_at = b1.await.unwrap();
    assert!(
        a_at < b_at,
        "A's new task went first: first come, first served"
    );
    let attempts = store.attempts.lock().unwrap().clone();
    assert!(
        attempts.iter().any(|s| !s.granted),
        "tasks were refused while waiting: {attempts:?}"
    );
    assert!(
        attempts.iter().all(|s| s.waiter.is_none()),
        "an elector without fair turns named itself as a waiter: {attempts:?}"
    );
}
