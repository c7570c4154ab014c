//! 64 tasks on distinct locks over one client: how the client and the server scale.

use crate::BoxError;
use crate::measure::{Side, alternate, repeat_concurrently};
use crate::outcome::Figure;
use crate::scenario::{Config, impatient, rates, run_once, side_names};
use crate::target::Target;

/// Concurrent tasks, each on its own lock.
const TASKS: usize = 64;

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let elector = impatient(t)?;
    let ours = (0..TASKS)
        .map(|i| t.lock("many", i))
        .collect::<Result<Vec<_>, _>>()?;
    let floor_locks = (0..TASKS)
        .map(|i| t.lock("many-floor", i))
        .collect::<Result<Vec<_>, _>>()?;
    let resources: Vec<String> = (0..TASKS).map(|i| t.resource("many-rslock", i)).collect();
    let (elector, ours, floor_locks, resources) = (&elector, &ours, &floor_locks, &resources);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(move |d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                run_once(elector, &ours[i])
            }))
        }),
        Box::new(move |d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                t.floor.round_trip(&floor_locks[i])
            }))
        }),
    ];
    if let Some(p) = &t.peer {
        sides.push(Box::new(move |d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                p.round_trip(&resources[i])
            }))
        }));
    }
    let tallies = alternate(cfg.total(), 20, &mut sides).await?;
    drop(sides);
    rates(&side_names(t), tallies)
}
