//! The Redis scenarios: leasehold `run_if_leader` beside the floor (the store's own acquire and
//! release scripts issued raw on the same connection) and beside `rslock`, interleaved in one
//! run; then contention and hand-off latency.

mod handoff;
mod sides;

use std::fmt::Write as _;
use std::time::Duration;

use crate::measure::{Side, Tally, alternate, alternate_blocks};
use handoff::Handoff;
use sides::{Clients, contend, repeat, repeat_concurrently};

type BoxError = Box<dyn std::error::Error>;

/// Tasks in the "distinct locks" scenario.
const TASKS: usize = 64;
/// Contenders on one lock, and their critical section.
const CONTENDERS: usize = 8;
const SECTION: Duration = Duration::from_millis(1);

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "–".to_owned(),
        |d| format!("{:.3}", d.as_secs_f64() * 1000.0),
    )
}

fn cell(t: &mut Tally) -> String {
    format!(
        "{:.0} ({} / {})",
        t.rate(),
        ms(t.percentile(50.0)),
        ms(t.percentile(99.0))
    )
}

/// Runs every scenario and returns the report (markdown tables).
pub(crate) async fn run(url: &str, seconds: f64, handoffs: usize) -> Result<String, BoxError> {
    let clients = Clients::open(url).await?;
    let total = Duration::from_secs_f64(seconds);
    let mut out = String::new();

    // Warm up every side (connections, scripts, rslock's connection).
    for i in 0..50 {
        clients.leasehold(&clients.lock("warm", i % 4)?).await?;
        clients.floor(&clients.lock("warm-floor", i % 4)?).await?;
        clients
            .bare(&format!("leasehold-bench:bare-{}-warm", clients.run))
            .await?;
        clients
            .rslock(&format!("bench-{}-warm-rslock", clients.run))
            .await?;
    }

    writeln!(
        out,
        "| scenario | leasehold ops/s (p50 / p99 ms) | floor: same scripts raw | bare floor: SET NX PX + compare-and-delete | rslock | leasehold ÷ floor | leasehold ÷ bare floor | leasehold ÷ rslock |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|")?;

    let one = clients.lock("one", 0)?;
    let one_floor = clients.lock("one-floor", 0)?;
    let one_bare = format!("leasehold-bench:bare-{}-one", clients.run);
    let one_rslock = format!("bench-{}-one-rslock", clients.run);
    let c = &clients;
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(|d| Box::pin(repeat(d, || c.leasehold(&one)))),
        Box::new(|d| Box::pin(repeat(d, || c.floor(&one_floor)))),
        Box::new(|d| Box::pin(repeat(d, || c.bare(&one_bare)))),
        Box::new(|d| Box::pin(repeat(d, || c.rslock(&one_rslock)))),
    ];
    let tallies = alternate(total, &mut sides).await?;
    drop(sides);
    row(&mut out, "1 task, uncontended", tallies)?;

    let locks: Vec<_> = (0..TASKS)
        .map(|i| clients.lock("many", i))
        .collect::<Result<_, _>>()?;
    let floor_locks: Vec<_> = (0..TASKS)
        .map(|i| clients.lock("many-floor", i))
        .collect::<Result<_, _>>()?;
    let bare_keys: Vec<_> = (0..TASKS)
        .map(|i| format!("leasehold-bench:bare-{}-many-{i}", clients.run))
        .collect();
    let rslock_names: Vec<_> = (0..TASKS)
        .map(|i| format!("bench-{}-many-rslock-{i}", clients.run))
        .collect();
    let (locks, floor_locks, bare_keys, rslock_names) =
        (&locks, &floor_locks, &bare_keys, &rslock_names);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(|d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                c.leasehold(&locks[i])
            }))
        }),
        Box::new(|d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                c.floor(&floor_locks[i])
            }))
        }),
        Box::new(|d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                c.bare(&bare_keys[i])
            }))
        }),
        Box::new(|d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                c.rslock(&rslock_names[i])
            }))
        }),
    ];
    let tallies = alternate(total, &mut sides).await?;
    drop(sides);
    row(&mut out, "64 tasks, distinct locks, one store", tallies)?;

    // Contention: runs much longer than the wait budget, so a starved contender shows up as a
    // skip; a fresh lock per block, so a contender cut off at the end of a block leaves nothing
    // behind for the next.
    let block = std::cell::Cell::new(0usize);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(|d| {
            block.set(block.get() + 1);
            let lock = clients.lock("contended", block.get());
            Box::pin(async move {
                let lock = lock?;
                let lock = &lock;
                contend(d, CONTENDERS, move |_| async move {
                    let ran = c
                        .patient
                        .run_if_leader(lock, |_| tokio::time::sleep(SECTION))
                        .await?;
                    Ok(Some(ran.is_some()))
                })
                .await
            })
        }),
        Box::new(|d| {
            block.set(block.get() + 1);
            let resource = format!("bench-{}-contended-rslock-{}", c.run, block.get());
            Box::pin(async move {
                let resource = &resource;
                contend(d, CONTENDERS, move |_| async move {
                    match c
                        .rslock
                        .lock(resource.as_bytes(), Duration::from_secs(1))
                        .await
                    {
                        Ok(lock) => {
                            tokio::time::sleep(SECTION).await;
                            c.rslock.unlock(&lock).await;
                            Ok(Some(true))
                        }
                        Err(_) => Ok(Some(false)),
                    }
                })
                .await
            })
        }),
        // The serial limit: one task alone, bare SET NX PX + compare-and-delete around the same
        // section, so no hand-off at all.
        Box::new(|d| {
            block.set(block.get() + 1);
            let key = format!("leasehold-bench:bare-{}-serial-{}", c.run, block.get());
            Box::pin(async move {
                let key = &key;
                contend(d, 1, move |_| async move {
                    c.bare_section(key, SECTION).await?;
                    Ok(Some(true))
                })
                .await
            })
        }),
    ];
    let tallies = alternate_blocks(total, 2, &mut sides).await?;
    drop(sides);
    let (lh, rs, serial) = (&tallies[0], &tallies[1], &tallies[2]);
    let spread = |t: &Tally| {
        let min = t.per_task.iter().min().copied().unwrap_or(0);
        let max = t.per_task.iter().max().copied().unwrap_or(0);
        format!("{min}–{max}")
    };
    writeln!(out)?;
    writeln!(
        out,
        "| scenario | leasehold sections/s | leasehold skips | leasehold sections per task | rslock sections/s | rslock failed lock() calls | rslock sections per task | leasehold ÷ rslock | serial limit (1 task, bare floor) |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    writeln!(
        out,
        "| {CONTENDERS} tasks, one lock, 1 ms section, wait 1 s, {} s blocks | {:.0} | {} | {} | {:.0} | {} ({:.1}/s) | {} | {:.2}× | {:.0} |",
        total.as_secs_f64() / 6.0,
        lh.rate(),
        lh.failures,
        spread(lh),
        rs.rate(),
        rs.failures,
        rs.failure_rate(),
        spread(rs),
        lh.rate() / rs.rate(),
        serial.rate()
    )?;

    let handoff = Handoff::open(url).await?;
    let [mut notified, mut polling, mut rslock] = handoff.measure(handoffs).await?;
    writeln!(out)?;
    writeln!(
        out,
        "| hand-off: release → waiter holds the lock | p50 ms | p99 ms | samples |"
    )?;
    writeln!(out, "|---|---:|---:|---:|")?;
    for (name, t) in [
        ("leasehold, pub/sub release notifications", &mut notified),
        ("leasehold, polling (default retry 25→250 ms)", &mut polling),
        ("rslock `acquire` (retries 3 × 0–200 ms)", &mut rslock),
    ] {
        writeln!(
            out,
            "| {name} | {} | {} | {} |",
            ms(t.percentile(50.0)),
            ms(t.percentile(99.0)),
            t.ops
        )?;
    }
    Ok(out)
}

fn row(out: &mut String, scenario: &str, mut t: Vec<Tally>) -> Result<(), BoxError> {
    let [lh, floor, bare, rs] = &mut t[..] else {
        return Err("four sides expected".into());
    };
    writeln!(
        out,
        "| {scenario} | {} | {} | {} | {} | {:.2}× | {:.2}× | {:.2}× |",
        cell(lh),
        cell(floor),
        cell(bare),
        cell(rs),
        lh.rate() / floor.rate(),
        lh.rate() / bare.rate(),
        lh.rate() / rs.rate()
    )?;
    Ok(())
}
