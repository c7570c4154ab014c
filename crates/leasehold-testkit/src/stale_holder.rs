//! The paused stale holder: a holder frozen past its lease writes after its successor did, and a
//! fenced sink must refuse it.
//!
//! Each round of [`run`]:
//!
//! 1. holder A takes the lock (no renewal) and learns its fence;
//! 2. A "freezes": its lease ends while it is not looking — by expiry (every
//!    [`StaleHolderConfig::expire_every`]-th round, with a short lease and a real wait past it) or
//!    by the store's forced release (every other round; the sink cannot tell the two apart: either
//!    way a successor holds a higher fence);
//! 3. holder B takes the lock (its fence must be higher: else a violation);
//! 4. the writes, in one of two orders chosen at random:
//!    * *successor first*: B writes, then A wakes up and writes — A must be refused;
//!    * *race*: A and B write at once — A may land first (and be overwritten), but if it lands
//!      after B it must be refused;
//! 5. the sink is read back: it must hold B's value, whatever the order.
//!
//! A stale write that the sink accepted after B's is a violation; so is a refused write of B.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::fence::ResourceName;
use leasehold::{ElectionOptions, Elector, LeaderContext, LeaderGuard, LockName};
use rand::Rng;
use tokio::time::Instant;

use crate::factory::StoreFactory;
use crate::names::unique_name;

pub use leasehold::fence::{FencedSink, SinkAnswer, SinkError};

/// How [`run`] runs.
#[derive(Debug, Clone)]
pub struct StaleHolderConfig {
    /// Rounds to run.
    pub rounds: usize,
    /// Every this many rounds, A's lease really expires (a short [`expiring_lease`](Self::expiring_lease)
    /// and a wait past it) instead of being ended by a forced release. 0: never.
    pub expire_every: usize,
    /// The lease of A in the expiring rounds.
    pub expiring_lease: Duration,
    /// The lease of every other acquisition (long: only the forced release ends it).
    pub lease: Duration,
}

impl Default for StaleHolderConfig {
    fn default() -> Self {
        Self {
            rounds: 200,
            expire_every: 50,
            expiring_lease: Duration::from_millis(300),
            lease: Duration::from_secs(30),
        }
    }
}

/// What a [`run`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaleHolderReport {
    /// The sink's description.
    pub sink: String,
    /// Rounds completed.
    pub rounds: u64,
    /// Rounds whose A lease ended by real expiry.
    pub expired: u64,
    /// Stale writes the sink refused (its job).
    pub stale_rejected: u64,
    /// Stale writes that landed before the successor's in a race and were overwritten (allowed).
    pub stale_before_successor: u64,
    /// Stale writes accepted after the successor's: each is also a violation.
    pub stale_accepted: u64,
    /// Everything that broke the rule, described.
    pub violations: Vec<String>,
    /// Rounds that ended in an error of the store or the sink.
    pub errors: Vec<String>,
}

impl StaleHolderReport {
    /// No violation and no error.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.errors.is_empty()
    }
}

impl fmt::Display for StaleHolderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} rounds ({} by expiry), {} stale writes refused, {} landed before the successor, \
             {} accepted after it; {} violations, {} errors",
            self.sink,
            self.rounds,
            self.expired,
            self.stale_rejected,
            self.stale_before_successor,
            self.stale_accepted,
            self.violations.len(),
            self.errors.len()
        )?;
        for v in self.violations.iter().chain(&self.errors).take(5) {
            write!(f, "\n  {v}")?;
        }
        Ok(())
    }
}

/// Runs the paused-stale-holder scenario against `sink`, with locks on clients from `factory`.
///
/// Uses one fresh lock and one fresh resource per run (unique names), so runs can share servers.
///
/// # Panics
///
/// Never on a violation (they are reported); only if the store cannot be used at all for the
/// first acquisition, which is a broken test set-up.
pub async fn run(
    factory: &dyn StoreFactory,
    sink: &dyn FencedSink,
    config: &StaleHolderConfig,
) -> StaleHolderReport {
    let lock = LockName::new(unique_name("stale-holder")).unwrap_or_else(|e| panic!("{e}"));
    let resource =
        ResourceName::new(format!("stale-holder/{lock}")).unwrap_or_else(|e| panic!("{e}"));
    let store_a = factory.make();
    let store_b = factory.make();
    // No renewal: holder A stands for a process that froze (a pause, a partition), whose lease
    // nothing renews.
    let options = |lease| {
        ElectionOptions::builder()
            .lease(lease)
            .auto_extend(false)
            .cancel_on_lost(false)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let a_long = Elector::with_options(Arc::clone(&store_a), options(config.lease));
    let a_short = Elector::with_options(Arc::clone(&store_a), options(config.expiring_lease));
    let b = Elector::with_options(Arc::clone(&store_b), options(config.lease));
    let mut report = StaleHolderReport {
        sink: sink.describe(),
        ..StaleHolderReport::default()
    };
    for round in 0..config.rounds {
        let expire =
            config.expire_every > 0 && round % config.expire_every == config.expire_every - 1;
        let a = if expire { &a_short } else { &a_long };
        let race = rand::rng().random_bool(0.5);
        match one_round(
            a,
            &b,
            &store_b,
            sink,
            &lock,
            &resource,
            round as u64,
            expire,
            race,
        )
        .await
        {
            Ok(seen) => seen.add_to(&mut report),
            Err(e) => report.errors.push(format!("round {round}: {e}")),
        }
        report.rounds += 1;
        report.expired += u64::from(expire);
    }
    a_long.settled().await;
    a_short.settled().await;
    b.settled().await;
    report
}

/// What one round saw.
#[derive(Debug, Default)]
struct Seen {
    rejected: bool,
    before_successor: bool,
    accepted_after: bool,
    violation: Option<String>,
}

impl Seen {
    fn add_to(self, report: &mut StaleHolderReport) {
        report.stale_rejected += u64::from(self.rejected);
        report.stale_before_successor += u64::from(self.before_successor);
        report.stale_accepted += u64::from(self.accepted_after);
        report.violations.extend(self.violation);
    }
}

#[allow(clippy::too_many_arguments)]
async fn one_round(
    a: &Elector,
    b: &Elector,
    store_b: &Arc<dyn leasehold::LeaseStore>,
    sink: &dyn FencedSink,
    lock: &LockName,
    resource: &ResourceName,
    round: u64,
    expire: bool,
    race: bool,
) -> Result<Seen, SinkError> {
    let guard_a = take(a, lock).await?;
    let fence_a = guard_a.fence();
    if expire {
        // Frozen past the lease: nothing renews it, the store lets it expire.
        let until = Instant::now() + a.options().lease() + Duration::from_millis(50);
        let guard_b = loop {
            if let Some(g) = b.try_acquire(lock).await?.elected() {
                break g;
            }
            if Instant::now() > until + Duration::from_secs(10) {
                return Err(format!("the lease of fence {fence_a} did not expire").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        return writes(guard_a, guard_b, sink, resource, round, race).await;
    }
    // Frozen past the lease: the store hands the lock on while A is not looking.
    store_b.force_release(lock, 1).await?;
    let guard_b = take(b, lock).await?;
    writes(guard_a, guard_b, sink, resource, round, race).await
}

async fn take(elector: &Elector, lock: &LockName) -> Result<LeaderGuard, SinkError> {
    elector
        .try_acquire(lock)
        .await?
        .elected()
        .ok_or_else(|| format!("{lock} was held by someone else").into())
}

async fn writes(
    guard_a: LeaderGuard,
    guard_b: LeaderGuard,
    sink: &dyn FencedSink,
    resource: &ResourceName,
    round: u64,
    race: bool,
) -> Result<Seen, SinkError> {
    let (fence_a, fence_b) = (guard_a.fence(), guard_b.fence());
    let (value_a, value_b) = (round * 2, round * 2 + 1);
    let mut seen = Seen::default();
    if fence_b <= fence_a {
        seen.violation = Some(format!(
            "round {round}: the successor's fence {fence_b} is not above the stale holder's {fence_a}"
        ));
    }
    let (a_accepted, b_accepted) = if race {
        let (a, b) = tokio::join!(
            sink.write(resource, &guard_a, value_a),
            sink.write(resource, &guard_b, value_b)
        );
        (a?, b?)
    } else {
        let b = sink.write(resource, &guard_b, value_b).await?;
        (sink.write(resource, &guard_a, value_a).await?, b)
    };
    let last = sink.read(resource).await?;
    if !b_accepted {
        seen.violation = Some(format!(
            "round {round}: the successor's write with fence {fence_b} was refused"
        ));
    } else if last != Some(value_b) {
        seen.accepted_after = a_accepted;
        seen.violation = Some(format!(
            "round {round}: after the successor (fence {fence_b}) wrote {value_b}, the resource \
             holds {last:?} (the stale holder, fence {fence_a}, wrote {value_a}: {})",
            if a_accepted { "accepted" } else { "refused" }
        ));
    } else if a_accepted {
        if race {
            seen.before_successor = true;
        } else {
            seen.accepted_after = true;
            seen.violation = Some(format!(
                "round {round}: the stale write with fence {fence_a} was accepted after the \
                 successor's with fence {fence_b}"
            ));
        }
    } else {
        seen.rejected = true;
    }
    let _ = guard_b.release().await;
    drop(guard_a);
    Ok(seen)
}

/// A [`FencedSink`] in process: a [`MemoryFences`](leasehold::fence::MemoryFences) register and
/// the last value per resource, admitted and written in one step. With `check_fences(false)` it
/// accepts every write: the deliberately unsafe sink the scenario must catch.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use leasehold::MemoryStore;
/// use leasehold_testkit::SharedStore;
/// use leasehold_testkit::stale_holder::{self, MemorySink, StaleHolderConfig};
///
/// let factory = SharedStore::new(Arc::new(MemoryStore::new()));
/// let config = StaleHolderConfig { rounds: 20, expire_every: 0, ..Default::default() };
/// let checked = stale_holder::run(&factory, &MemorySink::new(), &config).await;
/// assert!(checked.passed(), "{checked}");
/// let unchecked = stale_holder::run(&factory, &MemorySink::unchecked(), &config).await;
/// assert!(!unchecked.passed());
/// # }
/// ```
#[derive(Debug, Default)]
pub struct MemorySink {
    fences: leasehold::fence::MemoryFences,
    values: std::sync::Mutex<std::collections::HashMap<ResourceName, u64>>,
    unchecked: bool,
}

impl MemorySink {
    /// A sink that checks fences.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sink that accepts every write, stale or not.
    pub fn unchecked() -> Self {
        Self {
            unchecked: true,
            ..Self::default()
        }
    }

    fn values(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<ResourceName, u64>> {
        self.values.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl FencedSink for MemorySink {
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer {
        let mut values = self.values();
        let admitted = self.unchecked || self.fences.admit_now(resource, ctx.fence()).is_admitted();
        if admitted {
            values.insert(resource.clone(), value);
        }
        Ok(admitted)
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError> {
        Ok(self.values().get(resource).copied())
    }

    fn describe(&self) -> String {
        if self.unchecked {
            "in-process register (unchecked)"
        } else {
            "in-process register"
        }
        .to_owned()
    }
}
