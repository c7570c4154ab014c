//! The conformance suite and the safety checker against `leasehold::MemoryStore`.

use std::sync::Arc;
use std::time::Duration;

use leasehold::{LeaseStore, MemoryStore};
use leasehold_testkit::safety::{self, SafetyConfig, Violation};
use leasehold_testkit::{SharedStore, StoreFactory, conformance};

/// Every client of a memory store is the one shared instance.
fn memory() -> SharedStore {
    SharedStore::new(Arc::new(MemoryStore::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_passes() {
    let report = conformance::run_tests(&memory(), conformance::tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_conformance_passes() {
    let report = conformance::run_tests(&memory(), conformance::partition_tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::partition_tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safety_single_leader() {
    let config = SafetyConfig {
        contenders: 8,
        rounds: 200,
        ..SafetyConfig::default()
    };
    let report = safety::check(&memory(), &config).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.attempts, 1600);
    assert_eq!(report.runs + report.skips + report.errors, 1600, "{report}");
    assert_eq!(report.errors, 0, "{report}");
    assert_eq!(
        report.rejected_writes, 0,
        "leases far longer than actions never go stale: {report}"
    );
    assert_eq!(report.max_inside, 1, "{report}");
    assert!(report.max_fence >= report.runs, "{report}");
    assert!(report.elapsed < Duration::from_secs(20), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safety_group() {
    let config = SafetyConfig {
        contenders: 8,
        rounds: 200,
        ..SafetyConfig::default()
    };
    let report = safety::check_group(&memory(), &config, 3).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert!(report.max_inside <= 3, "{report}");
    assert!(
        report.max_inside >= 2,
        "a group of 3 should run holders concurrently: {report}"
    );
}

/// Leases shorter than the actions, without renewal: holders lose their leases mid-action and keep
/// running, successors take over and the stale holders' later writes are rejected, yet no two
/// holders ever both believe they hold the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safety_with_expiring_leases() {
    let config = SafetyConfig {
        contenders: 4,
        rounds: 15,
        max_action: Duration::from_millis(120),
        lease: Duration::from_millis(40),
        wait: Duration::from_millis(100),
        ..SafetyConfig::default()
    };
    let report = safety::check(&memory(), &config).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert!(
        report.lost > 0,
        "some actions must outlive their leases: {report}"
    );
    assert!(
        report.max_inside >= 2,
        "stale holders must overlap with successors: {report}"
    );
    assert!(
        report.rejected_writes > 0,
        "stale holders' writes must be rejected: {report}"
    );
}

/// The checker itself: a "store" whose clients do not share state grants everyone at once, and
/// the checker must catch it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safety_checker_catches_a_broken_store() {
    let unshared = || -> Arc<dyn LeaseStore> { Arc::new(MemoryStore::new()) };
    assert!(!Arc::ptr_eq(&unshared.make(), &unshared.make()));
    let config = SafetyConfig {
        contenders: 4,
        rounds: 10,
        max_action: Duration::from_millis(5),
        ..SafetyConfig::default()
    };
    let report = safety::check(&unshared, &config).await.unwrap();
    assert!(
        !report.is_safe(),
        "overlapping holders must be reported: {report}"
    );
    let overlaps = report
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::Overlap { .. }))
        .count();
    let duplicates = report
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::DuplicateFence { .. }))
        .count();
    assert!(
        overlaps > 0,
        "overlapping valid holders must be reported: {report}"
    );
    assert!(
        duplicates > 0,
        "fences issued twice must be reported: {report}"
    );
}

#[tokio::test]
async fn run_all_names_a_failing_test() {
    let unshared = || -> Arc<dyn LeaseStore> { Arc::new(MemoryStore::new()) };
    let only = conformance::tests()
        .iter()
        .filter(|t| t.name() == "contention_skips_after_wait")
        .copied()
        .collect::<Vec<_>>();
    let report = conformance::run_tests(&unshared, &only).await;
    assert_eq!(report.failed.len(), 1, "{report}");
    assert_eq!(report.failed[0].0, "contention_skips_after_wait");
    assert!(
        report
            .to_string()
            .contains("FAILED contention_skips_after_wait"),
        "{report}"
    );
}
