//! Hand-off latency: from the holder's release call until a waiting contender on another client
//! holds the lock.

use std::time::Duration;

use leasehold::{ElectionOptions, Elector};
use rand::Rng;
use tokio::time::{Instant, sleep};

use crate::BoxError;
use crate::measure::Tally;
use crate::outcome::Figure;
use crate::scenario::{Config, impatient, side_names};
use crate::target::Target;

/// How long the waiter has been waiting when the holder releases: random, so a poller is caught
/// at a random point of its back-off.
fn waited() -> Duration {
    Duration::from_millis(rand::rng().random_range(10..60))
}

pub(super) async fn run(t: &Target, cfg: &Config) -> Result<Vec<Figure>, BoxError> {
    let holder = impatient(t)?;
    // The waiter's lease sets its pace where the store's release signal reaches only its own
    // client (MariaDB, DynamoDB): it asks again every third of it, a second at least (quiet
    // followers, issue 38). A 3 s lease is that second; with a 30 s lease it asked every 10 s and
    // never saw a release within its 5 s wait. Where the signal reaches every client it wakes on
    // the release, whatever its lease.
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(5))
        .lease(Duration::from_secs(3))
        .build()?;
    let waiter = Elector::with_options(t.client().await?, options);
    let mut tallies = vec![Tally::default(); side_names(t).len()];
    for i in 0..cfg.handoffs {
        let samples = [leasehold(t, &holder, &waiter, i).await, floor(t, i).await];
        for (tally, sample) in tallies.iter_mut().zip(samples) {
            tally.latencies.push(sample?);
        }
        if let (Some(p), Some(tally)) = (&t.peer, tallies.get_mut(2)) {
            let resource = t.resource("handoff-peer", i);
            tally.latencies.push(p.handoff(&resource, waited()).await?);
        }
    }
    Ok(side_names(t)
        .into_iter()
        .zip(tallies)
        .map(|(name, tally)| Figure::latency(name, tally))
        .collect())
}

async fn leasehold(
    t: &Target,
    holder: &Elector,
    waiter: &Elector,
    i: usize,
) -> Result<Duration, BoxError> {
    let lock = t.lock("handoff", i)?;
    let guard = holder
        .try_acquire(&lock)
        .await?
        .elected()
        .ok_or("hand-off lock busy")?;
    let waiter = waiter.clone();
    let task = tokio::spawn(async move {
        let taken = waiter.try_acquire(&lock).await;
        (Instant::now(), taken)
    });
    sleep(waited()).await;
    let released = Instant::now();
    guard.release().await?;
    let (at, taken) = task.await?;
    taken?
        .elected()
        .ok_or("the waiter gave up")?
        .release()
        .await?;
    Ok(at - released)
}

async fn floor(t: &Target, i: usize) -> Result<Duration, BoxError> {
    let lock = t.lock("handoff-floor", i)?;
    let ttl = Duration::from_secs(30);
    let held = t
        .floor
        .acquire(&lock, ttl)
        .await?
        .ok_or("hand-off lock busy")?;
    sleep(waited()).await;
    let released = Instant::now();
    t.floor.release(held).await?;
    let taken = t
        .floor
        .acquire(&lock, ttl)
        .await?
        .ok_or("the floor waiter found the lock held")?;
    let at = Instant::now();
    t.floor.release(taken).await?;
    Ok(at - released)
}
