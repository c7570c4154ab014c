//! Helpers shared by the tests that drive an elector over the memory store behind the fault
//! wrapper, on paused tokio time.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use leasehold::{
    ElectionOptions, ElectionOptionsBuilder, Elector, LeaseStore, MemoryStore, RetryPolicy,
};
use leasehold_testkit::fault::{FaultControl, FaultyStore};

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A memory store behind a fault-injecting wrapper.
pub fn faulty() -> (Arc<MemoryStore>, Arc<FaultyStore>, FaultControl) {
    let memory = Arc::new(MemoryStore::new());
    let (store, faults) = FaultyStore::new(memory.clone());
    (memory, store, faults)
}

/// Options for node `node` with `wait` and `lease`, retrying every 100 ms without jitter.
#[allow(clippy::unwrap_used)] // test helper: constant, valid input
pub fn options(node: &str, wait: Duration, lease: Duration) -> ElectionOptionsBuilder {
    ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .lease(lease)
        .retry(RetryPolicy::new(ms(100), ms(100), 0.0).unwrap())
}

/// An elector on `store` with the options `builder` makes.
#[allow(clippy::unwrap_used)] // test helper: constant, valid input
pub fn elector(store: Arc<dyn LeaseStore>, builder: ElectionOptionsBuilder) -> Elector {
    Elector::with_options(store, builder.build().unwrap())
}
