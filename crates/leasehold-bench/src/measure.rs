//! Interleaved side-by-side measurement.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error>;

/// One result row.
pub(crate) struct Row {
    backend: String,
    scenario: &'static str,
    ours: f64,
    floor: f64,
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "| {} | {} | {:.0} | {:.0} | {:.2}× |",
            self.backend,
            self.scenario,
            self.ours,
            self.floor,
            self.ours / self.floor
        )
    }
}

/// Alternates fifty slices of each side over `total` and returns both throughputs.
pub(crate) async fn interleave<A, AF, B, BF>(
    backend: &str,
    scenario: &'static str,
    total: Duration,
    mut ours: A,
    mut floor: B,
) -> Result<Row, BoxError>
where
    A: FnMut() -> AF,
    AF: Future<Output = Result<(), BoxError>>,
    B: FnMut() -> BF,
    BF: Future<Output = Result<(), BoxError>>,
{
    const SLICES: u32 = 50;
    let slice = total / (2 * SLICES);
    let (mut ours_ops, mut ours_time, mut floor_ops, mut floor_time) =
        (0u64, Duration::ZERO, 0u64, Duration::ZERO);
    for _ in 0..SLICES {
        let start = Instant::now();
        while start.elapsed() < slice {
            ours().await?;
            ours_ops += 1;
        }
        ours_time += start.elapsed();
        let start = Instant::now();
        while start.elapsed() < slice {
            floor().await?;
            floor_ops += 1;
        }
        floor_time += start.elapsed();
    }
    Ok(Row {
        backend: backend.to_owned(),
        scenario,
        ours: ours_ops as f64 / ours_time.as_secs_f64(),
        floor: floor_ops as f64 / floor_time.as_secs_f64(),
    })
}

/// What one side did: operations completed, failed attempts, the time it ran, and the latency
/// of each operation (when the side records them).
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    pub(crate) ops: u64,
    pub(crate) failures: u64,
    pub(crate) time: Duration,
    pub(crate) latencies: Vec<Duration>,
    /// Operations per task (index = task), for fairness.
    pub(crate) per_task: Vec<u64>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.ops += other.ops;
        self.failures += other.failures;
        self.time += other.time;
        self.latencies.extend(other.latencies);
        if self.per_task.len() < other.per_task.len() {
            self.per_task.resize(other.per_task.len(), 0);
        }
        for (mine, theirs) in self.per_task.iter_mut().zip(other.per_task) {
            *mine += theirs;
        }
    }

    /// Operations per second.
    pub(crate) fn rate(&self) -> f64 {
        self.ops as f64 / self.time.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Failed attempts per second.
    pub(crate) fn failure_rate(&self) -> f64 {
        self.failures as f64 / self.time.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The `p`-th percentile latency (0–100), if latencies were recorded.
    pub(crate) fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        self.latencies.sort_unstable();
        let rank = ((p / 100.0) * (self.latencies.len() - 1) as f64).round() as usize;
        self.latencies
            .get(rank.min(self.latencies.len() - 1))
            .copied()
    }
}

/// One side of a comparison: runs for (about) the given time and reports what it did.
pub(crate) type Side<'a> =
    Box<dyn FnMut(Duration) -> futures::future::LocalBoxFuture<'a, Result<Tally, BoxError>> + 'a>;

/// Gives every side ten turns of `total / (10 × sides)` each, round-robin, so drift on a shared
/// machine hits all sides alike; returns each side's summed tally.
pub(crate) async fn alternate(
    total: Duration,
    sides: &mut [Side<'_>],
) -> Result<Vec<Tally>, BoxError> {
    const SLICES: u32 = 50;
    let n = u32::try_from(sides.len()).unwrap_or(1).max(1);
    let slice = total / (SLICES * n);
    let mut tallies = vec![Tally::default(); sides.len()];
    for _ in 0..SLICES {
        for (side, tally) in sides.iter_mut().zip(tallies.iter_mut()) {
            tally.add(side(slice).await?);
        }
    }
    Ok(tallies)
}

/// Like [`alternate`], but in `rounds` long blocks per side (for scenarios whose effects take
/// longer than a slice to show, such as a contender starving past its wait budget).
pub(crate) async fn alternate_blocks(
    total: Duration,
    rounds: u32,
    sides: &mut [Side<'_>],
) -> Result<Vec<Tally>, BoxError> {
    let n = u32::try_from(sides.len()).unwrap_or(1).max(1);
    let block = total / (rounds.max(1) * n);
    let mut tallies = vec![Tally::default(); sides.len()];
    for _ in 0..rounds.max(1) {
        for (side, tally) in sides.iter_mut().zip(tallies.iter_mut()) {
            tally.add(side(block).await?);
        }
    }
    Ok(tallies)
}
