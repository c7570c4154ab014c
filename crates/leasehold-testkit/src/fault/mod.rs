//! Fault injection: [`FaultyStore`] wraps a real store and makes chosen operations fail or slow
//! down on demand, while every other call is delegated unchanged.
//!
//! It is not a fake store: the wrapped store still decides every grant, extension and release.
//! Faults are switched at run time through a cheap, cloneable [`FaultControl`]; delays use
//! `tokio::time::sleep`, so they compose with paused tokio time.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
//! use std::{sync::Arc, time::Duration};
//! use leasehold::{ElectionOptions, Elector, MemoryStore};
//! use leasehold_testkit::fault::{Fault, FaultyStore, Op};
//!
//! let (store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
//! let elector = Elector::with_options(store, ElectionOptions::builder().wait(Duration::ZERO).build()?);
//!
//! faults.fail(Op::TryAcquire, Fault::transient().times(1));
//! assert!(elector.try_acquire("job").await.is_err()); // a store error, never a skip
//! assert!(elector.try_acquire("job").await?.elected().is_some()); // the fault was used up
//! assert_eq!(faults.injected(Op::TryAcquire), 1);
//! # Ok(()) }
//! ```

mod control;
mod store;

pub use control::{Fault, FaultControl, FaultPoint, Op};
pub use store::FaultyStore;
