//! The testkit's conformance suite and safety checker against real databases: a SQLite file,
//! PostgreSQL and MariaDB/MySQL. Each simulated node gets its own store and pool.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // test helpers

mod common;

use std::time::Duration;

use leasehold_testkit::safety::{self, SafetyConfig};
use leasehold_testkit::{StoreFactory, conformance};

async fn suite(factory: &dyn StoreFactory) {
    let report = conformance::run_tests(factory, conformance::tests()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed.len(), conformance::tests().len());
}

fn safety_config() -> SafetyConfig {
    // Every statement commits (an fsync), so rounds cost milliseconds: fewer than on memory.
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
async fn sqlite_conformance() {
    suite(&common::factory(common::sqlite_url("conformance"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_safety() {
    safety(&common::factory(common::sqlite_url("safety"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conformance() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        suite(&common::factory(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_safety() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        safety(&common::factory(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_conformance() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        suite(&common::factory(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_safety() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        safety(&common::factory(url)).await;
    }
}
