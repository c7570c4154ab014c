//! The testkit's conformance suite and safety checker against a real etcd. Each simulated node
//! gets its own store and connections.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::time::Duration;

use leasehold_testkit::conformance;
use leasehold_testkit::safety::{self, SafetyConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_conformance() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let factory = common::factory(common::url(&endpoints));
    let report = conformance::run_tests(&factory, conformance::tests()).await;
    println!("{report}");
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

/// The partition-set cases (issue 39), apart from the rest so a slow partition run is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_partition_conformance() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let factory = common::factory(common::url(&endpoints));
    let report = conformance::run_tests(&factory, conformance::partition_tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::partition_tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_standard_safety_run() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let factory = common::factory(common::url(&endpoints));
    safety::assert_store_is_safe(&factory, 60).await;
}

/// Leases lost mid-action (actions longer than the lease, no renewal) must show up as rejected
/// stale writes, never as a violation. etcd leases last whole seconds, so the leases here do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_safety_with_expiring_leases() {
    let Some(endpoints) = common::endpoints() else {
        return;
    };
    let factory = common::factory(common::url(&endpoints));
    let config = SafetyConfig {
        contenders: 4,
        rounds: 8,
        lease: Duration::from_millis(1000),
        max_action: Duration::from_millis(1600),
        wait: Duration::from_millis(2500),
        ..SafetyConfig::default()
    };
    let report = safety::check(&factory, &config).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert!(report.lost > 0, "some leases must have run out: {report}");
}
