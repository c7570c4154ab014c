//! Hand-off latency: from the holder's release call until a waiting contender holds the lock.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LockName, Token};
use leasehold_redis::RedisStore;
use rand::Rng;
use rslock::LockManager;
use tokio::time::{Instant, sleep};

use super::sides::bench_options;
use crate::measure::Tally;

type BoxError = Box<dyn std::error::Error>;

/// The contenders: a holder and waiters on separate connections, as separate processes would be.
pub(crate) struct Handoff {
    holder: Elector,
    notified: Elector,
    polling: Elector,
    rslock_holder: LockManager,
    rslock_waiter: LockManager,
    run: String,
}

fn waiter(store: Arc<RedisStore>) -> Result<Elector, BoxError> {
    // The default retry policy (25 ms doubling to 250 ms, jittered) is what polling falls back to.
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(5))
        .lease(Duration::from_secs(30))
        .build()?;
    Ok(Elector::with_options(store, options))
}

impl Handoff {
    pub(crate) async fn open(url: &str) -> Result<Self, BoxError> {
        let holder = Arc::new(RedisStore::connect_with(url, bench_options()).await?);
        let notified = Arc::new(RedisStore::connect_with(url, bench_options()).await?);
        let polling =
            Arc::new(RedisStore::connect_with(url, bench_options().notifications(false)).await?);
        let options = ElectionOptions::builder()
            .wait(Duration::ZERO)
            .lease(Duration::from_secs(30))
            .build()?;
        Ok(Self {
            holder: Elector::with_options(holder, options),
            notified: waiter(notified)?,
            polling: waiter(polling)?,
            rslock_holder: LockManager::new(vec![url.to_owned()]),
            rslock_waiter: LockManager::new(vec![url.to_owned()]),
            run: Token::random().to_hex()[..12].to_owned(),
        })
    }

    /// `rounds` hand-offs of each kind, interleaved; each waiter has been waiting a random
    /// 20–300 ms (so pollers are caught at a random point of their back-off) when the holder
    /// releases. Returns leasehold with notifications, leasehold polling, and rslock.
    pub(crate) async fn measure(&self, rounds: usize) -> Result<[Tally; 3], BoxError> {
        let mut tallies: [Tally; 3] = Default::default();
        for i in 0..rounds {
            let waited = || Duration::from_millis(rand::rng().random_range(20..300));
            let t = self.leasehold(&self.notified, i, "n", waited()).await?;
            tallies[0].latencies.push(t);
            let t = self.leasehold(&self.polling, i, "p", waited()).await?;
            tallies[1].latencies.push(t);
            let t = self.rslock(i, waited()).await?;
            tallies[2].latencies.push(t);
        }
        for t in &mut tallies {
            t.ops = t.latencies.len() as u64;
        }
        Ok(tallies)
    }

    async fn leasehold(
        &self,
        waiter: &Elector,
        i: usize,
        kind: &str,
        waited: Duration,
    ) -> Result<Duration, BoxError> {
        let lock = LockName::new(format!("bench-{}-handoff-{kind}-{i}", self.run))?;
        let guard = self
            .holder
            .try_acquire(&lock)
            .await?
            .ok_or("hand-off lock busy")?;
        let waiter = waiter.clone();
        let task = tokio::spawn(async move {
            let taken = waiter.try_acquire(&lock).await;
            (Instant::now(), taken)
        });
        sleep(waited).await;
        let released = Instant::now();
        guard.release().await?;
        let (at, taken) = task.await?;
        taken?.ok_or("the waiter gave up")?.release().await?;
        Ok(at - released)
    }

    async fn rslock(&self, i: usize, waited: Duration) -> Result<Duration, BoxError> {
        let resource = format!("bench-{}-handoff-rslock-{i}", self.run);
        let ttl = Duration::from_secs(30);
        let held = self.rslock_holder.lock(resource.as_bytes(), ttl).await?;
        let waiter = self.rslock_waiter.clone();
        let name = resource.clone();
        let task = tokio::spawn(async move {
            let taken = waiter.acquire_no_guard(name.as_bytes(), ttl).await;
            (Instant::now(), taken)
        });
        sleep(waited).await;
        let released = Instant::now();
        self.rslock_holder.unlock(&held).await;
        let (at, taken) = task.await?;
        self.rslock_waiter.unlock(&taken?).await;
        Ok(at - released)
    }
}
