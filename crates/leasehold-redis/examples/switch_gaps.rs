//! Where cross-process fairness spends its time on Redis: three electors, each with its own
//! `RedisStore` (own connection and subscriber, standing for three processes), run 4, 4 and 1
//! tasks on one lock, each turn a 1 ms section, for a few seconds. Every section's start and end
//! is logged, and the gaps between one section's end and the next one's start are split into
//! those within one elector (in-process hand-offs) and those between electors (a release signal,
//! a head start, a round trip).
//!
//! ```sh
//! cargo run --release -p leasehold-redis --example switch_gaps -- redis://127.0.0.1:6379 3
//! ```
//!
//! Arguments: the Redis URL (default `redis://127.0.0.1:6379`) and the seconds to run (default 3).

#![allow(clippy::print_stdout)] // a measuring tool: its report goes to standard output

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasehold::{ElectionOptions, Elector, LeaseStore};
use leasehold_redis::RedisStore;

/// Section boundaries: when, which elector, and whether a section started (else ended).
type Log = Arc<Mutex<Vec<(Instant, usize, bool)>>>;

const LOCK: &str = "switch-gaps";
const SECTION: Duration = Duration::from_millis(1);

async fn elector(url: &str) -> Result<Elector, Box<dyn Error>> {
    let store: Arc<dyn LeaseStore> = Arc::new(RedisStore::connect(url).await?);
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(2))
        .lease(Duration::from_secs(5))
        .build()?;
    Ok(Elector::with_options(store, options))
}

/// `count` tasks of `elector` (number `who`) running sections until `end`; their counts.
async fn tasks(elector: Elector, who: usize, count: usize, end: Instant, log: Log) -> Vec<usize> {
    let mut handles = Vec::new();
    for _ in 0..count {
        let (elector, log) = (elector.clone(), Arc::clone(&log));
        handles.push(tokio::spawn(async move {
            let mut ran = 0;
            while Instant::now() < end {
                let log = Arc::clone(&log);
                let section = elector.run_if_leader(LOCK, |_| async move {
                    mark(&log, who, true);
                    tokio::time::sleep(SECTION).await;
                    mark(&log, who, false);
                });
                if let Ok(Some(())) = section.await {
                    ran += 1;
                }
            }
            ran
        }));
    }
    let mut counts = Vec::new();
    for handle in handles {
        counts.push(handle.await.unwrap_or(0));
    }
    counts
}

fn mark(log: &Log, who: usize, start: bool) {
    log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((Instant::now(), who, start));
}

fn percentile(sorted: &[u128], p: f64) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len() - 1);
    sorted[at]
}

fn describe(name: &str, mut gaps: Vec<u128>) {
    gaps.sort_unstable();
    let mean = gaps.iter().sum::<u128>() as f64 / gaps.len().max(1) as f64;
    println!(
        "{name}: {} gaps, mean {mean:.0} µs, p10 {} µs, p50 {} µs, p90 {} µs",
        gaps.len(),
        percentile(&gaps, 0.1),
        percentile(&gaps, 0.5),
        percentile(&gaps, 0.9)
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let seconds: u64 = args.next().map_or(Ok(3), |s| s.parse())?;
    let (a, b, c) = (
        elector(&url).await?,
        elector(&url).await?,
        elector(&url).await?,
    );
    let log: Log = Arc::default();
    let end = Instant::now() + Duration::from_secs(seconds);
    let (ra, rb, rc) = tokio::join!(
        tasks(a, 0, 4, end, Arc::clone(&log)),
        tasks(b, 1, 4, end, Arc::clone(&log)),
        tasks(c, 2, 1, end, Arc::clone(&log)),
    );
    let log = log.lock().unwrap_or_else(|p| p.into_inner());
    let (mut within, mut between) = (Vec::new(), Vec::new());
    let mut last_end: Option<(Instant, usize)> = None;
    for &(at, who, start) in log.iter() {
        match (start, last_end) {
            (true, Some((ended, by))) => {
                let gap = at.saturating_duration_since(ended).as_micros();
                if by == who {
                    within.push(gap);
                } else {
                    between.push(gap);
                }
            }
            (false, _) => last_end = Some((at, who)),
            (true, None) => {}
        }
    }
    let sections: usize = ra.iter().chain(&rb).chain(&rc).sum();
    println!("sections per task: {ra:?} {rb:?} {rc:?}; {sections} in {seconds} s");
    describe("within an elector", within);
    describe("between electors ", between);
    Ok(())
}
