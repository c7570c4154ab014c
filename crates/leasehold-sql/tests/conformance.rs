//! The testkit's conformance suite and safety checker against real databases: a SQLite file,
//! PostgreSQL and MariaDB/MySQL. Each simulated node gets its own store and pool.

mod common;

use leasehold_testkit::{conformance, safety};

/// Every statement commits (an fsync), so rounds cost milliseconds: fewer than on memory.
const SAFETY_ROUNDS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_conformance() {
    conformance::run_all(&common::factory(common::sqlite_url("conformance"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_safety() {
    safety::assert_store_is_safe(
        &common::factory(common::sqlite_url("safety")),
        SAFETY_ROUNDS,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conformance() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        conformance::run_all(&common::factory(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_safety() {
    if let Some(url) = common::url("LEASEHOLD_TEST_POSTGRES_URL") {
        safety::assert_store_is_safe(&common::factory(url), SAFETY_ROUNDS).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_conformance() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        conformance::run_all(&common::factory(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_safety() {
    if let Some(url) = common::url("LEASEHOLD_TEST_MYSQL_URL") {
        safety::assert_store_is_safe(&common::factory(url), SAFETY_ROUNDS).await;
    }
}
