//! The testkit's conformance suite and safety checker against a DynamoDB emulator (dynalite in
//! scripts/test). Each simulated node gets its own store and client.

mod common;

use leasehold_testkit::{conformance, safety};

/// Each round is a few HTTP round trips to the emulator: fewer rounds than on memory.
const SAFETY_ROUNDS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_conformance() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let report = conformance::run_tests(&common::factory(endpoint), conformance::tests()).await;
    assert!(report.is_success(), "{report}");
}

/// The partition-set cases (issue 39). The members read their shards' owners with
/// `state_many` (`BatchGetItem`s of the shard items), not by listing the table, which every test
/// binary shares and fills with thousands of other locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_partition_conformance() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    let report =
        conformance::run_tests(&common::factory(endpoint), conformance::partition_tests()).await;
    assert!(report.is_success(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_safety() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    safety::assert_store_is_safe(&common::factory(endpoint), SAFETY_ROUNDS).await;
}
