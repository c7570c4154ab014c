//! The standard safety run a store's own tests make.

use std::time::Duration;

use crate::StoreFactory;
use crate::safety::{SafetyConfig, check, check_group};

/// Runs the safety checker the way a networked store's tests do, and panics on any violation:
/// 8 contenders × `rounds` rounds with a 500 ms wait, once on a single lock (never more than one
/// holder inside) and once on a group of 3 (never more than three), with no store errors.
///
/// ```
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)] async fn main() {
/// use std::sync::Arc;
/// use leasehold::MemoryStore;
/// use leasehold_testkit::{SharedStore, safety};
///
/// safety::assert_store_is_safe(&SharedStore::new(Arc::new(MemoryStore::new())), 10).await;
/// # }
/// ```
///
/// # Cancel safety
///
/// Dropping it mid-run may leave a contender's lease until its expiry (the lock name is unique
/// to the run, so later runs are not affected).
pub async fn assert_store_is_safe(factory: &dyn StoreFactory, rounds: usize) {
    let config = SafetyConfig {
        contenders: 8,
        rounds,
        wait: Duration::from_millis(500),
        ..SafetyConfig::default()
    };
    let report = match check(factory, &config).await {
        Ok(report) => report,
        Err(e) => panic!("the safety check could not run: {e}"),
    };
    tracing::info!(%report, "single-lock safety check");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert_eq!(report.max_inside, 1, "{report}");
    assert!(report.runs > 0, "{report}");
    let group = match check_group(factory, &config, 3).await {
        Ok(report) => report,
        Err(e) => panic!("the group safety check could not run: {e}"),
    };
    tracing::info!(report = %group, "group safety check");
    group.assert_safe();
    assert_eq!(group.errors, 0, "{group}");
    assert!(group.max_inside <= 3, "{group}");
}
