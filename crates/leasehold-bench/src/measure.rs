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
