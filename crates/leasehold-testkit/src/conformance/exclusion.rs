//! Mutual exclusion under concurrency, for single and group locks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::Elector;
use rand::Rng;
use tokio::task::JoinSet;

use super::support::{group_node, ms, node};
use crate::factory::StoreFactory;
use crate::names::unique_name;

const TASKS: usize = 16;
const ROUNDS: usize = 5;
const CLIENTS: usize = 3;

/// Raises `counter` and keeps its highest value in `max`; returns the new value.
fn enter(counter: &AtomicUsize, max: &AtomicUsize) -> usize {
    let now = counter.fetch_add(1, Ordering::SeqCst) + 1;
    max.fetch_max(now, Ordering::SeqCst);
    now
}

fn random_ms(low: u64, high: u64) -> Duration {
    ms(rand::rng().random_range(low..=high))
}

#[derive(Default)]
struct Tally {
    inside: AtomicUsize,
    max_inside: AtomicUsize,
    runs: AtomicUsize,
    fences: Mutex<Vec<(u32, u64)>>,
    errors: Mutex<Vec<String>>,
}

impl Tally {
    fn error(&self, e: impl std::fmt::Display) {
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.to_string());
    }
    fn fence(&self, slot: u32, fence: u64) {
        self.fences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((slot, fence));
    }
    fn check_common(&self, what: &str) {
        let errors = self
            .errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        assert!(
            errors.is_empty(),
            "{what}: elector calls failed: {errors:?}"
        );
        let runs = self.runs.load(Ordering::SeqCst);
        assert!(
            runs >= 1,
            "{what}: no task was ever elected in {} attempts",
            TASKS * ROUNDS
        );
        let mut fences = self
            .fences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        fences.sort_unstable();
        let total = fences.len();
        fences.dedup();
        assert_eq!(
            fences.len(),
            total,
            "{what}: a (slot, fence) pair was issued twice"
        );
    }
}

async fn join_all(tasks: &mut JoinSet<()>, what: &str) {
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            panic!("{what}: a contender task failed: {e}");
        }
    }
}

/// 16 tasks × 5 rounds over 3 store clients contend for one lock: never more than one is inside
/// the action at once, at least one run happens, and no fence is issued twice.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn mutual_exclusion(factory: &dyn StoreFactory) {
    let name = unique_name("exclusion");
    let clients: Vec<Elector> = (0..CLIENTS)
        .map(|c| node(factory, &format!("conformance-{c}"), ms(300), ms(10_000)))
        .collect();
    let tally = Arc::new(Tally::default());
    let mut tasks = JoinSet::new();
    for t in 0..TASKS {
        let elector = clients[t % CLIENTS].clone();
        let (tally, name) = (Arc::clone(&tally), name.clone());
        tasks.spawn(async move {
            for _ in 0..ROUNDS {
                let outcome = elector
                    .run_if_leader(&name, |ctx| {
                        let tally = Arc::clone(&tally);
                        async move {
                            enter(&tally.inside, &tally.max_inside);
                            tally.fence(0, ctx.fence());
                            tokio::time::sleep(random_ms(0, 3)).await;
                            tally.inside.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                    .await;
                match outcome {
                    Ok(Some(())) => {
                        tally.runs.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(None) => {}
                    Err(e) => tally.error(e),
                }
            }
        });
    }
    join_all(&mut tasks, "mutual_exclusion").await;
    tally.check_common("mutual_exclusion");
    let max = tally.max_inside.load(Ordering::SeqCst);
    assert_eq!(
        max, 1,
        "mutual_exclusion: {max} holders were inside the action at once"
    );
}

/// A group with `max_leaders` 3: 16 tasks × 5 rounds over 3 clients never have more than 3 inside
/// at once, never two in one slot, slots stay below 3, and more than one holder does run
/// concurrently.
///
/// # Cancel safety
///
/// Dropping it mid-test may leave a lease behind until its expiry; its lock names are unique
/// to the call, so later tests are not affected.
pub async fn group_mutual_exclusion(factory: &dyn StoreFactory) {
    const MAX_LEADERS: u32 = 3;
    let name = unique_name("group-exclusion");
    let clients: Vec<Elector> = (0..CLIENTS)
        .map(|c| {
            group_node(
                factory,
                &format!("conformance-{c}"),
                MAX_LEADERS,
                ms(300),
                ms(10_000),
            )
        })
        .collect();
    let tally = Arc::new(Tally::default());
    let per_slot: Arc<Vec<(AtomicUsize, AtomicUsize)>> = Arc::new(
        (0..MAX_LEADERS)
            .map(|_| (AtomicUsize::new(0), AtomicUsize::new(0)))
            .collect(),
    );
    let mut tasks = JoinSet::new();
    for t in 0..TASKS {
        let elector = clients[t % CLIENTS].clone();
        let (tally, per_slot, name) = (Arc::clone(&tally), Arc::clone(&per_slot), name.clone());
        tasks.spawn(async move {
            for _ in 0..ROUNDS {
                let outcome = elector
                    .run_if_leader(&name, |ctx| {
                        let (tally, per_slot) = (Arc::clone(&tally), Arc::clone(&per_slot));
                        async move {
                            let lease = ctx.lease();
                            tally.fence(lease.slot, lease.fence);
                            let Some((inside, max)) = usize::try_from(lease.slot)
                                .ok()
                                .and_then(|s| per_slot.get(s))
                            else {
                                tally
                                    .error(format!("granted slot {} of {MAX_LEADERS}", lease.slot));
                                return;
                            };
                            enter(inside, max);
                            enter(&tally.inside, &tally.max_inside);
                            tokio::time::sleep(random_ms(5, 15)).await;
                            tally.inside.fetch_sub(1, Ordering::SeqCst);
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                    .await;
                match outcome {
                    Ok(Some(())) => {
                        tally.runs.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(None) => {}
                    Err(e) => tally.error(e),
                }
            }
        });
    }
    join_all(&mut tasks, "group_mutual_exclusion").await;
    tally.check_common("group_mutual_exclusion");
    let max = tally.max_inside.load(Ordering::SeqCst);
    assert!(
        max <= MAX_LEADERS as usize,
        "group_mutual_exclusion: {max} holders inside at once, max_leaders is {MAX_LEADERS}"
    );
    assert!(
        max >= 2,
        "group_mutual_exclusion: a group of {MAX_LEADERS} never had two holders at once"
    );
    for (slot, (_, slot_max)) in per_slot.iter().enumerate() {
        let slot_max = slot_max.load(Ordering::SeqCst);
        assert!(
            slot_max <= 1,
            "group_mutual_exclusion: slot {slot} had {slot_max} holders at once"
        );
    }
}
