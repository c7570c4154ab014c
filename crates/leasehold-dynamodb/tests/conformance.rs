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

/// The partition-set cases (issue 39). Not met on dynalite yet: under load a member that joins
/// takes longer than the cases' coverage bound (two leases) to acquire the shards handed to it
/// (11 of 16 shards owned 7.5 s after the third member joined). Run by hand with
/// `cargo nextest run -p leasehold-dynamodb --run-ignored only`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "issue 39: partition members join too slowly on dynalite (coverage bound missed)"]
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
