//! The safety checker (design §6): many contenders, many rounds, random action lengths, and a
//! fenced resource that must never accept a lower fence after a higher one, nor see more holders
//! inside at once than the lock allows while they all believe their leases are valid.
//!
//! * [`FencedResource`]: an in-process resource that rejects stale fences and records overlapping
//!   holders of one lock (or one group slot).
//! * [`Occupancy`]: the enter/exit tracking on its own, with a capacity (used for groups).
//! * [`check`] and [`check_group`]: run the torture test with a [`SafetyConfig`] and return a
//!   [`SafetyReport`]; [`assert_store_is_safe`] is the standard run a store's tests make.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_testkit::safety::SafetyError> {
//! use std::{sync::Arc, time::Duration};
//! use leasehold::MemoryStore;
//! use leasehold_testkit::{SharedStore, safety::{self, SafetyConfig}};
//!
//! let factory = SharedStore::new(Arc::new(MemoryStore::new()));
//! let config = SafetyConfig { contenders: 3, rounds: 10, ..SafetyConfig::default() };
//! let report = safety::check(&factory, &config).await?;
//! report.assert_safe();
//! assert!(report.runs > 0);
//! # Ok(()) }
//! ```

pub(crate) mod check;
mod config;
mod occupancy;
mod report;
mod resource;
mod standard;
mod violation;

pub use check::{check, check_group};
pub use config::{SafetyConfig, SafetyError};
pub use occupancy::{Occupancy, Visit};
pub use report::SafetyReport;
pub use resource::{FencedResource, Rejected};
pub use standard::assert_store_is_safe;
pub use violation::{Violation, Visitor};
