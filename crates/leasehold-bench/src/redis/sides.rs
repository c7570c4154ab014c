//! The three clients compared on Redis — leasehold, the floor and rslock — and the loops that
//! drive them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use leasehold::{ElectionOptions, Elector, LockName, Token};
use leasehold_redis::{RedisOptions, RedisStore};
use rslock::LockManager;
use tokio::time::{Instant, timeout_at};

use crate::measure::Tally;

type BoxError = Box<dyn std::error::Error>;

/// The lease every side asks for in throughput scenarios.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// One store and one rslock manager, shared by every task of a scenario (one process).
pub(crate) struct Clients {
    pub(crate) store: Arc<RedisStore>,
    /// `run_if_leader` without waiting.
    pub(crate) elector: Elector,
    /// `run_if_leader` with a generous wait, for contention.
    pub(crate) patient: Elector,
    pub(crate) rslock: LockManager,
    /// The classic compare-and-delete unlock script, for the bare floor.
    compare_and_delete: redis::Script,
    /// Makes lock names unique to this run.
    pub(crate) run: String,
}

/// Options for benchmark stores: their own key prefix, cleaned up a minute after use.
pub(crate) fn bench_options() -> RedisOptions {
    RedisOptions::default()
        .prefix("leasehold-bench")
        .idle_retention(Duration::from_secs(60))
}

impl Clients {
    pub(crate) async fn open(url: &str) -> Result<Self, BoxError> {
        let store = Arc::new(RedisStore::connect_with(url, bench_options()).await?);
        let options = ElectionOptions::builder()
            .wait(Duration::ZERO)
            .lease(LEASE)
            .build()?;
        let patient = ElectionOptions::builder()
            .wait(Duration::from_secs(1))
            .lease(Duration::from_secs(1))
            .build()?;
        Ok(Self {
            elector: Elector::with_options(store.clone(), options),
            patient: Elector::with_options(store.clone(), patient),
            store,
            rslock: LockManager::new(vec![url.to_owned()]),
            compare_and_delete: redis::Script::new(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
            ),
            run: Token::random().to_hex()[..12].to_owned(),
        })
    }

    /// A lock name unique to this run, side and index.
    pub(crate) fn lock(&self, side: &str, i: usize) -> Result<LockName, BoxError> {
        Ok(LockName::new(format!("bench-{}-{side}-{i}", self.run))?)
    }

    /// leasehold: one `run_if_leader` with an empty action.
    pub(crate) async fn leasehold(&self, lock: &LockName) -> Result<(), BoxError> {
        self.elector
            .run_if_leader(lock, |_| async {})
            .await?
            .ok_or("uncontended lock was busy")?;
        Ok(())
    }

    /// The floor: the store's acquire and release scripts, issued raw on its connection.
    pub(crate) async fn floor(&self, lock: &LockName) -> Result<(), BoxError> {
        let store = &self.store;
        let mut conn = store.connection().await?;
        let key = store.key(lock);
        let token = Token::random().to_hex();
        let granted: Option<(u32, u64, u64, u64)> = store
            .scripts()
            .acquire()
            .key(&key)
            .arg(&token)
            .arg("floor")
            .arg(LEASE.as_millis() as u64)
            .arg(1)
            .arg(60_000)
            .invoke_async(&mut conn)
            .await?;
        granted.ok_or("floor lock busy")?;
        let released: u8 = store
            .scripts()
            .release()
            .key(&key)
            .arg(0)
            .arg(&token)
            .arg(0)
            .arg(store.channel())
            .arg(lock.as_str())
            .invoke_async(&mut conn)
            .await?;
        if released != 1 {
            return Err("floor release found the lock not held".into());
        }
        Ok(())
    }

    /// The bare floor: the least a Redis lock needs — `SET key token NX PX` and a
    /// compare-and-delete script — on the store's connection, with no fence and no server clock.
    pub(crate) async fn bare(&self, key: &str) -> Result<(), BoxError> {
        let mut conn = self.store.connection().await?;
        let token = Token::random().to_hex();
        let set: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(LEASE.as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        set.ok_or("bare floor lock busy")?;
        let deleted: u8 = self
            .compare_and_delete
            .key(key)
            .arg(&token)
            .invoke_async(&mut conn)
            .await?;
        if deleted != 1 {
            return Err("bare floor unlock found the lock not held".into());
        }
        Ok(())
    }

    /// The bare floor around a critical section of `section`.
    pub(crate) async fn bare_section(&self, key: &str, section: Duration) -> Result<(), BoxError> {
        let mut conn = self.store.connection().await?;
        let token = Token::random().to_hex();
        let set: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        set.ok_or("serial lock busy")?;
        tokio::time::sleep(section).await;
        let _: u8 = self
            .compare_and_delete
            .key(key)
            .arg(&token)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// rslock: `lock` (SET NX PX) and `unlock` (compare-and-delete script).
    pub(crate) async fn rslock(&self, resource: &str) -> Result<(), BoxError> {
        let lock = self.rslock.lock(resource.as_bytes(), LEASE).await?;
        self.rslock.unlock(&lock).await;
        Ok(())
    }
}

/// Runs `op` back to back until `d` has passed, recording each latency.
pub(crate) async fn repeat<F, Fut>(d: Duration, mut op: F) -> Result<Tally, BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    let mut tally = Tally::default();
    while started.elapsed() < d {
        let t = Instant::now();
        op().await?;
        tally.latencies.push(t.elapsed());
        tally.ops += 1;
    }
    tally.time = started.elapsed();
    Ok(tally)
}

/// Runs `tasks` copies of [`repeat`] at once (task `i` gets `op(i)`), and sums them; the time is
/// the wall time, so `ops / time` is the combined throughput.
pub(crate) async fn repeat_concurrently<F, Fut>(
    d: Duration,
    tasks: usize,
    op: F,
) -> Result<Tally, BoxError>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    let op = &op;
    let results = join_all((0..tasks).map(|i| repeat(d, move || op(i)))).await;
    let mut total = Tally::default();
    for r in results {
        let t = r?;
        total.ops += t.ops;
        total.latencies.extend(t.latencies);
    }
    total.time = started.elapsed();
    Ok(total)
}

/// What one contender did in a contention slice.
#[derive(Default)]
pub(crate) struct Contended {
    pub(crate) sections: u64,
    pub(crate) failed: u64,
}

/// Runs `tasks` contenders until `d` has passed; each call of `attempt` tries once to get the
/// lock and run the critical section, and reports `Some(true)` (ran), `Some(false)` (gave up) or
/// `None` (cut off by the end of the slice).
pub(crate) async fn contend<F, Fut>(
    d: Duration,
    tasks: usize,
    attempt: F,
) -> Result<Tally, BoxError>
where
    F: Fn(Instant) -> Fut,
    Fut: Future<Output = Result<Option<bool>, BoxError>>,
{
    let started = Instant::now();
    let deadline = started + d;
    let attempt = &attempt;
    let results = join_all((0..tasks).map(|_| async move {
        let mut done = Contended::default();
        while Instant::now() < deadline {
            match timeout_at(deadline, attempt(deadline)).await {
                Ok(Ok(Some(true))) => done.sections += 1,
                Ok(Ok(Some(false))) => done.failed += 1,
                Ok(Ok(None)) | Err(_) => break,
                Ok(Err(e)) => return Err(e),
            }
        }
        Ok::<_, BoxError>(done)
    }))
    .await;
    let mut total = Tally::default();
    for r in results {
        let c = r?;
        total.ops += c.sections;
        total.failures += c.failed;
        total.per_task.push(c.sections);
    }
    total.time = started.elapsed();
    Ok(total)
}
