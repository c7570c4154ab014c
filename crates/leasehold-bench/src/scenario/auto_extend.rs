//! The cost of `auto_extend`: the same action with the watchdog renewing the lease, and without.

use std::time::Duration;

use leasehold::{ElectionOptions, Elector};

use crate::BoxError;
use crate::measure::{Side, alternate, repeat_concurrently};
use crate::outcome::Figure;
use crate::scenario::{Config, rates};
use crate::target::Target;

/// Tasks, each on its own lock.
const TASKS: usize = 8;
/// The action.
const ACTION: Duration = Duration::from_millis(100);
/// The lease with auto-extend on: renewed every 50 ms, about twice per action.
const SHORT_LEASE: Duration = Duration::from_millis(150);

fn elector(t: &Target, auto_extend: bool) -> Result<Elector, BoxError> {
    let lease = if auto_extend {
        SHORT_LEASE
    } else {
        Duration::from_secs(30)
    };
    let options = ElectionOptions::builder()
        .wait(Duration::ZERO)
        .lease(lease)
        .auto_extend(auto_extend)
        .build()?;
    Ok(Elector::with_options(t.store.clone(), options))
}

async fn call(elector: &Elector, lock: &leasehold::LockName) -> Result<(), BoxError> {
    let lost = elector
        .run_if_leader(lock, |ctx| async move {
            tokio::time::sleep(ACTION).await;
            ctx.is_lost()
        })
        .await?
        .ok_or("auto-extend lock was busy")?;
    if lost {
        return Err("the lease was lost during the action".into());
    }
    Ok(())
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let (on, off) = (elector(t, true)?, elector(t, false)?);
    let on_locks = (0..TASKS)
        .map(|i| t.lock("extend-on", i))
        .collect::<Result<Vec<_>, _>>()?;
    let off_locks = (0..TASKS)
        .map(|i| t.lock("extend-off", i))
        .collect::<Result<Vec<_>, _>>()?;
    let (on, off, on_locks, off_locks) = (&on, &off, &on_locks, &off_locks);
    let mut sides: Vec<Side<'_>> = vec![
        Box::new(move |d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                call(on, &on_locks[i])
            }))
        }),
        Box::new(move |d| {
            Box::pin(repeat_concurrently(d, TASKS, move |i| {
                call(off, &off_locks[i])
            }))
        }),
    ];
    // Turns of at least a few actions each.
    let turns = (cfg.seconds.round() as u32).clamp(1, 10);
    let tallies = alternate(cfg.total(), turns, &mut sides).await?;
    drop(sides);
    rates(&["leasehold", "floor"], tallies)
}
