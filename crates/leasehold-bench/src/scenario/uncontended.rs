//! One task, one lock, no contention: the cost of a call.

use crate::BoxError;
use crate::measure::{Side, alternate, repeat};
use crate::outcome::Figure;
use crate::scenario::{Config, impatient, rates, run_once, side_names};
use crate::target::Target;

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let elector = impatient(t)?;
    let (ours, floor_lock) = (t.lock("one", 0)?, t.lock("one-floor", 0)?);
    let resource = t.resource("one-rslock", 0);
    // Warm up every side (connections, prepared statements, scripts, table creation).
    for _ in 0..20 {
        run_once(&elector, &ours).await?;
        t.floor.round_trip(&floor_lock).await?;
        if let Some(p) = &t.peer {
            p.round_trip(&resource).await?;
        }
    }
    let (elector, ours, floor_lock, resource) = (&elector, &ours, &floor_lock, &resource);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(move |d| Box::pin(repeat(d, move || run_once(elector, ours)))),
        Box::new(move |d| Box::pin(repeat(d, move || t.floor.round_trip(floor_lock)))),
    ];
    if let Some(p) = &t.peer {
        sides.push(Box::new(move |d| {
            Box::pin(repeat(d, move || p.round_trip(resource)))
        }));
    }
    let tallies = alternate(cfg.total(), 50, &mut sides).await?;
    drop(sides);
    rates(&side_names(t), tallies)
}
