//! The testkit's conformance suite and safety checker against a real Redis server. Each simulated
//! node gets its own store and connections.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::time::Duration;

use leasehold_testkit::conformance;
use leasehold_testkit::safety::{self, SafetyConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_conformance() {
    let Some(url) = common::url() else { return };
    let factory = common::factory(url);
    let report = conformance::run_tests(&factory, conformance::tests()).await;
    println!("{report}");
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

/// The partition-set cases (issue 39), apart from the rest so a slow partition run is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_partition_conformance() {
    let Some(url) = common::url() else { return };
    let factory = common::factory(url);
    let report = conformance::run_tests(&factory, conformance::partition_tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::partition_tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_safety() {
    let Some(url) = common::url() else { return };
    safety::assert_store_is_safe(&common::factory(url), 100).await;
}

/// Leases lost mid-action (actions longer than the lease, no renewal) must show up as rejected
/// stale writes, never as a violation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_safety_with_expiring_leases() {
    let Some(url) = common::url() else { return };
    let factory = common::factory(url);
    let config = SafetyConfig {
        contenders: 6,
        rounds: 30,
        lease: Duration::from_millis(150),
        max_action: Duration::from_millis(300),
        wait: Duration::from_millis(400),
        ..SafetyConfig::default()
    };
    let report = safety::check(&factory, &config).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert!(report.lost > 0, "some leases must have run out: {report}");
}
