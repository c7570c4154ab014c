//! # leasehold
//!
//! Distributed leader election with leases: run a job on exactly one node (or at most N), skip it
//! everywhere else — with fencing tokens, a reliable "lease lost" signal and cancellation safety.
//!
//! * [`Elector`] runs work under a lease, on one node or on up to N
//!   ([`max_leaders`](ElectionOptionsBuilder::max_leaders)): [`Elector::run_if_leader`] returns
//!   `Ok(None)` on contention; [`Elector::run`], [`Elector::run_once_per`] and
//!   [`Elector::try_acquire`] answer with one [`Outcome`]: elected (with the value, or a
//!   [`LeaderGuard`]), taken by another holder, already run this period, or the action failed.
//! * Every lease carries a random [`Token`](store::Token) and a [`fence`](Lease::fence) that
//!   strictly increases per lock: hand it to the resource so it can reject writes from a stale
//!   holder.
//! * [`LeaderContext::lost`] (also on a [`LeaderGuard`]) resolves when the lease is lost or can
//!   no longer be proven. By default a watchdog renews the lease while the action runs
//!   (`auto_extend`) and the action is dropped at the loss (`cancel_on_lost`), before the store can
//!   grant the lock again: one holder at a time with no option set.
//! * Stores implement the small [`LeaseStore`] trait; [`MemoryStore`] is the in-process reference.
//!   Other crates add the SQL (SQLite, PostgreSQL, MySQL/MariaDB), Redis, DynamoDB, etcd,
//!   ZooKeeper and NATS JetStream KV stores.
//! * [`Elector::lead`] keeps a stable leader (contend, lead until the action ends or the lease is
//!   lost, contend again); [`Elector::leadership`] streams leadership changes to any process.
//! * With the `macros` feature, `#[leasehold::leader_only(elector = …, lock = "…", lease =
//!   "30s")]` guards an `async fn` or method the way [`Elector::run_if_leader`] guards a closure,
//!   with the lock name and durations checked at compile time.
//! * [`partition`] spreads the shards of a [`PartitionSet`](partition::PartitionSet) over the
//!   nodes that join it: each shard owned by one node at a time, with its own lease and fence,
//!   balanced within one shard and moving as little as possible when nodes come and go.
//! * [`Schedule`] runs periodic jobs once per period across replicas (period-aligned, checked by
//!   the store's period ledger); [`blocking::Elector`] serves synchronous code.
//! * [`shutdown_signal`] resolves on SIGINT or SIGTERM (what systemd, Kubernetes and docker
//!   send): the stop request to cancel a program's [`CancellationToken`] with.
//! * Every input has one documented limit in [`limits`] ([`MAX_SLOTS`](limits::MAX_SLOTS),
//!   [`MAX_DURATION`](limits::MAX_DURATION), [`MAX_NODE_ID_LEN`](limits::MAX_NODE_ID_LEN),
//!   [`MAX_LOCK_NAME_LEN`](limits::MAX_LOCK_NAME_LEN)), refused beyond it with a typed
//!   [`LimitError`](limits::LimitError).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
//! use std::{sync::Arc, time::Duration};
//! use leasehold::{ElectionOptions, Elector, MemoryStore};
//!
//! let options = ElectionOptions::builder()
//!     .wait(Duration::ZERO) // the default: skip at once when another node holds it
//!     .lease(Duration::from_secs(30)) // renewed every 10 s while the action runs
//!     .build()?;
//! let elector = Elector::with_options(Arc::new(MemoryStore::new()), options);
//!
//! match elector.run_if_leader("nightly-report", |ctx| async move { ctx.fence() }).await? {
//!     Some(fence) => println!("ran with fence {fence}"),
//!     None => println!("another node is running it"),
//! }
//! # Ok(()) }
//! ```

pub mod blocking;
mod cleanup;
mod elect;
pub mod error;
mod events;
pub mod fence;
mod hold;
pub mod limits;
mod macro_support;
mod metric_families;
pub mod metrics;
mod name;
pub mod options;
mod outcome;
pub mod partition;
pub mod schedule;
pub mod shutdown;
pub mod spans;
pub mod store;
mod tenant;
mod turns;

/// Leading for as long as it lasts: the stable leader's terms ([`Elector::lead`]), streams
/// consumed only while leader ([`Elector::guarded_stream`]), and who leads, seen from any process
/// ([`Elector::leadership`]).
pub mod lead {
    pub use crate::elect::guarded_stream::{GuardedStream, StreamEnd};
    pub use crate::elect::lead::{DEFAULT_LEADERSHIP_POLL, Leadership, LeadershipStream, TermEnd};
}

pub use elect::elector::Elector;
pub use elect::lead::TermEnd;
pub use error::{Error, ErrorKind, Result};
pub use events::{Event, LostReason};
pub use hold::guard::{LeaderContext, LeaderGuard};
pub use hold::held::HeldLease;
pub use leasehold_rules::parse_duration;
pub use name::{IntoLockName, LockName};
pub use options::retry::RetryPolicy;
pub use options::{ElectionOptions, ElectionOptionsBuilder};
pub use outcome::Outcome;
pub use schedule::{Job, Schedule};
pub use shutdown::shutdown_signal;
pub use store::LeaseStore;
pub use store::lease::{Holder, Lease};
pub use store::memory::MemoryStore;
pub use store::period::{Period, PeriodRecord};
pub use tenant::Tenant;

pub use tokio_util::sync::CancellationToken;

/// Guards an `async fn` with a lock: `#[leasehold::leader_only(elector = …, lock = "…")]` (the
/// `macros` feature). See the macro's documentation and the manual's section "Guarding a function
/// with an attribute".
#[cfg(feature = "macros")]
pub use leasehold_macros::leader_only;

/// Not public API: what the expansion of `#[leader_only]` calls at run time (its literals are
/// checked while it expands, by `leasehold-rules`). It changes with `leasehold-macros`, whose
/// version `leasehold` pins.
#[doc(hidden)]
pub mod __private {
    pub use crate::macro_support::{Overrides, configure};
}

/// The manual page `docs/partitions.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/partitions.md")]
pub struct PartitionsDoctests;

/// The manual page `docs/leasehold.md`, compiled as doc tests so its code stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/leasehold.md")]
pub struct ManualDoctests;
