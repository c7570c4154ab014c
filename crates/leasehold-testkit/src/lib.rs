//! # leasehold-testkit
//!
//! Shared tests for every [`LeaseStore`](leasehold::LeaseStore) backend, in the style of the
//! `object_store` crate's `integration` module: plain public async functions that take the store
//! under test, which each backend's own test suite calls.
//!
//! * [`conformance`]: the contract every store must meet, one `pub async fn` per property, plus
//!   [`conformance::run_all`]. Each test asserts (panics with a clear message) on failure.
//! * [`safety`]: the torture checker — many contenders, many rounds, random action lengths, and a
//!   [`FencedResource`](safety::FencedResource) that must never see a lower fence after a higher
//!   one, nor two holders inside at once while both believe their leases are valid.
//! * [`stale_holder`]: the paused stale holder — a holder frozen past its lease writes after its
//!   successor, and a [`FencedSink`](stale_holder::FencedSink) must refuse it.
//! * [`fault`]: [`FaultyStore`](fault::FaultyStore), a fault-injecting wrapper that delegates to a
//!   real store and fails or delays chosen operations on demand.
//! * [`free_port`]: a loopback port for a server a test starts itself, outside the range the
//!   kernel hands to outgoing connections.
//!
//! A store under test is handed over as a [`StoreFactory`] that returns a new *client* of the same
//! backend on every call, so "two nodes" tests really use two clients. Every test uses lock names
//! made unique with random hex ([`unique_name`]), so the suite can share a real server with other
//! test binaries running at the same time. Tests run on real time with generous bounds, because real
//! servers keep their own clocks.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use leasehold::{LeaseStore, MemoryStore};
//! use leasehold_testkit::{SharedStore, conformance};
//!
//! // Every client of a MemoryStore is the same shared map.
//! let factory = SharedStore::new(Arc::new(MemoryStore::new()));
//! conformance::independent_names_do_not_block(&factory).await;
//! # }
//! ```

pub mod conformance;
mod factory;
pub mod fault;
mod many;
mod names;
mod ports;
pub mod proxy;
pub mod safety;
pub mod stale_holder;

pub use factory::{SharedStore, StoreFactory};
pub use many::grant_many;
pub use names::unique_name;
pub use ports::{FREE_PORTS, free_port};
