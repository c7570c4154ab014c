//! Side-by-side measurement: tallies, the loops that drive a side, and the interleaving that
//! gives every side its turns so drift on a shared machine hits all of them alike.

use std::future::Future;
use std::time::Duration;

use futures::future::{LocalBoxFuture, join_all};
use tokio::time::{Instant, timeout_at};

use crate::BoxError;

/// What one side did: operations completed, failed attempts (skips, busy locks, errors), the time
/// it ran, the latency of each operation, and operations per task.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    pub(crate) ops: u64,
    pub(crate) failures: u64,
    pub(crate) time: Duration,
    pub(crate) latencies: Vec<Duration>,
    /// Operations per task (index = task), for fairness.
    pub(crate) per_task: Vec<u64>,
    /// The first error seen, if any operation failed with one.
    pub(crate) first_error: Option<String>,
    /// CPU time this process (every thread) spent while the side ran, where measured
    /// ([`alternate`]): the client's own cost of the operations.
    pub(crate) cpu: Duration,
}

impl Tally {
    pub(crate) fn add(&mut self, other: Tally) {
        self.ops += other.ops;
        self.failures += other.failures;
        self.time += other.time;
        self.cpu += other.cpu;
        self.latencies.extend(other.latencies);
        if self.per_task.len() < other.per_task.len() {
            self.per_task.resize(other.per_task.len(), 0);
        }
        for (mine, theirs) in self.per_task.iter_mut().zip(other.per_task) {
            *mine += theirs;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// This process's CPU time per completed operation, in µs (when [`alternate`] measured it).
    pub(crate) fn cpu_us_per_op(&self) -> Option<f64> {
        (self.ops > 0 && !self.cpu.is_zero())
            .then(|| self.cpu.as_secs_f64() * 1e6 / self.ops as f64)
    }

    /// Operations per second.
    pub(crate) fn rate(&self) -> f64 {
        self.ops as f64 / self.time.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The `p`-th percentile latency (0–100), if latencies were recorded.
    pub(crate) fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        self.latencies.sort_unstable();
        let last = self.latencies.len() - 1;
        let rank = ((p / 100.0) * last as f64).round() as usize;
        self.latencies.get(rank.min(last)).copied()
    }

    /// Fails when nothing succeeded but something failed with an error: the side did not run.
    pub(crate) fn check(self, side: &str) -> Result<Self, BoxError> {
        match &self.first_error {
            Some(e) if self.ops == 0 => Err(format!("{side}: every operation failed: {e}").into()),
            _ => Ok(self),
        }
    }
}

/// One side of a comparison: runs for (about) the given time and reports what it did.
pub(crate) type Side<'a> =
    Box<dyn FnMut(Duration) -> LocalBoxFuture<'a, Result<Tally, BoxError>> + 'a>;

/// Gives every side `turns` turns of `total / (turns × sides)` each, round-robin, and returns
/// each side's summed tally.
pub(crate) async fn alternate(
    total: Duration,
    turns: u32,
    sides: &mut [Side<'_>],
) -> Result<Vec<Tally>, BoxError> {
    let n = u32::try_from(sides.len()).unwrap_or(1).max(1);
    let turns = turns.max(1);
    let slice = total / (turns * n);
    let mut tallies = vec![Tally::default(); sides.len()];
    for _ in 0..turns {
        for (side, tally) in sides.iter_mut().zip(tallies.iter_mut()) {
            let before = process_cpu();
            let mut turn = side(slice).await?;
            if let (Some(before), Some(after)) = (before, process_cpu()) {
                turn.cpu = after.saturating_sub(before);
            }
            tally.add(turn);
        }
    }
    Ok(tallies)
}

/// The CPU time every thread of this process has run so far (Linux: the sum of
/// `/proc/self/task/*/schedstat`, in ns); `None` where that cannot be read.
fn process_cpu() -> Option<Duration> {
    let mut ns: u64 = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread that ended between the listing and the read counts no more.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        ns = ns.saturating_add(text.split_whitespace().next()?.parse().ok()?);
    }
    Some(Duration::from_nanos(ns))
}

/// Operations between two yields of a repeating task, so that tasks on a store that never
/// suspends (the memory store) still take turns.
const YIELD_EVERY: u64 = 64;

/// Runs `op` back to back until `d` has passed, recording each successful latency; failed
/// operations are counted (with the first error kept), not fatal.
pub(crate) async fn repeat<F, Fut>(d: Duration, op: F) -> Result<Tally, BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    repeat_until(Instant::now() + d, op).await
}

/// [`repeat`] until `deadline`.
async fn repeat_until<F, Fut>(deadline: Instant, mut op: F) -> Result<Tally, BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    let mut tally = Tally::default();
    while Instant::now() < deadline {
        if (tally.ops + tally.failures) % YIELD_EVERY == YIELD_EVERY - 1 {
            tokio::task::yield_now().await;
        }
        let t = Instant::now();
        match op().await {
            Ok(()) => {
                tally.latencies.push(t.elapsed());
                tally.ops += 1;
            }
            Err(e) => {
                tally.failures += 1;
                tally.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    tally.time = started.elapsed();
    Ok(tally)
}

/// Runs `tasks` copies of [`repeat`] at once (task `i` gets `op(i)`) and sums them; the time is
/// the wall time, so `ops / time` is the combined throughput.
pub(crate) async fn repeat_concurrently<F, Fut>(
    d: Duration,
    tasks: usize,
    op: F,
) -> Result<Tally, BoxError>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    let deadline = started + d;
    let op = &op;
    let results = join_all((0..tasks).map(|i| repeat_until(deadline, move || op(i)))).await;
    let mut total = Tally::default();
    for r in results {
        let t = r?;
        total.per_task.push(t.ops);
        total.ops += t.ops;
        total.failures += t.failures;
        total.latencies.extend(t.latencies);
        if total.first_error.is_none() {
            total.first_error = t.first_error;
        }
    }
    total.time = started.elapsed();
    Ok(total)
}

/// Runs `tasks` contenders until `d` has passed; each call of `attempt(task)` tries once to get
/// the lock and run the critical section, and reports `true` (ran) or `false` (gave up). An
/// attempt still running at the deadline is cut off and not counted.
pub(crate) async fn contend<F, Fut>(
    d: Duration,
    tasks: usize,
    attempt: F,
) -> Result<Tally, BoxError>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<bool, BoxError>>,
{
    let started = Instant::now();
    let deadline = started + d;
    let attempt = &attempt;
    let results = join_all((0..tasks).map(|i| async move {
        let mut done = Tally::default();
        while Instant::now() < deadline {
            match timeout_at(deadline, attempt(i)).await {
                Ok(Ok(true)) => done.ops += 1,
                Ok(Ok(false)) => done.failures += 1,
                Ok(Err(e)) => {
                    done.failures += 1;
                    done.first_error.get_or_insert_with(|| e.to_string());
                }
                Err(_) => break,
            }
        }
        done
    }))
    .await;
    let mut total = Tally::default();
    for t in results {
        total.per_task.push(t.ops);
        total.ops += t.ops;
        total.failures += t.failures;
        if total.first_error.is_none() {
            total.first_error = t.first_error;
        }
    }
    total.time = started.elapsed();
    Ok(total)
}
