//! The testkit's conformance suite and safety checker against a real ZooKeeper. Each simulated
//! node gets its own store and session.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::time::Duration;

use leasehold_testkit::conformance;
use leasehold_testkit::proxy::{FaultProxy, loopback_authority, via_proxy};
use leasehold_testkit::safety::{self, SafetyConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_conformance() {
    let Some(url) = common::url() else {
        return;
    };
    let factory = common::factory(url);
    let report = conformance::run_tests(&factory, conformance::tests()).await;
    println!("{report}");
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

/// The partition-set cases (issue 39), apart from the rest so a slow partition run is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_partition_conformance() {
    let Some(url) = common::url() else {
        return;
    };
    let factory = common::factory(url);
    let report = conformance::run_tests(&factory, conformance::partition_tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::partition_tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_standard_safety_run() {
    let Some(url) = common::url() else {
        return;
    };
    let factory = common::factory(url);
    safety::assert_store_is_safe(&factory, 60).await;
}

/// Leases lost mid-action (actions longer than the lease, no renewal) must show up as rejected
/// stale writes, never as a violation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_safety_with_expiring_leases() {
    let Some(url) = common::url() else {
        return;
    };
    let factory = common::factory(url);
    let config = SafetyConfig {
        contenders: 4,
        rounds: 8,
        lease: Duration::from_millis(600),
        max_action: Duration::from_millis(1000),
        wait: Duration::from_millis(2500),
        ..SafetyConfig::default()
    };
    let report = safety::check(&factory, &config).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert!(report.lost > 0, "some leases must have run out: {report}");
}

/// The standard safety run with the testkit's fault proxy between every client and the server
/// (adding 1 ms each way).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_standard_safety_run_through_the_fault_proxy() {
    let Some(url) = common::url() else {
        return;
    };
    let (_, target) = loopback_authority(&url).expect("a loopback test server");
    let proxy = FaultProxy::start(target).await.unwrap();
    proxy.delay(Duration::from_millis(1));
    let factory = common::factory(via_proxy(&url, proxy.addr()).unwrap());
    safety::assert_store_is_safe(&factory, 30).await;
    assert!(
        proxy.accepted() >= 8,
        "every contender went through the proxy"
    );
}

/// The proxy cuts every connection for 1.5 s (longer than the lease) every 2 s while contenders
/// with renewing leases run: errors and lost leases are expected, two holders inside never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_safety_while_the_proxy_cuts_connections() {
    let Some(url) = common::url() else {
        return;
    };
    let (_, target) = loopback_authority(&url).expect("a loopback test server");
    let proxy = FaultProxy::start(target).await.unwrap();
    let options = common::options().with_request_timeout(Duration::from_millis(400));
    let factory = common::factory_with(via_proxy(&url, proxy.addr()).unwrap(), options);
    let flapping = proxy.clone();
    let flapper = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(2000)).await;
            flapping.cut().await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            flapping.heal().await;
        }
    });
    let config = SafetyConfig {
        contenders: 4,
        rounds: 8,
        lease: Duration::from_millis(1200),
        max_action: Duration::from_millis(600),
        wait: Duration::from_secs(3),
        auto_extend: true,
        ..SafetyConfig::default()
    };
    let report = safety::check(&factory, &config).await.unwrap();
    flapper.abort();
    println!("{report}");
    report.assert_safe();
    assert!(proxy.accepted() > 4, "the clients reconnected after cuts");
    assert!(
        report.lost + report.errors > 0,
        "the cuts must have cost leases or attempts: {report}"
    );
}
