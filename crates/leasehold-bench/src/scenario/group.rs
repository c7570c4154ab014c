//! A group lock (an `Elector` with `max_leaders` 3) with more tasks than slots.

use std::time::Duration;

use leasehold::{ElectionOptions, Elector};

use crate::BoxError;
use crate::measure::alternate;
use crate::outcome::Figure;
use crate::scenario::contended::{BLOCKS, RunSection, SECTION, blocks, leasehold_and_floor};
use crate::scenario::{Config, rates};
use crate::target::Target;

/// Slots of the group lock.
const SLOTS: u32 = 3;
/// Tasks contending for them.
const TASKS: usize = 8;

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let options = ElectionOptions::builder()
        .max_leaders(SLOTS)
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
    let mut sides = leasehold_and_floor(t, &next, "group", SLOTS as usize, TASKS, run);
    let tallies = alternate(cfg.total(), BLOCKS, &mut sides).await?;
    drop(sides);
    rates(&["leasehold", "floor"], tallies)
}
