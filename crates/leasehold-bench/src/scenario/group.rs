//! A group lock (`GroupElector`, 3 slots) with more tasks than slots.

use std::time::Duration;

use leasehold::{GroupElector, GroupOptions};

use crate::BoxError;
use crate::measure::{Side, alternate, contend};
use crate::outcome::Figure;
use crate::scenario::contended::{BLOCKS, SECTION, blocks};
use crate::scenario::{Config, rates};
use crate::target::Target;

/// Slots of the group lock.
const SLOTS: u32 = 3;
/// Tasks contending for them.
const TASKS: usize = 8;

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let options = GroupOptions::builder()
        .max_leaders(SLOTS)
        .wait(Duration::from_secs(1))
        .lease(Duration::from_secs(2))
        .build()?;
    let elector = GroupElector::new(t.store.clone(), options);
    let next = blocks();
    let (elector, next) = (&elector, &next);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(move |d| {
            let lock = t.lock("group", next());
            Box::pin(async move {
                let lock = &lock?;
                contend(d, TASKS, move |_| async move {
                    let ran = elector
                        .run_if_leader(lock, |_| tokio::time::sleep(SECTION))
                        .await?;
                    Ok(ran.is_some())
                })
                .await
            })
        }),
        Box::new(move |d| {
            let n = next();
            let locks = (0..SLOTS as usize)
                .map(|i| t.lock(&format!("group-floor-{n}"), i))
                .collect::<Result<Vec<_>, _>>();
            Box::pin(async move {
                let slots = &locks?;
                contend(d, TASKS, move |_| t.floor.section(slots, SECTION)).await
            })
        }),
    ];
    let tallies = alternate(cfg.total(), BLOCKS, &mut sides).await?;
    drop(sides);
    rates(&["leasehold", "floor"], tallies)
}
