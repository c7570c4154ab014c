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
    conformance::run_all(&common::factory(endpoint)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_safety() {
    let Some(endpoint) = common::ready().await else {
        return;
    };
    safety::assert_store_is_safe(&common::factory(endpoint), SAFETY_ROUNDS).await;
}
