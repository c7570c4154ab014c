//! Many tasks on one lock with a short critical section: throughput, and fairness (does every
//! task get its turns inside its wait budget?).

use std::cell::Cell;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use leasehold::{ElectionOptions, Elector, LockName};

use crate::BoxError;
use crate::measure::{Side, alternate, contend};
use crate::outcome::Figure;
use crate::scenario::{Config, rates, side_names};
use crate::target::Target;

/// Tasks contending for the lock.
const TASKS: usize = 16;
/// The critical section.
pub(super) const SECTION: Duration = Duration::from_millis(1);
/// Each side runs in this many blocks, each on a fresh lock.
pub(super) const BLOCKS: u32 = 2;

/// A counter handing out a fresh block number per call, so a contender cut off at the end of
/// one block leaves nothing behind for the next.
pub(super) fn blocks() -> impl Fn() -> usize {
    let block = Cell::new(0usize);
    move || {
        block.set(block.get() + 1);
        block.get()
    }
}

/// An elector's `run_if_leader` around the section on a lock: whether it ran.
pub(super) type RunSection<'a> =
    dyn Fn(&LockName) -> LocalBoxFuture<'a, Result<bool, BoxError>> + 'a;

/// The leasehold and floor sides of a contention scenario: `tasks` tasks looping `run` on one
/// fresh lock per block, beside `tasks` raw contenders on `slots` fresh floor locks per block.
pub(super) fn leasehold_and_floor<'a>(
    t: &'a Target,
    next: &'a dyn Fn() -> usize,
    name: &'a str,
    slots: usize,
    tasks: usize,
    run: &'a RunSection<'a>,
) -> Vec<Side<'a>> {
    vec![
        Box::new(move |d| {
            let lock = t.lock(name, next());
            Box::pin(async move {
                let lock = &lock?;
                contend(d, tasks, move |_| run(lock)).await
            })
        }),
        Box::new(move |d| {
            let n = next();
            let locks = (0..slots)
                .map(|i| t.lock(&format!("{name}-floor-{n}"), i))
                .collect::<Result<Vec<_>, _>>();
            Box::pin(async move {
                let locks = &locks?;
                contend(d, tasks, move |_| t.floor.section(locks, SECTION)).await
            })
        }),
    ]
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(1))
        .lease(Duration::from_secs(2))
        .build()?;
    let elector = Elector::with_options(t.store.clone(), options);
    let next = blocks();
    let elector = &elector;
    let run: &RunSection<'_> = &|lock| {
        let lock = lock.clone();
        Box::pin(async move {
            let ran = elector
                .run_if_leader(&lock, |_| tokio::time::sleep(SECTION))
                .await?;
            Ok(ran.is_some())
        })
    };
    let next = &next;
    let mut sides = leasehold_and_floor(t, next, "contended", 1, TASKS, run);
    if let Some(p) = &t.peer {
        sides.push(Box::new(move |d| {
            let resource = t.resource("contended-rslock", next());
            Box::pin(async move {
                let resource = &resource;
                contend(d, TASKS, move |_| p.section(resource, SECTION)).await
            })
        }));
    }
    // The serial limit: one task alone, raw, around the same section — no hand-off at all.
    sides.push(Box::new(move |d| {
        let lock = t.lock("contended-serial", next());
        Box::pin(async move {
            let slots = &[lock?];
            contend(d, 1, move |_| t.floor.section(slots, SECTION)).await
        })
    }));
    let tallies = alternate(cfg.total(), BLOCKS, &mut sides).await?;
    drop(sides);
    let mut names = side_names(t);
    names.push("serial limit");
    rates(&names, tallies)
}
