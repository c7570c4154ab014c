//! The torture run: contenders hammering one lock through a fenced resource.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use leasehold::{Elector, LeaderContext, LockName};
use rand::Rng;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};
use tracing::debug;

use super::config::{SafetyConfig, SafetyError};
use super::occupancy::Occupancy;
use super::report::SafetyReport;
use super::resource::FencedResource;
use super::violation::{Violation, Visitor};
use crate::factory::StoreFactory;
use crate::names::unique_name;

/// How many error messages a report keeps.
const KEPT_ERRORS: usize = 5;

/// Runs the safety check on a single-leader lock: `config.contenders` contenders, each with its own
/// store client (from `factory`) and [`Elector`], each doing `config.rounds` rounds of
/// `run_if_leader` whose action enters a [`FencedResource`], writes with its fence, sleeps a
/// random time up to `config.max_action` and writes again.
///
/// The lock name is unique to the run. Violations are reported, not returned as errors; call
/// [`SafetyReport::assert_safe`] in a test.
///
/// # Errors
///
/// [`SafetyError`] for a configuration it cannot run (no contenders, invalid options).
///
/// # Cancel safety
///
/// Dropping it mid-run may leave a contender's lease until its expiry (the lock name is unique
/// to the run).
pub async fn check(
    factory: &dyn StoreFactory,
    config: &SafetyConfig,
) -> Result<SafetyReport, SafetyError> {
    config.validate()?;
    let contenders = (0..config.contenders)
        .map(|i| {
            let node = format!("safety-{i}");
            let elector = Elector::with_options(factory.make(), config.options(&node)?);
            Ok((node, elector))
        })
        .collect::<Result<Vec<_>, SafetyError>>()?;
    run(factory, config, unique_name("safety"), contenders, 1).await
}

/// The safety check on a group lock with `max_leaders` slots: one [`FencedResource`] per slot
/// (fences increase per slot), and an [`Occupancy`] over the whole lock that must never see more
/// than `max_leaders` valid holders inside at once.
///
/// # Errors
///
/// As [`check`].
///
/// # Cancel safety
///
/// As [`check`].
pub async fn check_group(
    factory: &dyn StoreFactory,
    config: &SafetyConfig,
    max_leaders: u32,
) -> Result<SafetyReport, SafetyError> {
    config.validate()?;
    let contenders = (0..config.contenders)
        .map(|i| {
            let node = format!("safety-group-{i}");
            let elector =
                Elector::with_options(factory.make(), config.group_options(&node, max_leaders)?);
            Ok((node, elector))
        })
        .collect::<Result<Vec<_>, SafetyError>>()?;
    run(
        factory,
        config,
        unique_name("safety-group"),
        contenders,
        max_leaders,
    )
    .await
}

/// The protected resources of one lock.
struct Arena {
    name: String,
    slots: Vec<FencedResource>,
    group: Option<Occupancy>,
    started: Instant,
    extra: Mutex<Vec<Violation>>,
}

impl Arena {
    fn new(lock: &LockName, slots: u32) -> Self {
        let name = lock.to_string();
        Self {
            slots: (0..slots)
                .map(|s| FencedResource::new(format!("{name}#{s}")))
                .collect(),
            group: (slots > 1).then(|| Occupancy::new(name.clone(), slots as usize)),
            name,
            started: Instant::now(),
            extra: Mutex::new(Vec::new()),
        }
    }

    async fn visit(&self, node: &str, ctx: &LeaderContext, hold: Duration) {
        let lease = ctx.lease();
        let Some(resource) = usize::try_from(lease.slot)
            .ok()
            .and_then(|s| self.slots.get(s))
        else {
            self.extra
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Violation::SlotOutOfRange {
                    resource: self.name.clone(),
                    visitor: Visitor {
                        holder: node.to_owned(),
                        slot: lease.slot,
                        fence: lease.fence,
                    },
                    slots: self.slots.len(),
                    at: self.started.elapsed(),
                });
            return;
        };
        let _in_group = self.group.as_ref().map(|g| g.enter(node, ctx));
        let _inside = resource.enter(node, ctx);
        let _ = resource.write_with(node, ctx);
        if hold.is_zero() {
            tokio::task::yield_now().await;
        } else {
            sleep(hold).await;
        }
        let _ = resource.write_with(node, ctx);
    }

    fn violations(&self) -> Vec<Violation> {
        let mut all: Vec<Violation> = self.extra.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(group) = &self.group {
            all.extend(group.violations());
        }
        for slot in &self.slots {
            all.extend(slot.violations());
        }
        all
    }
}

#[derive(Default)]
struct Tally {
    runs: AtomicU64,
    skips: AtomicU64,
    errors: AtomicU64,
    lost: AtomicU64,
    first_errors: Mutex<Vec<String>>,
}

impl Tally {
    fn error(&self, message: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.first_errors.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_ERRORS {
            kept.push(message);
        }
    }
}

/// A random duration in `0..=max`, at microsecond resolution.
fn random_upto(max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
    Duration::from_micros(rand::rng().random_range(0..=micros))
}

async fn run(
    factory: &dyn StoreFactory,
    config: &SafetyConfig,
    lock: LockName,
    contenders: Vec<(String, Elector)>,
    slots: u32,
) -> Result<SafetyReport, SafetyError> {
    let arena = Arc::new(Arena::new(&lock, slots));
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    debug!(lock = %lock, contenders = contenders.len(), rounds = config.rounds, "safety run");
    let mut tasks = JoinSet::new();
    for (node, contender) in contenders {
        let task = contend(
            node.clone(),
            contender,
            lock.clone(),
            config.clone(),
            Arc::clone(&arena),
            Arc::clone(&tally),
        );
        tasks.spawn(async move {
            AssertUnwindSafe(task)
                .catch_unwind()
                .await
                .map_err(|p| (node, panic_message(&*p)))
        });
    }
    let mut panicked = None;
    while let Some(joined) = tasks.join_next().await {
        let failure = match joined {
            Ok(Ok(())) => None,
            Ok(Err((contender, message))) => {
                Some(SafetyError::ContenderPanicked { contender, message })
            }
            Err(e) => Some(SafetyError::ContenderPanicked {
                contender: "?".to_owned(),
                message: e.to_string(),
            }),
        };
        if panicked.is_none() {
            panicked = failure;
        }
    }
    if let Some(e) = panicked {
        return Err(e);
    }
    let first_errors = tally
        .first_errors
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let report = SafetyReport {
        store: factory.make().describe(),
        attempts: (config.contenders as u64).saturating_mul(config.rounds as u64),
        runs: tally.runs.load(Ordering::Relaxed),
        skips: tally.skips.load(Ordering::Relaxed),
        errors: tally.errors.load(Ordering::Relaxed),
        first_errors,
        lost: tally.lost.load(Ordering::Relaxed),
        accepted_writes: arena
            .slots
            .iter()
            .map(FencedResource::accepted_writes)
            .sum(),
        rejected_writes: arena
            .slots
            .iter()
            .map(FencedResource::rejected_writes)
            .sum(),
        max_fence: arena
            .slots
            .iter()
            .filter_map(FencedResource::highest_fence)
            .max()
            .unwrap_or(0),
        max_inside: match &arena.group {
            Some(group) => group.max_inside(),
            None => arena
                .slots
                .iter()
                .map(FencedResource::max_inside)
                .max()
                .unwrap_or(0),
        },
        violations: arena.violations(),
        elapsed: started.elapsed(),
    };
    debug!(lock = %lock, runs = report.runs, violations = report.violations.len(), "safety run done");
    Ok(report)
}

async fn contend(
    node: String,
    contender: Elector,
    lock: LockName,
    config: SafetyConfig,
    arena: Arc<Arena>,
    tally: Arc<Tally>,
) {
    for _ in 0..config.rounds {
        let hold = random_upto(config.max_action);
        let outcome = contender
            .run_if_leader(&lock, |ctx| {
                let arena = Arc::clone(&arena);
                let node = node.clone();
                async move {
                    arena.visit(&node, &ctx, hold).await;
                    ctx.is_lost()
                }
            })
            .await;
        match outcome {
            Ok(Some(lost)) => {
                tally.runs.fetch_add(1, Ordering::Relaxed);
                if lost {
                    tally.lost.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(None) => {
                tally.skips.fetch_add(1, Ordering::Relaxed);
            }
            Err(leasehold::Error::Lost { .. }) => {
                // Ran, lost its lease and was cancelled (cancel_on_lost).
                tally.runs.fetch_add(1, Ordering::Relaxed);
                tally.lost.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tally.error(format!("{node}: {e}")),
        }
        let pause = random_upto(config.max_pause);
        if pause.is_zero() {
            tokio::task::yield_now().await;
        } else {
            sleep(pause).await;
        }
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-text panic payload".to_owned()
    }
}
