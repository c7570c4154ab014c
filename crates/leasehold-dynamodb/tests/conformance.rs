//! The testkit's conformance suite and safety checker against a DynamoDB emulator (dynalite in
//! scripts/test). Each simulated node gets its own store and client.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::time::Duration;

use leasehold_testkit::safety::{self, SafetyConfig};
use leasehold_testkit::{StoreFactory, conformance};

fn safety_config() -> SafetyConfig {
    // Each round is a few HTTP round trips to the emulator: fewer rounds than on memory.
    SafetyConfig {
        contenders: 8,
        rounds: 40,
        wait: Duration::from_millis(500),
        ..SafetyConfig::default()
    }
}

async fn safety(factory: &dyn StoreFactory) {
    let report = safety::check(factory, &safety_config()).await.unwrap();
    println!("{report}");
    report.assert_safe();
    assert_eq!(report.errors, 0, "{report}");
    assert_eq!(report.max_inside, 1, "{report}");
    assert!(report.runs > 0, "{report}");
    let group = safety::check_group(factory, &safety_config(), 3)
        .await
        .unwrap();
    println!("{group}");
    group.assert_safe();
    assert_eq!(group.errors, 0, "{group}");
    assert!(group.max_inside <= 3, "{group}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_conformance() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let factory = common::factory(endpoint);
    let report = conformance::run_tests(&factory, conformance::tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_safety() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    safety(&common::factory(endpoint)).await;
}
